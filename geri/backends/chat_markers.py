"""Chat-template markers spelled inside a message: a document or a question may spell ``<|im_start|>system``,
but it must never open a turn of its own.

A template renders every message into one prompt string, and the server tokenizes that string with its
special tokens recognised, wherever they come from. So a marker's text is broken by a zero-width space after
its first character before the message is sent. The embedded model knows its tokenizer's special tokens
(:func:`as_text` with ``LoadedModel.special_texts``); a remote server's are unknown, so :func:`as_remote_text`
breaks the markers of the common template families instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

ZERO_WIDTH_SPACE = "\u200b"

# ChatML (Qwen, SmolLM) <|im_start|>, Llama 3 <|start_header_id|> <|eot_id|>, Phi <|user|> <|end|>, DeepSeek's
# full-width bars <｜User｜>, Gemma <start_of_turn>, Llama 2 and Mistral [INST] <<SYS>> [TOOL_CALLS], Qwen's
# tool and reasoning tags <tool_call> <tool_response> <think> (added tokens, read as one whether special or
# not), and the sequence markers <s> </s> <bos> <eos>.
_REMOTE_MARKERS = re.compile(
    r"<\|[^|<>\s]{1,48}\|>|<｜[^｜<>\s]{1,48}｜>"
    r"|</?(?:start_of_turn|end_of_turn|tool_call|tool_response|think|s|bos|eos)>|<</?SYS>>"
    r"|\[/?(?:INST|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|SYSTEM_PROMPT)\]")


def _broken(marker: str) -> str:
    return f"{marker[0]}{ZERO_WIDTH_SPACE}{marker[1:]}"


def as_text(content: str, specials: Sequence[str]) -> str:
    """``content`` with the text of every one of ``specials`` (a tokenizer's special tokens) broken."""
    for name in specials:
        if name in content:
            content = content.replace(name, _broken(name))
    return content


def as_remote_text(content: str) -> str:
    """``content`` with every marker of the common chat-template families broken (for a remote server)."""
    return _REMOTE_MARKERS.sub(lambda match: _broken(match.group(0)), content)


def remote_markers(content: str) -> int:
    """How many markers :func:`as_remote_text` breaks in ``content``."""
    return len(_REMOTE_MARKERS.findall(content))


def _strings_mapped(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(str(k)): _strings_mapped(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings_mapped(v, text) for v in value]
    return value


def as_remote_value(value: Any) -> Any:
    """A JSON value (a tool call's arguments) with the markers of every string in it, keys too, broken."""
    return _strings_mapped(value, as_remote_text)


# A marker's break is a zero-width space right after its first character, "<" or "[".
_BREAK = re.compile(f"(?<=[<\\[]){ZERO_WIDTH_SPACE}")


def as_reply_text(piece: str, before: str = "") -> str:
    """A piece of a remote model's reply with the breaks of the markers it copied from its prompt taken out:
    the reply says what the sources said (``before``: the reply's text just before the piece)."""
    head = before[-1:]
    return _BREAK.sub("", head + piece)[len(head):]


class ReplyStream:
    """A remote model's streamed text (its reply, or its reasoning) with the breaks taken out piece by piece
    (:func:`as_reply_text`); a break may follow the ``<`` or ``[`` that ended the previous piece."""

    def __init__(self) -> None:
        self._last = ""  # the last character the server sent

    def restore(self, piece: str) -> str:
        """``piece`` as the model meant it."""
        restored = as_reply_text(piece, self._last)
        self._last = (self._last + piece)[-1:]
        return restored


def as_reply_value(value: Any) -> Any:
    """A JSON value of a remote model's reply (a tool call's arguments) with the breaks taken out."""
    return _strings_mapped(value, as_reply_text)
