"""``odin docs``: list, show, delete and export documents in Freki (a subcommand of :mod:`odin_client.cli`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from odin_client.cli.exit_codes import EXIT_ERROR, EXIT_OK
from odin_client.client import OdinClient
from odin_client.types.errors import NotFound, OdinError
from odin_client.types.records import DocumentRecord


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``docs`` and its actions under the CLI's subparsers."""
    docs = sub.add_parser("docs", help="list, show, delete or export documents")
    actions = docs.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", parents=[common], help="list documents (id, chunks, type, source)")
    listing.add_argument("--owner", default="", help="only this data owner's documents")
    listing.add_argument("--limit", type=int, default=1000, help="at most this many (default 1000, 0 = all)")
    show = actions.add_parser("show", parents=[common], help="show one document's record and metadata")
    show.add_argument("document_id")
    delete = actions.add_parser("delete", parents=[common], help="delete documents and all their chunks")
    delete.add_argument("document_ids", nargs="+", metavar="DOCUMENT_ID")
    export = actions.add_parser("export", parents=[common],
                                help="GDPR export of a data owner's documents, their links and chunks as JSON lines")
    export.add_argument("--owner", required=True, help="the data owner")
    export.add_argument("--vectors", action="store_true", help="include embedding vectors")
    export.add_argument("--output", "-o", metavar="FILE", help="write to FILE (mode 0600) instead of stdout")


def run(client: OdinClient, args: argparse.Namespace) -> int:
    """Run ``odin docs <action>``."""
    action = {"list": _list, "show": _show, "delete": _delete, "export": _export}[args.action]
    return action(client, args)


def _line(doc: DocumentRecord) -> str:
    return f"{doc.document_id}\t{doc.chunk_count} chunk(s)\t{doc.content_type or '?'}\t{doc.indexed_at}\t{doc.source}"


def _list(client: OdinClient, args: argparse.Namespace) -> int:
    docs: list[DocumentRecord] = []
    for doc in client.iter_documents(owner_id=args.owner):
        if args.limit and len(docs) == args.limit:
            print(f"odin docs list: stopped at --limit {args.limit}; there are more", file=sys.stderr)
            break
        docs.append(doc)
    if args.json:
        print(json.dumps({"documents": [d.to_dict() for d in docs]}, indent=2, ensure_ascii=False))
    else:
        for doc in docs:
            print(_line(doc))
        print(f"{len(docs)} document(s)", file=sys.stderr)
    return EXIT_OK


def _show(client: OdinClient, args: argparse.Namespace) -> int:
    doc = client.get_document(args.document_id)
    if args.json:
        print(json.dumps(doc.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    for key, value in doc.to_dict().items():
        if key != "metadata":
            print(f"{key:16s} {', '.join(value) or '-' if isinstance(value, list) else value}")
    for key, value in sorted(doc.metadata.items()):
        print(f"metadata.{key:7s} {value}")
    return EXIT_OK


def _delete(client: OdinClient, args: argparse.Namespace) -> int:
    results: list[dict[str, Any]] = []
    for doc_id in args.document_ids:
        try:
            results.append({"document_id": doc_id, "chunks_deleted": client.delete_document(doc_id)})
        except NotFound as exc:
            results.append({"document_id": doc_id, "error": str(exc)})
    if args.json:
        print(json.dumps({"deleted": results}, indent=2, ensure_ascii=False))
    for item in results:
        if "error" in item:
            print(f"odin docs delete: {item['error']}", file=sys.stderr)
        elif not args.json:
            print(f"deleted {item['document_id']} ({item['chunks_deleted']} chunk(s))")
    return EXIT_ERROR if any("error" in r for r in results) else EXIT_OK


def _export(client: OdinClient, args: argparse.Namespace) -> int:
    out: TextIO
    if args.output:
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # personal data
        out = os.fdopen(fd, "w", encoding="utf-8")
    else:
        out = sys.stdout
    documents = chunks = 0
    try:
        for record in client.export_owner(args.owner, include_vectors=args.vectors):
            documents += "document" in record
            chunks += "chunk" in record
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OdinError:
        if args.output:
            out.close()
            os.unlink(args.output)  # a partial export must not pass for a complete one
        raise
    finally:
        if args.output and not out.closed:
            out.close()
    print(f"exported owner {args.owner!r}: {documents} document(s), {chunks} chunk(s)"
          + (f" -> {args.output}" if args.output else ""), file=sys.stderr)
    return EXIT_OK
