"""The OpenAI-compatible gateway, driven by the official ``openai`` client, in front of the real Freki
(packaged MiniLM + Qdrant's engine) and the real Geri (embedded SmolLM2), over a real HTTP port."""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import uvicorn

from freki.api.server import build_server as build_freki
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from odin_client import OdinSettings
from odin_client.gateway import GatewaySettings, create_app
from tests.geri.geri_servers_support import embedded_backend, geri_server  # noqa: F401
from tests.odin_client.servicers_support import free_port
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def freki(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[ServerHandle]:  # type: ignore[no-untyped-def]
    settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("gw-freki"),
                             shutdown_grace_s=1.0)
    handle, engine = build_freki(settings, engine=FrekiEngine(settings, embedder=embedder))
    yield handle
    handle.stop(1.0)
    engine.close()


@pytest.fixture(scope="module")
def gateway(freki: ServerHandle, geri_server: ServerHandle) -> Iterator[str]:  # noqa: F811
    port = free_port()
    odin = OdinSettings(freki_target=freki.address, geri_target=geri_server.address, generate_deadline_s=600)
    app = create_app(GatewaySettings(port=port, max_body_bytes=64_000, max_messages=8), odin)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    post(base, "/v1/documents", {"text": "The Hrafn relay admin API listens on TCP port 9427. It logs to syslog.",
                                 "source": "relay/admin#ports.md", "metadata": {"team": "net"}})
    yield base
    server.should_exit = True
    thread.join(10)


def post(base: str, path: str, data: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    request = urllib.request.Request(base + path, raw, {"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=600) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture(scope="module")
def client(gateway: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway}/v1", api_key="unused-keys-are-off", max_retries=0, timeout=600)


def test_models_lists_geris_model(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list().data] == ["smollm2-135m-instruct"]


def test_chat_answers_from_the_index_with_sources(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="", messages=[{"role": "user", "content": "Which port does the Hrafn relay admin API listen on?"}],
        max_tokens=300)
    content = reply.choices[0].message.content or ""
    rag = reply.model_extra["rag"]  # type: ignore[index]
    assert rag["sources"][0]["document_id"] == "relay/admin#ports.md"
    if rag["answered"]:
        assert rag["citations"][0]["quote"] == "The Hrafn relay admin API listens on TCP port 9427."
        assert "[1]" in content
    else:
        assert content.startswith("The indexed documents do not answer this")
    off = client.chat.completions.create(model="", messages=[{"role": "user", "content": "Capital of Peru?"}])
    assert off.model_extra["rag"]["answered"] is False  # type: ignore[index]


def test_chat_streams_server_sent_events(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(
        model="", messages=[{"role": "user", "content": "Say hello."}], stream=True, max_tokens=8,
        extra_body={"rag": False}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip() and chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_a_grounded_answer_streams_with_its_citations_last(client: openai.OpenAI) -> None:
    question = [{"role": "user", "content": "Which port does the Hrafn relay admin API listen on?"}]
    chunks = list(client.chat.completions.create(model="", messages=question, stream=True,  # type: ignore[arg-type]
                                                 extra_body={"stream_provisional": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    rag = chunks[-1].model_extra["rag"]  # type: ignore[index]
    assert chunks[-1].choices[0].finish_reason == "stop" and rag["sources"][0]["document_id"] == "relay/admin#ports.md"
    assert text.endswith(rag["answer"])  # the checked text, or the provisional text then the correction
    if rag["answered"]:
        assert rag["citations"][0]["quote"] == "The Hrafn relay admin API listens on TCP port 9427."
    else:
        assert rag["answer"].startswith("The indexed documents do not answer this")


def test_chat_without_rag_honours_a_json_schema(client: openai.OpenAI) -> None:
    schema = {"type": "object", "additionalProperties": False, "required": ["port"],
              "properties": {"port": {"type": "integer"}}}
    reply = client.chat.completions.create(
        model="", messages=[{"role": "system", "content": "Reply in JSON."},
                            {"role": "user", "content": "Port 9427 is the admin port. Which port?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": schema}},
        max_tokens=20, extra_body={"rag": False})
    assert isinstance(json.loads(reply.choices[0].message.content or "")["port"], int)


def test_embeddings_are_the_index_models_unit_vectors(client: openai.OpenAI) -> None:
    data = client.embeddings.create(model="", input=["a cat", "a cat", "tax law"]).data  # base64 on the wire
    assert [len(d.embedding) for d in data] == [384] * 3 and data[0].embedding == data[1].embedding
    assert abs(sum(x * x for x in data[0].embedding) - 1) < 1e-4
    plain = client.embeddings.create(model="", input="a cat", encoding_format="float").data[0].embedding
    assert max(abs(a - b) for a, b in zip(plain, data[0].embedding, strict=True)) < 1e-6


def test_documents_list_get_retrieve_delete(gateway: str) -> None:
    assert post(gateway, "/v1/documents", {"text": "Temporary note.", "source": "tmp/x?.md"})[0] == 200
    with urllib.request.urlopen(f"{gateway}/v1/documents", timeout=60) as reply:
        ids = [d["document_id"] for d in json.loads(reply.read())["documents"]]
    assert ids == ["relay/admin#ports.md", "tmp/x?.md"]
    with urllib.request.urlopen(f"{gateway}/v1/documents/relay/admin%23ports.md", timeout=60) as reply:
        assert json.loads(reply.read())["metadata"]["team"] == "net"
    status, hits = post(gateway, "/v1/retrieve", {"query": "relay admin port", "top_k": 1})
    assert status == 200 and hits["sources"][0]["document_id"] == "relay/admin#ports.md"
    request = urllib.request.Request(f"{gateway}/v1/documents/tmp/x%3F.md", method="DELETE")
    with urllib.request.urlopen(request, timeout=60) as reply:
        assert json.loads(reply.read())["chunks_deleted"] == 1
    request = urllib.request.Request(f"{gateway}/v1/documents/tmp/x%3F.md", method="DELETE")
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(request, timeout=60)
    error = json.loads(gone.value.read())["error"]
    assert gone.value.code == 404 and error["type"] == "not_found_error"
    assert error["reason"] == "NOT_FOUND" and error["hint"]  # Freki's status details, relayed


def test_a_page_size_past_what_the_wire_carries_is_a_400(gateway: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{gateway}/v1/documents?page_size={2**31}", timeout=60)
    error = json.loads(refused.value.read())["error"]
    assert refused.value.code == 400 and error["code"] == "invalid_body" and "page_size" in error["message"], error


@pytest.mark.parametrize(("path", "data", "status", "says"), [
    ("/v1/chat/completions", {"messages": []}, 400, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": "hi"}]}, 400, "last message"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "q"}] * 9}, 413, "max_messages (8)"),
    ("/v1/chat/completions", b"x" * 70_000, 413, "max_body_bytes (64,000)"),
    ("/v1/chat/completions", b"{not json", 400, ""),
    ("/v1/embeddings", {"input": ["x"] * 65}, 413, "max_embedding_inputs (64)"),
    ("/v1/embeddings", {"input": ["y" * 9000]}, 429, "limits.embed_max_chars"),
    ("/v1/documents", {"text": "x", "source": "a\x00b"}, 400, "U+0000"),
])
def test_bad_input_gets_a_clear_openai_style_error(gateway: str, path: str, data: Any, status: int, says: str) -> None:
    code, reply = post(gateway, path, data)
    assert code == status and says in reply["error"]["message"], reply
    assert set(reply["error"]) >= {"message", "type", "param", "code"} and reply["error"]["code"], reply


def test_the_gateways_own_refusals_carry_a_stable_code_and_param(gateway: str) -> None:
    question = {"messages": [{"role": "user", "content": "q"}]}
    cases = [(post(gateway, "/v1/chat/completions", {"messages": [{"role": "user", "content": "q"}] * 9}),
              413, "too_many_messages", "messages"),
             (post(gateway, "/v1/chat/completions", {"messages": "nope"}), 400, "invalid_body", "messages"),
             (post(gateway, "/v1/embeddings", {"input": []}), 400, "empty_input", "input"),
             (post(gateway, "/v1/chat/completions", b"x" * 70_000), 413, "body_too_large", None),
             (post(gateway, "/v1/retrieve", {"query": "x"}, {"authorization": "Basic abc"}), 401,
              "invalid_authorization", "Authorization"),
             (post(gateway, "/v1/no-such-route", question), 404, "unknown_route", None),
             (post(gateway, "/v1/embeddings", {"input": ["y" * 9000]}), 429, "resource_exhausted", None)]
    for (status, reply), want_status, code, param in cases:
        assert (status, reply["error"]["code"], reply["error"]["param"]) == (want_status, code, param), reply
    assert reply["error"]["reason"] == "RESOURCE_EXHAUSTED"  # Freki's ErrorInfo reason is the code


def test_the_end_user_reaches_freki_and_geri_as_x_wolf_user(gateway: str, client: openai.OpenAI,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wolf_service.access")
    client.chat.completions.create(model="", messages=[{"role": "user", "content": "Say hi."}], max_tokens=2,
                                   user="agent-7", extra_body={"rag": False})
    client.embeddings.create(model="", input="a cat", user="agent-8")
    assert post(gateway, "/v1/retrieve", {"query": "relay port", "top_k": 1}, {"X-Wolf-User": "agent-9"})[0] == 200
    assert post(gateway, "/v1/retrieve", {"query": "relay port", "top_k": 1})[0] == 200
    seen = [(r.rpc, r.user) for r in caplog.records if r.name == "wolf_service.access"]  # type: ignore[attr-defined]
    assert seen == [("GeriService/Generate", "agent-7"), ("FrekiService/Embed", "agent-8"),
                    ("FrekiService/RetrieveContext", "agent-9"), ("FrekiService/RetrieveContext", "")]


@pytest.mark.parametrize(("body", "headers", "says"), [
    ({"user": "a" * 129}, {}, "user is 129 characters, over the gateway's user_id_max_chars=128"),
    ({"user": "eve<script>"}, {}, "user may only hold letters"),
    ({"user": "eve\n"}, {}, "user may only hold letters"),  # Python's $ would match before a final newline
    ({}, {"X-Wolf-User": ""}, "X-Wolf-User is empty"),
    ({"user": "ann"}, {"X-Wolf-User": "bob"}, "name different users"),
])
def test_a_bad_user_id_is_a_400_before_any_call(gateway: str, body: dict[str, str], headers: dict[str, str],
                                                says: str) -> None:
    status, reply = post(gateway, "/v1/embeddings", {"input": "a cat", **body}, headers)
    assert status == 400 and says in reply["error"]["message"], reply
    assert reply["error"]["code"] == "invalid_user" and reply["error"]["type"] == "invalid_request_error"


def test_a_null_user_counts_as_absent_as_other_optional_fields_do(gateway: str) -> None:
    status, reply = post(gateway, "/v1/embeddings", {"input": "a cat", "user": None})
    assert status == 200 and len(reply["data"]) == 1, reply


def test_embeddings_refuse_dimensions_the_model_cannot_make(gateway: str) -> None:
    status, reply = post(gateway, "/v1/embeddings", {"input": "a cat", "dimensions": 3})
    assert status == 400 and reply["error"]["code"] == "unsupported_dimensions", reply
    assert "384-dimensional" in reply["error"]["message"] and reply["error"]["param"] == "dimensions"
    assert post(gateway, "/v1/embeddings", {"input": "a cat", "dimensions": 384})[0] == 200


def test_a_malformed_authorization_header_is_401(gateway: str) -> None:
    code, reply = post(gateway, "/v1/retrieve", {"query": "x"}, {"authorization": "Basic abc"})
    assert code == 401 and reply["error"]["type"] == "authentication_error"


def test_odin_gateway_console_script_refuses_a_taken_port(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "odin_client.gateway.cli", "serve", "--port", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "the port is in use" in done.stderr


def test_a_chunked_body_is_refused_once_it_passes_the_limit(gateway: str) -> None:
    import http.client
    from urllib.parse import urlparse

    url = urlparse(gateway)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    chunks = (b'{"query": "' + b"x" * 10_000 for _ in range(20))  # 200 kB, no Content-Length
    conn.request("POST", "/v1/retrieve", body=chunks, headers={"content-type": "application/json",
                                                              "transfer-encoding": "chunked"}, encode_chunked=True)
    reply = conn.getresponse()
    assert reply.status == 413 and "max_body_bytes (64,000)" in json.loads(reply.read())["error"]["message"]
