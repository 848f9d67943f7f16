"""Request bodies the gateway accepts, validated by pydantic (unknown fields are ignored, as OpenAI
clients send many; the ones that change an answer are honoured or refused, never silently dropped)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    """One chat message; content may be text or OpenAI's list of text parts."""

    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The message's text (text parts joined; other parts are refused by the caller)."""
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: dict[str, Any] | None = None


class ChatRequest(BaseModel):
    """POST /v1/chat/completions."""

    model_config = ConfigDict(extra="ignore")
    model: str = ""
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1, le=32_768)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=32_768)
    temperature: float | None = Field(default=None, ge=0, le=2)
    response_format: ResponseFormat | None = None
    n: int = Field(default=1, ge=1, le=1)
    user: str | None = None  # null or "" = no end user named (OpenAI clients send either)
    # Gateway extensions (ignored by other servers): answer from the index (default) or from the model alone.
    rag: bool = True
    top_k: int = Field(default=0, ge=0, le=100)
    filters: dict[str, str | list[str]] | None = None
    tenant_id: str | None = None
    # With stream and rag: send the answer text before Geri has checked it (None: the gateway's setting).
    stream_provisional: bool | None = None


class EmbeddingsRequest(BaseModel):
    """POST /v1/embeddings."""

    model_config = ConfigDict(extra="ignore")
    input: str | list[str]
    model: str = ""
    encoding_format: Literal["float", "base64"] = "float"
    # OpenAI's shortened vectors: only the model's own dimension can be served (refused otherwise, never ignored).
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None  # null or "" = no end user named (OpenAI clients send either)
    tenant_id: str | None = None


class IndexRequest(BaseModel):
    """POST /v1/documents: one text document."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    source: str = Field(min_length=1, max_length=4096)
    document_id: str = ""
    content_type: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)
    owner_id: str = ""
    tenant_id: str | None = None


class RetrieveRequest(BaseModel):
    """POST /v1/retrieve."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1)
    top_k: int = Field(default=0, ge=0, le=100)
    filters: dict[str, str | list[str]] | None = None
    mode: Literal["", "dense", "sparse", "hybrid"] = ""
    tenant_id: str | None = None
