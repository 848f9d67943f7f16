"""``odin settings``: show a service's effective settings, or apply a validated change through its settings API
(``wolf.v1.SettingsService``; needs an admin key, ``api_key`` in Odin's settings)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from odin_client.cli.exit_codes import EXIT_OK, EXIT_USAGE
from odin_client.client import OdinClient


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``settings`` under the CLI's subparsers."""
    cmd = sub.add_parser("settings", parents=[common],
                         help="show Freki's or Geri's effective settings, or change them (admin key)")
    cmd.add_argument("--service", choices=["freki", "geri"], default="freki", help="whose settings (default freki)")
    cmd.add_argument("--set", action="append", metavar="NAME=VALUE", dest="changes",
                     help="change a setting, e.g. retrieval.top_k=8 (VALUE is read as JSON, else as text); repeat "
                          "for several, applied together or not at all")
    cmd.add_argument("--dry-run", action="store_true", help="with --set: validate only, change nothing")


def changes_of(pairs: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as one JSON merge patch; ValueError naming a malformed pair."""
    patch: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        parts = name.strip().split(".")
        if not sep or not all(parts):
            raise ValueError(f"--set {pair[:80]!r}: expected NAME=VALUE with a dotted NAME, e.g. retrieval.top_k=8")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        node = patch
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"--set {pair[:80]!r}: {part!r} is set to a value by another --set")
            node = child
        if parts[-1] in node:  # a later --set must not silently replace an earlier one (or a part of it)
            raise ValueError(f"--set {pair[:80]!r}: {name.strip()[:80]!r} is already set by another --set")
        node[parts[-1]] = value
    return patch


def run(client: OdinClient, args: argparse.Namespace) -> int:
    """Run ``odin settings``."""
    if not args.changes and args.dry_run:
        print("odin settings: --dry-run needs --set NAME=VALUE (without --set the settings are only shown)",
              file=sys.stderr)
        return EXIT_USAGE
    if not args.changes:
        view = client.get_settings(args.service)
        effective = json.loads(view.settings_json)
        if args.json:
            print(json.dumps({"service": view.service, "settings": effective, "reloadable": list(view.reloadable),
                              "file_only": list(view.file_only), "settings_file": view.settings_file}, indent=2))
        else:
            print(f"{view.service} settings (file: {view.settings_file or 'none'}; change live: "
                  f"{', '.join(view.reloadable) or 'nothing'})")
            print(json.dumps(effective, indent=2, ensure_ascii=False))
        return EXIT_OK
    try:
        patch = changes_of(args.changes)
    except ValueError as exc:
        print(f"odin settings: {exc}", file=sys.stderr)
        return EXIT_USAGE
    reply = client.update_settings(patch, service=args.service, dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"changed": list(reply.changed), "persisted": reply.persisted,
                          "warnings": list(reply.warnings)}, indent=2))
    else:
        verb = "would change" if args.dry_run else "changed"
        print(f"{args.service}: {verb} {', '.join(reply.changed) or 'nothing (already so)'}"
              + ("" if args.dry_run else f"; persisted to {reply.settings.settings_file}"))
        for warning in reply.warnings:
            print(f"warning: {warning}")
    return EXIT_OK
