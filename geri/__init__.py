"""Geri, the LLM service.

``backends/`` (one ``Backend`` interface: Ollama, embedded SmolLM2; ``create_backend`` picks) -> ``validation``
(request limits) -> ``prompting`` (prompt and context-window fitting) -> ``generation`` (runs a backend,
streams, ``reasoning`` splits ``<think>``) -> ``service`` (gRPC) -> ``server`` (start/stop) -> ``cli``.
"""
