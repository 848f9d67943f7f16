"""The blocking and the asyncio client offer one surface: the same public methods and properties, with the same
parameter names, kinds, defaults and annotations, and the same return types — awaited (a coroutine returning
``T`` for ``T``) or iterated (``AsyncIterator[T]`` for ``Iterator[T]``) in the asyncio client.

Annotations are compared as written (the modules use ``from __future__ import annotations``), after the one
spelling the asyncio client may differ in: ``Async`` iterators, generators and context-manager methods.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from odin_client import AsyncOdinClient, OdinClient

# Names the asyncio client spells differently for the same thing.
_ASYNC_NAMES = {"__aenter__": "__enter__", "__aexit__": "__exit__"}
_ASYNC_TYPES = re.compile(r"\bAsync(Iterator|Iterable|Generator)\b")


def _public(cls: type) -> dict[str, Any]:
    """Public methods and properties (and the context-manager dunders), by their blocking name."""
    members: dict[str, Any] = {}
    for name in dir(cls):
        if name.startswith("_") and name not in {"__enter__", "__exit__", "__aenter__", "__aexit__"}:
            continue
        value = inspect.getattr_static(cls, name)
        if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(value):
            members[_ASYNC_NAMES.get(name, name)] = value
    return members


def _sync_spelling(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return _ASYNC_TYPES.sub(r"\1", text.replace("AsyncOdinClient", "OdinClient"))


def _parameters(fn: Callable[..., Any]) -> list[tuple[str, str, str, str]]:
    return [(p.name, p.kind.name, repr(p.default), _sync_spelling(p.annotation))
            for p in inspect.signature(fn).parameters.values()]


def _returns(fn: Callable[..., Any]) -> str:
    return _sync_spelling(inspect.signature(fn).return_annotation)


def test_both_clients_have_the_same_public_names() -> None:
    blocking, asyncio_ = _public(OdinClient), _public(AsyncOdinClient)
    assert sorted(set(blocking) - set(asyncio_)) == []
    assert sorted(set(asyncio_) - set(blocking)) == []


@pytest.mark.parametrize("name", sorted(set(_public(OdinClient)) & set(_public(AsyncOdinClient))))
def test_each_method_takes_the_same_parameters_and_returns_the_same_type(name: str) -> None:
    blocking, asyncio_ = _public(OdinClient)[name], _public(AsyncOdinClient)[name]
    if isinstance(blocking, property):
        assert isinstance(asyncio_, property)
        assert _returns(asyncio_.fget) == _returns(blocking.fget)
        return
    assert _parameters(asyncio_) == _parameters(blocking)
    assert _returns(asyncio_) == _returns(blocking)
    iterates = _returns(blocking).startswith(("Iterator[", "Generator["))
    if iterates:  # an async generator, or a plain function handing one back
        assert inspect.isasyncgenfunction(asyncio_) or not inspect.iscoroutinefunction(asyncio_)
        assert str(inspect.signature(asyncio_).return_annotation).startswith(("AsyncIterator[", "AsyncGenerator["))
    elif name not in {"__enter__", "for_user"}:  # for_user makes a view of the client: no I/O to await
        assert inspect.iscoroutinefunction(asyncio_), f"AsyncOdinClient.{name} must be awaited"
        assert not inspect.iscoroutinefunction(blocking)


def test_the_comparison_sees_a_drift() -> None:
    """A parameter the other client lacks, or another default, is a difference the test reports."""

    class Blocking:
        def ask(self, question: str, *, top_k: int = 0) -> int:
            return top_k

    class Awaited:
        async def ask(self, question: str, *, top_k: int = 5, **options: Any) -> int:
            return top_k

    assert _parameters(Awaited.ask) != _parameters(Blocking.ask)
    assert _returns(Awaited.ask) == _returns(Blocking.ask)
