"""Readers never see a half-replaced document, and the lock behind that guarantee works as documented."""

from __future__ import annotations

import threading
import time

import pytest

from freki.store import FieldMatch
from freki.store.guarded import GuardedStore
from freki.store.rwlock import ReadWriteLock
from tests.freki.store.points_support import make_points

CHUNKS = 6


@pytest.mark.integration
def test_readers_never_see_a_half_replaced_document(store: GuardedStore) -> None:
    doc = [FieldMatch("document_id", ("doc-x",))]

    def generation(n: int) -> list:
        points = make_points(CHUNKS, seed=1000 + n, document_id="doc-x", tenant="acme")
        for p in points:
            p.payload["generation"] = n
        return points

    current = generation(0)
    store.upsert(current)
    store.upsert(make_points(20))  # other documents around it
    stop = threading.Event()
    seen: list[tuple[int, set[int]]] = []
    failures: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                page, _ = store.scroll(doc, 100)
                hits = store.search_dense(list(current[0].dense), doc, 50)
                seen.append((len(page), {p.payload["generation"] for p in page}))
                seen.append((len(hits), {h.payload["generation"] for h in hits}))
        except BaseException as exc:  # surfaced in the main thread below
            failures.append(exc)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for n in range(1, 25):
            new = generation(n)
            store.apply(new, [p.id for p in current], [])
            current = new
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert not failures, failures
    assert len(seen) > 10
    torn = [s for s in seen if s[0] != CHUNKS or len(s[1]) != 1]
    assert not torn, f"readers saw half-replaced documents: {torn[:5]}"
    assert store.count(doc) == CHUNKS


def test_writer_excludes_readers_and_waiting_writer_blocks_new_readers() -> None:
    lock = ReadWriteLock()
    events: list[str] = []
    first_reader_in = threading.Event()
    release_first_reader = threading.Event()

    def long_reader() -> None:
        with lock.read():
            events.append("reader1 in")
            first_reader_in.set()
            release_first_reader.wait(5)
            events.append("reader1 out")

    def writer() -> None:
        with lock.write():
            events.append("writer in")
            time.sleep(0.05)
            events.append("writer out")

    def late_reader() -> None:
        with lock.read():
            events.append("reader2 in")

    threads = [threading.Thread(target=long_reader)]
    threads[0].start()
    assert first_reader_in.wait(5)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    while not lock._writers_waiting:  # the writer is queued behind reader1
        time.sleep(0.001)
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    time.sleep(0.05)
    assert events == ["reader1 in"]  # neither the writer nor the late reader got in
    release_first_reader.set()
    for thread in threads:
        thread.join(5)
    assert events == ["reader1 in", "reader1 out", "writer in", "writer out", "reader2 in"]


def test_readers_share_the_lock() -> None:
    lock = ReadWriteLock()
    inside = threading.Barrier(3, timeout=5)

    def reader() -> None:
        with lock.read():
            inside.wait()  # only passes if all three readers hold the lock at once

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert not inside.broken
