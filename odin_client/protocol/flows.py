"""Sans-IO flows, driven by the blocking and by the asyncio client alike.

A flow is a generator that yields the calls it needs (small frozen dataclasses) and receives their
results; it returns its result. Both clients run one with the same ``_drive`` (:mod:`odin_client.client`),
so they run the same steps in the same order. A call whose ``optional`` attribute is true and that fails
with an :class:`~odin_client.types.errors.OdinError` sends back None instead of failing the whole flow (e.g.
rewriting a follow-up: the question is then searched as asked).
"""

from __future__ import annotations

import logging

from odin_client.types.errors import OdinError

log = logging.getLogger("odin_client.protocol.flows")


def optional_failed(call: object, exc: OdinError) -> None:
    """A call of a flow failed: raise ``exc`` unless the call is optional (then log it; the flow gets None)."""
    if not getattr(call, "optional", False):
        raise exc
    log.warning("optional call %s failed, going on without it: %s", type(call).__name__, exc)
