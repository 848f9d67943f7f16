"""What the blocking and the asyncio connection share: the stubs a call reaches, its attempts, its tenant and
the per-user views. Everything here is the same for grpc and grpc.aio; the two connections differ only in
opening, closing and waiting (docs/decisions/0241-one-odin-client.md)."""

from __future__ import annotations

import copy
import random
from typing import Any, Generic, Protocol, Self, TypeVar

from wolf.v1 import freki_pb2_grpc, geri_pb2_grpc, settings_pb2_grpc

from odin_client.protocol.attempts import Attempts, RetryListener
from odin_client.protocol.channels import ChannelPool, call_metadata
from odin_client.protocol.retry import RetryPolicy, retryable
from odin_client.protocol.specs import CallSpec, tenant_of
from odin_client.settings import MAX_USER_CHARS, OdinSettings
from wolf_service.identity import checked_user_id

C = TypeVar("C")


class MonotonicClock(Protocol):
    """The part of either connection's clock that attempts read."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        ...


class ConnectionCore(Generic[C]):
    """The shared part of a connection over channels of type ``C``; the subclass sets every attribute."""

    settings: OdinSettings
    channels: ChannelPool[C]
    policy: RetryPolicy
    clock: MonotonicClock
    rng: random.Random
    on_retry: RetryListener | None
    _metadata: tuple[tuple[str, str], ...]

    def for_user(self, user_id: str) -> Self:
        """This client acting for the end user ``user_id``: every call sends ``x-wolf-user: <user_id>`` (in
        place of the settings' ``user_id``), over the same channels, retries and tool audit log — so a gateway
        serves many users over one client per API key. Close the client, not the view (they share channels).

        Raises:
            ValueError: ``user_id`` is not a valid user id (letters, digits and ``_ . @ : + = -``).
        """
        checked_user_id(user_id, MAX_USER_CHARS, setting="the user id limit")
        view = copy.copy(self)
        view.settings = self.settings.model_copy(update={"user_id": user_id})
        view._metadata = call_metadata(view.settings)
        return view

    @property
    def open_targets(self) -> list[str]:
        """Targets with an open channel, in the order they were opened."""
        return self.channels.open_targets

    def _freki(self) -> freki_pb2_grpc.FrekiServiceStub:
        return freki_pb2_grpc.FrekiServiceStub(self.channels.get(self.settings.freki_target))

    def _geri(self) -> geri_pb2_grpc.GeriServiceStub:
        return geri_pb2_grpc.GeriServiceStub(self.channels.get(self.settings.geri_target))

    def _tenant(self, tenant_id: str | None) -> str:
        return tenant_of(self.settings, tenant_id)

    def _stub_method(self, spec: CallSpec[Any]) -> Any:
        if spec.api == "settings":  # the service's SettingsService, on the same target
            target = self.settings.freki_target if spec.service == "freki" else self.settings.geri_target
            return getattr(settings_pb2_grpc.SettingsServiceStub(self.channels.get(target)), spec.method)
        return getattr(self._freki() if spec.service == "freki" else self._geri(), spec.method)

    def _attempts(self, spec: CallSpec[Any]) -> Attempts:
        """A new call's attempts, its deadline starting now."""
        return Attempts(self.policy, self.clock.monotonic, self.rng, self.on_retry, service=spec.service,
                        method=spec.method, budget_s=spec.budget_s, retryable=retryable(spec.idempotent_read))
