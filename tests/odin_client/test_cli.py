"""The ``odin`` CLI run in-process (``main([...])``) against real in-process servers."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2

from odin_client.cli import main
from tests.odin_client.servicers_support import free_port


def _targets(freki, geri) -> list[str]:
    return ["--freki", freki[1].address, "--geri", geri[1].address]


def test_ask_json_parses_and_carries_answer_sources_timings(freki, geri, capsys):
    code = main(["ask", "Which port?", "--top-k", "3", "--filter", "product=skadi", "--filter",
                 "product=other", "--json", *_targets(freki, geri)])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)
    assert "port 7443" in data["answer"] and data["answered"] is True
    assert data["citations"][0]["quote"] == "The Skadi gateway listens on TCP port 7443 by default."
    assert [s["document_id"] for s in data["sources"]] == ["gateway-ports", "gateway-errors"]
    assert set(data["timings_ms"]) == {"retrieve_ms", "generate_ms", "total_ms"}
    req = freki[0].rec.calls[0].request
    assert req.retrieval.top_k == 3
    assert [(f.key, list(f.values)) for f in req.retrieval.filters] == [("product", ["skadi", "other"])]


def test_filter_expressions_become_lists_ranges_and_negations(freki, geri, capsys):
    assert main(["retrieve", "q", "--filter", "topics=health", "--filter", "topics=diet", "--filter", "year>=2020",
                 "--filter", "year<2024", "--filter", "lang!=de", "--filter-all", "tags=a", "--filter-all", "tags=b",
                 "--filter", "@content_type=markdown", "--json", *_targets(freki, geri)]) == 0
    sent = [(f.key, list(f.values), f.exclude, f.match, f.gte if f.HasField("gte") else None,
             f.lt if f.HasField("lt") else None) for f in freki[0].rec.calls[0].request.retrieval.filters]
    all_ = common_pb2.METADATA_MATCH_ALL
    any_ = common_pb2.METADATA_MATCH_ANY
    assert sent == [
        ("topics", ["health", "diet"], False, any_, None, None),
        ("year", [], False, any_, "2020", "2024"),
        ("lang", ["de"], True, any_, None, None),
        ("@content_type", ["markdown"], False, any_, None, None),
        ("tags", ["a", "b"], False, all_, None, None),
    ]


def test_ask_human_output_with_stream(freki, geri, capsys):
    assert main(["ask", "Which port?", "--free", "--stream", *_targets(freki, geri)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The gateway listens on port 7443.\n")
    assert "[1] gateway-ports  (corpus/ports.md)  score 0.910" in out
    assert "[2] gateway-errors  (corpus/errors.md p. 3)  score 0.550" in out
    assert "Timings: retrieve" in out


def test_retrieve_and_status_json(freki, geri, capsys):
    assert main(["retrieve", "port", "--json", *_targets(freki, geri)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sources"][0]["snippet"].startswith("The Skadi gateway")
    assert [s["location"] for s in data["sources"]] == ["", "p. 3"]
    assert main(["status", "--json", *_targets(freki, geri)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["freki"]["document_count"] == 2 and data["geri"]["default_model"] == "test-model"


def test_index_folder_json_and_progress(freki, geri, tmp_path: Path, capsys):
    (tmp_path / "a.md").write_text("# A\nport 7443\n", encoding="utf-8")
    (tmp_path / "b.docx").write_bytes(b"PK\x03\x04 not really a docx")
    (tmp_path / "c.xls").write_bytes(b"\xd0\xcf\x11\xe0")
    code = main(["index", str(tmp_path), "--metadata", "team=x", "--json", *_targets(freki, geri)])
    captured = capsys.readouterr()
    assert code == 0
    data = json.loads(captured.out)
    assert sorted(Path(d["source"]).name for d in data["documents"]) == ["a.md", "b.docx"]
    assert [(Path(s["path"]).name, s["reason"]) for s in data["skipped"]] == [
        ("c.xls", "legacy Excel .xls file, not a supported document format")]
    docx = next(c.request for c in freki[0].rec.calls if c.request.source.endswith("b.docx"))
    assert docx.content_type == "docx" and docx.content_bytes.startswith(b"PK")


def test_unavailable_service_exits_3_naming_it(geri, capsys):
    code = main(["ask", "q", "--freki", f"127.0.0.1:{free_port()}", "--geri", geri[1].address,
                 "--deadline", "1"])
    err = capsys.readouterr().err
    assert code == 3
    assert "Freki (retrieval)" in err and "UNAVAILABLE" in err


def test_invalid_argument_exits_2(freki, geri, capsys):
    freki[0].rec.faults.code = grpc.StatusCode.INVALID_ARGUMENT
    freki[0].rec.faults.details = "prompt must be non-empty"
    freki[0].rec.faults.fail_times = -1
    assert main(["retrieve", "", *_targets(freki, geri)]) == 2
    assert "prompt must be non-empty" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    assert main(["ask"]) == 2
    assert main(["ask", "q", "--filter", "novalue"]) == 2
    assert "--filter expects KEY=VALUE" in capsys.readouterr().err
    assert main(["ask", "q", "--filter-all", "year>=2020"]) == 2
    assert "--filter-all takes KEY=VALUE only" in capsys.readouterr().err
    assert main(["index", "/does/not/exist", "--freki", f"127.0.0.1:{free_port()}"]) == 2


def test_other_errors_exit_1(freki, geri, capsys):
    freki[0].rec.faults.code = grpc.StatusCode.INTERNAL
    freki[0].rec.faults.fail_times = -1
    assert main(["status", *_targets(freki, geri)]) == 1
    captured = capsys.readouterr()
    assert "ERROR" in captured.out and "default model test-model" in captured.out
    assert "Freki (retrieval) GetIndexStatus failed: INTERNAL" in captured.err


@pytest.mark.parametrize("argv", [["--help"], ["ask", "--help"]])
def test_help_exits_0(argv, capsys):
    assert main(argv) == 0
    assert "usage: odin" in capsys.readouterr().out


def test_index_human_output_and_tenant(freki, geri, tmp_path: Path, capsys):
    (tmp_path / "a.md").write_text("# A\nport 7443\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    code = main(["index", str(tmp_path), "--tenant", "acme", "--no-progress", *_targets(freki, geri)])
    captured = capsys.readouterr()
    assert code == 1  # one document failed
    assert "created" in captured.out and "a.md" in captured.out
    assert "1 of 2 document(s) indexed, 1 failed" in captured.out
    assert "FAILED" in captured.err and "empty.txt" in captured.err
    assert [c.request.tenant_id for c in freki[0].rec.calls] == ["acme"]


def test_retries_are_reported_on_stderr_unless_quiet(freki, geri, capsys):
    """A user waiting on a retrying call sees what failed, which attempt, and when the next one starts."""
    freki[0].rec.faults.fail_times = 2
    assert main(["retrieve", "port", "--json", *_targets(freki, geri)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("odin: Freki (retrieval) RetrieveContext attempt 1 failed (UNAVAILABLE")
    assert "attempt 2 failed" in err[1] and "retrying in" in err[1]
    freki[0].rec.faults.fail_times = 4  # calls 3 and 4 fail
    assert main(["retrieve", "port", "--quiet", *_targets(freki, geri)]) == 0
    assert capsys.readouterr().err == ""


def test_ask_streams_a_grounded_answer_and_says_when_the_check_revised_it(freki, geri, capsys):
    quote = "The Skadi gateway listens on TCP port 7443 by default."
    assert main(["ask", "Which port?", "--stream", *_targets(freki, geri)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The gateway listens on port 7443 [1].\n") and "Checked against" not in out
    assert f'"{quote}"' in out and geri[0].rec.count("AnswerStream") == 1
    geri[0].revised_text = f"{quote} [1]"
    assert main(["ask", "Which port?", "--stream", *_targets(freki, geri)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The gateway listens on port 7443 [1].\n(Checked against the sources, the streamed text")
    assert f"\n{quote} [1]\n" in out
