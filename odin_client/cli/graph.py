"""``odin links`` (ListLinks) and ``odin feedback`` (RecordFeedback): the knowledge graph from the CLI."""

from __future__ import annotations

import argparse
import json
from typing import Any

from google.protobuf.json_format import MessageToDict

from odin_client.cli.exit_codes import EXIT_OK
from odin_client.client import OdinClient


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``links`` and ``feedback`` under the CLI's subparsers."""
    links = sub.add_parser("links", parents=[common], help="a document's outgoing links and backlinks")
    links.add_argument("document_id", metavar="DOC")
    links.add_argument("--limit", type=int, default=0, help="at most this many of each (default 100, max 1000)")
    feedback = sub.add_parser("feedback", parents=[common],
                              help="rate (1-5) a retrieved document of an answer (QUERY_ID: RAGContext.query_id)")
    feedback.add_argument("query_id", metavar="QUERY_ID")
    feedback.add_argument("document_id", metavar="DOC", help='the rated document ("" = the answer as a whole)')
    feedback.add_argument("rating", type=int, metavar="RATING", help="1 (useless) to 5 (exactly right)")
    feedback.add_argument("--comment", default="")


def _edge(edge: Any, outgoing: bool) -> str:
    other = (edge.target_document_id or f"(dangling: {edge.target})") if outgoing else edge.source_document_id
    return f"{'->' if outgoing else '<-'} {other}\t{edge.kind}\t{edge.confidence:.2f}\t{edge.rule}"


def links(client: OdinClient, args: argparse.Namespace) -> int:
    """Run ``odin links DOC``."""
    resp = client.list_links(args.document_id, page_size=args.limit)
    if args.json:
        print(json.dumps(MessageToDict(resp, preserving_proto_field_name=True,
                                       always_print_fields_with_no_presence=True), indent=2, ensure_ascii=False))
        return EXIT_OK
    for edge in resp.outgoing:
        print(_edge(edge, True))
    for edge in resp.backlinks:
        print(_edge(edge, False))
    print(f"{len(resp.outgoing)} outgoing, {len(resp.backlinks)} backlink(s)"
          + (" (truncated: --limit)" if resp.truncated else ""))
    return EXIT_OK


def feedback(client: OdinClient, args: argparse.Namespace) -> int:
    """Run ``odin feedback QUERY_ID DOC RATING``."""
    resp = client.record_feedback(args.query_id, args.rating, document_id=args.document_id, comment=args.comment)
    if args.json:
        print(json.dumps({"query_id": resp.query_id, "rating": resp.rating}))
    else:
        print(f"recorded rating {resp.rating} for query {resp.query_id}")
    return EXIT_OK
