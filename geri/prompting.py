"""Prompt assembly and context-window fitting.

The user turn holds the retrieved documents as ``[Document N: document_id]`` blocks (with their
source and the metadata the operator chose), then the question; earlier turns of the conversation
(``history``) come between the system prompt and it. When all that plus the answer's ``max_tokens``
exceeds the model window, the oldest history turns go first, down to what the question needs, then the
lowest-scored documents, and the caller is told which; an over-long prompt is never sent to a backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from geri.backends.base import ChatMessage
from geri.context_metadata import clean_value, one_line
from wolf_service.errors import InvalidArgument


@dataclass(frozen=True)
class ContextDocument:
    """A retrieved document as the prompt needs it."""

    document_id: str
    content: str
    score: float
    source: str = ""
    # The escaped ``Metadata: ...`` line of the keys the operator chose (geri/context_metadata.py); "" = none.
    metadata_line: str = ""


@dataclass(frozen=True)
class FittedPrompt:
    """Messages that fit the window, their token count, and what was left out to get there."""

    messages: list[ChatMessage]
    prompt_tokens: int
    kept_document_ids: list[str]
    dropped_document_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


TokenCounter = Callable[[Sequence[ChatMessage]], int]
MAX_SHOWN_ID_CHARS = 256  # of a document id in its header (the model cites by number, not by id)


class ContextDoesNotFit(InvalidArgument):
    """No context document fits the window beside the question (``fit_to_window(require_documents=True)``)."""


def format_document(number: int, doc: ContextDocument) -> str:
    """One ``[Document N: id]`` block: header, source line when known, metadata line when chosen, content."""
    # A caller's id and path stay on their own line: neither may start a header or a numbered sentence.
    lines = [f"[Document {number}: {clean_value(doc.document_id, MAX_SHOWN_ID_CHARS)}]"]
    if doc.source:
        lines.append(f"Source: {one_line(doc.source)}")
    if doc.metadata_line:
        lines.append(doc.metadata_line)
    lines.append(doc.content.strip())
    return "\n".join(lines)


def build_messages(
    system_prompt: str,
    question: str,
    documents: Sequence[ContextDocument],
    language: str = "",
    history: Sequence[ChatMessage] = (),
) -> list[ChatMessage]:
    """Assemble the chat turns: system prompt, history, then one user turn with the documents and question.

    Args:
        system_prompt: Instructions for the model; empty omits the system turn.
        question: The user's prompt; empty (continuing after a tool result in ``history``) omits the turn
            unless there are documents.
        documents: Context documents in the order they should appear (numbered from 1).
        language: BCP-47 tag of the wanted answer language; empty leaves it to the model.
        history: Earlier turns, oldest first.
    """
    system = system_prompt.strip()
    if language:
        system = f"{system}\nAnswer in the language with BCP-47 tag '{language}'.".strip()
    if documents:
        blocks = "\n\n".join(format_document(i, doc) for i, doc in enumerate(documents, start=1))
        user = f"Context:\n\n{blocks}\n\nQuestion: {question}"
    else:
        user = question
    messages = [ChatMessage("system", system)] if system else []
    messages.extend(history)
    if user:
        messages.append(ChatMessage("user", user))
    return messages


def _drop_order(documents: Sequence[ContextDocument]) -> list[int]:
    """Indexes in the order they are given up: lowest score first; among equals, the later one."""
    return sorted(range(len(documents)), key=lambda i: (documents[i].score, -i))


def fit_to_window(
    *,
    system_prompt: str,
    question: str,
    documents: Sequence[ContextDocument],
    language: str,
    window: int,
    max_tokens: int,
    count_tokens: TokenCounter,
    history: Sequence[ChatMessage] = (),
    require_documents: bool = False,
) -> FittedPrompt:
    """Build the prompt; drop the oldest history, then the lowest-scored documents, until prompt +
    ``max_tokens`` fit ``window``.

    Args:
        system_prompt: Instructions for the model.
        question: The user's prompt.
        documents: Retrieved context, in presentation order.
        language: Wanted answer language ("" = unspecified).
        window: The model's context window in tokens.
        max_tokens: Tokens reserved for the answer.
        count_tokens: The backend's token counter for a list of messages.
        history: Earlier turns of the conversation, oldest first.
        require_documents: A prompt without any of ``documents`` is of no use (a grounded answer).

    Raises:
        InvalidArgument: even the question without any document does not fit; the message
            says how long it is and what the limit is.
        ContextDoesNotFit: ``require_documents`` and every document had to be dropped.
    """
    budget = window - max_tokens
    history = list(history)
    warnings: list[str] = []
    bare = build_messages(system_prompt, question, [], language, history)
    bare_tokens = count_tokens(bare)
    if bare_tokens > budget and history:
        before = len(history)
        # Each turn is counted once (the newest that fit the room the question leaves), not the whole prompt
        # again per dropped turn: a long conversation would be tokenized once per turn.
        room = budget - count_tokens(build_messages(system_prompt, question, [], language))
        given, history = history, trim_history(history, max(room, 0), count_tokens)
        bare = build_messages(system_prompt, question, [], language, history)
        bare_tokens = count_tokens(bare)
        while history and bare_tokens > budget:  # turn counts are not exactly additive
            history.pop(0)
            bare = build_messages(system_prompt, question, [], language, history)
            bare_tokens = count_tokens(bare)
        # Counted alone, a turn may cost more than in the whole prompt (a chat template's default system turn):
        # give back the newest dropped turns that still fit, so no more is dropped than the window needs.
        while bare_tokens <= budget and len(history) < len(given) and given[-len(history) - 1].role != "tool":
            wider = build_messages(system_prompt, question, [], language, given[-len(history) - 1:])
            if (wider_tokens := count_tokens(wider)) > budget:
                break
            history, bare, bare_tokens = given[-len(history) - 1:], wider, wider_tokens
        warnings.append(f"dropped the {before - len(history)} oldest of {before} conversation turns to fit "
                        f"the model window of {window} tokens with max_tokens={max_tokens}")
    if bare_tokens > budget:
        raise InvalidArgument(
            f"prompt is {bare_tokens} tokens (with the system prompt); with max_tokens={max_tokens} the "
            f"model window of {window} tokens leaves room for {max(budget, 0)}: shorten the prompt or "
            "lower metadata.max_tokens"
        )

    kept = list(range(len(documents)))
    dropped: list[int] = []
    order = _drop_order(documents)
    if documents:
        # Estimate each block's cost once so the common case needs one exact count, not one per drop.
        with_all = build_messages(system_prompt, question, documents, language, history)
        total = count_tokens(with_all)
        if total > budget:
            costs = {i: count_tokens([ChatMessage("user", format_document(i + 1, d))]) for i, d in
                     enumerate(documents)}
            estimate = total
            for i in order:
                if estimate <= budget:
                    break
                dropped.append(i)
                estimate -= costs[i]
            kept = [i for i in range(len(documents)) if i not in set(dropped)]
            # Block costs are not exactly additive (numbering, separators): drop more until exact fit.
            while kept:
                messages = build_messages(system_prompt, question, [documents[i] for i in kept], language, history)
                total = count_tokens(messages)
                if total <= budget:
                    break
                victim = next(i for i in order if i in kept)
                kept.remove(victim)
                dropped.append(victim)
            if not kept:
                total = bare_tokens
    else:
        total = bare_tokens

    kept_docs = [documents[i] for i in kept]
    if dropped:
        ids = [documents[i].document_id for i in dropped]
        warnings.append(
            f"dropped {len(dropped)} of {len(documents)} context documents with the lowest relevance "
            f"({', '.join(ids)}) to fit the model window of {window} tokens with max_tokens={max_tokens}"
        )
        if require_documents and not kept_docs:
            raise ContextDoesNotFit(f"no source fits the model window: {warnings[-1]} (lower metadata.max_tokens "
                                    "or send shorter chunks)")
    messages = build_messages(system_prompt, question, kept_docs, language, history)
    return FittedPrompt(
        messages=messages,
        prompt_tokens=total,
        kept_document_ids=[d.document_id for d in kept_docs],
        dropped_document_ids=[documents[i].document_id for i in dropped],
        warnings=warnings,
    )


def trim_history(history: Sequence[ChatMessage], budget: int, count_tokens: TokenCounter) -> list[ChatMessage]:
    """The newest turns of ``history`` that fit ``budget`` tokens (``sessions.history_tokens``), oldest first.

    A tool result never starts the kept history: without the call it answers it means nothing.
    """
    kept: list[ChatMessage] = []
    used = 0
    for message in reversed(history):
        cost = count_tokens([message])
        if used + cost > budget:
            break
        kept.insert(0, message)
        used += cost
    while kept and kept[0].role == "tool":
        kept.pop(0)
    return kept
