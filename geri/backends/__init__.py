"""LLM backends behind one interface (:class:`Backend`), chosen by :func:`create_backend`."""

from __future__ import annotations

from geri.backends.base import (
    Backend,
    BackendStats,
    ChatMessage,
    Completion,
    Delta,
    GenerationParams,
    ModelDescription,
)
from geri.backends.factory import create_backend

__all__ = [
    "Backend",
    "BackendStats",
    "ChatMessage",
    "Completion",
    "Delta",
    "GenerationParams",
    "ModelDescription",
    "create_backend",
]
