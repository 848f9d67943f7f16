"""Watched folders: files dropped into a folder are indexed, changed, moved and deleted with it.

``watcher.Watcher`` runs it: ``events`` (file-system events -> paths) -> ``debounce`` -> ``files`` (which files
count, reading them) -> the engine; ``catchup`` reconciles a folder at start; ``moves`` turns a rename into a
cheap id change; ``state`` persists what was indexed and erased; ``status`` is what GetIndexStatus reports.
"""
