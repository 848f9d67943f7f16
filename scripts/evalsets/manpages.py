"""A German (or other-language) retrieval set from the translated man pages Debian ships (``manpages-de``).

For each page under ``/usr/share/man/<lang>/``, rendered by ``man -l``: the query is the one-line
description of its NAME section (``BEZEICHNUNG`` in German) without the command name ("Ausgabe des
Maschinen-Hardwarenamens (identisch zu uname -m)"); the relevant passage is its DESCRIPTION section
(``BESCHREIBUNG``), cut at ``MAX_PASSAGE_CHARS``; every other page's description is a distractor. Pages
whose description is shorter than ``MIN_PASSAGE_CHARS`` and pages whose NAME line repeats another page's
are left out. Splits are by page name (a fixed third, by hash, is "train" for choosing settings; the rest
"test"), so no page's query is in both.

The package is installed with apt-get when missing (root only); the rendered set is cached under
``.cache/evalsets/`` (git-ignored) and never committed. Nothing in it was written by this project.

    python -m scripts.evalsets.manpages            # build (or show) the German set
    python -m scripts.evalsets.manpages --lang fr  # another translation (manpages-fr)
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts.common import REPO
from scripts.evalsets import EvalSet

MAN_ROOT = Path("/usr/share/man")
CACHE = REPO / ".cache" / "evalsets"
MIN_PASSAGE_CHARS = 150
MAX_PASSAGE_CHARS = 3000
# Section headings of the translated pages (NAME, DESCRIPTION) per language.
HEADINGS = {
    "de": ("BEZEICHNUNG", "BESCHREIBUNG"),
    "fr": ("NOM", "DESCRIPTION"),
    "es": ("NOMBRE", "DESCRIPCIÓN"),
    "it": ("NOME", "DESCRIZIONE"),
    "en": ("NAME", "DESCRIPTION"),
}
_HEADING_RE = re.compile(r"^(\S[^\n]*)$", re.MULTILINE)  # rendered headings start in column 0


def split_of(page: str) -> str:
    return "train" if int(hashlib.sha256(page.encode()).hexdigest(), 16) % 3 == 0 else "test"


def ensure_package(lang: str) -> None:
    """Install ``manpages-<lang>`` with apt-get when its folder is missing (needs root)."""
    if (MAN_ROOT / lang).is_dir() or lang == "en":
        return
    if os.geteuid() != 0:
        raise SystemExit(f"/usr/share/man/{lang} is missing: run `apt-get install manpages-{lang}` as root")
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", f"manpages-{lang}"], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def render(path: Path) -> str:
    """The page as plain text (``man -l``, overstrikes removed); empty when it does not render."""
    env = {**os.environ, "LANG": "C.UTF-8", "MANWIDTH": "100000", "MAN_KEEP_FORMATTING": "0"}
    try:
        out = subprocess.run(["man", "-l", str(path)], capture_output=True, env=env, timeout=60, check=False).stdout
    except subprocess.TimeoutExpired:
        return ""
    text = out.decode("utf-8", "replace")
    return re.sub(r".\x08", "", text)


def sections(text: str) -> dict[str, str]:
    """Heading -> body (indentation removed, paragraphs kept)."""
    found: dict[str, str] = {}
    heads = list(_HEADING_RE.finditer(text))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = "\n".join(line.strip() for line in text[head.end():end].splitlines())
        found.setdefault(head.group(1).strip(), re.sub(r"\n{3,}", "\n\n", body).strip())
    return found


def page_record(path: Path, lang: str) -> dict[str, str] | None:
    name_head, desc_head = HEADINGS[lang]
    with gzip.open(path, "rb") as fh:
        if fh.read(4) == b".so ":
            return None  # a redirect to another page
    parts = sections(render(path))
    name_line = " ".join(parts.get(name_head, "").split())
    description = parts.get(desc_head, "")
    if " - " not in name_line or len(description) < MIN_PASSAGE_CHARS:
        return None
    summary = name_line.split(" - ", 1)[1].strip()
    page = path.name.removesuffix(".gz")
    return {"page": page, "query": summary, "passage": description[:MAX_PASSAGE_CHARS]}


def build(lang: str = "de", max_pages: int | None = None) -> Path:
    """Render every page of ``manpages-<lang>`` once into ``.cache/evalsets/manpages-<lang>.jsonl``
    (``max_pages``: a seeded sample of that many, for the English pages' 17k)."""
    out = CACHE / (f"manpages-{lang}.jsonl" if max_pages is None else f"manpages-{lang}-{max_pages}.jsonl")
    if out.exists():
        return out
    ensure_package(lang)
    if shutil.which("man") is None:
        raise SystemExit("`man` is missing: apt-get install man-db")
    root = MAN_ROOT if lang == "en" else MAN_ROOT / lang
    paths = sorted(p for p in root.glob("man[1-8]/*.gz"))
    if max_pages is not None and len(paths) > max_pages:
        paths = sorted(random.Random(7).sample(paths, max_pages))
    with ThreadPoolExecutor(2) as pool:
        records = [r for r in pool.map(lambda p: page_record(p, lang), paths) if r]
    seen: set[str] = set()
    kept = []
    for record in records:
        if record["query"].lower() not in seen:
            seen.add(record["query"].lower())
            kept.append(record)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    tmp.replace(out)
    return out


def load(lang: str = "de") -> EvalSet:
    """The set: corpus = every kept page's description, one query per page, train/test by page name."""
    records = [json.loads(line) for line in build(lang).read_text(encoding="utf-8").splitlines()]
    corpus = {r["page"]: r["passage"] for r in records}
    queries = {r["page"]: r["query"] for r in records}
    qrels: dict[str, dict[str, dict[str, int]]] = {"train": {}, "test": {}}
    for r in records:
        qrels[split_of(r["page"])][r["page"]] = {r["page"]: 1}
    return EvalSet(f"manpages-{lang}", corpus, queries, qrels,
                   f"Debian manpages-{lang}: NAME description -> DESCRIPTION section")


if __name__ == "__main__":
    chosen = sys.argv[sys.argv.index("--lang") + 1] if "--lang" in sys.argv else "de"
    es = load(chosen)
    print(f"{es.name}: {len(es.corpus)} passages, train {len(es.split('train'))} / test {len(es.split('test'))} "
          f"queries -> {CACHE / f'manpages-{chosen}.jsonl'}")
    for page in list(es.queries)[:3]:
        print(f"  {page}: {es.queries[page]!r} -> {es.corpus[page][:100]!r}")
