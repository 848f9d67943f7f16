"""Controllable Freki and Geri servicers for Odin's fault-injection tests, served by real gRPC servers.

Each servicer answers from canned data and can be told to fail (with any status, a number of times),
to hang, or to break a stream mid-way. They record every call (request, metadata, peer) so tests
can check what the client sent and how often.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc, geri_pb2, geri_pb2_grpc

from wolf_service.serving import ServerHandle, build_grpc_server


@dataclass
class Call:
    """One call a servicer received."""

    method: str
    request: Any
    metadata: dict[str, str]
    peer: str


@dataclass
class Faults:
    """What a servicer should do instead of answering.

    ``fail_times`` calls fail with ``code`` before the servicer answers normally (-1 = always).
    ``hang_s`` makes the first ``hang_times`` calls sleep before answering (to trip deadlines).
    """

    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE
    details: str = "injected failure"
    fail_times: int = 0
    hang_s: float = 0.0
    hang_times: int = 0


@dataclass
class Recorder:
    """Shared call log and fault switch of a servicer."""

    faults: Faults = field(default_factory=Faults)
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        """Record the call, then apply any injected hang or failure."""
        with self.lock:
            md = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
            self.calls.append(Call(method, request, md, context.peer()))
            n = len([c for c in self.calls if c.method == method])
            f = self.faults
            fail = f.fail_times < 0 or n <= f.fail_times
            hang = f.hang_s if n <= f.hang_times else 0.0
        if hang:
            time.sleep(hang)
        if fail:
            context.abort(f.code, f.details)

    def count(self, method: str) -> int:
        """How many times ``method`` was called."""
        with self.lock:
            return sum(1 for c in self.calls if c.method == method)


def sample_context() -> common_pb2.RAGContext:
    """Two retrieved chunks about a made-up gateway."""
    docs = [
        common_pb2.RetrievedDocument(
            document_id="gateway-ports", chunk_id="gateway-ports#0", chunk_index=0,
            source="corpus/ports.md", relevance_score=0.91,
            content="The Skadi gateway listens on TCP port 7443 by default.", metadata={"product": "skadi"},
        ),
        common_pb2.RetrievedDocument(
            document_id="gateway-errors", chunk_id="gateway-errors#2", chunk_index=2,
            source="corpus/errors.md", relevance_score=0.55,
            content="Error SKD-404 means the route table is empty.", metadata={"product": "skadi", "page": "3"},
            location=common_pb2.SourceLocation(page=3, label="p. 3"),
        ),
    ]
    return common_pb2.RAGContext(documents=docs, retrieval_score=0.73)


class ControlledFreki(freki_pb2_grpc.FrekiServiceServicer):
    """Freki that returns :func:`sample_context` (or ``context`` when set) and echoes index requests."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.rec = recorder or Recorder()
        self.context: common_pb2.RAGContext | None = None

    def RetrieveContext(self, request: common_pb2.WolfRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("RetrieveContext", request, context)
        found = sample_context() if self.context is None else self.context
        return common_pb2.WolfResponse(
            request_id=request.request_id, model_type=common_pb2.RAG, rag_context=found,
            metadata=common_pb2.ResponseMetadata(duration_ms=3),
        )

    def IndexDocument(self, request: freki_pb2.IndexDocumentRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("IndexDocument", request, context)
        if not request.content and not request.content_bytes:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "document has no content")
        return freki_pb2.IndexDocumentResponse(
            request_id=request.request_id, document_id=request.document_id or f"id:{request.source}",
            chunk_count=1, chunks_embedded=1, changed=True, outcome=freki_pb2.INDEX_OUTCOME_CREATED,
        )

    def GetIndexStatus(self, request: freki_pb2.GetIndexStatusRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("GetIndexStatus", request, context)
        return freki_pb2.IndexStatus(document_count=2, chunk_count=5, embedding_model="all-MiniLM-L6-v2",
                                     embedding_dimension=384, store_backend="edge", collection="wolf")


class ControlledGeri(geri_pb2_grpc.GeriServiceServicer):
    """Geri whose answer names the context documents it was given.

    ``stream_deltas`` are sent by GenerateStream; ``break_after`` > 0 makes the stream block after
    that many deltas until ``release`` is set (the test then stops the server under it);
    ``omit_final`` ends the stream without its final event.
    """

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.rec = recorder or Recorder()
        self.stream_deltas = ["The gateway ", "listens on ", "port 7443."]
        self.break_after = 0
        self.omit_final = False
        self.release = threading.Event()
        self.blocked = threading.Event()
        self.terminated = threading.Event()  # set when the RPC ends (completed or cancelled)
        # Structured replies (json_schema requests), by what the schema asks for: a grounded answer
        # ("answered" in its properties), a rewritten query ("query") or variants ("variants").
        self.structured: dict[str, dict[str, Any]] = {
            "answered": {"answered": True, "reason": "", "citations": [{"source": 1, "sentence": 1}],
                         "answer": "The gateway listens on port 7443 [1].", "summary": "Port 7443.",
                         "key_details": ["TLS"], "confidence": 0.99},
            "query": {"query": "Which port does the Skadi gateway listen on?"},
            "variants": {"variants": ["gateway port number", "Which port?", "port of the gateway"]},
        }
        # Structured requests whose schema has one of these properties fail with FAILED_PRECONDITION.
        self.fail_schemas: set[str] = set()
        # Tool calls to answer with, one list per request that offers tools (and does not forbid them).
        self.tool_script: list[list[tuple[str, str, dict[str, Any]]]] = []

    def _answer(self, request: common_pb2.WolfRequest) -> common_pb2.WolfResponse:
        ids = ",".join(d.document_id for d in request.context.documents) or "none"
        text = f"Answer to {request.prompt!r} from [{ids}]: port 7443."
        structured = ""
        if request.generation.json_schema:
            schema = json.loads(request.generation.json_schema)
            properties = {k for shape in [schema, *schema.get("anyOf", [])] for k in shape.get("properties", {})}
            structured = json.dumps(next(v for k, v in self.structured.items() if k in properties))
            text = structured
        calls: list[common_pb2.ToolCall] = []
        if request.generation.tools and request.generation.tool_choice != "none" and self.tool_script:
            calls = [common_pb2.ToolCall(id=i, name=n, arguments_json=json.dumps(a))
                     for i, n, a in self.tool_script.pop(0)]
            text = ""
        return common_pb2.WolfResponse(
            request_id=request.request_id, model_type=common_pb2.LLM,
            llm_response=common_pb2.LLMResponse(
                text=text, json=structured, model_used="test-model", backend="embedded", tool_calls=calls,
                prompt_tokens=10, completion_tokens=5, tokens_used=15, latency_ms=7,
                finish_reason="tool_calls" if calls else "stop",
            ),
        )

    def GetSession(self, request: geri_pb2.SessionRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("GetSession", request, context)
        if request.session_id != "known":
            context.abort(grpc.StatusCode.NOT_FOUND, f"session {request.session_id!r} does not exist")
        return geri_pb2.Session(session_id="known", turns=[
            common_pb2.ChatTurn(role="user", content="Tell me about the Skadi gateway."),
            common_pb2.ChatTurn(role="assistant", content='{"answered": true, "answer": "It routes traffic."}')])

    def Generate(self, request: common_pb2.WolfRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("Generate", request, context)
        if request.generation.json_schema and self.fail_schemas & set(
                json.loads(request.generation.json_schema).get("properties", {})):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the model did not produce a valid reply")
        return self._answer(request)

    def GenerateStream(self, request: common_pb2.WolfRequest, context: grpc.ServicerContext) -> Iterator[Any]:  # noqa: N802
        self.rec.enter("GenerateStream", request, context)
        context.add_callback(self.terminated.set)
        for i, delta in enumerate(self.stream_deltas, 1):
            yield geri_pb2.GenerateEvent(request_id=request.request_id, text_delta=delta)
            if i == self.break_after:
                self.blocked.set()
                self.release.wait(10)
                return
        if not self.omit_final:
            final = self._answer(request)
            final.llm_response.text = "".join(self.stream_deltas)
            yield geri_pb2.GenerateEvent(request_id=request.request_id, final=final)

    def ListModels(self, request: geri_pb2.ListModelsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("ListModels", request, context)
        return geri_pb2.ListModelsResponse(
            models=[geri_pb2.ModelInfo(name="test-model", backend="embedded")], default_model="test-model"
        )


def serve_freki(servicer: ControlledFreki, address: str = "127.0.0.1:0") -> ServerHandle:
    """Start a real gRPC server for ``servicer`` (port 0 = any free port)."""
    return build_grpc_server(
        register=lambda s: freki_pb2_grpc.add_FrekiServiceServicer_to_server(servicer, s),
        service_names=["wolf.v1.FrekiService"], address=address, max_workers=4,
    )


def serve_geri(servicer: ControlledGeri, address: str = "127.0.0.1:0") -> ServerHandle:
    """Start a real gRPC server for ``servicer``."""
    return build_grpc_server(
        register=lambda s: geri_pb2_grpc.add_GeriServiceServicer_to_server(servicer, s),
        service_names=["wolf.v1.GeriService"], address=address, max_workers=4,
    )


def free_port() -> int:
    """A port nothing listens on right now (for a server that is down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeClock:
    """A clock whose sleeps only advance time and are recorded; ``on_sleep`` runs at each sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep: Any = None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))


class RecordingClock:
    """The real clock, recording the waits requested (for tests that need real time to pass)."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.on_sleep: Any = None

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))
        time.sleep(seconds)


class FixedRandom:
    """A random source that always returns ``value`` (to make jitter exact)."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value
