"""The ``odin`` command line: ask, chat, index, retrieve, docs, status, erase, and ``odin mcp`` (the MCP server).

Exit codes: 0 ok, 2 usage error or invalid argument, 3 a service is unavailable, 1 anything else.
Errors go to stderr and name the failing service; ``--json`` prints machine-readable results on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from odin_client.cli import docs as cli_docs
from odin_client.cli import graph as cli_graph
from odin_client.cli import mcp as cli_mcp
from odin_client.cli import reindex as cli_reindex
from odin_client.cli import settings as cli_settings
from odin_client.cli.chat import run_chat
from odin_client.cli.exit_codes import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    exit_code_for,
)
from odin_client.cli.render import (
    render_after_stream,
    render_answer,
    render_index_line,
    render_retrieval,
    render_status,
)
from odin_client.client import OdinClient
from odin_client.protocol.files import DocumentFile, discover
from odin_client.protocol.messages import SEARCH_MODES
from odin_client.settings import OdinSettings
from odin_client.types.errors import InvalidRequest, OdinError, ServiceUnavailable
from odin_client.types.filters import parse_expressions
from odin_client.types.results import Answer
from odin_client.types.writes import IndexResult
from wolf_service.settings import SettingsError


def _pairs(values: Sequence[str] | None, flag: str) -> dict[str, list[str]]:
    """``["a=1", "a=2", "b=3"]`` → ``{"a": ["1", "2"], "b": ["3"]}``."""
    result: dict[str, list[str]] = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidRequest(f"{flag} expects key=value (got {item!r})")
        result.setdefault(key.strip(), []).append(value.strip())
    return result


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--freki", metavar="HOST:PORT", help="Freki target (default 127.0.0.1:50051)")
    common.add_argument("--geri", metavar="HOST:PORT", help="Geri target (default 127.0.0.1:50052)")
    common.add_argument("--tenant", help="tenant id (default: settings, empty = 'default')")
    common.add_argument("--settings", metavar="FILE", help="JSON settings file (else ODIN_SETTINGS_FILE)")
    common.add_argument("--deadline", type=float, metavar="SECONDS", help="overall deadline per call")
    common.add_argument("--json", action="store_true", help="print JSON on stdout")
    common.add_argument("--quiet", action="store_true", help="do not report retries on stderr")

    retrieval = argparse.ArgumentParser(add_help=False)
    retrieval.add_argument("--top-k", type=int, default=0, help="chunks to retrieve (0 = server default)")
    retrieval.add_argument("--filter", action="append", metavar="KEY=VALUE",
                           help="metadata filter: KEY=VALUE (repeat a key to allow several values), KEY!=VALUE, "
                                "KEY>=N, KEY<DATE...; @content_type, @source, @document_id, @owner_id are "
                                "Freki's own fields")
    retrieval.add_argument("--filter-all", action="append", metavar="KEY=VALUE",
                           help="list metadata that must hold every value given for KEY")
    retrieval.add_argument("--mode", choices=[m for m in SEARCH_MODES if m], default="",
                           help="search mode (default: server's)")

    parser = argparse.ArgumentParser(prog="odin", description="Client for Wolfpack RAG (Freki + Geri).")
    sub = parser.add_subparsers(dest="command", required=True)

    conversation = argparse.ArgumentParser(add_help=False)
    conversation.add_argument("--session", default="", help="continue this conversation (Geri session id)")
    conversation.add_argument("--owner", default="", help="data owner the conversation belongs to (GDPR)")
    conversation.add_argument("--model", default="", help="Geri model (default: server's)")
    conversation.add_argument("--max-tokens", type=int, help="maximum tokens to generate")

    ask = sub.add_parser("ask", parents=[common, retrieval, conversation],
                         help="answer a question from the index, citing the sources (or saying they do not)")
    ask.add_argument("question")
    ask.add_argument("--free", action="store_true",
                     help="free-text answer without citations or abstention (the answer may be streamed)")
    ask.add_argument("--stream", action="store_true",
                     help="print the answer as it is generated (a grounded one is checked at the end: a revision "
                          "is said and the checked answer printed)")
    ask.add_argument("--allow-no-context", action="store_true",
                     help="with --free: if Freki is unavailable, answer without context (and say so)")
    ask.add_argument("--temperature", type=float, help="with --free: sampling temperature, 0 = greedy")

    sub.add_parser("chat", parents=[common, retrieval, conversation],
                   help="an interactive conversation (follow-up questions understood)")

    erase = sub.add_parser("erase", parents=[common], help="GDPR: erase a data owner's documents and conversations")
    erase.add_argument("--owner", required=True, help="the data owner to erase")

    ret = sub.add_parser("retrieve", parents=[common, retrieval], help="show chunks retrieved for a query")
    ret.add_argument("query")

    idx = sub.add_parser("index", parents=[common], help="index files and folders (recursively)")
    idx.add_argument("paths", nargs="+", metavar="PATH")
    idx.add_argument("--metadata", action="append", metavar="KEY=VALUE", help="metadata for every document")
    idx.add_argument("--no-progress", action="store_true", help="no progress bar")

    cli_docs.add_parser(sub, common)
    cli_reindex.add_parser(sub, common)
    cli_settings.add_parser(sub, common)
    cli_graph.add_parsers(sub, common)
    cli_mcp.add_parser(sub, common)
    sub.add_parser("status", parents=[common], help="show Freki's index and Geri's models")
    return parser


def _settings(args: argparse.Namespace) -> OdinSettings:
    overrides: dict[str, Any] = {}
    if args.freki:
        overrides["freki_target"] = args.freki
    if args.geri:
        overrides["geri_target"] = args.geri
    if args.tenant is not None:
        overrides["tenant_id"] = args.tenant
    if args.deadline is not None:
        overrides.update(deadline_s=args.deadline, generate_deadline_s=args.deadline,
                         index_deadline_s=args.deadline)
    return OdinSettings.load(args.settings, **overrides)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _ask(client: OdinClient, args: argparse.Namespace) -> int:
    # With --json the answer is still streamed from Geri (if asked) but only the final JSON is printed.
    show_deltas = args.stream and not args.json
    shown: list[str] = []

    def on_text(delta: str) -> None:
        if show_deltas:
            shown.append(delta)
            sys.stdout.write(delta)
            sys.stdout.flush()

    options: dict[str, Any] = dict(top_k=args.top_k, filters=parse_expressions(args.filter, args.filter_all),
                                   mode=args.mode, model=args.model, max_tokens=args.max_tokens,
                                   temperature=args.temperature, session_id=args.session, owner_id=args.owner)
    if args.stream and not args.free:
        answer = _stream_grounded(client, args.question, options, on_text)
    else:
        answer = client.ask(args.question, allow_no_context=args.allow_no_context, grounded=not args.free,
                            on_text=on_text if args.stream else None, **options)
    if args.json:
        _print_json(answer.to_dict())
        return EXIT_OK
    print(render_after_stream(answer, "".join(shown), grounded=not args.free) if shown else render_answer(answer))
    return EXIT_OK


def _stream_grounded(client: OdinClient, question: str, options: dict[str, Any],
                     on_text: Callable[[str], None]) -> Answer:
    """``ask_stream``: each provisional delta to ``on_text``; the checked answer (its last event)."""
    for event in client.ask_stream(question, **options):
        if isinstance(event, Answer):
            return event
        on_text(event)
    raise AssertionError("ask_stream ends with an Answer or raises")  # pragma: no cover


def _retrieve(client: OdinClient, args: argparse.Namespace) -> int:
    result = client.retrieve(args.query, top_k=args.top_k, filters=parse_expressions(args.filter, args.filter_all),
                             mode=args.mode)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(render_retrieval(result))
    return EXIT_OK


def _index(client: OdinClient, args: argparse.Namespace) -> int:
    from tqdm import tqdm  # imported here: only `odin index` needs it

    metadata = {k: v[-1] for k, v in _pairs(args.metadata, "--metadata").items()}
    failures = 0
    # The bar goes to stderr so stdout stays clean for --json; tqdm hides it when not a terminal.
    hide_bar = True if args.no_progress else None
    with tqdm(desc="indexing", unit="doc", file=sys.stderr, disable=hide_bar) as bar:

        def progress(doc: DocumentFile, outcome: IndexResult | OdinError) -> None:
            nonlocal failures
            bar.update(1)
            if isinstance(outcome, OdinError):
                failures += 1
                bar.write(f"FAILED    {doc.source}: {outcome}", file=sys.stderr)
            elif not args.json:
                bar.write(render_index_line(outcome), file=sys.stdout)
        docs, skipped = discover(args.paths)
        bar.total = len(docs)
        for path, reason in skipped:
            bar.write(f"skipped   {path}: {reason}", file=sys.stderr)
        results = client.index_documents(docs, metadata=metadata, on_progress=progress)
    if args.json:
        _print_json({
            "documents": [r.to_dict() for r in results if isinstance(r, IndexResult)],
            "errors": [{"source": d.source, "error": str(r)} for d, r in zip(docs, results, strict=True)
                       if isinstance(r, OdinError)],
            "skipped": [{"path": str(p), "reason": why} for p, why in skipped],
        })
    else:
        print(f"{len(results) - failures} of {len(docs)} document(s) indexed, {failures} failed, "
              f"{len(skipped)} skipped")
    return EXIT_ERROR if failures else EXIT_OK


def _status(client: OdinClient, args: argparse.Namespace) -> int:
    errors: list[OdinError] = []
    freki: Any
    geri: Any
    try:
        freki = client.status()
    except OdinError as exc:
        errors.append(exc)
        freki = str(exc)
    try:
        geri = client.models()
    except OdinError as exc:
        errors.append(exc)
        geri = str(exc)
    if args.json:
        _print_json({
            "freki": {"error": freki} if isinstance(freki, str) else freki.to_dict(),
            "geri": {"error": geri} if isinstance(geri, str) else geri.to_dict(),
        })
    else:
        print(render_status(freki, geri))
    for error in errors:
        print(f"odin status: {error}", file=sys.stderr)
    if any(isinstance(e, ServiceUnavailable) for e in errors):
        return EXIT_UNAVAILABLE
    return EXIT_ERROR if errors else EXIT_OK


def _chat(client: OdinClient, args: argparse.Namespace) -> int:
    options = {"top_k": args.top_k, "filters": parse_expressions(args.filter, args.filter_all), "mode": args.mode,
               "model": args.model, "max_tokens": args.max_tokens}
    return run_chat(client, session_id=args.session, owner_id=args.owner, ask_options=options, read=input,
                    out=sys.stdout, as_json=args.json)


def _erase(client: OdinClient, args: argparse.Namespace) -> int:
    erased = client.erase_owner(args.owner)
    if args.json:
        _print_json(erased.to_dict())
    else:
        print(f"erased owner {args.owner!r}: {erased.documents} document(s), {erased.chunks} chunk(s), "
              f"{erased.sessions} conversation(s)")
    return EXIT_OK


COMMANDS = {"ask": _ask, "chat": _chat, "retrieve": _retrieve, "index": _index, "status": _status,
            "erase": _erase, "docs": cli_docs.run, "reindex": cli_reindex.run, "links": cli_graph.links,
            "feedback": cli_graph.feedback, "settings": cli_settings.run}



def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and usage errors (2)
        return int(exc.code or 0)
    try:
        settings = _settings(args)
    except (SettingsError, ValueError) as exc:
        print(f"odin: invalid settings: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "mcp":  # a server, not one call: it opens its own clients
        return cli_mcp.run(args, settings)
    try:
        on_retry = None if args.quiet else (lambda notice: print(f"odin: {notice}", file=sys.stderr, flush=True))
        with OdinClient(settings, on_retry=on_retry) as client:
            return COMMANDS[args.command](client, args)
    except OdinError as exc:
        print(f"odin {args.command}: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        print("odin: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
