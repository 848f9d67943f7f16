"""The shared prompt beginnings' KV caches (geri/backends/scoring.py SharedPrefixes) with two tiny randomly
initialised transformers models (no weights to load): an entry serves only the model that computed it."""

from __future__ import annotations

import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from geri.backends.decoding import forward_last
from geri.backends.scoring import SharedPrefixes

IDS = [3, 1, 4, 1, 5, 9, 2, 6]


def tiny(seed: int, dtype: torch.dtype = torch.float32) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return LlamaForCausalLM(config).to(dtype).eval()


def keys(cache: DynamicCache) -> torch.Tensor:
    return cache.layers[0].keys if hasattr(cache, "layers") else cache.key_cache[0]


@torch.inference_mode()
def test_an_entry_is_copied_for_its_own_model_and_computed_again_for_another() -> None:
    first, other = tiny(0, torch.bfloat16), tiny(1)
    shared = SharedPrefixes()
    copied = shared.copy_for(first, IDS)
    keys(copied).zero_()  # the caller extends or changes its copy freely
    assert torch.count_nonzero(keys(shared.copy_for(first, IDS))) > 0
    fresh = DynamicCache()
    forward_last(other, IDS, fresh)
    again = shared.copy_for(other, IDS)  # the same ids after a switch of weights: never the old model's cache
    assert keys(again).dtype == torch.float32 and torch.equal(keys(again), keys(fresh))
