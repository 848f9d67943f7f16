"""Odin over the real Geri service (its answering pipeline and gRPC face), with a scripted backend at the
``Backend`` seam instead of a model: the answer_* settings Odin sends are the ones Geri applies, and what
Geri decides comes back unchanged. The real model is in test_end_to_end.py."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from odin_client.types.results import Answer
from tests.geri.geri_servers_support import geri_settings, start_geri
from tests.geri.test_geri_service_seam import ScriptedBackend
from wolf_service.serving import ServerHandle

REPLY = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "Port 7443",
         "summary": "The gateway port.", "key_details": ["TLS"], "confidence": 1.0}


@pytest.fixture
def scripted_geri() -> Iterator[tuple[ScriptedBackend, ServerHandle]]:
    backend = ScriptedBackend([json.dumps(REPLY)])
    with start_geri(geri_settings(), backend) as handle:
        yield backend, handle


def test_an_answer_is_geris_over_freki_context(make_client, freki, scripted_geri) -> None:  # type: ignore[no-untyped-def]
    backend, handle = scripted_geri
    client = make_client(freki_target=freki[1].address, geri_target=handle.address)
    result = client.ask("Which port?")
    # Geri's rules (short answers: the phrase of the cited sentence that answers) make the text, not Odin.
    assert result.answered and "7443" in result.text and "[1]" in result.text
    (cite,) = result.citations
    assert (cite.document_id, cite.quote) == ("gateway-ports", "The Skadi gateway listens on TCP port 7443 by default.")
    assert result.confidence == 0.91  # capped by the cited source's relevance, by Geri
    assert result.generation is not None and result.generation.model == "scripted-1"
    assert "(1) The Skadi gateway listens" in "\n".join(m.content for m in backend.messages)
    # Geri's report on the answer reaches Python callers: per document, the queries Odin searched, no cache hit.
    assert result.report["documents"][0]["document_id"] == "gateway-ports"
    assert result.report["documents"][0]["cited"] and result.report["retrieval"]["queries_used"] == ["Which port?"]
    assert "cache_hit" not in result.report  # false: proto JSON leaves it out


def test_odins_answer_settings_are_the_ones_geri_applies(make_client, freki, scripted_geri) -> None:  # type: ignore[no-untyped-def]
    backend, handle = scripted_geri
    client = make_client(freki_target=freki[1].address, geri_target=handle.address, answer_min_score=0.95)
    result = client.ask("Which port?")
    assert not result.answered and "best of 2 scored 0.910, below min_score 0.950" in result.reason
    assert result.generation is None and backend.messages == []  # abstained before asking the model


def test_a_streamed_answer_from_geri_ends_with_the_checked_answer(make_client, freki, scripted_geri) -> None:  # type: ignore[no-untyped-def]
    _, handle = scripted_geri
    client = make_client(freki_target=freki[1].address, geri_target=handle.address)
    *deltas, final = client.ask_stream("Which port?")
    assert isinstance(final, Answer) and final.answered and "7443" in final.text
    streamed = "".join(map(str, deltas))
    assert streamed.startswith("Port 7443"), "the model's own words stream before the check"
    assert final.revised == (final.text != streamed), "revised says exactly whether the checked text differs"
