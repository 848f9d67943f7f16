"""The Freki engine: one object that wires parse → chunk → embed → store → retrieve and exposes operations.

``FrekiEngine`` lives in ``freki.engine.engine`` (start, stop, status), with its operations on documents in
``freki.engine.documents`` and on a data owner's documents in ``freki.engine.owner_data``; this package
re-exports what the layers above import.
"""

from freki.engine.config import build_embedder, store_config
from freki.engine.engine import FrekiEngine
from freki.engine.status import EngineStatus

__all__ = ["EngineStatus", "FrekiEngine", "build_embedder", "store_config"]
