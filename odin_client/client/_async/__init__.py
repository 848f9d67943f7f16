"""The asyncio client, the one hand-written source of both clients (see :mod:`odin_client.client`)."""
