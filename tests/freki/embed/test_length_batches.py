"""Length-aware batching of the ONNX encoder (padding is what the model pays for)."""

from __future__ import annotations

from freki.embed.encoders import MIN_LENGTH_RATIO, length_batches


def batches_for(lengths: list[int], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [[lengths[i] for i in batch] for batch in length_batches(order, lengths, batch_size)]


def test_long_chunks_are_not_batched_with_short_sentences() -> None:
    assert batches_for([30, 250, 28, 240, 31, 12], batch_size=32) == [[250, 240], [31, 30, 28], [12]]


def test_rows_of_a_batch_are_close_in_length() -> None:
    """So that the row slices a torch runner's workers take finish together."""
    assert batches_for([250, 210, 190, 120, 100, 90], batch_size=32) == [[250, 210], [190], [120, 100], [90]]


def test_batch_size_still_caps_a_batch() -> None:
    assert batches_for([10] * 5, batch_size=2) == [[10, 10], [10, 10], [10]]


def test_every_text_lands_in_exactly_one_batch() -> None:
    lengths = [(i * 37) % 256 + 1 for i in range(500)]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches = length_batches(order, lengths, 32)
    assert sorted(i for b in batches for i in b) == list(range(500))
    assert all(len(b) <= 32 and lengths[b[-1]] >= MIN_LENGTH_RATIO * lengths[b[0]] for b in batches)
