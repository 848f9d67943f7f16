"""A linked corpus with multi-hop questions, built deterministically from the Node.js API reference.

Source: the Markdown of the Node.js API docs as Debian's ``nodejs`` package installs it
(``/usr/share/doc/nodejs/api/*.md``; offline, public, heavily cross-linked: ``[`fs.readFile()`][]`` with
``[`fs.readFile()`]: fs.md#fsreadfilepath-options-callback`` reference definitions at the end of a file).

Notes: every ``##``/``###``/``####`` section of the modules in ``MODULES`` becomes one note
``<module>/<anchor>.md`` (Node's anchor of the heading: lower-cased, characters other than letters,
digits, ``-``, ``_`` and spaces dropped, spaces as ``-``; a repeated anchor gets ``-1``, ``-2``...). Every
link to ``<module>.md#<anchor>`` or ``#<anchor>`` is rewritten as a relative Markdown link to the note of
that section (``../fs/fsreadfilepath-options-callback.md``) — the source's own cross-references, kept as
links between files; links to modules outside ``MODULES`` or to the web become plain text.

Questions (multi-hop): for a note A whose body links to another note B, the question is the
first sentence of A's body with every link's text removed (so the question does not name B), prefixed
with A's heading. The answer is B (grade 2; the passage one link away); A itself, the passage whose
wording the question matches, is judged 1 (it leads there). At most one question per A (its first link
to another note), first sentences of at least 8 words only, at most ``MAX_QUESTIONS`` in document order.
"""

from __future__ import annotations

import re
from pathlib import Path

API = Path("/usr/share/doc/nodejs/api")
MODULES = ("fs", "path", "stream", "events", "buffer", "http", "url", "process", "os", "child_process",
           "net", "zlib", "worker_threads", "timers", "readline", "dns")
MAX_QUESTIONS = 300

_HEADING = re.compile(r"^(#{2,4})\s+(.+?)\s*$")
_REFDEF = re.compile(r"^\[([^\]]+)\]:\s*(\S+)\s*$")
_REFLINK = re.compile(r"\[([^\]]+)\]\[([^\]]*)\]")
_INLINE = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """Node's anchor of a heading text."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _sections(module: str, text: str) -> list[tuple[str, str, list[str]]]:
    """(anchor, heading, body lines) per section, fenced code kept as is."""
    out: list[tuple[str, str, list[str]]] = []
    seen: dict[str, int] = {}
    fenced = False
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)  # YAML history blocks, lint markers
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            name = anchor(match.group(2))
            count = seen.get(name, 0)
            seen[name] = count + 1
            out.append((f"{name}-{count}" if count else name, match.group(2), []))
        elif out and not _REFDEF.match(line):
            out[-1][2].append(line)
    return out


def build(api: Path = API) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """(notes path -> markdown, question id -> question, question id -> {note: grade})."""
    parsed = {m: (api / f"{m}.md").read_text(encoding="utf-8") for m in MODULES if (api / f"{m}.md").exists()}
    anchors = {m: {a for a, _, _ in _sections(m, t)} for m, t in parsed.items()}
    notes: dict[str, str] = {}
    questions: dict[str, str] = {}
    judged: dict[str, dict[str, int]] = {}
    for module, text in parsed.items():
        refs = {m.group(1).lower(): m.group(2) for line in text.split("\n") if (m := _REFDEF.match(line))}
        for name, heading, body in _sections(module, text):
            path = f"{module}/{name}.md"
            lines, links = _rewrite(module, body, refs, anchors)
            content = "\n".join(lines).strip()
            if not content:
                continue
            notes[path] = f"# {heading}\n\n{content}\n"
            if len(questions) >= MAX_QUESTIONS:
                continue
            answer = next((n for n in links if n != path), "")
            question = _first_sentence(body)
            if answer and question:
                qid = f"q{len(questions):03d}"
                questions[qid] = f"{heading.strip('`')}: {question}"
                judged[qid] = {answer: 2, path: 1}
    judged = {q: {n: g for n, g in rel.items() if n in notes} for q, rel in judged.items()}
    return notes, questions, {q: rel for q, rel in judged.items() if any(g == 2 for g in rel.values())}


def _rewrite(module: str, body: list[str], refs: dict[str, str], anchors: dict[str, set[str]]
             ) -> tuple[list[str], list[str]]:
    """A section's lines with links to notes as relative links (others as their text), and those notes."""
    links: list[str] = []

    def rewrite(text: str, href: str) -> str:
        file, _, frag = href.partition("#")
        other = file[:-3] if file.endswith(".md") else (module if not file else "")
        if other not in anchors or frag not in anchors[other]:
            return text
        links.append(f"{other}/{frag}.md")
        return f"[{text}]({frag}.md)" if other == module else f"[{text}](../{other}/{frag}.md)"

    # Inline links first: the reference links' rewritten form must not be rewritten again.
    lines = [_REFLINK.sub(lambda m: rewrite(m.group(1), refs.get((m.group(2) or m.group(1)).lower(), "")),
                          _INLINE.sub(lambda m: rewrite(m.group(1), m.group(2)), line))
             for line in body]
    return lines, links


def _first_sentence(body: list[str]) -> str:
    """The first prose sentence of a section, links' text removed (None-like "" when too short)."""
    prose = []
    for line in body:
        if line.lstrip().startswith(("```", ">", "*", "-", "|", "#")) or line.startswith("    ") or not line.strip():
            if prose:
                break
            continue
        prose.append(line.strip())
    text = _INLINE.sub("", _REFLINK.sub("", " ".join(prose)))
    text = re.sub(r"`[^`]*`", "", text)
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].strip()
    sentence = " ".join(sentence.split())
    return sentence if len(sentence.split()) >= 8 else ""
