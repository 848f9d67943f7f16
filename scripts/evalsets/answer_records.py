"""What scripts/eval/answers.py records per question, computed with Geri's own answering rules: the gate's
evidence (geri/answering/evidence.py) and the short answer (geri/answering/spans.py)."""

from __future__ import annotations

import json
from typing import Any

from geri.answering.evidence import Evidence, Gate, Passage, assess
from geri.answering.sources import split_sentences
from geri.answering.spans import answer_sentence


def model_answer(gen: Any) -> str:
    """The answer the model wrote (before grounding), for studying how answers are shortened."""
    try:
        return str(json.loads(gen.json).get("answer", "")) if gen and gen.json else ""
    except ValueError:
        return ""


def short_of(question: str, answer: Any) -> tuple[str, str]:
    """(short answer, quote) as Geri makes them (geri/answering/spans.py), from the cited source of ``answer``;
    the same as ``answer`` once Geri shortens answers itself."""
    if not answer.answered or not answer.citations:
        return answer.text, ""
    cited = answer.citations[0]
    source = next((s for s in answer.sources if s.chunk_id == cited.chunk_id), None)
    if source is None:
        return answer.text, cited.quote
    sentences = split_sentences(source.content)
    preferred = sentences.index(cited.quote) + 1 if cited.quote in sentences else 1
    number, span = answer_sentence(question, sentences, preferred, source.metadata.get("language") or "en")
    return (span, sentences[number - 1]) if span else (answer.text, cited.quote)


def cited_of(answer: Any) -> dict[str, Any]:
    """The model's raw citations (its JSON, before Geri's checks), the sentences of the source Geri's first
    citation names as the model saw them numbered (geri/answering/sources.py), and which of them Geri's
    answer quotes (1-based; 0 when none): to compare the model's cited sentence with the one Geri chose."""
    gen = answer.generation
    try:
        raw = (json.loads(gen.json).get("citations") or []) if gen and gen.json else []
    except ValueError:
        raw = []
    if not answer.answered or not answer.citations:
        return {"raw_citations": raw, "cited_sentences": [], "final_sentence": 0}
    cited = answer.citations[0]
    source = next((s for s in answer.sources if s.chunk_id == cited.chunk_id), None)
    sentences = split_sentences(source.content) if source is not None else []
    final = sentences.index(cited.quote) + 1 if cited.quote in sentences else 0
    return {"raw_citations": raw, "cited_sentences": sentences, "final_sentence": final}


def evidence_of(question: str, sources: list[Any], max_sources: int | None) -> dict[str, Any]:
    """What the answer gate sees of the top ``max_sources`` sources (geri/answering/evidence.py)."""
    ev = assess(question, [Passage(s.content, s.score, s.metadata.get("language", "en"))
                           for s in sources[:max_sources]])
    return {"scores": [round(s.score, 4) for s in sources[:5]], "margin": round(ev.margin, 4),
            "coverage": round(ev.coverage, 4), "sentence_coverage": round(ev.sentence_coverage, 4),
            "question_terms": ev.question_terms, "missing": list(ev.missing)}


def gate_answers(record: dict[str, Any], gate: Gate) -> bool:
    """Would ``gate`` answer the record's question (from the evidence it recorded)?"""
    return gate.decide(Evidence(record["best_score"], record["margin"], record["coverage"],
                                record["sentence_coverage"], record["question_terms"], tuple(record["missing"])))[0]
