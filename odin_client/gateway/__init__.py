"""An OpenAI-compatible HTTP door to Freki and Geri (``odin-gateway serve``).

Tools that speak the OpenAI API — chat UIs, LangChain, LlamaIndex, the ``openai`` client — can use the
platform without gRPC: ``/v1/models``, ``/v1/chat/completions`` (grounded, cited answers by default,
SSE streaming), ``/v1/embeddings``, plus JSON endpoints for documents and retrieval. Stages:
``settings`` (limits, bind address), ``schemas`` (validated request bodies), ``clients`` (one Odin
client per API key, reused), ``chat`` (OpenAI chat ↔ Odin ask/generate), ``errors`` (Odin errors → HTTP),
``app`` (the routes), ``cli`` (the console script).
"""

from odin_client.gateway.app import create_app
from odin_client.gateway.settings import GatewaySettings

__all__ = ["GatewaySettings", "create_app"]
