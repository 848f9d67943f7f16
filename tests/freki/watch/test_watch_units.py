"""Fast unit tests of the watcher's parts: patterns and document ids, debouncing, event routing, state."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
from watchdog.events import (
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from freki.api.validation import require_document_id
from freki.settings import FrekiSettings
from freki.watch.debounce import Debouncer
from freki.watch.events import EventRouter
from freki.watch.files import FileSkipped, WatchedFolder, read_file, resolve_folders
from freki.watch.state import WatchState


def folder(root: Path, **kw: object) -> WatchedFolder:
    spec: dict[str, object] = {"root": root, "name": "docs", "tenant_id": "t", "owner_id": "",
                               "include": ("*",), "exclude": (".*", "*~", "*.swp", "drafts/*.md")}
    spec.update(kw)
    return WatchedFolder(**spec)  # type: ignore[arg-type]


# -- patterns and ids ---------------------------------------------------------------------------
@pytest.mark.parametrize(("rel", "wanted"), [
    ("a.md", True), ("sub/dir/b.txt", True), (".hidden.md", False), (".git/config", False),
    ("notes/.obsidian/x.json", False), ("a.md~", False), (".a.md.swp", False), ("drafts/x.md", False),
    ("drafts/x.txt", True), ("other/drafts/x.md", True),
])
def test_include_exclude_patterns(tmp_path: Path, rel: str, wanted: bool) -> None:
    assert folder(tmp_path).wants(tmp_path / rel) is wanted


def test_include_list_narrows_and_paths_outside_are_never_wanted(tmp_path: Path) -> None:
    only_md = folder(tmp_path / "root", include=("*.md", "*.markdown"))
    assert only_md.wants(tmp_path / "root" / "x" / "a.md")
    assert not only_md.wants(tmp_path / "root" / "a.txt")
    assert not only_md.wants(tmp_path / "elsewhere.md") and not only_md.wants(tmp_path / "root")


def test_document_ids_are_relative_paths_and_always_valid_api_ids(tmp_path: Path) -> None:
    f = folder(tmp_path)
    assert f.document_id(tmp_path / "sub" / "plan v2.md") == "docs/sub/plan v2.md"
    printable = ("rapport (final)!.md", "rapport [final]!.md", "é#€.txt", "faq#why.md", "50% off?.md", "設計.md")
    for name in printable:  # any printable file name is its own id, exactly
        assert f.document_id(tmp_path / name) == f"docs/{name}"
    odd = [f.document_id(tmp_path / name) for name in ("tab\there.md", "tab\nhere.md", "bad\udcffbyte.md")]
    assert len(set(odd)) == 3, "sanitised names keep a hash of the original, so they never collide"
    assert all(d.startswith("docs/") and "+" in d for d in odd)
    long_one = f.document_id(tmp_path / ("x" * 600) / ("y" * 600))
    assert len(long_one.encode()) <= 1024
    for doc_id in [*odd, long_one]:
        assert require_document_id(doc_id) == doc_id


def test_resolve_folders_refuses_missing_nested_and_colliding_folders(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "c").mkdir()

    def settings(*folders: dict[str, str]) -> FrekiSettings:
        return FrekiSettings(data_dir=tmp_path / "data", watch={"folders": list(folders)})  # type: ignore[arg-type]

    [resolved] = resolve_folders(settings({"path": str(tmp_path / "a")}))
    assert resolved.name == "a" and resolved.tenant_id == "default"
    with pytest.raises(ValueError, match="does not exist"):
        resolve_folders(settings({"path": str(tmp_path / "missing")}))
    with pytest.raises(ValueError, match="inside watched folder"):
        resolve_folders(settings({"path": str(tmp_path / "a")}, {"path": str(tmp_path / "a" / "b"), "name": "x"}))
    with pytest.raises(ValueError, match="share document ids"):
        resolve_folders(settings({"path": str(tmp_path / "a"), "name": "n"},
                                 {"path": str(tmp_path / "c"), "name": "n"}))
    two = resolve_folders(settings({"path": str(tmp_path / "a"), "name": "n"},
                                   {"path": str(tmp_path / "c"), "name": "n", "tenant_id": "other"}))
    assert [f.tenant_id for f in two] == ["default", "other"]


def test_read_file_reports_why_a_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_bytes(b"hello")
    assert read_file(tmp_path / "ok.txt", 10) == b"hello"
    (tmp_path / "big.txt").write_bytes(b"x" * 11)
    with pytest.raises(FileSkipped, match="too large"):
        read_file(tmp_path / "big.txt", 10)
    (tmp_path / "link.txt").symlink_to(tmp_path / "ok.txt")
    with pytest.raises(FileSkipped, match="symbolic link"):
        read_file(tmp_path / "link.txt", 10)
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "gone.txt", 10)


# -- debouncing --------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_of_events_yields_one_item_after_the_quiet_period() -> None:
    clock, stats = Clock(), {Path("/w/a.md"): (1, 1)}
    d = Debouncer(1.0, 10, clock=clock, stat=lambda p: stats.get(p))
    for i in range(5):
        stats[Path("/w/a.md")] = (i, i)
        assert d.touch(Path("/w/a.md"))
        clock.now += 0.5
    assert d.pop_due() == [] and len(d) == 1  # last touch 0.5 s ago
    clock.now += 0.6
    [item] = d.pop_due()
    assert item.path == Path("/w/a.md") and len(d) == 0


def test_a_file_still_growing_without_events_waits() -> None:
    clock, stats = Clock(), {Path("/w/big.pdf"): (10, 1)}
    d = Debouncer(1.0, 10, clock=clock, stat=lambda p: stats.get(p))
    d.touch(Path("/w/big.pdf"))
    stats[Path("/w/big.pdf")] = (20, 2)  # written to, but the event got lost (e.g. a polled share)
    clock.now += 1.1
    assert d.pop_due() == []
    clock.now += 1.1
    assert [p.path for p in d.pop_due()] == [Path("/w/big.pdf")]


def test_rename_chains_collapse_to_one_move_and_absorb_pending_sources() -> None:
    clock = Clock()
    d = Debouncer(0.5, 10, clock=clock, stat=lambda p: None)
    d.touch(Path("/w/a.md"))
    d.touch(Path("/w/b.md"), moved_from=Path("/w/a.md"))
    d.touch(Path("/w/c.md"), moved_from=Path("/w/b.md"))
    clock.now += 1
    [item] = d.pop_due()
    assert (item.path, item.moved_from) == (Path("/w/c.md"), Path("/w/a.md"))


def test_a_vanished_path_waits_for_a_pending_creation_it_may_pair_with() -> None:
    clock, stats = Clock(), {}
    d = Debouncer(1.0, 10, clock=clock, stat=lambda p: stats.get(p))
    d.touch(Path("/w/a.md"))  # gone: reported as a deletion
    clock.now += 0.2
    stats[Path("/w/new/a.md")] = (5, 5)
    d.touch(Path("/w/new/a.md"))  # the creation half of the same move, a moment later
    clock.now += 0.9
    assert d.pop_due() == [], "the deletion waits while the creation is still pending"
    clock.now += 0.2
    assert sorted(p.path.name for p in d.pop_due()) == ["a.md", "a.md"], "both halves are handed over together"
    d.touch(Path("/w/gone.md"))
    stats[Path("/w/busy.md")] = (1, 1)
    for _ in range(5):  # a file that keeps changing cannot hold a deletion back for ever
        stats[Path("/w/busy.md")] = (stats[Path("/w/busy.md")][0] + 1, 1)
        d.touch(Path("/w/busy.md"))
        clock.now += 0.9
    assert [p.path.name for p in d.pop_due()] == ["gone.md"]


def test_the_pending_set_is_bounded() -> None:
    d = Debouncer(1.0, 2, clock=Clock(), stat=lambda p: None)
    assert d.touch(Path("/w/1")) and d.touch(Path("/w/2")) and d.touch(Path("/w/1"))
    assert not d.touch(Path("/w/3")) and len(d) == 2


# -- event routing -----------------------------------------------------------------------------
def test_events_are_routed_to_touches_moves_and_sweeps(tmp_path: Path) -> None:
    f = folder(tmp_path)
    touched: list[tuple[str, str | None]] = []
    swept: list[str] = []
    router = EventRouter([f], lambda _f, p, m: touched.append((p.name, m.name if m else None)),
                         lambda _f, d: swept.append(d.name))
    p = str(tmp_path)
    for event in (
        FileCreatedEvent(f"{p}/a.md"), FileModifiedEvent(f"{p}/a.md"), FileClosedEvent(f"{p}/a.md"),
        FileOpenedEvent(f"{p}/a.md"),  # ignored
        FileCreatedEvent(f"{p}/.a.md.swp"),  # excluded
        FileMovedEvent(f"{p}/.a.md.swp", f"{p}/a.md"),  # atomic save: a modification of a.md
        FileMovedEvent(f"{p}/a.md", f"{p}/b.md"),  # rename: b.md with vectors from a.md
        FileMovedEvent(f"{p}/b.md", str(tmp_path.parent / "outside.md")),  # moved out: b.md is gone
        FileMovedEvent(f"{p}/c.md", f"{p}/c.md~"),  # renamed to an excluded name: c.md is gone
        FileDeletedEvent(f"{p}/d.md"),
        DirDeletedEvent(f"{p}/old"), DirMovedEvent(f"{p}/x", f"{p}/y"), DirMovedEvent(f"{p}/z", "/elsewhere/z"),
    ):
        router.on_any_event(event)
    assert touched == [("a.md", None)] * 4 + [("b.md", "a.md"), ("b.md", None), ("c.md", None), ("d.md", None)]
    assert swept == ["old", "z"], "a folder moved within the tree is handled file by file"


# -- state -------------------------------------------------------------------------------------
def test_erasure_markers_persist_and_hold_only_hashes(tmp_path: Path) -> None:
    state = WatchState(tmp_path / "state.json")
    state.mark_erased([("t", "sha-of-alice-cv")])
    again = WatchState(tmp_path / "state.json")
    assert again.is_erased("t", "sha-of-alice-cv")
    assert not again.is_erased("t", "sha-2") and not again.is_erased("u", "sha-of-alice-cv")
    assert "alice" not in (tmp_path / "state.json").read_text()
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(RuntimeError, match="unreadable"):
        WatchState(tmp_path / "state.json")


def test_pure_posix_relative_paths(tmp_path: Path) -> None:
    assert folder(tmp_path).relative(tmp_path / "a" / "b.md") == PurePosixPath("a/b.md")
    assert folder(tmp_path).relative(tmp_path) is None
