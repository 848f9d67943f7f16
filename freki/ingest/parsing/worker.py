"""The parser sandbox's worker process: ``python -m freki.ingest.parsing.worker MEMORY_BYTES``.

It caps its own address space (RLIMIT_AS) before reading anything, then parses one request after another
from stdin and answers on stdout. Requests and answers are frames: a 4-byte big-endian length, then JSON
(the request's document bytes follow its JSON in a second frame). Before its answer a worker may send
progress frames, ``{"ocr_page": n}`` before each page it OCRs, which earn the document more time. Answers
are JSON, never pickle, so even a parser subverted by a hostile file cannot hand the server anything but
data. The server side, which also enforces the wall-clock limit and kills the worker on a deadline, is
``freki.ingest.sandbox``.
"""

from __future__ import annotations

import json
import resource
import struct
import sys
from dataclasses import asdict
from typing import IO, Any

HEADER = struct.Struct(">I")


def write_frame(out: IO[bytes], payload: bytes) -> None:
    """Write one length-prefixed frame."""
    out.write(HEADER.pack(len(payload)))
    out.write(payload)
    out.flush()


def read_frame(source: IO[bytes]) -> bytes | None:
    """Read one frame; None at end of input."""
    head = source.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    data = source.read(size)
    if len(data) < size:
        return None
    return data


def _answer(request: dict[str, Any], data: bytes, answers: IO[bytes]) -> dict[str, Any]:
    from freki.ingest.parsing import DocumentError, ParseLimits, parse_document
    from freki.ingest.parsing.errors import LimitExceeded, describe_source

    limits = ParseLimits(**request.get("limits", {}))
    pages = 0

    def ocr_progress(page: int) -> None:
        # One budget for the whole request: an e-mail's attachments share it with the e-mail.
        nonlocal pages
        pages += 1
        if pages > limits.ocr_max_pages:
            source = request.get("source", "")
            raise LimitExceeded(
                f"document {describe_source(source)} has more than {limits.ocr_max_pages} pages to OCR "
                "(limits.ocr_max_pages)", setting="limits.ocr_max_pages", source=source)
        write_frame(answers, json.dumps({"ocr_page": page}).encode())

    content: str | bytes = data.decode("utf-8", "surrogatepass") if request.get("text") else data
    try:
        document = parse_document(
            content, source=request.get("source", ""), content_type=request.get("content_type", ""),
            limits=limits, on_ocr_page=ocr_progress,
        )
    except DocumentError as exc:
        return {"error": type(exc).__name__, "message": str(exc), "setting": getattr(exc, "setting", "")}
    except MemoryError:
        return {"error": "memory"}
    except RecursionError:
        return {"error": "CorruptDocument", "message": "the document is nested too deeply to parse"}
    except Exception as exc:  # a parser bug on hostile input: the document is refused, the worker carries on
        return {"error": "crash", "message": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return {"document": asdict(document)}


def main(argv: list[str]) -> int:
    """Serve parse requests until stdin closes."""
    memory = int(argv[1]) if len(argv) > 1 else 0
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print from a library must not corrupt the answer stream
    import freki.ingest.parsing  # noqa: F401 - load the parsers before the first request is timed

    write_frame(answers, b'{"ready": true}')
    while True:
        header = read_frame(requests)
        data = read_frame(requests) if header is not None else None
        if header is None or data is None:
            return 0
        try:
            answer = _answer(json.loads(header), data, answers)
            encoded = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except MemoryError:
            answer, encoded = {"error": "memory"}, b'{"error": "memory"}'
        write_frame(answers, encoded)
        if answer.get("error") == "memory":
            return 3  # memory may be fragmented past use: let the server start a fresh worker


if __name__ == "__main__":
    sys.exit(main(sys.argv))
