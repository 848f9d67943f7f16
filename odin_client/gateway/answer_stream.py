"""A grounded answer as OpenAI ``chat.completion.chunk`` events (``stream: true`` with ``rag``).

Geri's AnswerStream sends the provisional answer text as the model writes it, then the checked answer, which
may differ (``revised``: the check replaced the text with the cited sentences, or withdrew it). An OpenAI
client only concatenates ``delta.content``, so what it ends up with must never be an answer the sources do
not support:

* ``stream_provisional`` (the gateway setting, or the request's ``stream_provisional`` extension) on: the
  provisional deltas are sent as content as they arrive. If the checked text only extends them (markers
  added), the rest follows as content; if it is revised, a last content delta says so and gives the checked
  text (``REVISED_NOTE``), so the concatenation ends with the correction.
* off: nothing is sent until the answer is checked, then the checked text in one content delta.

Either way the last chunk (``finish_reason``) carries the ``rag`` extension: citations, sources, ``answered``,
``revised`` and ``answer`` (the checked text) — docs/answers.md ("Streaming").
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from odin_client.gateway.errors import odin_body
from odin_client.types.errors import OdinError
from odin_client.types.results import Answer, Generation

REVISED_NOTE = "\n\n[Checked against the sources, the text above is not supported by them. They say:] "


def answer_text(answer: Answer) -> str:
    """What the assistant says: the cited answer, or that the documents do not say (and why)."""
    return answer.text if answer.answered else f"The indexed documents do not answer this ({answer.reason})."


def rag_extension(answer: Answer) -> dict[str, Any]:
    """The ``rag`` field of a grounded completion (the non-stream response's shape)."""
    data = answer.to_dict()
    return {"answered": answer.answered, "reason": answer.reason, "citations": data.get("citations", []),
            "sources": data.get("sources", []), "summary": answer.summary, "confidence": answer.confidence}


def chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    """One SSE ``data:`` line holding a ``chat.completion.chunk``."""
    data = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def closing_text(answer: Answer, sent: str) -> str:
    """The content still to send once the answer is checked, after ``sent`` (the provisional deltas sent)."""
    final = answer_text(answer)
    if not sent:
        return final
    if answer.answered and final.startswith(sent):
        return final[len(sent):]
    return REVISED_NOTE + final


def guarded(frames: Iterator[str], upstream: Iterator[Any]) -> Iterator[str]:
    """``frames`` (SSE events made from ``upstream``), then ``data: [DONE]``. A failure of the upstream call
    becomes an ``error`` event; ``upstream`` is closed however the stream ends, so a client that went away
    stops the generation."""
    try:
        yield from frames
    except OdinError as exc:
        yield f"data: {json.dumps(odin_body(exc))}\n\n"
    finally:
        close = getattr(upstream, "close", None)
        if close is not None:
            close()
    yield "data: [DONE]\n\n"


def relay(cid: str, model: str, first: str | Answer, events: Iterator[str | Answer], *, provisional: bool,
          usage: Callable[[Generation | None], dict[str, int]]) -> Iterator[str]:
    """The SSE events of a grounded answer stream (``first`` and the rest of ``ask_stream``'s ``events``),
    ending with ``data: [DONE]``; a failure after the first event is an ``error`` event."""
    return guarded(_answer_frames(cid, model, first, events, provisional=provisional, usage=usage), events)


def _answer_frames(cid: str, model: str, first: str | Answer, events: Iterator[str | Answer], *,
                   provisional: bool, usage: Callable[[Generation | None], dict[str, int]]) -> Iterator[str]:
    yield chunk(cid, model, {"role": "assistant", "content": ""})
    sent: list[str] = []
    for event in itertools.chain([first], events):
        if isinstance(event, Answer):
            gen = event.generation
            name = gen.model if gen else model
            rest = closing_text(event, "".join(sent))
            if rest:
                yield chunk(cid, name, {"content": rest})
            rag = {**rag_extension(event), "answer": answer_text(event), "revised": event.revised,
                   "provisional_streamed": bool(sent)}
            yield chunk(cid, name, {}, "stop", usage=usage(gen), rag=rag)
        elif provisional and event:
            sent.append(event)
            yield chunk(cid, model, {"content": event})
