"""``stream: true`` with a grounded answer, at the seam: the gateway in front of scripted Freki and Geri
servers (real gRPC), read by the official ``openai`` client, which only concatenates content deltas. The
real services and model are in test_gateway.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import openai
import pytest
from fastapi.testclient import TestClient

from odin_client import OdinSettings
from odin_client.gateway import GatewaySettings, create_app
from odin_client.gateway.answer_stream import REVISED_NOTE
from tests.odin_client.conftest import freki, geri  # noqa: F401 - fixtures
from tests.odin_client.grounded_servicer_support import GroundedGeri

QUOTE = "The Skadi gateway listens on TCP port 7443 by default."
QUESTION = [{"role": "user", "content": "Which port?"}]


@pytest.fixture
def gateway(freki, geri) -> Iterator[tuple[openai.OpenAI, GroundedGeri]]:  # type: ignore[no-untyped-def]  # noqa: F811
    odin = OdinSettings(freki_target=freki[1].address, geri_target=geri[1].address, retry_initial_backoff_s=0.01)
    with TestClient(create_app(GatewaySettings(), odin)) as http:
        yield openai.OpenAI(base_url="http://testserver/v1", api_key="k", http_client=http, max_retries=0), geri[0]


def stream(client: openai.OpenAI, **extra: Any) -> tuple[str, list[Any]]:
    chunks = list(client.chat.completions.create(model="", messages=QUESTION, stream=True,  # type: ignore[arg-type]
                                                 extra_body=extra or None))
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), chunks


@pytest.mark.parametrize("provisional", [False, True])
def test_a_checked_answer_streams_and_ends_with_its_citations(gateway, provisional: bool) -> None:  # type: ignore[no-untyped-def]
    client, scripted = gateway
    text, chunks = stream(client, stream_provisional=provisional)
    assert text == "The gateway listens on port 7443 [1]."
    contents = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert contents == (scripted.answer_deltas if provisional else [text])  # deltas as they came, or once checked
    last = chunks[-1]
    rag = last.model_extra["rag"]
    assert last.choices[0].finish_reason == "stop" and last.usage.completion_tokens == 5
    assert rag["citations"][0]["quote"] == QUOTE and rag["answered"] and not rag["revised"]
    assert rag["answer"] == text and rag["provisional_streamed"] is provisional
    assert [s["document_id"] for s in rag["sources"]] == ["gateway-ports", "gateway-errors"]
    assert scripted.rec.count("AnswerStream") == 1


def test_a_revised_answer_never_leaves_a_concatenating_client_with_the_unchecked_text(gateway) -> None:  # type: ignore[no-untyped-def]
    client, scripted = gateway
    scripted.revised_text = f"{QUOTE} [1]"
    text, chunks = stream(client)  # the gateway's default: nothing before the check
    assert text == f"{QUOTE} [1]" and chunks[-1].model_extra["rag"]["revised"] is True
    text, chunks = stream(client, stream_provisional=True)  # opted in: the correction ends the content
    assert text == "".join(scripted.answer_deltas) + REVISED_NOTE + f"{QUOTE} [1]"
    assert chunks[-1].model_extra["rag"]["answer"] == f"{QUOTE} [1]"


def test_the_non_stream_response_keeps_its_rag_shape(gateway) -> None:  # type: ignore[no-untyped-def]
    client, scripted = gateway
    reply = client.chat.completions.create(model="", messages=QUESTION)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "The gateway listens on port 7443 [1]."
    assert set(reply.model_extra["rag"]) == {"answered", "reason", "citations", "sources", "summary", "confidence"}
    assert scripted.rec.count("Answer") == 1 and scripted.rec.count("AnswerStream") == 0


def test_a_failure_before_the_first_event_is_an_http_error(gateway) -> None:  # type: ignore[no-untyped-def]
    client, scripted = gateway
    scripted.rec.faults.code, scripted.rec.faults.fail_times = grpc.StatusCode.INVALID_ARGUMENT, -1
    scripted.rec.faults.details = "context.documents[0].content is empty"
    with pytest.raises(openai.BadRequestError, match="content is empty"):
        stream(client)


def test_a_stream_cut_after_its_first_event_ends_with_an_error_event(gateway) -> None:  # type: ignore[no-untyped-def]
    client, scripted = gateway
    scripted.stream_break_after = 1
    with pytest.raises(openai.APIError, match="stream ended without final event"):
        stream(client, stream_provisional=True)
