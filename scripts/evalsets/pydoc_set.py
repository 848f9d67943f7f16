"""Two evaluation sets over one corpus of real text: docstrings of this Python's standard library.

Corpus: for a fixed list of standard-library modules, every public function, class and method
whose docstring has a one-line summary followed by a body of at least ``MIN_BODY`` characters.
A passage is ``"<qualified name>\\n<docstring body>"`` — the summary line is *removed* from the
passage, so no query below is a verbatim substring of its target. Identical bodies (inherited
methods, aliases) are kept once. Nothing here was written by this project except the questions in
``paraphrase_questions.tsv``.

* ``pydoc-lexical`` (automatic): the query is the docstring's summary line ("Return the canonical
  string representation of the object."). Summaries reuse the vocabulary of the body they
  summarise, so this set rewards exact term matching, like questions that reuse the passage's words.
* ``pydoc-paraphrase`` (hand-written, see the TSV): questions a user might ask, worded on purpose
  with different words than the target passage (e.g. "remove a folder and everything inside it"
  for ``shutil.rmtree``). They were written by the agent that built Freki's fusion, before any
  fusion setting was evaluated on them; ``lexical_overlap`` reports how few stems they share with
  their target, so the claim "different words" can be checked.

The corpus depends on the Python version's docstrings (3.11 here); document ids are qualified names.
"""

from __future__ import annotations

import importlib
import inspect
import random
import re
import warnings
from pathlib import Path

from scripts.evalsets import EvalSet

MODULES = (
    "abc argparse array ast asyncio base64 bisect calendar codecs collections concurrent.futures "
    "configparser contextlib copy csv dataclasses datetime decimal difflib dis email.message enum "
    "fnmatch fractions functools gc getopt gettext glob gzip hashlib heapq hmac html html.parser "
    "http.client inspect io ipaddress itertools json locale logging lzma math mimetypes "
    "multiprocessing operator os os.path pathlib pickle pprint queue random re reprlib sched secrets "
    "selectors shelve shlex shutil signal socket sqlite3 ssl statistics string struct subprocess "
    "tarfile tempfile textwrap threading time timeit tokenize traceback typing unicodedata "
    "unittest urllib.parse urllib.request uuid warnings weakref xml.etree.ElementTree zipfile zlib"
).split()
MIN_BODY = 120
MAX_BODY = 1500  # one chunk's worth: keeps the set about retrieval, not chunking
QUESTIONS = Path(__file__).with_name("paraphrase_questions.tsv")


def _docstring_pair(obj: object) -> tuple[str, str] | None:
    doc = inspect.getdoc(obj)
    if not doc:
        return None
    parts = doc.strip().split("\n\n", 1)
    summary = " ".join(parts[0].split())
    body = parts[1].strip() if len(parts) > 1 else ""
    if len(summary.split()) < 4 or len(body) < MIN_BODY or summary.endswith(":"):
        return None
    if re.match(r"^[\w.]+\(.*\)", summary):  # C signatures ("sorted(iterable, /, ...)") are not summaries
        return None
    return summary, body[:MAX_BODY]


def build_corpus() -> tuple[dict[str, str], dict[str, str]]:
    """``(passages, summaries)`` keyed by qualified name."""
    passages: dict[str, str] = {}
    summaries: dict[str, str] = {}
    seen_bodies: set[str] = set()

    def add(name: str, obj: object) -> None:
        pair = _docstring_pair(obj)
        if pair is None or pair[1] in seen_bodies:
            return
        seen_bodies.add(pair[1])
        passages[name] = f"{name}\n{pair[1]}"
        summaries[name] = pair[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mod_name in MODULES:
            try:
                module = importlib.import_module(mod_name)
            except ImportError:
                continue
            for attr, obj in sorted(vars(module).items()):
                if attr.startswith("_") or getattr(obj, "__module__", None) not in (module.__name__, mod_name):
                    if not (inspect.isbuiltin(obj) and attr[:1] != "_" and inspect.ismodule(module)
                            and getattr(obj, "__self__", None) is module):
                        continue
                if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
                    continue
                add(f"{mod_name}.{attr}", obj)
                if inspect.isclass(obj):
                    for m_name, member in sorted(vars(obj).items()):
                        if m_name.startswith("_") or not callable(member):
                            continue
                        add(f"{mod_name}.{attr}.{m_name}", member)
    return passages, summaries


def load_questions() -> dict[str, tuple[str, str]]:
    """Hand-written paraphrase questions: id -> (question, target qualified name)."""
    out: dict[str, tuple[str, str]] = {}
    for i, line in enumerate(QUESTIONS.read_text(encoding="utf-8").splitlines()):
        if not line.strip() or line.startswith("#"):
            continue
        target, question = line.split("\t", 1)
        out[f"p{i:03d}"] = (question.strip(), target.strip())
    return out


def load(lexical_queries: int = 300, seed: int = 7) -> tuple[EvalSet, EvalSet]:
    """``(pydoc-lexical, pydoc-paraphrase)``; both judged on split "test" only (nothing is tuned on them)."""
    passages, summaries = build_corpus()
    rng = random.Random(seed)
    picked = sorted(rng.sample(sorted(summaries), min(lexical_queries, len(summaries))))
    lex_queries = {f"l{i:04d}": summaries[name] for i, name in enumerate(picked)}
    lex_qrels = {f"l{i:04d}": {name: 1} for i, name in enumerate(picked)}
    lexical = EvalSet("pydoc-lexical", passages, lex_queries, {"test": lex_qrels},
                      "stdlib docstrings; query = summary line removed from the passage")
    questions = load_questions()
    missing = sorted({t for _, t in questions.values() if t not in passages})
    if missing:
        raise RuntimeError(f"paraphrase targets not in the corpus (Python version differs?): {missing}")
    para = EvalSet("pydoc-paraphrase", passages, {q: text for q, (text, _) in questions.items()},
                   {"test": {q: {t: 1} for q, (_, t) in questions.items()}},
                   "stdlib docstrings; hand-written questions avoiding the passage's words")
    return lexical, para
