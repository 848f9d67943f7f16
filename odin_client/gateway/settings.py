"""Settings of the HTTP gateway (env ``ODIN_GATEWAY_…``, or a JSON file); the Freki/Geri targets,
deadlines and TLS come from the usual ``OdinSettings`` (``ODIN_…``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from wolf_service.auth import ApiKey
from wolf_service.settings import FileSettings


class GatewaySettings(FileSettings):
    """Where the gateway listens and what one request may carry."""

    model_config = SettingsConfigDict(env_prefix="ODIN_GATEWAY_", extra="forbid")

    host: str = Field(default="127.0.0.1", description="Listen address (0.0.0.0 in containers)")
    port: int = Field(default=8080, ge=0, le=65535)
    require_api_key: bool = Field(
        default=False, description="Refuse requests without 'Authorization: Bearer' (the key is checked by "
                                   "Freki and Geri either way when they have keys configured)")
    max_body_bytes: int = Field(default=1_048_576, ge=1024, description="Request body size, at most")
    max_messages: int = Field(default=64, ge=1, description="Messages of one chat completion")
    max_message_chars: int = Field(default=32_000, ge=1, description="Characters of one message")
    max_embedding_inputs: int = Field(default=64, ge=1, description="Inputs of one /v1/embeddings call")
    stream_provisional: bool = Field(
        default=False, description="Stream a grounded answer's text before it is checked (a revision then ends "
                                   "the content with a correction; docs/answers.md, Streaming)")
    user_id_max_chars: int = Field(
        default=128, ge=1, le=1024, description="Characters of a user id (body 'user' or 'X-Wolf-User'); keep it "
                                                "at most the services' security.user_id_max_chars")
    clients_cached: int = Field(default=32, ge=1, description="Odin clients (one per API key) kept open")
    api_keys: list[ApiKey] = Field(
        default_factory=list, description="Keys the gateway accepts (the same entries as Freki's and Geri's "
                                          "security.api_keys); an unknown key is refused with 401 before any "
                                          "client is opened. Empty: every key is passed on and checked there")
