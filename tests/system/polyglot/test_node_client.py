"""Proof for other languages: a Node client built from ``protos/`` alone (``@grpc/grpc-js`` and
``@grpc/proto-loader``, installed by ``make test-packages`` with ``npm ci`` from the committed lock) talks to a
real Freki (packaged MiniLM, Qdrant's engine) and a real Geri (embedded SmolLM2): it indexes a document,
retrieves, gets a cited answer, an abstention, and a streamed answer to a follow-up in a session.

A machine without Node.js fails this test rather than skipping it: the contract is only proven for other
languages where one of them runs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401
from tests.system.polyglot.citations_support import quotes_the_document
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration

NODE_DIR = Path(__file__).resolve().parent / "node"
SCRIPT = NODE_DIR / "grounded_exchange.mjs"


def node_binary() -> str:
    """The ``node`` executable, with the npm packages the script needs installed; fails the test otherwise."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: this test proves the gRPC contract from Node.js (>= 18) and fails "
                    "without it; install Node.js and npm (apt-get install nodejs npm), then `make test-packages`")
    for package in ("@grpc/grpc-js", "@grpc/proto-loader"):
        if not (NODE_DIR / "node_modules" / package / "package.json").is_file():
            pytest.fail(f"{package} is not installed in {NODE_DIR.relative_to(NODE_DIR.parents[3])}/node_modules: "
                        "run `make test-packages` (npm ci from the committed package-lock.json)")
    return node


@pytest.fixture(scope="module")
def freki(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[ServerHandle]:
    """A real Freki on port 0: the packaged embedding model and the embedded Qdrant engine, empty index."""
    from freki.api.server import build_server
    from freki.engine import FrekiEngine
    from freki.settings import FrekiSettings

    settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("freki"),
                             shutdown_grace_s=1.0)
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        yield handle
    finally:
        handle.stop(1.0)
        engine.close()


def run_node(node: str, freki: ServerHandle, geri: ServerHandle) -> dict[str, Any]:
    """Run the Node client against both servers and parse the JSON it prints."""
    done = subprocess.run([node, str(SCRIPT), "--freki", freki.address, "--geri", geri.address],
                          cwd=NODE_DIR, capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, f"the Node client failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_node_client_indexes_retrieves_and_gets_cited_answers_and_abstentions(
    freki: ServerHandle, embedded_backend: Any,  # noqa: F811
) -> None:
    node = node_binary()
    with start_geri(geri_settings(), embedded_backend) as geri:
        out = run_node(node, freki, geri)
    document = out["document"]
    assert out["indexed"]["outcome"] == "INDEX_OUTCOME_CREATED" and out["indexed"]["chunk_count"] >= 1
    assert out["context"]["documents"][0]["document_id"] == document["document_id"]

    # The question the document answers: a cited answer whose quote is the document's sentence.
    grounded = out["answer"]["answer"]
    assert grounded["answered"], grounded["reason"]
    assert grounded["citations"], grounded
    for citation in grounded["citations"]:
        assert citation["document_id"] == document["document_id"]
        assert quotes_the_document(citation["quote"], document["content"]), citation
        assert citation["title"] == document["source"] and citation["location"]["heading_path"] == ["Hrafn Relay"]
        assert f"[{citation['marker']}]" in grounded["text"]
    assert any("9427" in c["quote"] for c in grounded["citations"]), grounded

    # An off-topic question: Freki finds nothing relevant and Geri abstains, saying why, without generating.
    assert out["off_topic_context"]["documents"] == []
    off_topic = out["off_topic"]["answer"]
    assert not off_topic["answered"] and off_topic["reason"] and off_topic["citations"] == []
    assert out["off_topic"]["llm_response"] is None

    # The follow-up, streamed: rewritten from the session into a standalone query that finds the document again,
    # then provisional text deltas and one final event with the checked answer.
    assert out["rewrite"]["query"].strip()
    assert out["follow_up_context"]["documents"][0]["document_id"] == document["document_id"]
    *deltas, final = out["follow_up_stream"]
    assert final["event"] == "final" and deltas and all(e["event"] == "text_delta" for e in deltas)
    follow_up = final["final"]["answer"]
    assert follow_up["answered"], follow_up["reason"]
    assert follow_up["citations"] and all(c["document_id"] == document["document_id"]
                                          and quotes_the_document(c["quote"], document["content"])
                                          for c in follow_up["citations"]), follow_up
    if not follow_up["revised"]:
        assert "".join(e["text_delta"] for e in deltas) == follow_up["text"]

    # Both turns are stored in the session, questions as asked.
    turns = [(t["role"], t["content"]) for t in out["session"]["turns"]]
    assert turns == [("user", out["question"]), ("assistant", grounded["text"]),
                     ("user", out["follow_up_question"]), ("assistant", follow_up["text"])]
