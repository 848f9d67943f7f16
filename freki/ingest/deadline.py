"""When indexing work must stop: the client's deadline, the client going away, or the server shutting down.

The indexer checks a ``Deadline`` between stages and between embedding batches, and the parser sandbox
kills its worker when one passes, so a request nobody waits for any more stops within a batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from wolf_service.errors import Cancelled, DeadlineExceeded

T = TypeVar("T")
log = logging.getLogger("freki.ingest")


class StopSignal(threading.Event):
    """An event that remembers when it was first set (``at``, monotonic), so a stop can say how late it was."""

    at: float | None = None

    def set(self) -> None:
        """Set the event; the first call records the time."""
        if self.at is None:
            self.at = time.monotonic()
        super().set()


class Deadline:
    """A point in time and any number of stop signals (events), checked cooperatively."""

    def __init__(
        self, timeout_s: float | None = None, *, stops: Iterable[tuple[threading.Event, str]] = (),
    ) -> None:
        """
        Args:
            timeout_s: Seconds from now until the deadline (None = no deadline).
            stops: (event, reason) pairs; once an event is set, ``check`` raises Cancelled with its reason.
        """
        self.expires = None if timeout_s is None else time.monotonic() + timeout_s
        self._stops = list(stops)

    def with_stop(self, event: threading.Event, reason: str) -> Deadline:
        """The same deadline with one more stop signal."""
        copy = Deadline(stops=[*self._stops, (event, reason)])
        copy.expires = self.expires
        return copy

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a deadline."""
        return None if self.expires is None else max(0.0, self.expires - time.monotonic())

    def overrun(self) -> float:
        """Seconds since the first stop: the deadline passing, or a ``StopSignal`` set (0.0 if neither)."""
        times = [t for t in (self.expires, *(getattr(e, "at", None) for e, _ in self._stops)) if t is not None]
        now = time.monotonic()
        return max(0.0, now - min(times)) if times and min(times) <= now else 0.0

    def stopped(self) -> str:
        """The reason work must stop now, or "" to carry on."""
        for event, reason in self._stops:
            if event.is_set():
                return reason
        if self.expires is not None and time.monotonic() >= self.expires:
            return "deadline"
        return ""

    def check(self, stage: str) -> None:
        """Raise DeadlineExceeded or Cancelled if work must stop; ``stage`` says where it stopped."""
        reason = self.stopped()
        if reason == "deadline":
            raise DeadlineExceeded(f"the deadline passed during {stage}; nothing was written")
        if reason:
            raise Cancelled(f"{reason}; stopped during {stage} and nothing was written")


NO_DEADLINE = Deadline()


def checked(items: Iterable[T], check: Callable[[str], None], stage: str, every: int = 1024) -> Iterator[T]:
    """``items``, calling ``check(stage)`` (e.g. ``Deadline.check``) before the first and every ``every``-th:
    a long loop stops soon after its deadline, and the check costs nothing next to the work between."""
    for number, item in enumerate(items):
        if not number % every:
            check(stage)
        yield item


@contextmanager
def abandonment_logged(deadline: Deadline, document_id: str) -> Iterator[None]:
    """Log work on ``document_id`` that ``deadline`` stopped: where, and how long after the deadline or cancel
    (the operator's evidence that abandoned work does not run on)."""
    try:
        yield
    except (DeadlineExceeded, Cancelled) as exc:
        log.warning("indexing %r abandoned: %s (%.2f s after the deadline or cancel)", document_id[:80], exc,
                    deadline.overrun())
        raise
