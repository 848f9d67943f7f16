"""``odin reindex``: FullReindex (re-chunk from the kept sources, or start a blue/green model migration)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from odin_client.cli.exit_codes import EXIT_OK
from odin_client.client import OdinClient


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``reindex`` under the CLI's subparsers."""
    reindex = sub.add_parser("reindex", parents=[common],
                             help="re-chunk documents from their kept sources with the current settings, or "
                                  "migrate the index to the configured embedding model")
    reindex.add_argument("--document", default="", metavar="ID", help="only this document (default: the tenant's all)")
    reindex.add_argument("--migrate-model", action="store_true",
                         help="start a blue/green migration of the whole index (every tenant) to the configured "
                              "embedding model; it runs in the background, `odin status` shows its progress")


def run(client: OdinClient, args: argparse.Namespace) -> int:
    """Run ``odin reindex``."""
    result = client.full_reindex(document_id=args.document, migrate_model=args.migrate_model)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    if result.migration:
        m = result.migration
        print(f"migration {m['model_from']} -> {m['model_to']}: {m['state']}, "
              f"{m['documents_done']}/{m['documents_total']} documents (progress: odin status)")
    else:
        print(f"reindexed {result.documents_reindexed} document(s) in {result.duration_ms} ms: "
              f"{result.documents_rechunked} re-chunked from the kept source, {result.documents_reembedded_only} "
              f"re-embedded only; {result.chunks_embedded} chunk(s) embedded")
    if result.note:
        print(f"note: {result.note}")
    return EXIT_OK
