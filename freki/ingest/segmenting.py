"""Choosing chunk boundaries inside one section: gap scores, local anchors and span partitioning.

See `freki.ingest.chunking` for why boundaries are chosen this way (locality under edits). Sizes here are
estimates from per-sentence counts: tiktoken tokens plus one per join, and model word-pieces (which add
up exactly across whitespace). `SemanticChunker` verifies the final texts with the real counters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from itertools import accumulate
from typing import TYPE_CHECKING

from freki.ingest.parsing import Section
from freki.ingest.sentences import LINE, PARAGRAPH, Unit

if TYPE_CHECKING:
    from freki.ingest.limits import EffectiveLimits

# How much a structural break adds to a gap's score; dissimilarity (1 - similarity) adds up to ~1.
_BREAK_BONUS = {PARAGRAPH: 1.0, LINE: 0.3}
# A piece below min_tokens costs more than any single cut, so the partition only makes one when forced.
_SMALL_PIECE_PENALTY = 5.0


class SectionPlan:
    """A section's sentence units with their sizes and (when needed) gap similarities."""

    def __init__(self, section: Section, units: list[Unit], tokens: list[int], window: list[int]) -> None:
        self.section = section
        self.units = units
        self.tokens = tokens
        self.window = window
        self.needs_similarity = False
        self.whole = False  # the whole section fits one chunk
        # similarity[g]: next-sentence-to-recent-context similarity at the gap before unit g.
        self.similarity: list[float] | None = None
        self._token_sums = [0, *accumulate(tokens)]
        self._window_sums = [0, *accumulate(window)]

    def span_tokens(self, start: int, end: int) -> int:
        """Estimated tiktoken tokens of units[start:end] joined."""
        return self._token_sums[end] - self._token_sums[start] + max(0, end - start - 1)

    def span_tokens_low(self, start: int, end: int) -> int:
        """Lower bound of the same: a join can merge at most one token pair (e.g. "." + "\\n\\n")."""
        return self._token_sums[end] - self._token_sums[start] - max(0, end - start - 1)

    def span_window(self, start: int, end: int) -> int:
        """Model word-pieces of units[start:end] joined, special tokens excluded."""
        return self._window_sums[end] - self._window_sums[start]

    def fits(self, start: int, end: int, max_tokens: int, max_window: int) -> bool:
        """Whether units[start:end] fit both budgets."""
        return self.span_tokens(start, end) <= max_tokens and self.span_window(start, end) <= max_window

    def total_tokens(self) -> int:
        """Estimated tokens of the whole section."""
        return self.span_tokens(0, len(self.units))

    def score(self, gap: int, threshold: float) -> float:
        """How good a boundary the gap before unit `gap` is (higher = better)."""
        return _BREAK_BONUS.get(self.units[gap].separator, 0.0) + 1.0 - self._similarity(gap, threshold)

    def eligible(self, gap: int, threshold: float) -> bool:
        """A gap may be an anchor when it ends a paragraph or the topic drifts below the threshold."""
        return self.units[gap].separator == PARAGRAPH or self._similarity(gap, threshold) < threshold

    def key(self, gap: int, threshold: float) -> tuple[float, int]:
        """Score with a content-derived tie-break, so equal scores still order the same way every run."""
        pair = f"{self.units[gap - 1].text}\x00{self.units[gap].text}".encode()
        return (round(self.score(gap, threshold), 3), int.from_bytes(hashlib.sha1(pair).digest()[:8], "big"))

    def _similarity(self, gap: int, threshold: float) -> float:
        # Without embeddings (small sections) similarity is unknown: neutral, neither joins nor splits.
        return self.similarity[gap] if self.similarity is not None else threshold


def find_anchors(plan: SectionPlan, limits: EffectiveLimits) -> list[int]:
    """Gaps that are boundaries whatever the surrounding chunks: local score maxima within min_tokens.

    Each decision looks only at gaps within `min_tokens` on either side, so an edit changes anchors only
    near itself. Anchors are more than `min_tokens` apart and from the section's ends.
    """
    if plan.similarity is None or len(plan.units) < 2:
        return []
    reach = max(1, limits.min_tokens)
    threshold = limits.similarity_threshold
    gaps = range(1, len(plan.units))
    # Lower-bound positions: anchors more than min_tokens apart here are so in the real text too.
    position = {g: plan.span_tokens_low(0, g) for g in gaps}
    total = plan.span_tokens_low(0, len(plan.units))
    keys = {g: plan.key(g, threshold) for g in gaps}
    anchors: list[int] = []
    for gap in gaps:
        if not plan.eligible(gap, threshold):
            continue
        if position[gap] < reach or total - position[gap] < reach:
            continue
        if _is_local_maximum(gap, position, keys, reach, len(plan.units)):
            anchors.append(gap)
    return anchors


def _is_local_maximum(
    gap: int, position: dict[int, int], keys: dict[int, tuple[float, int]], reach: int, count: int
) -> bool:
    for step in (-1, 1):
        other = gap + step
        while 1 <= other < count and abs(position[other] - position[gap]) <= reach:
            if keys[other] >= keys[gap]:
                return False
            other += step
    return True


def partition_span(plan: SectionPlan, start: int, end: int, limits: EffectiveLimits,
                   check: Callable[[str], None] = lambda _: None) -> list[tuple[int, int]]:
    """Split units[start:end] into pieces within the new-text budget, cutting at the best gaps.

    Minimises: one unit of cost per cut, plus how poor each cut gap is, plus a penalty for crossing a gap
    whose sentences are similar (above the threshold, same paragraph), plus a large penalty per piece
    below `min_tokens`. Returns (start, end) unit ranges in order. ``check(stage)`` raises when the work
    must stop (the request's deadline); it runs every 1,024 units.
    """
    threshold = limits.similarity_threshold
    best: dict[int, float] = {start: 0.0}
    choice: dict[int, int] = {}
    for stop in range(start + 1, end + 1):
        if not (stop - start) % 1024:
            check("planning chunk boundaries")
        best_cost = float("inf")
        best_from = stop - 1
        for begin in range(stop - 1, start - 1, -1):
            if begin < stop - 1 and not plan.fits(
                begin, stop, limits.core_max_tokens, limits.core_max_window
            ):
                break  # pieces only grow as begin moves left
            cost = best[begin] + _piece_penalty(plan, begin, stop, limits.min_tokens)
            if begin > start:
                cost += _cut_cost(plan, begin, threshold)
            if cost <= best_cost:  # on ties prefer the longer piece
                best_cost, best_from = cost, begin
        best[stop] = best_cost
        choice[stop] = best_from
    pieces: list[tuple[int, int]] = []
    stop = end
    while stop > start:
        pieces.append((choice[stop], stop))
        stop = choice[stop]
    return pieces[::-1]


def _cut_cost(plan: SectionPlan, gap: int, threshold: float) -> float:
    score = plan.score(gap, threshold)
    cost = 1.0 + max(0.0, 2.0 - score)
    if not plan.eligible(gap, threshold):
        cost += 1.0  # the sentences still belong together by the similarity rule
    return cost


def _piece_penalty(plan: SectionPlan, start: int, end: int, min_tokens: int) -> float:
    # The lower bound, so a piece counted as reaching min_tokens really does once joined.
    size = plan.span_tokens_low(start, end)
    if min_tokens <= 0 or size >= min_tokens:
        return 0.0
    return _SMALL_PIECE_PENALTY * (1.0 + (min_tokens - size) / min_tokens)
