"""What the answer pipeline asks of the generation pipeline, at that seam (a scripted generation stands in for
the model; the same calls with the real model are in test_answer_rpc.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from wolf.v1 import common_pb2, geri_pb2

from geri.answering.pipeline import AnswerPipeline
from geri.generation import StreamEvent
from geri.sessions import MemorySessionStore, Turn
from geri.settings import GeriSettings
from tests.geri.scorer_support import RecordingScorer
from wolf_service.errors import Cancelled, FailedPrecondition


class ScriptedGeneration:
    """Records each inner request; answers with the next scripted JSON (or raises it)."""

    def __init__(self, *replies: dict[str, Any] | Exception, scorer: Any = None,
                 beside: dict[str, Any] | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[common_pb2.WolfRequest] = []
        self.scorer = scorer  # the answering backend, when it can score
        self.beside = beside or {}  # model-list entries by name that can score

    def first_scorer(self, model: str) -> Any:
        return self.scorer

    def named_scorer(self, name: str) -> Any:
        return self.beside.get(name)

    def run(self, request: common_pb2.WolfRequest, cancel: threading.Event, *, remember: bool = True,
            drafts: bool = False, user: str = "", grounded: Any = None) -> Iterator[StreamEvent]:
        assert not remember  # the answer pipeline stores its own turns
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        text = json.dumps(reply)
        if drafts:
            for i in range(0, len(text), 5):
                yield StreamEvent("draft", text[i:i + 5])
        yield StreamEvent("final", response=common_pb2.WolfResponse(
            request_id=request.request_id, llm_response=common_pb2.LLMResponse(json=text, finish_reason="stop")),
            scorer=self.scorer)


def pipeline(generation: ScriptedGeneration, **answering: Any) -> tuple[AnswerPipeline, MemorySessionStore]:
    settings = GeriSettings(answering=answering)
    sessions = MemorySessionStore(settings.sessions)
    return AnswerPipeline(settings, generation, sessions), sessions  # type: ignore[arg-type]


def rewrite_request(session: str = "", tenant: str = "acme", variants: int = 0,
                    messages: tuple[common_pb2.ChatTurn, ...] = ()) -> geri_pb2.RewriteQueryRequest:
    return geri_pb2.RewriteQueryRequest(variants=variants, request=common_pb2.WolfRequest(
        request_id="r", prompt="and its logs?", tenant_id=tenant,
        metadata=common_pb2.RequestMetadata(session_id=session),
        generation=common_pb2.GenerationOptions(model="m", messages=messages)))


def test_a_rewrite_is_asked_with_the_sessions_latest_turns_and_stores_nothing() -> None:
    generation = ScriptedGeneration({"query": "Where does the relay log?"}, {"variants": ["relay log place"]})
    answers, sessions = pipeline(generation)
    turns = [Turn("user", f"q{i} on the relay") if i % 2 == 0 else Turn("assistant", f"a{i}") for i in range(8)]
    sessions.append("acme", "s", "", [Turn("tool", "x", tool_call_id="c"), *turns], user="ann")
    sessions.append("other", "s", "", [Turn("user", "another tenant's secret")], user="ann")
    sessions.append("acme", "s", "", [Turn("user", "another user's secret")], user="bob")
    reply = answers.rewrite(rewrite_request("s", variants=1), threading.Event(), user="ann")
    assert (reply.query, reply.rewritten, list(reply.variants)) == ("Where does the relay log?", True,
                                                                   ["relay log place"])
    rewrite, variants = generation.requests
    assert [t.content for t in rewrite.generation.messages] == [t.content for t in turns[-6:]]  # history_turns
    assert (rewrite.tenant_id, rewrite.generation.model, rewrite.metadata.session_id) == ("acme", "m", "")
    assert variants.prompt == "Where does the relay log?" and not variants.generation.messages
    assert len(sessions.get("acme", "s", user="ann").turns) == 9  # type: ignore[union-attr]


def test_without_a_session_the_requests_messages_are_the_conversation_and_failures_are_warnings() -> None:
    generation = ScriptedGeneration(FailedPrecondition("cut off at max_tokens=80"))
    answers, _ = pipeline(generation)
    history = (common_pb2.ChatTurn(role="user", content="Which port?"),
               common_pb2.ChatTurn(role="assistant", content="9427 [1]"))
    reply = answers.rewrite(rewrite_request(messages=history), threading.Event())
    assert (reply.query, reply.rewritten) == ("and its logs?", False)
    assert list(reply.warnings) == ["the rewrite failed, the question was kept: cut off at max_tokens=80"]
    assert [t.content for t in generation.requests[0].generation.messages] == ["Which port?", "9427 [1]"]


def test_an_answer_is_asked_over_numbered_best_first_sources_and_streams_only_its_text() -> None:
    reply = {"answered": True, "citations": [{"source": 1, "sentence": 2}], "answer": 'It logs to "syslog".',
             "summary": "s", "key_details": [], "confidence": 0.7}
    generation = ScriptedGeneration(reply)
    answers, sessions = pipeline(generation, short_answers=False)
    docs = [common_pb2.RetrievedDocument(document_id="low", content="Low. Score.", relevance_score=0.5),
            common_pb2.RetrievedDocument(document_id="relay", content='Port 9427. It logs to "syslog".',
                                         relevance_score=0.9)]
    request = geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="a", prompt="Where are the logs?", context=common_pb2.RAGContext(documents=docs),
        metadata=common_pb2.RequestMetadata(session_id="s")))
    steps = list(answers.answer(request, threading.Event(), stream=True))
    inner = generation.requests[0]
    assert [d.document_id for d in inner.context.documents] == ["relay", "low"]  # best first
    assert inner.context.documents[0].content == '(1) Port 9427. (2) It logs to "syslog".'
    assert inner.metadata.max_tokens == 320 and inner.metadata.temperature == 0.0
    *texts, final = steps
    answer = final.response.answer  # type: ignore[union-attr]
    assert "".join(t.text for t in texts) == answer.text == 'It logs to "syslog". [1]' and not answer.revised
    assert [(t.role, t.content) for t in sessions.get("default", "s", user="").turns] == [  # type: ignore[union-attr]
        ("user", "Where are the logs?"), ("assistant", answer.text)]


def relay_request(question: str, score: float = 0.9) -> geri_pb2.AnswerRequest:
    docs = [common_pb2.RetrievedDocument(document_id="relay", relevance_score=score,
                                         content='The relay listens on port 9427. It writes its logs to "syslog".')]
    return geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="a", prompt=question, context=common_pb2.RAGContext(documents=docs),
        metadata=common_pb2.RequestMetadata(session_id="s")))


def test_a_short_answer_revises_the_streamed_text_and_is_the_turn_stored() -> None:
    reply = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "The relay logs a lot.",
             "summary": "s", "key_details": [], "confidence": 0.7}
    answers, sessions = pipeline(ScriptedGeneration(reply))
    *texts, final = list(answers.answer(relay_request("Where does the relay write its logs?"), threading.Event(),
                                        stream=True))
    answer = final.response.answer  # type: ignore[union-attr]
    assert answer.text == "syslog [1]" and answer.revised
    assert answer.citations[0].quote == 'It writes its logs to "syslog".'  # the sentence holding the span
    assert answer.citations[0].sentence_number == 2
    assert sessions.get("default", "s", user="").turns[-1].content == "syslog [1]"  # type: ignore[union-attr]


def test_a_source_that_does_not_say_what_is_asked_abstains_without_asking_the_model() -> None:
    generation = ScriptedGeneration()
    answers, _ = pipeline(generation)
    # Relevant enough by score (0.45 >= min_score), but it names nothing the question asks about.
    final = list(answers.answer(relay_request("Which battle did the British lose outside Quebec in 1760?", 0.45),
                                threading.Event()))[-1]
    answer = final.response.answer  # type: ignore[union-attr]
    assert not answer.answered and "min_evidence" in answer.reason and "quebec" in answer.reason
    assert generation.requests == []



class QuestionAfter(RecordingScorer):
    """Scores the question -1 per token after a prompt holding ``liked``, else -5."""

    def __init__(self, liked: str) -> None:
        super().__init__()
        self.liked = liked

    def scores(self, prompt: str, continuation: str) -> list[float]:
        return [-1.0 if self.liked in prompt else -5.0] * len(continuation.split())


def test_sources_near_the_best_are_numbered_in_the_order_the_backend_scores_the_question_after_them() -> None:
    reply = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "9427",
             "summary": "s", "key_details": [], "confidence": 0.7}
    docs = [common_pb2.RetrievedDocument(document_id=name, content=text, relevance_score=score)
            for name, text, score in (("faq", "The relay FAQ lists questions.", 0.9),
                                      ("relay", "The relay listens on port 9427.", 0.88),
                                      ("far", "The relay listens on port 1.", 0.5))]
    request = geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="a", prompt="Which port does the relay listen on?", context=common_pb2.RAGContext(documents=docs)))
    for reranker, first in (("model", "relay"), ("off", "faq")):
        generation = ScriptedGeneration(reply, scorer=QuestionAfter("port 9427"))
        answers, _ = pipeline(generation, short_answers=False, source_reranker=reranker)
        final = list(answers.answer(request, threading.Event()))[-1].response
        assert [d.document_id for d in generation.requests[0].context.documents] == [first, "faq" if first ==
                                                                                     "relay" else "relay", "far"]
        assert final.answer.citations[0].document_id == first  # type: ignore[union-attr]
        assert len(generation.scorer.prompts) == (2 if reranker == "model" else 0)  # "far" is beyond the margin


def port_question() -> tuple[dict[str, Any], geri_pb2.AnswerRequest]:
    """A reply citing source 1, and a question whose answer is in Freki's second source (FAQ first)."""
    reply = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "It listens on port 9427.",
             "summary": "s", "key_details": [], "confidence": 0.7}
    docs = [common_pb2.RetrievedDocument(document_id=name, content=text, relevance_score=score)
            for name, text, score in (("faq", "The relay FAQ lists questions.", 0.9),
                                      ("relay", "The relay listens on port 9427.", 0.88))]
    return reply, geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="a", prompt="Which port does the relay listen on?", context=common_pb2.RAGContext(documents=docs)))


def test_a_backend_that_cannot_score_is_reranked_and_its_span_chosen_by_the_scoring_model_beside_it() -> None:
    reply, request = port_question()
    for scoring_model, first in (("smollm2-135m-instruct", "relay"), ("", "faq")):
        beside = QuestionAfter("port 9427")
        generation = ScriptedGeneration(reply, beside={"smollm2-135m-instruct": beside})
        answers, _ = pipeline(generation, scoring_model=scoring_model)
        final = list(answers.answer(request, threading.Event()))[-1].response
        assert generation.requests[0].context.documents[0].document_id == first
        reranked, spans = beside.prompts[:2], beside.prompts[2:]
        assert len(reranked) == (2 if scoring_model else 0)
        assert bool(spans) == bool(scoring_model)  # the short answer's span, scored beside the answering backend
        assert final.answer.citations[0].document_id == first  # type: ignore[union-attr]


def test_an_answer_made_while_the_scoring_model_cannot_score_is_not_cached() -> None:
    # Its breaker open, the scoring_model entry scores nothing: Freki's order, the rules' span. Kept under the key
    # that names scoring_model, that lesser answer would be served until the TTL, long after the model is back.
    reply, request = port_question()
    generation = ScriptedGeneration(reply, reply, reply)
    answers, _ = pipeline(generation, scoring_model="smollm2-135m-instruct")
    unscored = list(answers.answer(request, threading.Event()))[-1].response
    assert unscored.answer.citations[0].document_id == "faq"  # type: ignore[union-attr]  # Freki's order
    generation.beside = {"smollm2-135m-instruct": QuestionAfter("port 9427")}  # its breaker closed again
    scored = list(answers.answer(request, threading.Event()))[-1].response
    assert not scored.cache_hit and scored.answer.citations[0].document_id == "relay"  # type: ignore[union-attr]
    assert list(answers.answer(request, threading.Event()))[-1].response.cache_hit  # type: ignore[union-attr]


def test_the_gate_judges_the_source_the_rerank_puts_first_and_no_rerank_runs_when_none_near_could_pass() -> None:
    reply = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "Sainte-Foy",
             "summary": "s", "key_details": [], "confidence": 0.7}
    quebec = ("The British were defeated outside Quebec City in April 1760 at the Battle of Sainte-Foy, but the "
              "French could not retake the city.")
    boston = ("The British army lost many soldiers at the Battle of Bunker Hill near Boston in 1775, although "
              "they took the hill.")

    def ask(second: str, reranker: str, liked: str, language: str = "en"
            ) -> tuple[geri_pb2.AnswerResponse, ScriptedGeneration]:
        docs = [common_pb2.RetrievedDocument(document_id=name, content=text, relevance_score=score,
                                             metadata={"language": language})
                for name, text, score in (("boston", boston, 0.45), ("second", second, 0.44))]
        request = geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
            request_id="a", prompt="In what battle outside Quebec City were the British defeated in 1760?",
            context=common_pb2.RAGContext(documents=docs)))
        generation = ScriptedGeneration(reply, scorer=QuestionAfter(liked))
        answers, _ = pipeline(generation, short_answers=False, source_reranker=reranker)
        return list(answers.answer(request, threading.Event()))[-1].response, generation

    final, generation = ask(quebec, "model", "Sainte-Foy")  # the rerank puts the source that says it first
    assert final.answer.answered and final.answer.citations[0].document_id == "second"
    final, generation = ask(quebec, "off", "Sainte-Foy")  # Freki's first does not say what is asked
    assert not final.answer.answered and "below min_evidence" in final.answer.reason and not generation.requests
    final, generation = ask(quebec, "model", "Bunker Hill")  # the rerank keeps it first: the gate still abstains
    assert not final.answer.answered and not generation.requests
    assert "below reranked_min_evidence 0.760" in final.answer.reason  # the setting to change
    assert len(generation.scorer.prompts) == 2
    final, generation = ask(boston, "model", "Bunker Hill")  # no source near the best says it: no rerank runs
    assert not final.answer.answered and not generation.requests and generation.scorer.prompts == []
    assert "below reranked_min_evidence" in final.answer.reason  # the floor none could reach
    final, generation = ask(quebec, "model", "Sainte-Foy", language="de")  # the rerank's prompt is English
    assert not final.answer.answered and not generation.requests and generation.scorer.prompts == []


class CallerLeaves:
    """A scorer whose caller leaves: it sets ``cancel``, then raises Cancelled as while it waited for the model
    (``noticed``), or returns its scores as once the model runs (after the wait, so it cannot notice)."""

    def __init__(self, cancel: threading.Event, *, noticed: bool = True) -> None:
        self.cancel, self.noticed, self.calls = cancel, noticed, 0

    def score_continuations(self, prompt: str, continuations: list[str], shared_prefix: str = "",
                            cancel: object = None) -> list[list[float]]:
        self.calls += 1
        self.cancel.set()
        if self.noticed:
            raise Cancelled("scoring continuations: the request was cancelled while it waited for the model")
        return [[-1.0] * len(c.split()) for c in continuations]


def test_a_request_cancelled_while_its_scoring_waits_stores_no_turn_and_caches_nothing() -> None:
    reply = {"answered": True, "citations": [{"source": 1, "sentence": 2}], "answer": "syslog",
             "summary": "s", "key_details": [], "confidence": 0.7}
    docs = [common_pb2.RetrievedDocument(document_id=name, relevance_score=score,
                                         content='The relay listens on port 9427. It writes its logs to "syslog".')
            for name, score in (("relay", 0.9), ("copy", 0.89))]
    request = geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="a", prompt="Where does the relay write its logs?", context=common_pb2.RAGContext(documents=docs),
        metadata=common_pb2.RequestMetadata(session_id="s")))
    for reranker in ("model", "off"):  # the source rerank's scoring, then the short answer's
        cancel = threading.Event()
        generation = ScriptedGeneration(reply, scorer=CallerLeaves(cancel))
        answers, sessions = pipeline(generation, source_reranker=reranker)
        with pytest.raises(Cancelled):
            list(answers.answer(request, cancel))
        assert generation.scorer.calls == 1 and sessions.get("default", "s", user="") is None
        assert not answers._cache._entries  # a cancelled answer is not kept


COLOGNE_REPLY = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "Cologne",
                 "summary": "s", "key_details": [], "confidence": 0.7}
RHINE = common_pb2.RetrievedDocument(document_id="rhine", relevance_score=0.9, content=(
    "The Rhine flows from the Swiss Alps to the North Sea. The biggest city on the river is Cologne, with more "
    "than a million people."))


def rhine_question(session: str = "") -> geri_pb2.AnswerRequest:
    """A question whose answer is in RHINE's second sentence, though the model cites its first."""
    return geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="a", prompt="What is the largest city the Rhine flows through?",
        context=common_pb2.RAGContext(documents=[RHINE]), metadata=common_pb2.RequestMetadata(session_id=session)))


def test_the_short_answers_sentence_is_chosen_with_the_backends_scorer_unless_the_rules_are_asked_for() -> None:
    reply = COLOGNE_REPLY
    request = rhine_question()
    for chooser, sentence, scored in (("model", 2, 2), ("rules", 1, 0)):
        generation = ScriptedGeneration(reply, scorer=QuestionAfter("Cologne"))
        answers, _ = pipeline(generation, sentence_chooser=chooser, span_scorer="rules")
        final = list(answers.answer(request, threading.Event()))[-1].response
        assert final.answer.citations[0].sentence_number == sentence  # type: ignore[union-attr]
        assert len(generation.scorer.prompts) == scored


def test_a_request_cancelled_while_the_model_scores_its_short_answer_stores_no_turn_and_caches_nothing() -> None:
    reply = COLOGNE_REPLY
    request = rhine_question(session="s")
    for chooser, span_scorer in (("model", "rules"), ("rules", "model")):  # the sentence's scoring, the span's
        cancel = threading.Event()
        generation = ScriptedGeneration(reply, scorer=CallerLeaves(cancel, noticed=False))
        answers, sessions = pipeline(generation, sentence_chooser=chooser, span_scorer=span_scorer)
        with pytest.raises(Cancelled):
            list(answers.answer(request, cancel))
        assert generation.scorer.calls >= 1 and sessions.get("default", "s", user="") is None
        assert not answers._cache._entries  # a cancelled answer is not kept


class ReloadedWhileGenerating(ScriptedGeneration):
    """A scripted generation during which a hot reload replaces the answering settings (as wolf_service.reload
    does: a new ``answering`` object on the live settings)."""

    def __init__(self, reply: dict[str, Any], settings: GeriSettings, **changed: Any) -> None:
        super().__init__(reply, scorer=QuestionAfter("Cologne"))
        self.settings, self.changed = settings, changed

    def run(self, request: common_pb2.WolfRequest, cancel: threading.Event, *, remember: bool = True,
            drafts: bool = False, user: str = "", grounded: Any = None) -> Iterator[StreamEvent]:
        self.settings.answering = self.settings.answering.model_copy(update=self.changed)
        yield from super().run(request, cancel, remember=remember, drafts=drafts, user=user)


def test_an_answer_is_grounded_with_the_answering_settings_its_cache_key_holds_across_a_reload() -> None:
    reply = COLOGNE_REPLY
    request = rhine_question()
    settings = GeriSettings(answering={"sentence_chooser": "model", "span_scorer": "rules"})
    generation = ReloadedWhileGenerating(reply, settings, sentence_chooser="rules")
    answers = AnswerPipeline(settings, generation, MemorySessionStore(settings.sessions))  # type: ignore[arg-type]
    final = list(answers.answer(request, threading.Event()))[-1].response
    assert final.answer.citations[0].sentence_number == 2  # type: ignore[union-attr]  # "model", as keyed
    assert settings.answering.sentence_chooser == "rules"  # the next request keys and grounds with the reload
