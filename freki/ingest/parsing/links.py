"""Typed links of a Markdown document (the knowledge graph's edges, ``freki.graph``).

What becomes a link, and the confidence it carries (the Mindnet rules, seed 004 "Kantenableitung"):

========================================  ==============  ==========  ===================
markup                                    kind            confidence  rule
========================================  ==============  ==========  ===================
``[[rel:depends_on Note]]``               ``depends_on``  0.95        ``inline:rel``
``> [!edge] related_to: [[X]] [[Y]]``     ``related_to``  0.90        ``callout:edge``
``[[Note]]``, ``[[Note|alias]]``,         ``references``  1.0         ``explicit:wikilink``
``[[Note#Heading]]``
``[text](other.md)``, ``[text][ref]``     ``references``  1.0         ``explicit:link``
========================================  ==============  ==========  ===================

Wikilinks are explicit references, as sure as a markdown link; typed relations and callouts say more (their
kind) but are written by hand in a fixed syntax that is easier to get subtly wrong, hence the seed's lower
confidence. Links are read from markdown-it tokens, so code spans and fenced code produce none. Absolute
URLs (``https:``, ``mailto:``, ``//host``) and same-document anchors (``#x``) are not links between
documents. A target is kept as written (heading and alias dropped); ``freki.graph`` normalises and
resolves it. At most ``max_links`` links are kept (hostile input), duplicates counted once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from posixpath import normpath
from urllib.parse import unquote, urlsplit

from markdown_it.token import Token

# [[rel:kind Target]], [[Target|alias]], [[Target#heading]]; no brackets or newlines inside.
_WIKILINK = re.compile(r"\[\[([^\[\]\n]{1,500})\]\]")
_REL = re.compile(r"rel:([A-Za-z][\w-]{0,63})\s+(.+)", re.DOTALL)
_CALLOUT_LINE = re.compile(r"^\s*([A-Za-z][\w-]{0,63})\s*:\s*(.*)$")
_CALLOUT_HEAD = re.compile(r"^\s*\[!edge\][+-]?\s*", re.IGNORECASE)
_TARGET_CHARS = 500

CONFIDENCE = {"inline:rel": 0.95, "callout:edge": 0.90, "explicit:wikilink": 1.0, "explicit:link": 1.0}


@dataclass(frozen=True)
class Link:
    """One typed link from the document being parsed to another one (``target`` as written)."""

    target: str
    kind: str
    confidence: float
    rule: str
    # "name" (a wikilink: title, file name or alias) or "path" (a markdown link: a file path relative
    # to the linking document's source).
    target_type: str = "name"


def wikilink_target(inner: str) -> str:
    """The note a wikilink's inner text names: ``Note|alias`` and ``Note#Heading`` name ``Note``."""
    return inner.split("|", 1)[0].split("#", 1)[0].strip()


def relative_target(href: str) -> str:
    """The document path of a relative markdown link, or "" for URLs, anchors and absolute paths."""
    if not href or href.startswith(("#", "/", "\\")):
        return ""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return ""
    path = unquote(parts.path).strip()
    return normpath(path) if path else ""


def _text_of(inline: Token) -> str:
    """An inline token's text outside code spans and link targets (newlines where the source breaks)."""
    out: list[str] = []
    for child in inline.children or []:
        if child.type == "text":
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "code_inline":
            out.append(" ")  # a code span splits text: "[[" `x` "]]" is not a link
    return "".join(out)


def _wikilinks(text: str) -> Iterable[Link]:
    for match in _WIKILINK.finditer(text):
        inner = match.group(1)
        typed = _REL.fullmatch(inner.strip())
        if typed:
            target = wikilink_target(typed.group(2))
            if target:
                yield Link(target[:_TARGET_CHARS], typed.group(1).lower(), CONFIDENCE["inline:rel"], "inline:rel")
        else:
            target = wikilink_target(inner)
            if target:
                yield Link(target[:_TARGET_CHARS], "references", CONFIDENCE["explicit:wikilink"],
                           "explicit:wikilink")


def _callout(text: str) -> Iterable[Link]:
    """Edges of an ``[!edge]`` callout: each ``kind: [[X]] [[Y]]`` line gives one edge per target."""
    for line in _CALLOUT_HEAD.sub("", text, count=1).split("\n"):
        typed = _CALLOUT_LINE.match(line)
        if not typed:
            continue
        for match in _WIKILINK.finditer(typed.group(2)):
            target = wikilink_target(match.group(1))
            if target:
                yield Link(target[:_TARGET_CHARS], typed.group(1).lower(), CONFIDENCE["callout:edge"],
                           "callout:edge")


def extract_links(tokens: Sequence[Token], max_links: int) -> list[Link]:
    """Typed links of a parsed markdown token stream, in document order, without duplicates."""
    found: dict[tuple[str, str, str], Link] = {}
    depth = 0  # blockquote nesting
    callout = False  # inside a blockquote that opened with [!edge]
    for token in tokens:
        if len(found) >= max_links:
            break
        if token.type == "blockquote_open":
            depth += 1
        elif token.type == "blockquote_close":
            depth -= 1
            callout = callout and depth > 0
        if token.type != "inline":
            continue
        text = _text_of(token)
        if depth and (callout or _CALLOUT_HEAD.match(text)):
            callout = True
            links: Iterable[Link] = _callout(text)
        else:
            links = _wikilinks(text)
        hrefs = (relative_target(str(c.attrs.get("href", ""))) for c in token.children or []
                 if c.type == "link_open")
        markdown = (Link(h[:_TARGET_CHARS], "references", CONFIDENCE["explicit:link"], "explicit:link", "path")
                    for h in hrefs if h)
        for link in (*links, *markdown):
            found.setdefault((link.target, link.kind, link.target_type), link)
            if len(found) >= max_links:
                break
    return list(found.values())
