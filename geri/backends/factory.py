"""Create the backend of one model-list entry. Imports are lazy so Ollama or OpenAI users never load torch."""

from __future__ import annotations

from geri.backends.base import Backend
from geri.settings import GeriSettings, ModelRoute


def create_backend(settings: GeriSettings, route: ModelRoute | None = None) -> Backend:
    """Create (but do not prepare) the backend for ``route`` (default: the first of ``settings.routes()``).

    Ollama and embedded backends read their options from the settings; the route's name, model,
    address and timeouts override them.

    Returns:
        The backend, not yet loaded: call ``prepare()`` before serving.
    """
    route = route or settings.routes()[0]
    if route.backend == "openai":
        from geri.backends.openai_compatible import OpenAICompatibleBackend

        return OpenAICompatibleBackend(route, settings)
    if route.backend == "ollama":
        from geri.backends.ollama import OllamaBackend

        return OllamaBackend(settings.model_copy(update={
            "ollama_host": route.base_url or settings.ollama_host, "ollama_model": route.backend_model,
            "ollama_connect_timeout_s": route.connect_timeout_s, "ollama_read_timeout_s": route.read_timeout_s,
        }))
    from geri.backends.embedded import EmbeddedBackend

    return EmbeddedBackend(settings.model_copy(update={"embedded_model_name": route.name}))
