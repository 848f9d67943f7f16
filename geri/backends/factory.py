"""Pick the backend named in the settings. Imports are lazy so Ollama users never load torch."""

from __future__ import annotations

from geri.backends.base import Backend
from geri.settings import GeriSettings


def create_backend(settings: GeriSettings) -> Backend:
    """Create (but do not prepare) the backend ``settings.backend`` names.

    Args:
        settings: Geri settings; ``backend`` is ``"embedded"`` or ``"ollama"``.

    Returns:
        The backend, not yet loaded: call ``prepare()`` before serving.
    """
    if settings.backend == "ollama":
        from geri.backends.ollama import OllamaBackend

        return OllamaBackend(settings)
    from geri.backends.embedded import EmbeddedBackend

    return EmbeddedBackend(settings)
