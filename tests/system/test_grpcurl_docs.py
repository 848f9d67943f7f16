"""Every grpcurl command in docs/operations.md, run verbatim with the real grpcurl binary against a
real Freki (real model and engine) and a real Geri (embedded SmolLM2). Only the port is changed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from freki.settings import FrekiSettings
from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401
from tests.wolf_service.conftest import KEYS, api_keys

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
VENV_BIN = str(Path(sys.executable).parent)

# What a command's output must show, by the method (or verb) it calls.
EXPECTED = {
    "list": "grpc.health.v1.Health",
    "describe": "rpc ",
    "Health/Check": '"status": "SERVING"',
    "IndexDocument": '"outcome": "INDEX_OUTCOME_CREATED"',
    "IndexDocuments": '"outcome": "INDEX_OUTCOME_CREATED"',
    "RetrieveContext": '"document_id": "handbook"',
    "GetDocument": '"document_id": "handbook"',
    "ListDocuments": '"document_id": "handbook"',
    "GetIndexStatus": '"embedding_model": "all-MiniLM-L6-v2"',
    "Embed": '"dimension": 384',
    "FullReindex": '"documents_reindexed": 1',
    "FullReindex migrate_model": '"model_to": ',
    "ListLinks": '"target": "Services"',
    "RecordFeedback": '"rating": 4',
    "ExportOwnerData": '"chunk"',
    "DeleteDocument": '"document_id": "handbook"',
    "DeleteOwnerData": '"request_id": "gdpr-1"',
    "ListModels": '"default_model"',
    "Generate": '"llm_response"',
    "GenerateStream": '"final"',
    "GetSession": '"role": "assistant"',
    "DeleteOwnerSessions": '"sessions_deleted": 1',
    "DeleteSession": '"deleted": true',
    "Answer": '"answer"',
    "AnswerStream": '"final"',
    "RewriteQuery": '"query"',
    "GetSettings": '"settings_json"',
    "UpdateSettings": '"persisted": true',
}


def commands(section: str) -> list[str]:
    """The grpcurl commands of the fenced block after ``<!-- grpcurl-test: section -->``."""
    match = re.search(rf"<!-- grpcurl-test: {re.escape(section)} -->\s*```bash\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"docs/operations.md has no grpcurl block {section!r}"
    joined = re.sub(r"\\\n\s*", " ", match.group(1))
    out, current = [], ""
    for line in joined.splitlines():
        if line.startswith("grpcurl "):
            if current:
                out.append(current)
            current = line
        elif current:
            current += "\n" + line  # continuation inside a quoted -d argument
    return [*out, current] if current else out


def expectation(command: str) -> str:
    words = command.split()
    if "describe" in words:
        return "rpc " if words[-1].endswith("Service") else "is a message"
    if words[-1] == "list":
        return EXPECTED["list"]
    if '"migrate_model": true' in command:
        return EXPECTED["FullReindex migrate_model"]
    return EXPECTED["Health/Check" if words[-1].endswith("Health/Check") else words[-1].rsplit("/", 1)[-1]]


def run(command: str, port: int, *, geri_port: int | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> str:
    """Run a documented command on ``port`` (``geri_port`` for Geri's 50052 when both services are called)."""
    real = command.replace("localhost:50051", f"localhost:{port}").replace(
        "localhost:50052", f"localhost:{geri_port or port}")
    full_env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", **(env or {})}
    out = subprocess.run(["bash", "-o", "pipefail", "-c", real], capture_output=True, text=True, timeout=300, cwd=cwd,
                         env=full_env, check=False)
    assert out.returncode == 0, f"{command}\n{out.stderr}"
    want = expectation(command)
    assert want in out.stdout, f"{command}\nexpected {want!r} in:\n{out.stdout[:2000]}"
    return out.stdout


def test_freki_commands(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki()
    cmds = commands("freki")
    rpcs = {c.split()[-1] for c in cmds}
    for rpc in ("IndexDocument", "IndexDocuments", "RetrieveContext", "DeleteDocument", "GetDocument", "ListDocuments",
                "GetIndexStatus", "FullReindex", "DeleteOwnerData", "ExportOwnerData", "Embed", "ListLinks",
                "RecordFeedback"):
        assert f"wolf.v1.FrekiService/{rpc}" in rpcs, f"docs lack a grpcurl command for {rpc}"
    for command in cmds:
        run(command, handle.port)


def test_model_migration_commands(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """FullReindex with migrate_model, on a Freki whose settings name a second model while it serves the
    packaged MiniLM's index; then GetIndexStatus shows the migration."""
    from freki.api.server import build_server
    from freki.engine import FrekiEngine
    from freki.ingest.indexing import IndexInput
    from tests.freki.engine.small_models_support import build_second_model

    base = {"data_dir": tmp_path / "data", "embedding_backend": "torch", "reindex": {"switch_grace_s": 0.0}}
    engine = FrekiEngine(FrekiSettings(**base), embedder=embedder)  # type: ignore[arg-type]
    try:
        engine.index(IndexInput(tenant_id="default", document_id="handbook", data="Geri listens on port 50052.",
                                source="handbook.md"))
    finally:
        engine.close()
    second = build_second_model(tmp_path / "minilm3")
    settings = FrekiSettings(host="127.0.0.1", port=0, embedding_model=second, **base)  # type: ignore[arg-type]
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        cmds = commands("freki-migrate")
        assert [c.split()[-1] for c in cmds] == ["wolf.v1.FrekiService/FullReindex",
                                                 "wolf.v1.FrekiService/GetIndexStatus"]
        started = json.loads(run(cmds[0], handle.port))["migration"]
        assert (started["model_from"], started["model_to"]) == ("all-MiniLM-L6-v2", second)
        assert '"migration"' in run(cmds[1], handle.port)
        deadline = time.monotonic() + 120
        while (status := engine.blue_green.status()) and status.state not in ("done", "failed"):
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        assert status is not None and status.state == "done", status
    finally:
        handle.stop(1.0)
        engine.close()


def test_geri_commands(embedded_backend) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    cmds = commands("geri")
    assert {f"wolf.v1.GeriService/{r}" for r in ("Generate", "GenerateStream", "ListModels")} <= {
        c.split()[-1] for c in cmds}
    with start_geri(geri_settings(), embedded_backend) as handle:
        for command in cmds:
            output = run(command, handle.port)
            if command.endswith("GeriService/Generate"):
                llm = json.loads(output)["llm_response"]
                assert llm["completion_tokens"] > 0
                if "json_schema" in command:  # the documented structured call returns validated JSON
                    assert isinstance(json.loads(llm["json"])["port"], int)


def json_stream(output: str) -> list[dict]:  # type: ignore[type-arg]
    """The JSON objects grpcurl prints one after another for a server stream."""
    decoder, events, at = json.JSONDecoder(), [], 0
    while at < len(output.rstrip()):
        event, at = decoder.raw_decode(output, at)
        events.append(event)
        while at < len(output) and output[at].isspace():
            at += 1
    return events


def test_grounded_exchange_commands(tmp_path: Path, embedder, embedded_backend) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """Retrieve then Answer with that context, a follow-up rewritten from the session (RewriteQuery →
    RetrieveContext → Answer), an off-topic question, an answer streamed, and the session read and
    forgotten: grpcurl pipes each reply through jq into the next call (real Freki, embedded SmolLM2)."""
    from freki.api.server import build_server
    from freki.engine import FrekiEngine
    from tests.system.polyglot.citations_support import quotes_the_document
    from tests.wolf_service.conftest import ops_settings

    cmds = commands("grounded")
    assert [c.split()[-1].rsplit("/", 1)[-1] for c in cmds] == [
        "IndexDocument", "Answer", "Answer", "Answer", "AnswerStream", "GetSession", "DeleteSession"]
    settings = ops_settings(tmp_path)
    freki, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with start_geri(geri_settings(), embedded_backend) as geri:
            outputs = [run(c, freki.port, geri_port=geri.port) for c in cmds]
            with pytest.raises(AssertionError, match="NotFound"):  # DeleteSession forgot it
                run(cmds[5], freki.port, geri_port=geri.port)
    finally:
        freki.stop(1.0)
        engine.close()
    indexed, first, follow_up, off_topic, session = (json.loads(outputs[i]) for i in (0, 1, 2, 3, 5))
    streamed = json_stream(outputs[4])
    content = json.loads(re.search(r"-d '(\{.*?\})'", cmds[0], re.S).group(1))["content"]  # type: ignore[union-attr]
    assert indexed["outcome"] == "INDEX_OUTCOME_CREATED"
    for reply in (first, follow_up):
        answer = reply["answer"]
        assert answer.get("answered"), answer
        assert answer["citations"] and all(c["document_id"] == "relay" and quotes_the_document(c["quote"], content)
                                           for c in answer["citations"]), answer
    assert any("9427" in c["quote"] for c in first["answer"]["citations"]), first
    assert not off_topic["answer"].get("answered") and off_topic["answer"]["reason"], off_topic
    assert "llm_response" not in off_topic  # abstained before asking the model
    *deltas, last = streamed  # text deltas, then exactly one final event
    assert deltas and all(set(d) == {"request_id", "text_delta"} for d in deltas), streamed
    streamed_answer = last["final"]["answer"]
    assert streamed_answer.get("answered") and "9427" in streamed_answer["citations"][0]["quote"], last
    if not streamed_answer.get("revised"):  # the deltas add up to the checked text unless it was revised
        assert "".join(d["text_delta"] for d in deltas) == streamed_answer["text"], streamed
    turns = [(t["role"], t["content"]) for t in session["turns"]]
    assert turns == [("user", "Which port does the Hrafn Relay admin API listen on?"),
                     ("assistant", first["answer"]["text"]), ("user", "Where does it write its logs?"),
                     ("assistant", follow_up["answer"]["text"])]


def test_secure_commands(start_freki, certs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={
        "api_keys": api_keys(),
        "tls": {"cert_file": certs["server"], "key_file": certs["server.key"], "client_ca_file": certs["ca"]},
    })
    for command in commands("freki-secure"):
        run(command, handle.port, cwd=certs["ca"].parent, env={"WOLF_API_KEY": KEYS["acme"]})
    # The same call without the key is refused, so the header above is what made it work.
    bare = commands("freki-secure")[-1].replace('-H "authorization: Bearer $WOLF_API_KEY"', "")
    with pytest.raises(AssertionError, match="Unauthenticated"):
        run(bare, handle.port, cwd=certs["ca"].parent)


def test_documented_settings_example_is_valid(tmp_path: Path) -> None:
    example = re.search(r"Example `freki.json` for production.*?```json\n(.*?)```", DOC.read_text(), re.S)
    assert example
    path = tmp_path / "freki.json"
    path.write_text(example.group(1))
    settings = FrekiSettings.load(path)
    assert settings.security.api_keys[0].tenant == "acme" and settings.metrics.port == 9464


def test_seed_wire_commands(start_freki, embedded_backend) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """The seed's package (wolf.seed) through grpcurl and reflection alone: Freki retrieves, Geri generates."""
    from wolf.v1 import freki_pb2, freki_pb2_grpc

    cmds = commands("seed")
    assert [c.split()[-1] for c in cmds] == ["wolf.seed.FrekiService", "wolf.seed.FrekiService/RetrieveContext",
                                             "wolf.seed.GeriService/Generate"]
    freki = start_freki()
    with grpc.insecure_channel(freki.address) as channel:
        freki_pb2_grpc.FrekiServiceStub(channel).IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="seed-doc", document_id="handbook", source="handbook.md",
            content="Geri listens on TCP port 50052."))
    with start_geri(geri_settings(), embedded_backend) as geri:
        described, retrieved, generated = (run(c, freki.port, geri_port=geri.port) for c in cmds)
    assert "rpc RetrieveContext ( .wolf.seed.WolfRequest ) returns ( .wolf.seed.WolfResponse )" in described
    assert json.loads(retrieved)["rag_context"]["documents"][0]["metadata"]["@source"] == "handbook.md"
    assert json.loads(generated)["model_type"] == "LLM" and json.loads(generated)["llm_response"]["text"]


def test_settings_commands(start_freki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """GetSettings and UpdateSettings with an admin key, on a Freki started from a settings file."""
    from wolf_service.auth import hash_key
    from wolf_service.reload import cli_settings

    path = tmp_path / "freki.json"
    admin = {"name": "ops", "tenant": "acme", "sha256": hash_key("ops-key-0123456789"), "scopes": ["admin"]}
    path.write_text(json.dumps({"host": "127.0.0.1", "port": 0, "data_dir": str(tmp_path),
                                "security": {"api_keys": [admin]}}))
    settings, source = cli_settings(FrekiSettings, str(path), {})
    handle = start_freki(settings, reload_from=source)
    for command in commands("settings"):
        run(command, handle.port, env={"WOLF_ADMIN_KEY": "ops-key-0123456789"})
    assert settings.retrieval.top_k == 8 and json.loads(path.read_text())["retrieval"]["top_k"] == 8
