"""The ``disk`` and ``integrity`` settings blocks (docs/operations.md, "Disk space" and "Integrity")."""

from __future__ import annotations

from pydantic import BaseModel, Field

MIB = 1024 * 1024


class DiskSettings(BaseModel):
    """Free-space watermarks of the data dir's file system (freki/store/disk.py).

    Each level is the larger of its bytes and its percent of the file system (0 switches that part off).
    Below the warn level Freki logs a warning and reports it; below the refuse level writes are refused with
    RESOURCE_EXHAUSTED and reads keep serving. The refuse level is the headroom the embedded engine needs so
    that no write can hit a full disk (which kills it: its files are memory-mapped).
    """

    warn_free_bytes: int = Field(2048 * MIB, ge=0)
    warn_free_percent: float = Field(10.0, ge=0.0, le=90.0)
    refuse_free_bytes: int = Field(512 * MIB, ge=0)
    refuse_free_percent: float = Field(5.0, ge=0.0, le=90.0)
    # How often the free space is read between writes (for health, the gauge and the log line).
    check_interval_s: float = Field(10.0, gt=0.0, le=3600.0)
    # How often the store is probed (data dir readable, store answers); health is NOT_SERVING while it fails.
    store_probe_interval_s: float = Field(5.0, gt=0.0, le=3600.0)


class IntegritySettings(BaseModel):
    """Checks of stored chunks against their checksums (freki/store/integrity.py)."""

    # Seconds between background scrubs of every stored chunk (0 = never; `freki verify` runs one by hand).
    scrub_interval_s: float = Field(86_400.0, ge=0.0)
    # Re-index a quarantined chunk's document from its kept source in the background.
    heal: bool = True
