"""The ``watch`` settings block: watched folders and how they are indexed (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from wolf_service import filetypes

# Editors' temporary and backup files, hidden files and folders (".git"), partial downloads.
DEFAULT_WATCH_EXCLUDES = filetypes.DEFAULT_EXCLUDES  # shared with `odin index`


class WatchFolderSettings(BaseModel):
    """One watched folder (recursive) and whose documents its files become."""

    path: Path
    # Prefix of the document ids of this folder's files ("<name>/<relative path>"); default: the folder's name.
    name: str = Field("", pattern=r"^[A-Za-z0-9_.\-]{0,64}$")
    tenant_id: str = ""  # "" = default_tenant
    owner_id: str = ""  # "" = the tenant (GDPR erasure/export act on owner ids)
    # Glob patterns; None = the watch-wide lists. A pattern without "/" matches a file name or any folder
    # name on the way; with "/" it matches the path relative to the folder.
    include: list[str] | None = None
    exclude: list[str] | None = None


class WatchSettings(BaseModel):
    """Folder watching: files created, changed, moved or removed are indexed, re-indexed or deleted."""

    folders: list[WatchFolderSettings] = []
    include: list[str] = ["*"]
    exclude: list[str] = DEFAULT_WATCH_EXCLUDES
    # A file is indexed once no event touched it for this long (editors save in bursts); at least 0.6 s.
    debounce_s: float = Field(1.0, ge=0.0, le=600.0)
    max_file_bytes: int = Field(20 * 1024 * 1024, ge=1)
    # Files waiting in the work queue; the startup scan blocks when it is full (bounded memory).
    queue_size: int = Field(256, ge=1, le=100_000)
    # Distinct files waiting out their debounce; beyond this the folder is rescanned instead.
    max_pending: int = Field(10_000, ge=1)
    # Most recent skipped files reported per folder in GetIndexStatus.
    max_skipped_reported: int = Field(100, ge=0, le=10_000)
    # Poll the file system instead of inotify (network shares, some containers).
    polling: bool = False
    poll_interval_s: float = Field(2.0, gt=0.0)
    # Replicas (docs/scaling.md): only the process holding this file's lock watches; the others stand by
    # and take over when it exits. None = this process watches unconditionally (one replica watches).
    lease_file: Path | None = None
    lease_retry_s: float = Field(5.0, gt=0.0, le=3600.0)
    # Files indexed at once, each by one worker (one is parsed while another is embedded); 0 = as many as
    # parser processes (limits.parse_workers). 1 indexes one file at a time.
    workers: int = Field(0, ge=0, le=64)
