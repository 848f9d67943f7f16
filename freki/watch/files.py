"""Which files of a watched folder Freki indexes, under which document id, and how they are read.

Document ids: a watched file's id is ``<folder name>/<path relative to the folder>`` (POSIX separators),
e.g. ``notes/2026/plan.md``. A path, not a content hash, because a file is the *same document* across
edits: re-indexing it must find its previous chunks to keep the unchanged ones. Renames change the id;
``freki.watch.moves`` moves the stored points to the new id so a rename costs no embedding.
Characters the gRPC API refuses in document ids are replaced by ``_``, plus ``+`` and a short hash of the original
path, so every watched document can still be fetched or deleted by id, and two names never collide.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from freki.settings import FrekiSettings, WatchFolderSettings, WatchSettings
from wolf_service.filetypes import matches
from wolf_service.identifiers import MAX_ID_BYTES, id_problem, printable_or

# Must agree with freki.api.validation's document id rule (letters, digits, space and . - _ : / @ +).
_NAME_ALLOWED = re.compile(r"[^\w.\-:/@+ ]")  # a folder name as id prefix (unchanged: ids stay stable)
# Registry metadata keys that mark a document as coming from a watched folder.
META_FOLDER = "watch_folder"
META_FILE_SHA = "file_sha256"


class FileSkipped(Exception):
    """A file cannot be indexed; the message is the reason shown in index status."""


@dataclass(frozen=True)
class WatchedFolder:
    """A watched folder with its settings resolved (absolute root, tenant, owner, patterns)."""

    root: Path
    name: str
    tenant_id: str
    owner_id: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]

    def relative(self, path: Path) -> PurePosixPath | None:
        """The path relative to this folder, or None when it lies outside."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root)
        except ValueError:
            return None
        return PurePosixPath(rel.as_posix()) if rel.parts else None

    def wants(self, path: Path) -> bool:
        """True for a file path inside the folder that the include/exclude patterns select."""
        rel = self.relative(path)
        return rel is not None and self.wants_relative(rel)

    def wants_relative(self, rel: PurePosixPath) -> bool:
        """Pattern check on a relative path: included by name or path, and no part of it excluded."""
        if any(matches(rel, pattern) for pattern in self.exclude):
            return False
        return any(matches(rel, pattern) for pattern in self.include)

    def excludes_dir(self, rel_dir: PurePosixPath) -> bool:
        """True when a sub-folder is excluded as a whole (so a scan need not descend into it)."""
        return any(matches(rel_dir, pattern) for pattern in self.exclude)

    def document_id(self, path: Path) -> str:
        """The document id of a file inside this folder (see the module docstring)."""
        rel = self.relative(path)
        if rel is None:
            raise ValueError(f"{path} is not inside watched folder {self.root}")
        return self.document_id_of(rel)

    def document_id_of(self, rel: PurePosixPath) -> str:
        """The document id of a relative path."""
        raw = f"{self.name}/{rel.as_posix()}"
        clean = printable_or(raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
        if clean == raw and id_problem(raw) is None:
            return raw
        # Not printable or too long: a readable prefix and a digest of the exact name keep it unique.
        digest = hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return f"{_cut_utf8(clean, MAX_ID_BYTES - 13)}+{digest}"

    @property
    def id_prefix(self) -> str:
        """Every document id of this folder starts with this."""
        return f"{self.name}/"


def resolve_folders(settings: FrekiSettings) -> list[WatchedFolder]:
    """Resolve the configured folders; refuses ones that do not exist or whose ids would collide.

    Raises:
        ValueError: a folder is missing, not a directory, nested in another, or two share tenant and name.
    """
    watch: WatchSettings = settings.watch
    folders: list[WatchedFolder] = []
    for spec in watch.folders:
        folders.append(_resolve(spec, watch, settings.default_tenant))
    seen: dict[tuple[str, str], Path] = {}
    for folder in folders:
        key = (folder.tenant_id, folder.name)
        if key in seen:
            raise ValueError(
                f"watched folders {seen[key]} and {folder.root} would share document ids "
                f"({folder.name}/…) in tenant {folder.tenant_id!r}; give one of them another 'name'"
            )
        seen[key] = folder.root
    for a in folders:
        for b in folders:
            if a is not b and b.root.is_relative_to(a.root):
                raise ValueError(f"watched folder {b.root} is inside watched folder {a.root}; watch only one")
    return folders


def _resolve(spec: WatchFolderSettings, watch: WatchSettings, default_tenant: str) -> WatchedFolder:
    root = Path(os.path.abspath(spec.path.expanduser()))
    if not root.is_dir():
        raise ValueError(f"watched folder {root} does not exist or is not a directory; create it or fix watch.folders")
    name = spec.name or _NAME_ALLOWED.sub("_", root.name) or "root"
    return WatchedFolder(
        root=root,
        name=name,
        tenant_id=spec.tenant_id or default_tenant,
        owner_id=spec.owner_id,
        include=tuple(spec.include if spec.include is not None else watch.include),
        exclude=tuple(spec.exclude if spec.exclude is not None else watch.exclude),
    )


def _cut_utf8(text: str, max_bytes: int) -> str:
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def read_file(path: Path, max_bytes: int) -> bytes:
    """Read a whole file as bytes (parsers need bytes for PDF and DOCX, and detect text encodings).

    Raises:
        FileNotFoundError: it vanished (the caller treats that as a deletion).
        FileSkipped: not a regular file, a symbolic link, too large, or unreadable; the message says which.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileSkipped(f"cannot read file information: {exc.strerror or exc}") from exc
    if stat.S_ISLNK(info.st_mode):
        # Links could lead outside the folder (or loop); index the target folder itself instead.
        raise FileSkipped("symbolic link; links are not followed — watch the target's folder instead")
    if not stat.S_ISREG(info.st_mode):
        raise FileSkipped("not a regular file")
    if info.st_size > max_bytes:
        raise FileSkipped(f"too large: {info.st_size} bytes, over the {max_bytes}-byte limit (watch.max_file_bytes)")
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileSkipped(f"unreadable: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:  # it grew after the stat
        raise FileSkipped(f"too large: over the {max_bytes}-byte limit (watch.max_file_bytes)")
    return data


def file_sha256(data: bytes) -> str:
    """Hash of a file's bytes; recorded per document to recognise a file renamed while Freki was down."""
    return hashlib.sha256(data).hexdigest()


def stat_key(path: Path) -> tuple[int, int] | None:
    """(size, mtime in ns) of a file, or None when it is gone; tells whether a write is still going on."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns
