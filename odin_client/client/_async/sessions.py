"""What Odin's services keep about people: Geri's conversations, and a data owner's data everywhere (erasure)."""

from __future__ import annotations

from wolf.v1 import geri_pb2

from odin_client.client._async.calls import AsyncCalls
from odin_client.protocol import specs
from odin_client.types.errors import NotFound
from odin_client.types.writes import Erasure


class AsyncSessionCalls(AsyncCalls):
    """GetSession, DeleteSession, and the erasure of a data owner (DeleteOwnerData + DeleteOwnerSessions)."""

    async def get_session(self, session_id: str, *, tenant_id: str | None = None) -> geri_pb2.Session | None:
        """One of this client's user's conversations in Geri (``user_id`` setting or :meth:`for_user`), or None
        when it does not exist, expired, or is another user's (Geri answers both alike)."""
        try:
            return await self._call(specs.get_session(self.settings, session_id, tenant_id=tenant_id))
        except NotFound:
            return None

    async def delete_session(self, session_id: str, *, tenant_id: str | None = None) -> bool:
        """Forget one of this client's user's conversations; whether it existed (another user's is untouched)."""
        return await self._call(specs.delete_session(self.settings, session_id, tenant_id=tenant_id))

    async def erase_owner(self, owner_id: str, *, tenant_id: str | None = None) -> Erasure:
        """GDPR erasure of a data owner everywhere: Freki's documents and Geri's conversations."""
        documents, sessions = specs.erase_owner(self.settings, owner_id, tenant_id=tenant_id)
        return specs.erasure(await self._call(documents), await self._call(sessions))
