"""Human-readable rendering of client results for the ``odin`` CLI (``--json`` bypasses this)."""

from __future__ import annotations

from odin_client.types.results import Answer, Citation, Retrieval, Source, Timings
from odin_client.types.status import IndexStatusInfo, ModelList
from odin_client.types.writes import IndexResult


def render_sources(sources: list[Source]) -> str:
    """Numbered list of sources with score and snippet."""
    if not sources:
        return "Sources: none"
    lines = ["Sources:"]
    for i, src in enumerate(sources, 1):
        where = _where(src.source if src.source != src.document_id else "", src.location)
        lines.append(f"  [{i}] {src.document_id}{where}  score {src.score:.3f}  chunk {src.chunk_index}")
        lines.append(f"      {src.snippet}")
    return "\n".join(lines)


def _where(name: str, location: str) -> str:
    """``  (contract.pdf p. 4)``, ``  (handbook.md · Setup > Install)``: the source's name and where in it."""
    joint = " " if location.startswith(("p. ", "slide ", "sheet ")) else " · "
    shown = joint.join(filter(None, [name, location]))
    return f"  ({shown})" if shown else ""


def render_timings(timings: Timings, model: str = "") -> str:
    """One line with the time of each leg."""
    line = (f"Timings: retrieve {timings.retrieve_ms:.0f} ms · generate {timings.generate_ms:.0f} ms"
            f" · total {timings.total_ms:.0f} ms")
    return f"{line}  (model: {model})" if model else line


def render_citations(citations: list[Citation]) -> str:
    """Each citation: marker, document, score, and the quoted sentence."""
    lines = ["Citations:"]
    for c in citations:
        where = _where(c.title if c.title != c.document_id else "", c.location)
        lines.append(f"  [{c.marker}] {c.document_id}{where}  chunk {c.chunk_index}  score {c.score:.3f}")
        lines.append(f'      "{c.quote}"')
    return "\n".join(lines)


def render_answer(answer: Answer, *, include_text: bool = True) -> str:
    """A grounded answer with its citations, or the reason there is none; then timings."""
    parts = []
    if answer.note:
        parts.append(f"NOTE: {answer.note}")
    if not answer.answered:
        parts.append(f"No answer: the sources do not contain it ({answer.reason}).")
        parts.append("")
        parts.append(render_sources(answer.sources))
    elif answer.citations:
        if include_text:
            parts.append(answer.text.strip())
        if answer.summary:
            parts.append(f"\nSummary: {answer.summary}")
        parts.extend(f"  - {detail}" for detail in answer.key_details)
        if answer.confidence is not None:
            parts.append(f"Confidence: {answer.confidence:.2f}")
        parts.append("")
        parts.append(render_citations(answer.citations))
    else:
        if include_text:
            parts.append(answer.text.strip() or "(empty answer)")
        parts.append("")
        parts.append(render_sources(answer.sources))
    gen = answer.generation
    for warning in gen.warnings if gen else []:
        parts.append(f"Warning from Geri: {warning}")
    parts.append(render_timings(answer.timings, gen.model if gen else ""))
    return "\n".join(parts)


REVISED = "(Checked against the sources, the streamed text above is not supported by them. The checked answer:)"


def render_after_stream(answer: Answer, streamed: str, *, grounded: bool) -> str:
    """What follows the ``streamed`` text of an answer: the end of its line — for a grounded answer the rest
    of the checked text when it only extends what was streamed (markers), else a notice that the streamed
    text was revised and the checked answer — then the answer's citations and timings."""
    if not grounded:
        return "\n" + render_answer(answer, include_text=False)
    if answer.answered and answer.text.startswith(streamed):
        return answer.text[len(streamed):] + "\n" + render_answer(answer, include_text=False)
    return f"\n{REVISED}\n" + render_answer(answer)


def render_retrieval(result: Retrieval) -> str:
    """Sources with the retrieval's timing; says so when nothing was relevant enough."""
    if result.nothing_relevant:
        return (f"Found nothing relevant: {result.below_threshold} match(es) scored below the threshold "
                f"{result.score_threshold:.2f} ({result.elapsed_ms:.0f} ms)")
    return (f"{render_sources(result.sources)}\n"
            f"{len(result.sources)} chunk(s), mean score {result.retrieval_score:.3f}, "
            f"{result.elapsed_ms:.0f} ms")


def render_index_line(result: IndexResult) -> str:
    """One line per indexed document."""
    return (f"{result.outcome:<9} {result.source or result.document_id}  -> {result.document_id}  "
            f"({result.chunk_count} chunks, {result.chunks_embedded} embedded, {result.server_ms} ms)")


def render_status(freki: IndexStatusInfo | str, geri: ModelList | str) -> str:
    """Both services' status; a string stands for the error that service returned."""
    lines = ["Freki (retrieval):"]
    if isinstance(freki, str):
        lines.append(f"  ERROR {freki}")
    else:
        lines += [
            f"  documents {freki.document_count}, chunks {freki.chunk_count}, queue {freki.queue_depth}",
            f"  embedding {freki.embedding_model} ({freki.embedding_dimension} dims)",
            f"  store {freki.store_backend}, collection {freki.collection}",
        ]
        if freki.configured_embedding_model and freki.configured_embedding_model != freki.embedding_model:
            lines.append(f"  configured model {freki.configured_embedding_model} (serving the index of "
                         f"{freki.embedding_model} until a model migration switches: odin reindex --migrate-model)")
        for model in freki.embedding_models:
            types = "every other type" if model["standard"] else ", ".join(model["document_types"]) or "-"
            lines.append(f"  model {model['model']} ({model['dimension']} dims) for {types}: "
                         f"{model['document_count']} documents, {model['chunk_count']} chunks"
                         + ("" if model["available"] else " [NOT LOADED]"))
        if freki.migration:
            m = freki.migration
            lines.append(f"  migration {m['model_from']} -> {m['model_to']}: {m['state']}, "
                         f"{m['documents_done']}/{m['documents_total']} documents (since {m['started_at']})"
                         + (f": {m['error']}" if m["error"] else ""))
        for folder in freki.watch_folders:
            lines.append(f"  watching {folder['path']}: {folder['files_indexed']} indexed, "
                         f"{folder['files_pending']} pending, {len(folder['skipped'])} skipped")
    lines.append("Geri (generation):")
    if isinstance(geri, str):
        lines.append(f"  ERROR {geri}")
    else:
        lines.append(f"  default model {geri.default_model or '(none)'}")
        for model in geri.models:
            lines.append(f"  - {model['name']} [{model['backend']}]")
    return "\n".join(lines)
