"""The asyncio client."""
