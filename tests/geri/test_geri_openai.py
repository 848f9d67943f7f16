"""Integration: the OpenAI-compatible backend against a real `transformers serve` running SmolLM2, and
against servers that misbehave (HTTP 500, a broken stream, no first byte) — each a clear status naming
the server, and a fallback down the model list."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import jsonschema
import pytest
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.base import ChatMessage
from geri.backends.openai_compatible import OpenAICompatibleBackend
from geri.server import build_server
from geri.settings import ModelRoute
from tests.geri.geri_servers_support import OpenAICompatibleServer, free_port, geri_settings

pytestmark = pytest.mark.integration

SCHEMA = {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}},
          "additionalProperties": False}


@contextlib.contextmanager
def geri_with(models: list[dict[str, object]], **settings: object) -> Iterator[geri_pb2_grpc.GeriServiceStub]:
    handle = build_server(geri_settings(models=models, **settings))
    try:
        with grpc.insecure_channel(handle.address) as channel:
            yield geri_pb2_grpc.GeriServiceStub(channel)
    finally:
        handle.stop(1.0)


def ask(prompt: str, max_tokens: int = 12, **generation: object) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id="oa-1", model_type=common_pb2.LLM, prompt=prompt,
        metadata=common_pb2.RequestMetadata(max_tokens=max_tokens, temperature=0.0),
        generation=common_pb2.GenerationOptions(**generation),  # type: ignore[arg-type]
    )


def openai_route(server: OpenAICompatibleServer, **extra: object) -> dict[str, object]:
    return {"name": "smol-remote", "backend": "openai", "model": server.model, "base_url": server.base_url, **extra}


def test_generates_streams_and_lists_through_the_openai_protocol(
        openai_compatible_server: OpenAICompatibleServer) -> None:
    with geri_with([openai_route(openai_compatible_server)]) as stub:
        llm = stub.Generate(ask("Say hello."), timeout=300).llm_response
        assert llm.text.strip() and llm.backend == "openai" and llm.model_used == openai_compatible_server.model
        assert llm.prompt_tokens > 0 and 0 < llm.completion_tokens <= 12  # usage reported by the server
        events = list(stub.GenerateStream(ask("Say hello."), timeout=300))
        kinds = [e.WhichOneof("event") for e in events]
        assert kinds[-1] == "final" and kinds.count("text_delta") >= 2
        assert "".join(e.text_delta for e in events[:-1]) == events[-1].final.llm_response.text
        listed = stub.ListModels(geri_pb2.ListModelsRequest(), timeout=30)
        assert [(m.name, m.backend, m.state) for m in listed.models][0] == ("smol-remote", "openai", "closed")


def test_a_model_the_server_does_not_serve_is_failed_precondition_naming_it(
        openai_compatible_server: OpenAICompatibleServer) -> None:
    with geri_with([openai_route(openai_compatible_server)]) as stub, pytest.raises(grpc.RpcError) as info:
        stub.Generate(ask("hi", model="nosuch/model-1b"), timeout=120)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert openai_compatible_server.base_url in info.value.details()


def test_a_server_that_ignores_response_format_never_yields_unvalidated_json(
        openai_compatible_server: OpenAICompatibleServer, embedded_backend: object) -> None:
    """`transformers serve` ignores response_format: Geri checks the reply, repairs once, and hands the request
    to the next entry (the embedded model, which enforces the schema while decoding)."""
    models = [openai_route(openai_compatible_server), {"name": "smollm2-135m-instruct", "backend": "embedded"}]
    with geri_with(models) as stub:
        llm = stub.Generate(ask("Which port does the relay use? It is 9427.", max_tokens=40,
                                json_schema=json.dumps(SCHEMA)), timeout=600).llm_response
    jsonschema.validate(json.loads(llm.json), SCHEMA)
    assert llm.text == llm.json and llm.backend in ("openai", "embedded")


class Misbehaving(BaseHTTPRequestHandler):
    """An OpenAI-shaped server that fails in the way its class attribute ``mode`` says."""

    mode = "500"

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:  # noqa: N802 - /v1/models, for the health probe
        self._send(200, b'{"object": "list", "data": []}', "application/json")

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.mode == "500":
            self._send(500, b'{"error": {"message": "CUDA out of memory"}}', "application/json")
        elif self.mode == "malformed":
            self._send(200, b"data: {not json at all\n\n", "text/event-stream")
        elif self.mode == "slow":
            time.sleep(5)

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize(("mode", "code", "words"), [
    ("500", grpc.StatusCode.UNAVAILABLE, "HTTP 500"),
    ("malformed", grpc.StatusCode.UNAVAILABLE, "cannot read"),
    ("slow", grpc.StatusCode.DEADLINE_EXCEEDED, "did not answer within 1s"),
    ("unreachable", grpc.StatusCode.UNAVAILABLE, "cannot reach"),
])
def test_misbehaving_servers_get_a_clear_status_naming_them(mode: str, code: grpc.StatusCode, words: str) -> None:
    handler = type("Handler", (Misbehaving,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1] if mode != "unreachable" else free_port()
    if mode == "unreachable":
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    base = f"http://127.0.0.1:{port}/v1"
    try:
        route = {"name": "bad", "backend": "openai", "base_url": base, "read_timeout_s": 1.0}
        with geri_with([route]) as stub, pytest.raises(grpc.RpcError) as info:
            stub.Generate(ask("hi"), timeout=60)
        assert info.value.code() == code, info.value.details()
        assert base in info.value.details() and words in info.value.details()
    finally:
        server.shutdown()
        server.server_close()


def test_a_chat_marker_spelled_in_a_message_reaches_the_server_as_text_not_as_a_turn(
        openai_compatible_server: OpenAICompatibleServer) -> None:
    # The server renders its template and tokenizes it with special tokens recognised: sent as spelled, each
    # <|im_end|> would be one special token and could close the user's turn.
    with geri_with([openai_route(openai_compatible_server)]) as stub:
        plain = stub.Generate(ask("Say hi.", max_tokens=1), timeout=300).llm_response.prompt_tokens
        spelled = stub.Generate(ask("Say hi." + "<|im_end|>" * 10, max_tokens=1), timeout=300).llm_response
    assert spelled.prompt_tokens - plain >= 40, (plain, spelled.prompt_tokens)  # 10 special tokens were 10


def test_the_window_estimate_covers_what_broken_markers_cost_the_server(
        openai_compatible_server: OpenAICompatibleServer) -> None:
    # Geri fits documents to the window with this estimate; a zero-width space costs a byte-level tokenizer up
    # to three tokens, so a document spelling markers grows on the wire. Underestimated, it overflows the
    # server's window (Ollama then cuts the prompt's start: the instructions).
    route = openai_route(openai_compatible_server)
    backend = OpenAICompatibleBackend(ModelRoute.model_validate(route), geri_settings(models=[route]))
    spelled = "Say hi." + "<s>[INST]<start_of_turn><|im_end|>" * 25

    def estimate(text: str) -> int:
        return backend.count_tokens([ChatMessage(role="user", content=text)], openai_compatible_server.model)

    with geri_with([route]) as stub:
        plain = stub.Generate(ask("Say hi.", max_tokens=1), timeout=300).llm_response.prompt_tokens
        marked = stub.Generate(ask(spelled, max_tokens=1), timeout=300).llm_response.prompt_tokens
    assert estimate(spelled) - estimate("Say hi.") >= marked - plain, (estimate(spelled), marked - plain)


class Echoing(BaseHTTPRequestHandler):
    """An OpenAI-shaped server whose model copies the markers of its prompt, breaks and all, in split pieces."""

    pieces = ("Use <", "\u200b|im_start|> or [\u200bINST]", " and <", "\u200bs>.")

    def log_message(self, *args: object) -> None:
        return None

    def do_GET(self) -> None:  # noqa: N802 - /v1/models, for the health probe
        self._send(b'{"object": "list", "data": []}', "application/json")

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        chunks = [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                  for piece in self.pieces]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}})
        head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        body = "".join(f"data: {json.dumps({**head, **c})}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self._send(body.encode(), "text/event-stream")

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_markers_the_model_copies_from_its_prompt_reach_the_client_as_the_text_it_was_given() -> None:
    # Geri breaks them on the way out; a reply that copies one (code, a quote of a prompt format) must give the
    # user the characters of the source, not an invisible zero-width space inside them.
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echoing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        route = {"name": "echo", "backend": "openai", "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1"}
        with geri_with([route]) as stub:
            llm = stub.Generate(ask("How do I open a turn?"), timeout=60).llm_response
            streamed = "".join(e.text_delta for e in stub.GenerateStream(ask("How do I open a turn?"), timeout=60))
    finally:
        server.shutdown()
        server.server_close()
    assert llm.text == streamed == "Use <|im_start|> or [INST] and <s>.", (llm.text, streamed)
