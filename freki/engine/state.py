"""What the engine's operations share: its typed state, and the serving index's parts by name.

``FrekiEngine`` (``freki.engine.engine``) sets this state up at start; the operations on documents
(``freki.engine.documents``) and on a data owner's documents (``freki.engine.owner_data``) read it through
this one declaration.
"""

from __future__ import annotations

import threading

from freki.engine.blue_green import BlueGreen
from freki.engine.health import DiskPoller
from freki.engine.index_set import IndexSet
from freki.engine.purging import Purger
from freki.search.result_cache import ResultCache
from freki.settings import FrekiSettings
from freki.store.erasure_log import ErasureLog
from freki.store.keys import KeyStore
from freki.store.maintenance import Maintenance
from freki.store.rwlock import ReadWriteLock


class EngineState:
    """The engine's parts, and the serving index's parts as attributes of the engine."""

    settings: FrekiSettings
    active: IndexSet  # the serving index; a migration's switch replaces it (``swap_active``)
    keys: KeyStore
    erasures: ErasureLog
    writes: ReadWriteLock
    serving: ReadWriteLock
    purger: Purger
    results: ResultCache
    disk: DiskPoller
    maintenance: Maintenance
    blue_green: BlueGreen
    _stopping: threading.Event

    # The serving index's parts (the layers above and the tests use these names).
    embedder = property(lambda self: self.active.embedder)
    chunks = property(lambda self: self.active.chunks)
    registry = property(lambda self: self.active.registry)
    indexer = property(lambda self: self.active.indexer)
    retriever = property(lambda self: self.active.retriever)
    sparse = property(lambda self: self.active.sparse)
    generations = property(lambda self: self.active.generations)
    graph = property(lambda self: self.active.graph)
    lanes = property(lambda self: self.active.lanes)
    layout = property(lambda self: self.active.layout)
    chunk_stores = property(lambda self: self.active.chunk_stores)
    embedders = property(lambda self: self.active.embedders)
    stopping = property(lambda self: self._stopping.is_set())
