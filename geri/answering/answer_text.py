"""The answer text of a grounded reply while the model is still writing its JSON.

:class:`AnswerTextExtractor` reads JSON text in arbitrary pieces (a token may hold ``"ans``, ``wer":"Po``
or half of an escape such as ``\\u00`` + ``e9``) and returns the decoded characters of the top-level
``"answer"`` string as they arrive, nothing else. :class:`DraftText` turns them into the text deltas a
stream shows: trimmed as the checked answer will be, and silent once the drafts are void (a repair try or
another backend starts over); :meth:`DraftText.finish` reconciles them with the checked answer.
"""

from __future__ import annotations

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_REPLACEMENT = "\ufffd"  # a lone UTF-16 surrogate cannot be sent as UTF-8 text


class AnswerTextExtractor:
    """Incremental reader of one JSON object's top-level string value for ``key``."""

    def __init__(self, key: str = "answer") -> None:
        self._key = key
        self._stack: list[str] = []
        self._expect_key = False  # at the top level: the next string is a key
        self._last_key = ""
        self._in_string = False
        self._role = ""  # of the current string: "key", "target" or "other"
        self._key_chars: list[str] = []
        self._escape: str | None = None  # after a backslash: "" or "u" plus the hex digits so far
        self._high: int | None = None  # a high surrogate waiting for its low half
        self.done = False  # the target string has ended

    def feed(self, text: str) -> str:
        """Consume the next piece of JSON; return the target's characters it completes."""
        out: list[str] = []
        for ch in text:
            if self._in_string:
                self._string_char(ch, out)
            else:
                self._structural(ch)
        return "".join(out)

    def _structural(self, ch: str) -> None:
        top = len(self._stack) == 1 and self._stack[0] == "{"
        if ch == '"':
            self._in_string = True
            self._key_chars = []
            if top and self._expect_key:
                self._role = "key"
            else:
                self._role = "target" if top and self._last_key == self._key and not self.done else "other"
        elif ch in "{[":
            self._stack.append(ch)
            self._expect_key = ch == "{" and len(self._stack) == 1
        elif ch in "}]":
            if self._stack:
                self._stack.pop()
        elif ch == "," and top:
            self._expect_key = True

    def _string_char(self, ch: str, out: list[str]) -> None:
        if self._escape is not None:
            self._escaped(ch, out)
        elif ch == "\\":
            self._escape = ""
        elif ch == '"':
            self._flush_high(out)
            self._in_string = False
            if self._role == "key":
                self._last_key = "".join(self._key_chars)
                self._expect_key = False
            elif self._role == "target":
                self.done = True
        else:
            self._emit(ch, out)

    def _escaped(self, ch: str, out: list[str]) -> None:
        assert self._escape is not None
        if self._escape == "" and ch != "u":
            self._escape = None
            self._emit(_SIMPLE_ESCAPES.get(ch, ch), out)
            return
        self._escape += ch
        if len(self._escape) < 5:  # "u" and four hex digits
            return
        try:
            code = int(self._escape[1:], 16)
        except ValueError:
            code = 0xFFFD
        self._escape = None
        if 0xD800 <= code < 0xDC00:
            self._flush_high(out)
            self._high = code
        elif 0xDC00 <= code < 0xE000 and self._high is not None:
            pair = 0x10000 + ((self._high - 0xD800) << 10) + (code - 0xDC00)
            self._high = None
            self._put(chr(pair), out)
        else:
            self._emit(_REPLACEMENT if 0xDC00 <= code < 0xE000 else chr(code), out)

    def _emit(self, text: str, out: list[str]) -> None:
        self._flush_high(out)
        self._put(text, out)

    def _flush_high(self, out: list[str]) -> None:
        if self._high is not None:
            self._high = None
            self._put(_REPLACEMENT, out)

    def _put(self, text: str, out: list[str]) -> None:
        if self._role == "target":
            out.append(text)
        elif self._role == "key":
            self._key_chars.append(text)


class DraftText:
    """Answer-text deltas from a reply's drafts, reconciled with the checked answer at the end."""

    def __init__(self) -> None:
        self._extractor = AnswerTextExtractor()
        self._shown: list[str] = []
        self._held = ""  # whitespace not shown yet: the checked answer is stripped
        self._void = False

    def feed(self, draft: str) -> str:
        """The next delta to show for this draft piece ("" for none)."""
        if self._void:
            return ""
        piece = self._extractor.feed(draft)
        if not piece:
            return ""
        text = self._held + piece
        if not self._shown:
            text = text.lstrip()
        kept = text.rstrip()
        self._held = text[len(kept):]
        if kept:
            self._shown.append(kept)
        return kept

    def reset(self) -> None:
        """The drafts so far are void: show nothing more until :meth:`finish`."""
        self._void = True

    def finish(self, checked: str) -> tuple[str, bool]:
        """The last delta (what the check added, e.g. citation markers) and whether ``checked`` revises
        what was shown (then the caller must show ``checked`` instead of the deltas)."""
        shown = "".join(self._shown)
        if checked.startswith(shown):
            return checked[len(shown):], False
        return "", True
