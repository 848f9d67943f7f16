"""Freki settings: one typed model (``FrekiSettings``, in ``freki.settings.service``), ``FREKI_`` env prefix,
optional JSON settings file; one module per section. This package re-exports them all.

Precedence: defaults < JSON file (``FREKI_SETTINGS_FILE`` or ``--config``) < environment
< explicit arguments. Nested values use ``__`` in env names, e.g.
``FREKI_CHUNKING__MAX_TOKENS=800``.
"""

from freki.settings.chunking import ChunkingSettings
from freki.settings.disk import DiskSettings, IntegritySettings
from freki.settings.document_types import DocumentTypeSettings
from freki.settings.embedding_servers import EmbeddingServer
from freki.settings.gdpr import GdprSettings
from freki.settings.limits import MIB, LimitsSettings
from freki.settings.reindex import ReindexSettings
from freki.settings.retention import BackupSettings, RetentionPolicy, RetentionSettings
from freki.settings.retrieval import GraphSettings, ModeThresholds, RetrievalSettings, SearchLogSettings
from freki.settings.service import DocumentTypeKey, FrekiSettings, ModelName
from freki.settings.store import MetadataKey, StoreSettings
from freki.settings.watch import DEFAULT_WATCH_EXCLUDES, WatchFolderSettings, WatchSettings

__all__ = [
    "DEFAULT_WATCH_EXCLUDES", "MIB", "BackupSettings", "ChunkingSettings", "DiskSettings", "DocumentTypeKey",
    "DocumentTypeSettings", "SearchLogSettings",
    "EmbeddingServer", "FrekiSettings", "GdprSettings", "GraphSettings", "IntegritySettings", "LimitsSettings",
    "MetadataKey", "ModeThresholds", "ModelName", "ReindexSettings", "RetentionPolicy", "RetentionSettings",
    "RetrievalSettings", "StoreSettings", "WatchFolderSettings", "WatchSettings",
]
