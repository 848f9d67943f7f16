"""The MCP tools: each checks its arguments against the limits, makes one Odin call, and returns plain JSON.

Nothing here names a tenant: the Odin client a call uses is the caller's (:mod:`odin_client.mcp.clients`),
whose tenant comes from the API key. An Odin error becomes a ``ToolError`` whose text says what failed and
why, so the agent sees a tool error it can act on, never a crash of the server.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from odin_client.client import AsyncOdinClient
from odin_client.frameworks.passages import location_fields
from odin_client.mcp.settings import McpSettings
from odin_client.types.errors import OdinError
from odin_client.types.results import Answer, Source

P = ParamSpec("P")
R = TypeVar("R")

SEARCH_DOC = """Search the indexed documents for passages relevant to a query (hybrid keyword + semantic search).
Use it to find facts, quotes or where something is written; each passage comes with its document_id,
chunk_id, title, location (page, slide, section) and a relevance score in [0, 1]. Pass document_ids to search
inside particular documents, filters to match document metadata. Returns no passages (nothing_relevant=true)
when nothing is relevant enough: then say so rather than guess."""
ASK_DOC = """Answer a question from the indexed documents, with citations. Retrieves passages and has the
language model answer only from them: the answer cites each sentence it rests on ([1], [2] …, listed in
citations with document_id, chunk_id and the quoted sentence). answered=false with a reason when the documents
do not contain the answer. Slower than search (it runs a language model); prefer search when you will read
the passages yourself."""
GET_DOC = """Get one document's record by its document_id: source name, content type, number of chunks, when
it was indexed, languages and its metadata (e.g. frontmatter title, author). Use search to read its text."""
LIST_DOC = """List the indexed documents (id, source, title, chunk count), page by page in id order. Pass the
returned next_page_token to get the next page; an empty token means this was the last page."""
LINKS_DOC = """The knowledge-graph links of a document: outgoing links written in it (wiki links, Markdown
links, related_to/depends_on fields) and backlinks from other documents to it. A link whose
target_document_id is empty points at a name no indexed document has yet."""
INDEX_DOC = """Add a text document to the index (or replace the document with the same source / document_id).
Markdown with YAML frontmatter is understood. Only offered to callers allowed to write."""
DELETE_DOC = """Delete a document and all its passages from the index, permanently. Only offered to callers
allowed to delete."""


def odin_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn Odin's errors into tool errors that say what failed (the SDK shows them as ``isError`` results)."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except OdinError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def _bounded(name: str, value: str, limit: int, setting: str) -> str:
    if len(value) > limit:
        raise ToolError(f"{name} is {len(value):,} characters; the limit is {limit:,} ({setting})")
    return value


def _needed(name: str, value: str) -> str:
    if not value.strip():
        raise ToolError(f"{name} must not be empty")
    return value


def _location(source: Source) -> dict[str, str]:
    found = location_fields(source)
    if source.location:
        found["label"] = source.location
    return found


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def passage(source: Source, limit: int) -> dict[str, Any]:
    """One retrieved chunk as the agent sees it."""
    return {"document_id": source.document_id, "chunk_id": source.chunk_id,
            "title": source.metadata.get("title") or source.source, "source": source.source,
            "location": _location(source), "score": source.score, "text": _clip(source.content, limit)}


def answer_result(answer: Answer, limit: int) -> dict[str, Any]:
    """A grounded answer as the agent sees it."""
    return {
        "answered": answer.answered, "answer": answer.text, "reason": answer.reason, "confidence": answer.confidence,
        "citations": [{"marker": c.marker, "document_id": c.document_id, "chunk_id": c.chunk_id, "title": c.title,
                       "location": c.location, "quote": _clip(c.quote, limit), "score": c.score}
                      for c in answer.citations],
        "sources": [{"document_id": s.document_id, "chunk_id": s.chunk_id, "title": s.metadata.get("title") or s.source,
                     "location": _location(s), "score": s.score} for s in answer.sources],
    }


Client = Callable[[], Awaitable[AsyncOdinClient]]
Mode = Literal["", "hybrid", "dense", "sparse"]
FilterValue = str | list[str]


class OdinTools:
    """The tool functions, bound to the limits and to a way of getting the current caller's Odin client."""

    def __init__(self, settings: McpSettings, client: Client) -> None:
        self.limits = settings
        self._client = client

    def _check_filters(self, filters: dict[str, FilterValue] | None) -> None:
        if filters and len(filters) > self.limits.max_filters:
            raise ToolError(f"filters has {len(filters)} keys; the limit is {self.limits.max_filters} (max_filters)")
        for key, value in (filters or {}).items():
            for item in [key, *([value] if isinstance(value, str) else value)]:
                _bounded("a filter key or value", item, self.limits.max_id_chars, "max_id_chars")

    def _check_id(self, name: str, value: str) -> str:
        return _bounded(name, _needed(name, value), self.limits.max_id_chars, "max_id_chars")

    @odin_errors
    async def search(
        self,
        query: Annotated[str, Field(description="What to look for: a question, keywords or an error code")],
        top_k: Annotated[int, Field(ge=1, description="How many passages to return (1 to max_top_k)")] = 5,
        mode: Annotated[Mode, Field(description='"hybrid" (default), "sparse" (exact words, codes, names) or '
                                                '"dense" (meaning, paraphrases); "" = the server default')] = "",
        filters: Annotated[dict[str, FilterValue] | None, Field(
            description='Document metadata to match, e.g. {"team": "kitchen", "year": ["2024", "2025"]} (keys ANDed, '
                        'a list of values ORed); @source, @content_type and @owner_id are built-in fields')] = None,
        document_ids: Annotated[list[str] | None, Field(description="Search only inside these documents")] = None,
    ) -> dict[str, Any]:
        """Search (see SEARCH_DOC)."""
        _bounded("query", _needed("query", query), self.limits.max_query_chars, "max_query_chars")
        if top_k > self.limits.max_top_k:
            raise ToolError(f"top_k is {top_k}; the limit is {self.limits.max_top_k} (max_top_k)")
        self._check_filters(filters)
        ids = [self._check_id("a document id", d) for d in document_ids or []]
        if len(ids) > self.limits.max_page_size:
            raise ToolError(f"document_ids has {len(ids)} ids; the limit is {self.limits.max_page_size} "
                            "(max_page_size)")
        found = await (await self._client()).retrieve(query, top_k=top_k, mode=mode, filters=filters, document_ids=ids)
        return {"passages": [passage(s, self.limits.max_passage_chars) for s in found.sources],
                "nothing_relevant": not found.sources, "below_threshold": found.below_threshold,
                "warnings": found.warnings}

    @odin_errors
    async def ask(
        self,
        question: Annotated[str, Field(description="The question, in the user's words")],
        top_k: Annotated[int, Field(ge=0, description="Passages to retrieve (0 = the server default)")] = 0,
        mode: Annotated[Mode, Field(description='Search mode, as for search ("" = the server default)')] = "",
        filters: Annotated[dict[str, FilterValue] | None, Field(
            description="Document metadata to match, as for search")] = None,
    ) -> dict[str, Any]:
        """Ask (see ASK_DOC)."""
        _bounded("question", _needed("question", question), self.limits.max_query_chars, "max_query_chars")
        if top_k > self.limits.max_top_k:
            raise ToolError(f"top_k is {top_k}; the limit is {self.limits.max_top_k} (max_top_k)")
        self._check_filters(filters)
        answer = await (await self._client()).ask(question, top_k=top_k, mode=mode, filters=filters)
        return answer_result(answer, self.limits.max_passage_chars)

    @odin_errors
    async def get_document(
        self, document_id: Annotated[str, Field(description="The document's id, as search or list_documents give it")],
    ) -> dict[str, Any]:
        """Get a document (see GET_DOC)."""
        record = await (await self._client()).get_document(self._check_id("document_id", document_id))
        return record.to_dict()

    @odin_errors
    async def list_documents(
        self,
        page_size: Annotated[int, Field(ge=1, description="Documents per page (1 to max_page_size)")] = 50,
        page_token: Annotated[str, Field(description="next_page_token of the previous page; empty for the first")] = "",
        owner_id: Annotated[str, Field(description="Only the documents of this data owner (empty = all)")] = "",
    ) -> dict[str, Any]:
        """List documents (see LIST_DOC)."""
        if page_size > self.limits.max_page_size:
            raise ToolError(f"page_size is {page_size}; the limit is {self.limits.max_page_size} (max_page_size)")
        _bounded("page_token", page_token, self.limits.max_id_chars, "max_id_chars")
        _bounded("owner_id", owner_id, self.limits.max_id_chars, "max_id_chars")
        page = await (await self._client()).list_documents(page_size=page_size, page_token=page_token,
                                                           owner_id=owner_id)
        return {"documents": [{"document_id": d.document_id, "source": d.source,
                               "title": d.metadata.get("title") or d.source, "content_type": d.content_type,
                               "chunk_count": d.chunk_count, "indexed_at": d.indexed_at} for d in page.documents],
                "next_page_token": page.next_page_token}

    @odin_errors
    async def links(
        self,
        document_id: Annotated[str, Field(description="The document whose links to list")],
        max_links: Annotated[int, Field(ge=1, description="Links per direction (1 to max_page_size)")] = 50,
    ) -> dict[str, Any]:
        """Links and backlinks (see LINKS_DOC)."""
        if max_links > self.limits.max_page_size:
            raise ToolError(f"max_links is {max_links}; the limit is {self.limits.max_page_size} (max_page_size)")
        found = await (await self._client()).list_links(self._check_id("document_id", document_id),
                                                        page_size=max_links)

        def edges(items: Any) -> list[dict[str, Any]]:
            return [{"source_document_id": e.source_document_id, "target_document_id": e.target_document_id,
                     "target": e.target, "kind": e.kind} for e in items]

        return {"document_id": found.document_id, "outgoing": edges(found.outgoing),
                "backlinks": edges(found.backlinks), "truncated": found.truncated}

    @odin_errors
    async def index_text(
        self,
        text: Annotated[str, Field(description="The document's text (plain text or Markdown)")],
        source: Annotated[str, Field(description='A name for the document, e.g. "notes/meeting-2026-11-25.md"')],
        document_id: Annotated[str, Field(description="Its id (empty = derived from source)")] = "",
        metadata: Annotated[dict[str, str] | None, Field(description="Metadata to store with it")] = None,
    ) -> dict[str, Any]:
        """Index a text (see INDEX_DOC)."""
        _bounded("text", _needed("text", text), self.limits.max_text_chars, "max_text_chars")
        self._check_id("source", source)
        if document_id:
            self._check_id("document_id", document_id)
        self._check_filters(dict(metadata or {}))
        done = await (await self._client()).index_text(text, source=source, document_id=document_id,
                                                       metadata=metadata)
        return done.to_dict()

    @odin_errors
    async def delete_document(
        self, document_id: Annotated[str, Field(description="The document to delete")],
    ) -> dict[str, Any]:
        """Delete a document (see DELETE_DOC)."""
        chunks = await (await self._client()).delete_document(self._check_id("document_id", document_id))
        return {"document_id": document_id, "deleted": True, "chunks_deleted": chunks}

    def table(self) -> list[tuple[str, Callable[..., Awaitable[dict[str, Any]]], str, str, bool]]:
        """(name, function, description, scope needed, read-only) of every tool."""
        return [
            ("search", self.search, SEARCH_DOC, "read", True),
            ("ask", self.ask, ASK_DOC, "read", True),
            ("get_document", self.get_document, GET_DOC, "read", True),
            ("list_documents", self.list_documents, LIST_DOC, "read", True),
            ("links", self.links, LINKS_DOC, "read", True),
            ("index_text", self.index_text, INDEX_DOC, "write", False),
            ("delete_document", self.delete_document, DELETE_DOC, "delete", False),
        ]
