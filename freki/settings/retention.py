"""Backup and retention settings (docs/operations.md, "Backup and restore" and "Retention")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, model_validator

PolicyName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")]
MatchKey = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")]
MatchValue = Annotated[str, Field(min_length=1, max_length=1024)]


class BackupSettings(BaseModel):
    """Where the CreateBackup RPC writes (``freki backup``). None = the RPC is refused: a caller must never
    choose a path on the server's disk, and backups belong outside the data dir."""

    dir: Path | None = None


class RetentionPolicy(BaseModel):
    """Documents of ``tenant_id`` ("" = every tenant) whose metadata has every ``match`` pair are erased once
    older than ``max_age_days``, measured from ``age_field``: ``indexed_at`` (when the version was indexed)
    or a metadata field holding a date (ISO 8601; a document without a readable date there is kept)."""

    name: PolicyName
    tenant_id: str = Field("", max_length=256)
    match: dict[MatchKey, MatchValue] = Field(default_factory=dict, max_length=16)
    max_age_days: float = Field(gt=0, le=365_000)
    age_field: MatchKey = "indexed_at"


class RetentionSettings(BaseModel):
    """Retention policies, applied in the background every ``interval_s`` (0 = never)."""

    interval_s: float = Field(3600.0, ge=0)
    policies: list[RetentionPolicy] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _unique_names(self) -> RetentionSettings:
        names = [p.name for p in self.policies]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"retention.policies names must be unique; {dupes} appear more than once")
        return self
