"""Encoders: turn texts into unit vectors, by running the model on padded length batches.

Two kinds: ``TorchEncoder`` (sentence-transformers' own ``encode``, any device) and
``BatchedEncoder``, which tokenises once, pads texts in batches of similar length and hands each
batch to a runner (``freki.embed.runners``: fp32 ONNX Runtime, bf16 torch for big batches).
Which encoder a server gets is decided once at start by ``freki.embed.selection``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from freki.embed.runners import BatchRunner, OnnxRunner

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# Padded tokens (rows x width) from which a batch runs on the bulk runner when none was measured (below it
# bf16 loses to fp32 ONNX); servers use the figure ``bulk_choice.min_tokens`` measures on their machine.
# See docs/decisions/0002-onnx-torch-int8.md.
BULK_MIN_TOKENS = 256
# A text joins a length batch when it is at least this share of the batch's longest (``length_batches``)...
MIN_LENGTH_RATIO = 0.8
# ...or (with a bulk runner) at most this many word-pieces shorter. For short texts the ratio alone splits a
# query pass into batches too small for the bulk runner; a short text padded a little costs less than
# running on fp32 ONNX. See docs/decisions/0003-length-batches-and-tokenising.md.
PAD_SLACK = 16
# Passes of at most this many texts are tokenised one text at a time, holding the GIL (see
# ``BatchedEncoder._tokenize``); larger ones (indexing) in one parallel batch call.
PER_TEXT_TOKENIZE_MAX = 64


class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors, ``(n, dim)``. Callers serialise calls."""

    name: str

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...


class TorchEncoder:
    """sentence-transformers' own ``encode``: any device, any model."""

    name = "torch"

    def __init__(self, model: SentenceTransformer) -> None:
        self._model = model

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class BatchedEncoder:
    """Tokenises once, pads texts in length batches and runs each batch on a runner.

    Batches of at least ``bulk_min_tokens`` padded tokens, and rows enough for every one of its
    workers (and never one text alone), go to ``bulk`` when one is given; the rest to ``runner`` (fp32).
    One 250-token chunk on a single bf16 worker took longer than on fp32 ONNX Runtime over two
    cores, which slowed one-paragraph edits. With a bulk runner, texts within ``pad_slack`` word-pieces
    of a batch's longest join it (``length_batches``), so that query passes make batches big enough.
    """

    def __init__(self, tokenizer: Any, max_length: int, runner: BatchRunner, *, bulk: BatchRunner | None = None,
                 bulk_min_tokens: int = BULK_MIN_TOKENS, pad_slack: int = 0) -> None:
        self.name = runner.name if bulk is None else f"{runner.name}+{bulk.name}"
        self.runner = runner
        self.bulk = bulk
        self._bulk_min_tokens = bulk_min_tokens
        self._pad_slack = pad_slack if bulk is not None else 0
        self._tokenizer = tokenizer
        self._single = _single_text_tokenizer(tokenizer, max_length)
        self._names = list(tokenizer.model_input_names)
        self._pad_id = int(tokenizer.pad_token_id or 0)
        self._max_length = max_length

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        encoded = self._tokenize(texts)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        batches = length_batches(order, lengths, batch_size, self._pad_slack)
        bulk = [self._goes_to_bulk(len(rows), lengths[rows[0]]) for rows in batches]
        out: np.ndarray | None = None
        # Bulk batches first, then the rest: the two runners would compete for the same cores.
        for runner, is_bulk in ((self.bulk, True), (self.runner, False)):
            picked = [rows for rows, b in zip(batches, bulk, strict=True) if b == is_bulk]
            if runner is None or not picked:
                continue
            for rows, vectors in zip(picked, runner.run([self._feed(encoded, lengths, rows) for rows in picked]),
                                     strict=True):
                if out is None:
                    out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                out[rows] = vectors
        assert out is not None, "encode() needs at least one text"
        return out

    def _tokenize(self, texts: Sequence[str]) -> Any:
        """Token ids, attention masks and type ids of ``texts``, truncated to the model's window.

        A batch call releases the GIL and must take it back afterwards, which next to busy server
        threads waits for the holder, so small passes are tokenised one text at a time. Large batches
        keep the batch call, whose parallelism pays for the wait
        (docs/decisions/0003-length-batches-and-tokenising.md).
        """
        if self._single is None or len(texts) > PER_TEXT_TOKENIZE_MAX:
            return self._tokenizer(list(texts), truncation=True, max_length=self._max_length, padding=False)
        encodings = [self._single.encode(text) for text in texts]
        return {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
                "token_type_ids": [e.type_ids for e in encodings]}

    def _goes_to_bulk(self, rows: int, width: int) -> bool:
        """Whether a batch is big enough for the bulk runner to beat the fp32 one."""
        return (self.bulk is not None and rows * width >= self._bulk_min_tokens
                and rows >= max(2, self.bulk.parallel_rows))

    def _feed(self, encoded: Any, lengths: list[int], rows: list[int]) -> dict[str, np.ndarray]:
        """The model inputs of one batch, padded to its longest text."""
        width = lengths[rows[0]]
        feed = {}
        for name in self._names:
            array = np.full((len(rows), width), self._pad_id if name == "input_ids" else 0, dtype=np.int64)
            for r, i in enumerate(rows):
                array[r, : lengths[i]] = encoded[name][i]
            feed[name] = array
        return feed


class OnnxEncoder(BatchedEncoder):
    """The exported model at ``path`` run by ONNX Runtime for every batch, fp32."""

    def __init__(self, path: Path, tokenizer: Any, max_length: int) -> None:
        super().__init__(tokenizer, max_length, OnnxRunner(path))


def _single_text_tokenizer(tokenizer: Any, max_length: int) -> Any:
    """A private copy of a fast tokenizer's Rust core that truncates like ``tokenizer(..., truncation=True)``
    and never pads, or None for a tokenizer without one (then every batch goes through ``tokenizer``)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not set(tokenizer.model_input_names) <= {"input_ids", "attention_mask", "token_type_ids"}:
        return None
    # A copy: truncation and padding are state of the Rust tokenizer, and the shared one is configured
    # per call by the transformers wrapper from other threads.
    single = copy.deepcopy(backend)
    single.no_padding()
    single.enable_truncation(max_length, strategy="longest_first", direction=tokenizer.truncation_side)
    return single


def length_batches(order: list[int], lengths: list[int], batch_size: int, slack: int = 0) -> list[list[int]]:
    """Split texts sorted longest first into batches that pad little.

    A batch is padded to its longest text, so one 250-word-piece chunk in a batch of 30-piece
    sentences makes the model do ~8x the work. A new batch starts at ``batch_size`` texts or when a
    text is shorter than ``MIN_LENGTH_RATIO`` of the batch's first and more than ``slack`` word-pieces
    shorter (see ``PAD_SLACK``). The ratio is high because the torch runners cut each batch into one
    row slice per worker: a slice of short rows would finish long before the slice of long ones and
    leave its core idle (docs/decisions/0003-length-batches-and-tokenising.md).
    """
    batches: list[list[int]] = []
    for i in order:
        if (batches and len(batches[-1]) < batch_size
                and (lengths[i] >= MIN_LENGTH_RATIO * lengths[batches[-1][0]]
                     or lengths[batches[-1][0]] - lengths[i] <= slack)):
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches
