"""YAML frontmatter of Markdown: a size-, depth- and key-limited safe loader that refuses aliases.

An alias bomb (``a: &a [x, x, ...]``, ``b: [*a, *a, ...]`` seven levels deep) is a few hundred bytes of
YAML that a normal loader expands into millions of values; flattened into metadata it poisoned a whole
tenant. Frontmatter has no need for anchors or aliases, so they are refused outright, before anything is
constructed; size, nesting depth and the number of keys are bounded too (``limits.yaml_*``).
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import yaml

from freki.ingest.parsing.document import Metadata
from freki.ingest.parsing.errors import CorruptDocument, LimitExceeded, RefusedStructure, describe_source
from freki.ingest.parsing.guards import ParseLimits

# Frontmatter keys become metadata keys, which must have the form request metadata keys have.
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases and bounds nesting depth and key count."""

    def __init__(self, stream: str, limits: ParseLimits, source: str) -> None:
        super().__init__(stream)
        self.limits = limits
        self.source = source
        self.depth = 0
        self.keys = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        name = describe_source(self.source)
        if self.check_event(yaml.AliasEvent):
            raise RefusedStructure(
                f"YAML frontmatter in {name} uses an alias (*name); aliases and anchors are not allowed in "
                "frontmatter", source=self.source,
            )
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise RefusedStructure(
                f"YAML frontmatter in {name} defines an anchor (&name); aliases and anchors are not allowed "
                "in frontmatter", source=self.source,
            )
        self.depth += 1
        if self.depth > self.limits.yaml_max_depth:
            raise RefusedStructure(
                f"YAML frontmatter in {name} is nested deeper than {self.limits.yaml_max_depth} levels "
                "(limits.yaml_max_depth)", source=self.source,
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        self.keys += len(node.value)
        if self.keys > self.limits.yaml_max_keys:
            raise LimitExceeded(
                f"YAML frontmatter in {describe_source(self.source)} has more than {self.limits.yaml_max_keys:,} "
                "keys (limits.yaml_max_keys)", setting="limits.yaml_max_keys", source=self.source,
            )
        return node


def split_frontmatter(
    text: str, *, source: str = "", limits: ParseLimits | None = None
) -> tuple[Metadata, str, int]:
    """Separate a leading ``---`` YAML block from the body.

    Returns:
        (metadata, body, number of lines the frontmatter occupied).

    Raises:
        CorruptDocument: The block is not valid YAML or not a mapping; the message names the line.
        RefusedStructure: Anchors, aliases, or nesting past ``limits.yaml_max_depth``.
        LimitExceeded: Over ``limits.yaml_max_bytes`` or ``limits.yaml_max_keys``.
    """
    limits = limits or ParseLimits()
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 0
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        # An unclosed block is more likely a thematic break than broken metadata.
        return {}, text, 0
    block = "\n".join(lines[1:end])
    name = describe_source(source)
    size = len(block.encode("utf-8", "surrogatepass"))
    if size > limits.yaml_max_bytes:
        raise LimitExceeded(
            f"YAML frontmatter in {name} is {size:,} bytes; the limit is {limits.yaml_max_bytes:,} "
            "(limits.yaml_max_bytes)", setting="limits.yaml_max_bytes", source=source,
        )
    loader = _LimitedLoader(block, limits, source)
    try:
        loaded = loader.get_single_data() if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CorruptDocument(f"invalid YAML frontmatter in {name}{line}: {str(problem)[:200]}", source=source) from exc
    finally:
        loader.dispose()
    if not isinstance(loaded, dict):
        raise CorruptDocument(
            f"YAML frontmatter in {name} must be a mapping of keys to values (got {type(loaded).__name__})",
            source=source,
        )
    metadata: Metadata = {}
    _flatten(loaded, "", metadata)
    return metadata, "\n".join(lines[end + 1 :]), end + 1


def metadata_key(raw: str) -> str:
    """A frontmatter key in the form metadata keys must have (letters, digits, ``_ . -``; a letter or ``_`` first)."""
    key = _KEY_CHARS.sub("_", raw.strip())[:128] or "_"
    return key if key[0].isalpha() or key[0] == "_" else f"_{key}"[:128]


def _flatten(value: dict[Any, Any], prefix: str, out: Metadata) -> None:
    for key, item in value.items():
        name = metadata_key(f"{prefix}{key}")
        if isinstance(item, dict):
            _flatten(item, f"{name}.", out)
        elif isinstance(item, list | tuple | set):
            out[name] = [_scalar(x) for x in item if x is not None]  # kept a list: filters match elements
        elif item is not None:
            out[name] = _scalar(item)


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)
