"""Typed links extracted from Markdown (freki/ingest/parsing/links.py) and their name keys."""

from __future__ import annotations

from freki.graph.names import document_names, link_key
from freki.ingest.parsing import ParseLimits, parse_document
from freki.ingest.parsing.links import Link

NOTE = """---
title: Alpha
aliases: [A1]
---
# Alpha

See [[Beta]], [[Gamma|the gamma]], [[Delta#Part]] and [[rel:depends_on Epsilon]].
Not `[[Code]]`; a [link](../other/zeta.md#x), a [web page](https://x.org/a.md), an [anchor](#top).

```
[[Fenced]]
```

> [!edge] related_to: [[Eta]] [[Theta]]
> depends_on: [[Iota]]

> a plain quote names [[Kappa]]

By reference: [eta][r], and [[Beta]] again.

[r]: sub/eta.md
"""


def _links(text: str, **limits: int) -> list[tuple[str, str, float, str]]:
    doc = parse_document(text, source="notes/alpha.md", limits=ParseLimits(**limits))
    return [(link.target, link.kind, link.confidence, link.rule) for link in doc.links]


def test_every_link_form_becomes_a_typed_link_with_its_confidence() -> None:
    assert _links(NOTE) == [
        ("Beta", "references", 1.0, "explicit:wikilink"),
        ("Gamma", "references", 1.0, "explicit:wikilink"),
        ("Delta", "references", 1.0, "explicit:wikilink"),
        ("Epsilon", "depends_on", 0.95, "inline:rel"),
        ("../other/zeta.md", "references", 1.0, "explicit:link"),
        ("Eta", "related_to", 0.9, "callout:edge"),
        ("Theta", "related_to", 0.9, "callout:edge"),
        ("Iota", "depends_on", 0.9, "callout:edge"),
        ("Kappa", "references", 1.0, "explicit:wikilink"),
        ("sub/eta.md", "references", 1.0, "explicit:link"),
    ]


def test_code_urls_and_anchors_are_not_links_and_hostile_counts_are_bounded() -> None:
    targets = {t for t, *_ in _links(NOTE)}
    assert not targets & {"Code", "Fenced", "https://x.org/a.md", "#top"}
    many = " ".join(f"[[N{i}]]" for i in range(5000))
    assert len(_links(many, max_links=50)) == 50
    # Deep nesting costs one linear scan; the innermost pair is the wikilink.
    assert _links("[[" * 10_000 + "x" + "]]" * 10_000, max_links=50) == [("x", "references", 1.0, "explicit:wikilink")]


def test_a_link_key_meets_the_names_of_its_target() -> None:
    names = document_names("guide/Install Guide.md", "/vault/guide/Install Guide.md",
                           {"title": "Installing  Freki", "aliases": ["setup"]})
    assert {"n:installing freki", "n:setup", "n:install guide", "p:vault/guide/install guide"} <= set(names)
    source = "/vault/notes/alpha.md"
    assert link_key(Link("installing freki", "references", 1.0, "explicit:wikilink"), source) in names
    assert link_key(Link("SETUP", "references", 1.0, "explicit:wikilink"), source) in names
    assert link_key(Link("../guide/Install Guide.md", "references", 1.0, "explicit:link", "path"), source) in names
    assert link_key(Link("Other", "references", 1.0, "explicit:wikilink"), source) not in names
