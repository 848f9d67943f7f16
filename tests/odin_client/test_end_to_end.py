"""End to end: real Freki (embedding model + Qdrant engine) and real Geri (embedded SmolLM2), via Odin.

Indexes the bundled sample corpus through Odin, then asks a question whose answer is a fact in one
document; the answer must contain it and the sources must point at that document.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("freki.api.server")
pytest.importorskip("geri.server")

from odin_client import OdinClient, OdinSettings  # noqa: E402
from odin_client.cli import main as odin_main  # noqa: E402
from tests.geri.geri_servers_support import embedded_backend, geri_server  # noqa: E402, F401
from wolf_service.serving import ServerHandle  # noqa: E402

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[2] / "scripts" / "sample_corpus"


@pytest.fixture(scope="module")
def odin(real_freki: ServerHandle, geri_server: ServerHandle) -> Iterator[OdinClient]:  # noqa: F811
    """An Odin client on both real services, with the sample corpus indexed."""
    settings = OdinSettings(freki_target=real_freki.address, geri_target=geri_server.address,
                            generate_deadline_s=600, index_deadline_s=600)
    with OdinClient(settings) as client:
        results = client.index([CORPUS], stop_on_error=True)
        assert len(results) == len(list(CORPUS.iterdir()))
        yield client


def test_ask_answers_with_the_fact_and_its_source(odin: OdinClient):
    answer = odin.ask("Which port does the Hrafn Relay admin API listen on?", top_k=2,
                      temperature=0.0, max_tokens=64, grounded=False)
    assert answer.used_context
    assert Path(answer.sources[0].source).name == "networking.md"
    assert "9427" in answer.sources[0].content
    assert "9427" in answer.text, answer.text
    assert answer.timings.generate_ms > 0 and answer.timings.retrieve_ms > 0
    assert answer.generation and answer.generation.model


def test_grounded_answer_cites_the_sentence_or_says_the_sources_are_silent(odin: OdinClient):
    """The real SmolLM2, schema-constrained: a grounded answer quotes the networking document's sentence
    with the port; an off-topic question is refused before any generation."""
    answer = odin.ask("Which port does the Hrafn Relay admin API listen on?", top_k=3)
    assert answer.generation is not None and answer.generation.json  # Geri returned validated JSON
    if answer.answered:
        assert any("9427" in c.quote and Path(c.document_id).name == "networking.md" for c in answer.citations), \
            answer.to_dict()
        assert "[1]" in answer.text and 0 <= (answer.confidence or 0) <= 1
    else:
        assert answer.reason  # an abstention always says why
    off_topic = odin.ask("What is the capital of Peru?", top_k=3)
    # Freki's default threshold already keeps an unrelated question's matches out, and Odin says so.
    assert not off_topic.answered and off_topic.generation is None and "found nothing relevant" in off_topic.reason


def test_a_streamed_grounded_answer_is_provisional_text_then_the_checked_answer(odin: OdinClient):
    """AnswerStream with the real model: the deltas are the answer text as it is written (never JSON), and the
    checked answer either is their concatenation or says it was revised."""
    from odin_client.types.results import Answer

    *deltas, final = odin.ask_stream("Which port does the Hrafn Relay admin API listen on?", top_k=3)
    assert isinstance(final, Answer) and final.generation is not None
    streamed = "".join(str(d) for d in deltas)
    assert "{" not in streamed and '"answer"' not in streamed
    if final.answered and not final.revised:
        assert final.text == streamed and any("9427" in c.quote for c in final.citations), final.to_dict()
    elif final.answered:
        assert final.text != streamed and final.citations
    else:
        assert final.reason


def test_erase_owner_reaches_freki_and_geri(odin: OdinClient):
    odin.index_text("Greta's notes: the locker code is 4711.", source="greta.md", owner_id="greta")
    odin.generate("Remember me.", session_id="greta-chat", owner_id="greta", max_tokens=4)
    assert odin.get_session("greta-chat") is not None
    erased = odin.erase_owner("greta")
    assert (erased.documents, erased.sessions) == (1, 1)
    assert odin.get_session("greta-chat") is None


def test_status_and_cli_retrieve_against_real_services(odin: OdinClient, capsys):
    status = odin.status()
    assert status.document_count == len(list(CORPUS.iterdir()))
    code = odin_main(["retrieve", "error HR-1042 queue full", "--top-k", "1", "--json",
                      "--freki", odin.settings.freki_target])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert Path(data["sources"][0]["source"]).name in {"error-codes.md", "configuration.md"}
    assert "HR-1042" in data["sources"][0]["snippet"]


def test_tool_loop_with_the_real_model_runs_a_valid_call_then_answers(odin: OdinClient, tmp_path: Path):
    """SmolLM2 through Geri: made to call a tool first, its arguments validate (constrained decoding), the
    handler runs, and the model answers from the result on the turn where tools are no longer offered."""
    from odin_client.tools import Tool, ToolRegistry

    asked: list[str] = []

    def lookup_port(service: str) -> dict[str, object]:
        asked.append(service)
        return {"service": service, "port": 9427}

    schema = {"type": "object", "additionalProperties": False, "required": ["service"],
              "properties": {"service": {"type": "string", "maxLength": 40}}}
    registry = ToolRegistry([Tool("lookup_port", "Port a named service listens on", schema, lookup_port)])
    result = odin.run_tools("Which port does the Hrafn relay admin API use?", registry, first_tool_choice="required",
                            max_steps=1, max_tokens=40)
    assert len(asked) == 1 and result.calls[0].outcome == "ok" and result.calls[0].arguments == {"service": asked[0]}
    assert result.steps == 2 and result.stopped == "max_steps" and result.text.strip()
    assert not result.generation.tool_calls


def test_index_sends_what_the_watched_folder_would_and_real_freki_takes_it(odin: OdinClient, tmp_path: Path):
    """Extensionless, .csv and Latin-1 files, which `odin index` used to skip or refuse, are indexed by the
    real Freki (type sniffed, encoding detected); a legacy Excel .xls file is reported as skipped."""
    (tmp_path / "README").write_text("The Sleipnir ferry leaves pier 8 at dawn.\n", encoding="utf-8")
    (tmp_path / "fares.csv").write_text("route,price\nnorth,12\nsouth,9\n", encoding="utf-8")
    (tmp_path / "menu.txt").write_bytes("Crème brûlée at the café on pier 8.".encode("latin-1"))
    (tmp_path / "sheet.xls").write_bytes(b"\xd0\xcf\x11\xe0")
    results = odin.index([tmp_path], tenant_id="filetypes")
    assert [type(r).__name__ for r in results] == ["IndexResult"] * 3, results
    hit = odin.retrieve("café crème brûlée", top_k=1, tenant_id="filetypes").sources[0]
    assert Path(hit.source).name == "menu.txt" and "Crème brûlée" in hit.content


def test_cli_manages_documents_list_show_export_delete(odin: OdinClient, tmp_path: Path, capsys):
    """A new user manages documents from the CLI, against the real Freki: odd ids round-trip too."""
    tenant = ["--tenant", "docs-cli", "--freki", odin.settings.freki_target]
    odin.index_text("Olga's note: the boiler is serviced every May.", source="notes/boiler#may.md",
                    owner_id="olga", tenant_id="docs-cli")
    odin.index_text("Shared: the stairwell light timer is 90 seconds.", source="shared/stairs.md",
                    tenant_id="docs-cli")
    assert odin_main(["docs", "list", "--json", *tenant]) == 0
    listed = json.loads(capsys.readouterr().out)["documents"]
    assert [d["document_id"] for d in listed] == ["notes/boiler#may.md", "shared/stairs.md"]
    assert odin_main(["docs", "list", "--owner", "olga", *tenant]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("notes/boiler#may.md\t1 chunk(s)\tmarkdown\t") and "1 document(s)" in out.err
    assert odin_main(["docs", "show", "notes/boiler#may.md", "--json", *tenant]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["owner_id"] == "olga" and shown["embedding_model"] == "all-MiniLM-L6-v2"
    assert shown["languages"] == ["en"]
    export = tmp_path / "olga.jsonl"
    assert odin_main(["docs", "export", "--owner", "olga", "-o", str(export), *tenant]) == 0
    records = [json.loads(line) for line in export.read_text().splitlines()]
    assert [next(iter(r)) for r in records] == ["document", "links", "chunk"]
    assert (export.stat().st_mode & 0o777) == 0o600
    assert "boiler is serviced every May" in records[2]["chunk"]["content"]
    assert "exported owner 'olga': 1 document(s), 1 chunk(s)" in capsys.readouterr().err
    assert odin_main(["docs", "delete", "notes/boiler#may.md", "missing.md", *tenant]) == 1
    out = capsys.readouterr()
    assert "deleted notes/boiler#may.md (1 chunk(s))" in out.out and "missing.md" in out.err
    assert odin_main(["docs", "list", "--json", *tenant]) == 0
    assert [d["document_id"] for d in json.loads(capsys.readouterr().out)["documents"]] == ["shared/stairs.md"]


def test_a_tool_needing_confirmation_waits_for_the_next_request_with_the_real_model(odin: OdinClient):
    """SmolLM2 through Geri asks for a tool marked confirm: the turn ends with what would run; the next
    request in the same Geri session confirms it, the handler runs once, a re-sent confirmation does not
    run it again, and the model answers from the result."""
    from odin_client.tools import Tool, ToolRegistry

    booked: list[tuple[str, str]] = []

    def book_viewing(service: str, user_id: str = "") -> dict[str, object]:
        booked.append((service, user_id))
        return {"booked": service}

    schema = {"type": "object", "additionalProperties": False, "required": ["service"],
              "properties": {"service": {"type": "string", "maxLength": 40}}}
    registry = ToolRegistry([Tool("book_viewing", "Book a viewing", schema, book_viewing, confirm=True)])
    options = {"session_id": "confirm-chat", "defer_confirmation": True, "max_steps": 1, "max_tokens": 40,
               "user_id": "agent-7"}
    first = odin.run_tools("Book a viewing of the Hrafn relay.", registry, first_tool_choice="required", **options)
    assert first.stopped == "requires_confirmation" and booked == []
    (waiting,) = first.pending.calls
    assert waiting.name == "book_viewing" and set(waiting.arguments) == {"service"}
    second = odin.run_tools("", registry, resume=first.pending, confirmed=(waiting.id,), **options)
    assert booked == [(waiting.arguments["service"], "agent-7")] and second.calls[0].outcome == "ok"
    # The model has the result; it may answer or (tools still offered) ask for another call.
    assert second.steps == 1 and second.stopped in {"answered", "requires_confirmation"}
    again = odin.run_tools("", registry, resume=first.pending, confirmed=(waiting.id,), **options)
    assert again.calls[0].outcome == "repeated" and len(booked) == 1
