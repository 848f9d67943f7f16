"""Semantic chunking: split parsed sections into sentence-aligned chunks sized for the embedding model.

Decisions (the "why" behind the shape of this module):

* Chunks are sized to the embedding model's window. A chunk is at most `max_tokens` tiktoken tokens AND at
  most `window_limit` model word-pieces (special tokens included). The model silently truncates longer
  input, so text past the window would be stored but invisible to dense search. When the window is the
  tighter limit, `min_tokens` is clamped to half of a chunk's new-text budget and `overlap_tokens` to a
  quarter of the max; `SemanticChunker.effective` exposes the values actually used.
* Sections (headings, PDF pages) are hard boundaries; chunks never span two.
* Boundaries are chosen so that an edit only moves boundaries near it (needed for incremental
  re-indexing). Every gap between sentences gets a break score from local evidence only: paragraph and
  line breaks, and how dissimilar the text after the gap is to the few sentences before it
  (`freki.ingest.boundaries`: shared stemmed terms by default, sentence embeddings on request). A gap is an
  *anchor* — always a boundary — when it is eligible (a paragraph end, or similarity below
  `similarity_threshold`) and its score is the strict maximum of all gaps within `min_tokens` on either
  side. That decision does not depend on where earlier chunks started, so anchors after an edit are the
  same as before (greedy left-to-right grouping would shift every later boundary). Text between anchors
  is partitioned by a small dynamic program that prefers few cuts at high-score gaps and pieces of at
  least `min_tokens`. Similarity is measured against a trailing window of the group rather than the whole
  group for the same reason: a whole-group centroid depends on where the group started.
* Overlap: a chunk after the first in its section starts with whole trailing sentences of the previous
  chunk's new text, at most `overlap_tokens`. `min_tokens` applies to the new text. The overlap is
  context for the dense vector only: `Chunk.new_text` (without it) is what BM25 indexes, so no term
  counts in two chunks.
* Tables (``freki.ingest.table_rows``): a Markdown table is never split into sentences nor cut inside a row.
  One that fits a chunk is one unit; a larger one becomes pieces of whole rows of about ``min_tokens``,
  each repeating the header and each starting a chunk of its own, without overlap. A row is cut only when
  it alone does not fit a chunk under its header.
* A section that fits one chunk (`max_tokens` and the model window) is one chunk, whatever its size: no
  boundary scoring, no overlap. A section too small to hold two chunks of `min_tokens` is never scored
  either (nothing to decide).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from freki.ingest.boundaries import score_gaps
from freki.ingest.deadline import checked
from freki.ingest.limits import ChunkingConfig, EffectiveLimits
from freki.ingest.parsing import LimitExceeded, ParsedDocument, Section
from freki.ingest.segmenting import SectionPlan, find_anchors, partition_span
from freki.ingest.sentences import PARAGRAPH, SPACE, Unit, join_units, section_units
from freki.ingest.splitting import TOKEN_CHARS, split_to_fit
from freki.ingest.table_rows import table_pieces

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document ready to embed; `hash` (sha256 of text) identifies unchanged chunks."""

    text: str
    index: int
    token_count: int
    hash: str
    metadata: dict[str, str]
    # Leading characters repeated from the previous chunk: the dense vector sees them (context), the
    # lexical index does not (a term in the overlap would count in two chunks).
    overlap_chars: int = 0

    @property
    def new_text(self) -> str:
        """The chunk's text without the overlap: what BM25 indexes."""
        return self.text[self.overlap_chars :]


class CountsTokens(Protocol):
    """What the chunker needs of a ``wolf_service.tokens.TokenCounter``: the tiktoken tokens of a text."""

    def count(self, text: str) -> int: ...


class SemanticChunker:
    """Splits a ParsedDocument into chunks at sentence boundaries, guided by sentence embeddings."""

    def __init__(
        self,
        config: ChunkingConfig,
        counter: CountsTokens,
        embed: Callable[[list[str]], np.ndarray],
        window_tokens: Callable[[str], int],
        window_limit: int,
    ) -> None:
        """Fit the config to the model window.

        Args:
            config: Requested sizes.
            counter: tiktoken counter for `max/min/overlap_tokens`.
            embed: Texts to L2-normalised embedding rows (the caller may cache).
            window_tokens: Model tokens of a text, special tokens included.
            window_limit: The model's window (`max_seq_length`), special tokens included.

        Raises:
            ValueError: The window leaves no room for text.
        """
        self._config = config
        self._counter = counter
        self._embed = embed
        self._window_tokens = window_tokens
        self._specials = window_tokens("")
        room = window_limit - self._specials
        if room < 16:
            raise ValueError(
                f"window_limit ({window_limit}) leaves {room} word-pieces after {self._specials} special "
                "tokens; at least 16 are needed"
            )
        max_tokens = min(config.max_tokens, room)
        overlap = min(config.overlap_tokens, max_tokens // 4)
        core_max = max_tokens - overlap
        self.effective = EffectiveLimits(
            max_tokens=max_tokens,
            min_tokens=min(config.min_tokens, core_max // 2),
            overlap_tokens=overlap,
            window_limit=window_limit,
            similarity_threshold=config.threshold,
            core_max_tokens=core_max,
            core_max_window=room * core_max // max_tokens,
            boundary_signal=config.boundary_signal,
        )
        # Table rows cut because one row alone did not fit the window (freki.ingest.table_rows).
        self.rows_cut = 0
        self._check: Callable[[str], None] = lambda _: None  # the current ``chunk`` call's

    def chunk(self, doc: ParsedDocument, max_chunks: int | None = None,
              check: Callable[[str], None] = lambda _: None) -> list[Chunk]:
        """Chunk every section of `doc` in order; deterministic for the same input.

        ``check(stage)`` raises when the work must stop (deadline, cancel): every long loop of planning calls it.

        Raises:
            LimitExceeded: the token count alone shows more than ``max_chunks`` chunks, found before any
                sentence is embedded.
        """
        self._check = check
        plans = [self._plan(section) for section in checked(doc.sections, check, "planning chunks", 1)]
        if max_chunks is not None:
            at_least = sum(-(-p.total_tokens() // self.effective.max_tokens) for p in plans)
            if at_least > max_chunks:
                raise LimitExceeded(
                    f"document {doc.title[:80]!r} makes at least {at_least:,} chunks; the limit is {max_chunks:,} "
                    "(limits.max_chunks_per_document)", setting="limits.max_chunks_per_document",
                )
        limits = self.effective
        score_gaps([p for p in plans if p.needs_similarity], limits.boundary_signal, self._embed,
                   limits.similarity_threshold, check)
        chunks: list[Chunk] = []
        for plan in checked(plans, check, "planning chunks", 1):
            for text, overlap_chars in self._section_texts(plan):
                chunks.append(_make_chunk(text, overlap_chars, len(chunks), self._counter.count(text), plan.section))
        return chunks

    def _plan(self, section: Section) -> SectionPlan:
        units: list[Unit] = []
        for unit in checked(section_units(section.text), self._check, "splitting sentences"):
            units.extend(self._table_units(unit) if unit.table else self._split_oversize(unit))
        tokens = [self._counter.count(u.text) for u in checked(units, self._check, "counting tokens")]
        window = [self._window_tokens(u.text) - self._specials for u in checked(units, self._check, "counting tokens")]
        plan = SectionPlan(section, units, tokens, window)
        # A section that fits one chunk (the whole window, not the budget left after overlap) is one chunk:
        # no sentence is embedded to look for boundaries, and nothing is overlapped or indexed twice.
        plan.whole = plan.fits(0, len(units), self.effective.max_tokens, self.effective.window_limit - self._specials)
        plan.needs_similarity = (not plan.whole and plan.total_tokens() >= 2 * self.effective.min_tokens
                                 and len(units) > 1)
        return plan

    def _section_texts(self, plan: SectionPlan) -> list[tuple[str, int]]:
        """Each chunk's text and how many of its leading characters are overlap."""
        limits = self.effective
        if not plan.units:
            return []
        cores: list[tuple[int, int]] = []
        if plan.whole or (plan.fits(0, len(plan.units), limits.core_max_tokens, limits.core_max_window)
                          and not plan.needs_similarity):
            cores = [(0, len(plan.units))]
        else:
            # Each piece of a table cut by rows starts a chunk: its header is repeated for that chunk.
            pieces = [i for i, unit in enumerate(plan.units) if unit.header_repeated]
            bounds = sorted({0, *find_anchors(plan, limits), *pieces, len(plan.units)})
            for start, end in zip(bounds, bounds[1:], strict=False):
                self._check("planning chunk boundaries")
                cores.extend(partition_span(plan, start, end, limits, self._check))
        cores = _merge_small_tail(plan, cores, limits)
        texts: list[tuple[str, int]] = []
        for number, (start, end) in enumerate(checked(cores, self._check, "joining chunks", 64)):
            first = start
            if number and limits.overlap_tokens and not plan.units[start].header_repeated:
                first = self._overlap_start(plan, cores[number - 1][0], start, end)
            texts.extend(self._fit(plan.units[first:end], overlap=start - first))
        return texts

    def _overlap_start(self, plan: SectionPlan, previous_start: int, start: int, end: int) -> int:
        """First unit of the overlap: whole trailing sentences of the previous chunk's new text."""
        limits = self.effective
        first = start
        # Never repeat the previous chunk's first unit: that would repeat the whole chunk.
        while first - 1 > previous_start:
            candidate = first - 1
            if plan.span_tokens(candidate, start) > limits.overlap_tokens:
                break
            if not plan.fits(candidate, end, limits.max_tokens, limits.window_limit - self._specials):
                break
            first = candidate
        return first

    def _fit(self, units: list[Unit], overlap: int) -> list[tuple[str, int]]:
        """Join units into chunk text, verified with the real counters (estimates are sums); with each
        text, the characters of its first ``overlap`` units and the separator after them."""
        units = [Unit(units[0].text, ""), *units[1:]] if units else units
        while True:
            text = join_units(units)
            if self._within_limits(text):
                return [(text, len(text) - len(join_units([Unit(units[overlap].text, ""), *units[overlap + 1:]])))]
            if overlap:
                units = [Unit(units[1].text, ""), *units[2:]]
                overlap -= 1
                continue
            if len(units) == 1:
                return [(text, 0)]  # cannot happen: oversize units were split to fit
            # Estimates were too low (rare tokenizer merges): split in two and retry each half.
            half = len(units) // 2
            return self._fit(units[:half], 0) + self._fit(units[half:], 0)

    def _within_limits(self, text: str) -> bool:
        return (
            self._counter.count(text) <= self.effective.max_tokens
            and self._window_tokens(text) <= self.effective.window_limit
        )

    def _split_oversize(self, unit: Unit) -> list[Unit]:
        """Split a sentence longer than a chunk's new-text budget at word (else character) boundaries."""
        # A unit that long has more tokens than the budget (no token is TOKEN_CHARS long): not counted whole.
        if len(unit.text) <= TOKEN_CHARS * self.effective.core_max_tokens and self._fits_core(unit.text):
            return [unit]
        pieces = split_to_fit(unit.text, self._fits_core, self.effective.core_max_tokens, self._check)
        return [Unit(p, unit.separator if i == 0 else SPACE) for i, p in enumerate(pieces)]

    def _table_units(self, unit: Unit) -> list[Unit]:
        """A table that fits a chunk as one unit; a larger one as pieces of whole rows of about ``min_tokens``,
        the header repeated in each."""
        pieces = table_pieces(unit.text, self._within_limits, self.effective.max_tokens, self._fits_table_piece)
        if pieces.rows_cut:
            self.rows_cut += pieces.rows_cut
            logger.warning("a table row longer than the chunk window was cut between words (%d row(s))",
                           pieces.rows_cut)
        return [Unit(text, unit.separator if i == 0 else pieces.separator, table=True,
                     header_repeated=i > 0 and pieces.separator == PARAGRAPH)
                for i, text in enumerate(pieces.texts)]

    def _fits_table_piece(self, text: str) -> bool:
        """Within ``min_tokens`` (and the same share of the window): the size a piece of a table cut by rows
        aims at, so a row lookup lands on a chunk of a few rows (docs/decisions/0121-tables.md)."""
        limits = self.effective
        if limits.min_tokens <= 0:
            return self._within_limits(text)
        room = (limits.window_limit - self._specials) * limits.min_tokens // limits.max_tokens
        return self._counter.count(text) <= limits.min_tokens and self._window_tokens(text) - self._specials <= room

    def _fits_core(self, text: str) -> bool:
        return (
            self._counter.count(text) <= self.effective.core_max_tokens
            and self._window_tokens(text) - self._specials <= self.effective.core_max_window
        )


def _merge_small_tail(
    plan: SectionPlan, cores: list[tuple[int, int]], limits: EffectiveLimits
) -> list[tuple[int, int]]:
    """Fold a last piece below min_tokens into the one before it when the result still fits."""
    if len(cores) < 2:
        return cores
    (previous_start, _), (last_start, last_end) = cores[-2], cores[-1]
    if plan.span_tokens_low(last_start, last_end) >= limits.min_tokens or plan.units[last_start].header_repeated:
        return cores  # a table piece keeps its own chunk (its header would appear twice in one)
    if plan.fits(previous_start, last_end, limits.core_max_tokens, limits.core_max_window):
        return [*cores[:-2], (previous_start, last_end)]
    return cores


def _make_chunk(text: str, overlap_chars: int, index: int, token_count: int, section: Section) -> Chunk:
    metadata: dict[str, str] = {}
    if section.heading_path:
        metadata["section"] = " > ".join(section.heading_path)
    if section.page is not None:
        metadata["page"] = str(section.page)
    if section.slide is not None:
        metadata["slide"] = str(section.slide)
    if section.sheet:
        metadata["sheet"] = section.sheet
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Chunk(text=text, index=index, token_count=token_count, hash=digest, metadata=metadata,
                 overlap_chars=overlap_chars)
