"""Name keys: how a link's target and a document's names meet.

A document is known by its title, its frontmatter ``aliases``, the file name (stem) of its source and of
its document id (``n:`` keys), and by its source path and document id without extension (``p:`` keys).
A wikilink ``[[Note]]`` looks for ``n:note``; ``[[folder/Note]]`` for ``p:folder/note``; a relative
markdown link is resolved against the linking document's source folder first (``p:`` key). Keys are
case-folded with runs of white space collapsed, so ``[[my  note]]`` finds the title "My Note".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from posixpath import basename, dirname, join, normpath, splitext

from freki.ingest.parsing.links import Link

MAX_KEY_CHARS = 500


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())[:MAX_KEY_CHARS]


def _path(text: str) -> str:
    path = normpath(text.replace("\\", "/")).lstrip("/")
    stem, ext = splitext(path)
    return _fold(stem if ext.lower() in (".md", ".markdown", ".txt", ".html", ".htm", "") else path)


def name_key(name: str) -> str:
    """The key of a name (title, alias, file stem)."""
    return "n:" + _fold(name)


def path_key(path: str) -> str:
    """The key of a document path (extension of a text document dropped)."""
    return "p:" + _path(path)


def document_names(document_id: str, source: str, metadata: Mapping[str, object]) -> list[str]:
    """Every key a document answers to, without duplicates."""
    names: list[str] = []
    title = metadata.get("title")
    aliases = metadata.get("aliases", [])
    values: Iterable[object] = [*(title if isinstance(title, list) else [title]),
                                *(aliases if isinstance(aliases, list) else [aliases])]
    names.extend(name_key(str(v)) for v in values if isinstance(v, str) and v.strip())
    for path in (source, document_id):
        if path.strip():
            names.append(path_key(path))
            stem = splitext(basename(path.replace("\\", "/")))[0]
            if stem.strip():
                names.append(name_key(stem))
    return list(dict.fromkeys(n for n in names if len(n) > 2))


def link_key(link: Link, source: str) -> str:
    """The key a link's target is looked up by, from the linking document's ``source``."""
    if link.target_type == "path":
        return path_key(join(dirname(source.replace("\\", "/")), link.target))
    if "/" in link.target:
        return path_key(link.target)
    return name_key(link.target)
