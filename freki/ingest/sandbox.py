"""Parsing untrusted bytes in separate worker processes, the way Apache Tika forks its parsers.

A hostile PDF, DOCX, HTML or Markdown file can make a parser allocate gigabytes or spin for minutes. Here
each document is parsed by a worker process (``freki.ingest.parsing.worker``) that caps its own address
space (``parse_memory_mb``, RLIMIT_AS); this side waits at most ``parse_timeout_s``, plus
``ocr_seconds_per_page`` for each page the worker reports it is OCR'ing (at most ``ocr_max_pages`` of them),
and no longer than the caller's deadline, and kills the worker when time runs out, the caller cancels or
the server stops. A killed or over-limit worker costs the caller a clear error naming the limit; the next
document gets a fresh worker. Workers are started on demand, at most ``workers`` at a time, reused for up
to ``max_documents`` documents (bounding any slow leak in a parser), and stopped by ``close``.

Importing the worker's side pulls in only the parsers (no torch, no grpc): a worker is ready in ~0.4 s.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from freki.ingest.deadline import NO_DEADLINE, Deadline
from freki.ingest.parsing import ParsedDocument, ParseLimits, Section
from freki.ingest.parsing.errors import WIRE_ERRORS, CorruptDocument, LimitExceeded, describe_source
from freki.ingest.parsing.links import Link
from freki.ingest.parsing.worker import HEADER, read_frame, write_frame
from freki.store.metadata import normalise

log = logging.getLogger("freki.sandbox")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class SandboxConfig:
    """How the parser workers are bounded (the ``limits.parse_*`` settings)."""

    memory_mb: int = 1024
    timeout_s: float = 30.0
    workers: int = 2
    max_documents: int = 200
    parse: ParseLimits = ParseLimits()


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, memory_mb: int) -> None:
        env = {
            # One Tesseract thread per page (unless the operator says otherwise): workers already run side by
            # side on the cores, and OpenMP threads competing with them make a page slower, not faster. Set
            # for the worker only: in the server's own environment it would cap torch's threads too.
            "OMP_THREAD_LIMIT": "1",
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "freki.ingest.parsing.worker", str(memory_mb * 1024 * 1024)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
        )
        self.documents = 0
        self.ready = False

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class ParserSandbox:
    """Parses documents in bounded worker processes; thread-safe."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._idle: list[_Worker] = []
        self._slots = threading.BoundedSemaphore(self.config.workers)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.killed = 0  # workers killed on a limit, a deadline or a crash (for tests and metrics)

    def parse(
        self, data: str | bytes, *, source: str = "", content_type: str = "", deadline: Deadline = NO_DEADLINE,
    ) -> ParsedDocument:
        """Parse ``data`` in a worker.

        Raises:
            DocumentError: what the parser refused, or LimitExceeded (time or memory, naming the setting).
            DeadlineExceeded / Cancelled: the caller's deadline passed or it went away (the worker is killed).
        """
        deadline = deadline.with_stop(self._closed, "the server is shutting down")
        while not self._slots.acquire(timeout=0.05):
            deadline.check("waiting for a parser worker")
        try:
            worker = self._take()
            try:
                answer = self._exchange(worker, data, source, content_type, deadline)
            except BaseException:
                self._discard(worker)
                raise
            self._give_back(worker, answer)
        finally:
            self._slots.release()
        return _document_or_raise(answer, source, self.config)

    def close(self) -> None:
        """Stop every worker (a parse in progress is killed and reports the shutdown)."""
        self._closed.set()
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    # -- workers ---------------------------------------------------------------------------------------
    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
                worker.kill()
        return _Worker(self.config.memory_mb)

    def _give_back(self, worker: _Worker, answer: dict[str, object]) -> None:
        worker.documents += 1
        if answer.get("error") == "memory" or worker.documents >= self.config.max_documents or self._closed.is_set():
            self._discard(worker, counted=answer.get("error") == "memory")
            return
        with self._lock:
            self._idle.append(worker)

    def _discard(self, worker: _Worker, counted: bool = True) -> None:
        if counted and worker.process.poll() is None:
            self.killed += 1
        worker.kill()

    def _exchange(
        self, worker: _Worker, data: str | bytes, source: str, content_type: str, deadline: Deadline,
    ) -> dict[str, object]:
        started = time.monotonic()
        if not worker.ready:  # the first answer of a worker says it has loaded the parsers
            self._read(worker, started, deadline, source, allow_startup=True)
            worker.ready = True
            started = time.monotonic()
        header = {"source": source, "content_type": content_type, "text": isinstance(data, str),
                  "limits": asdict(self.config.parse)}
        body = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        assert worker.process.stdin is not None
        try:
            write_frame(worker.process.stdin, json.dumps(header).encode())
            write_frame(worker.process.stdin, body)
        except (BrokenPipeError, OSError):
            pass  # the worker died; reading says how
        return self._read(worker, started, deadline, source)

    def _read(
        self, worker: _Worker, started: float, deadline: Deadline, source: str, allow_startup: bool = False,
    ) -> dict[str, object]:
        stdout = worker.process.stdout
        assert stdout is not None
        limit = self.config.timeout_s + (10.0 if allow_startup else 0.0)
        ocr_pages = 0
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                while not selector.select(timeout=0.05):
                    deadline.check("parsing")
                    if time.monotonic() - started > limit:
                        raise self._timed_out(source, ocr_pages)
                frame = read_frame(stdout)
                if frame is None:
                    raise _died(worker, source, self.config)
                answer = json.loads(frame)
                if not isinstance(answer, dict):
                    raise CorruptDocument(f"the parser answered nonsense for {describe_source(source)}", source=source)
                if "ocr_page" not in answer:
                    return answer
                # Each OCR'd page earns its own time; the worker refuses more than ocr_max_pages, and so does this.
                if ocr_pages < self.config.parse.ocr_max_pages:
                    ocr_pages += 1
                    limit += self.config.parse.ocr_seconds_per_page

    def _timed_out(self, source: str, ocr_pages: int) -> LimitExceeded:
        if not ocr_pages:
            return LimitExceeded(
                f"parsing document {describe_source(source)} took longer than {self.config.timeout_s:g} s; "
                f"the parser was stopped (limits.parse_timeout_s)", setting="limits.parse_timeout_s", source=source,
            )
        allowed = self.config.timeout_s + ocr_pages * self.config.parse.ocr_seconds_per_page
        return LimitExceeded(
            f"parsing document {describe_source(source)} with {ocr_pages} OCR'd page(s) took longer than "
            f"{allowed:g} s (limits.parse_timeout_s + pages x limits.ocr_seconds_per_page); the parser was stopped",
            setting="limits.ocr_seconds_per_page", source=source,
        )


def _died(worker: _Worker, source: str, config: SandboxConfig) -> Exception:
    code = worker.process.wait()
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    log.warning("parser worker died (%s) on %s", how, describe_source(source))
    return LimitExceeded(
        f"the parser process died ({how}) on document {describe_source(source)}, most likely over its "
        f"{config.memory_mb:,} MiB memory limit (limits.parse_memory_mb)", setting="limits.parse_memory_mb",
        source=source,
    )


def _document_or_raise(answer: dict[str, object], source: str, config: SandboxConfig) -> ParsedDocument:
    error = answer.get("error")
    if error == "memory":
        raise LimitExceeded(
            f"parsing document {describe_source(source)} needed more than its {config.memory_mb:,} MiB memory "
            "limit (limits.parse_memory_mb)", setting="limits.parse_memory_mb", source=source,
        )
    if error == "crash":
        raise CorruptDocument(
            f"document {describe_source(source)} cannot be parsed ({answer.get('message', '')})", source=source,
        )
    if error:
        cls = WIRE_ERRORS.get(str(error), CorruptDocument)
        message = str(answer.get("message", "the document cannot be parsed"))
        if issubclass(cls, LimitExceeded):
            raise LimitExceeded(message, setting=str(answer.get("setting", "")), source=source)
        raise cls(message, source=source)
    raw = answer.get("document")
    if not isinstance(raw, dict):
        raise CorruptDocument(f"the parser returned no document for {describe_source(source)}", source=source)
    sections = [Section(text=s["text"], heading=s["heading"], heading_path=tuple(s["heading_path"]), page=s["page"],
                        slide=s.get("slide"), sheet=s.get("sheet", ""))
                for s in raw["sections"]]
    return ParsedDocument(text=raw["text"], title=raw["title"], content_type=raw["content_type"],
                          metadata={str(k): normalise(v) for k, v in raw["metadata"].items()}, sections=sections,
                          links=[Link(**link) for link in raw.get("links", [])])


__all__ = ["HEADER", "ParserSandbox", "SandboxConfig"]
