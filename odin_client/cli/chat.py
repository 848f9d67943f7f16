"""``odin chat``: a conversation in the terminal, each turn a grounded answer in one Geri session.

Follow-up questions ("and how long is it?") are rewritten into standalone queries from the session's
history before retrieval (Geri's RewriteQuery, :mod:`odin_client.asking.grounded`). Commands: ``/sources``
(the last answer's retrieved sources), ``/reset`` (forget this conversation), ``/quit`` (or end of input).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from odin_client.cli.exit_codes import EXIT_OK
from odin_client.cli.render import render_answer, render_sources
from odin_client.client import OdinClient
from odin_client.types.errors import OdinError
from odin_client.types.results import Answer

PROMPT = "you> "


def run_chat(client: OdinClient, *, session_id: str, owner_id: str, ask_options: dict[str, Any],
             read: Callable[[str], str], out: TextIO, as_json: bool = False) -> int:
    """Read questions until ``/quit`` or end of input; print each answer. Returns the exit code."""
    session = session_id or f"chat-{uuid.uuid4().hex[:12]}"
    if not as_json:
        print(f"Session {session}. Ask a question; /sources, /reset, /quit.", file=out)
    last: Answer | None = None
    while True:
        try:
            line = read(PROMPT).strip()
        except EOFError:
            break
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line == "/sources":
            print(render_sources(last.sources) if last else "No answer yet.", file=out)
            continue
        if line == "/reset":
            client.delete_session(session)
            session = f"chat-{uuid.uuid4().hex[:12]}"
            print(f"Forgot the conversation; new session {session}.", file=out)
            continue
        try:
            last = client.ask(line, session_id=session, owner_id=owner_id, **ask_options)
        except OdinError as exc:  # one failed turn does not end the conversation
            print(f"odin chat: {exc}", file=out)
            continue
        if as_json:
            print(json.dumps(last.to_dict(), ensure_ascii=False), file=out)
            continue
        if last.query and last.query != line:
            print(f"(searched for: {last.query})", file=out)
        print(render_answer(last), file=out)
    return EXIT_OK
