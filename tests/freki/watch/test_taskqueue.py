"""The watcher's keyed task queue: a document's tasks one at a time and in order, others pass them by."""

from __future__ import annotations

import threading
import time

from freki.watch.taskqueue import KeyedTaskQueue


def test_a_busy_documents_tasks_wait_in_order_while_others_pass() -> None:
    q: KeyedTaskQueue[str] = KeyedTaskQueue(maxsize=10)
    for item, keys in [("a1", {"a"}), ("a2", {"a"}), ("b1", {"b"}), ("move c<-a", {"c", "a"}), ("c1", {"c"})]:
        assert q.put(item, keys, timeout=0)
    first = q.take(timeout=0)
    assert first is not None and first[0] == "a1"
    # a2 waits for a1; b1 passes; the move touches a, and c1 waits behind the move (same key c).
    second = q.take(timeout=0)
    assert second is not None and second[0] == "b1"
    assert q.take(timeout=0) is None
    q.done(first[1])
    a2 = q.take(timeout=0)
    assert a2 is not None and a2[0] == "a2"
    assert q.take(timeout=0) is None, "the move waits for a2, c1 for the move"
    q.done(frozenset({"a"}))
    move = q.take(timeout=0)
    assert move is not None and move[0] == "move c<-a"
    assert q.take(timeout=0) is None
    q.done(move[1])
    last = q.take(timeout=0)
    assert last is not None and last[0] == "c1" and q.qsize() == 0


def test_put_blocks_while_full_and_a_take_makes_room() -> None:
    q: KeyedTaskQueue[int] = KeyedTaskQueue(maxsize=2)
    assert q.put(1, {"x"}, timeout=0) and q.put(2, {"y"}, timeout=0)
    assert not q.put(3, {"z"}, timeout=0.05)
    results: list[bool] = []
    producer = threading.Thread(target=lambda: results.append(q.put(3, {"z"}, timeout=30)))
    producer.start()
    taken = q.take(timeout=0)
    producer.join(30)
    assert taken is not None and results == [True] and q.qsize() == 2


def test_a_waiting_worker_is_woken_when_a_key_is_freed() -> None:
    q: KeyedTaskQueue[str] = KeyedTaskQueue(maxsize=4)
    q.put("a1", {"a"}, timeout=0)
    q.put("a2", {"a"}, timeout=0)
    first = q.take(timeout=0)
    assert first is not None
    got: list[str] = []
    worker = threading.Thread(target=lambda: got.append(q.take(timeout=30)[0]))  # type: ignore[index]
    worker.start()
    q.done(first[1])
    worker.join(30)
    assert got == ["a2"]


def test_oldest_wait_is_the_age_of_the_oldest_waiting_task() -> None:
    q: KeyedTaskQueue[str] = KeyedTaskQueue(maxsize=10)
    assert q.oldest_wait() == 0.0
    q.put("old", {"a"}, timeout=0)
    time.sleep(0.5)
    q.put("new", {"b"}, timeout=0)
    assert q.oldest_wait() >= 0.5, "the first task's age, not the last one's"
    taken = q.take(timeout=0)
    assert taken is not None and taken[0] == "old"
    assert q.oldest_wait() < 0.5, "a task taken into work no longer waits"
    q.take(timeout=0)
    assert q.oldest_wait() == 0.0
