"""The embedded decode loop against the real SmolLM2: forced runs in one pass, prompt caches per tenant."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from geri.backends.base import ChatMessage, GenerationParams
from geri.backends.constrained import JsonSchemaConstraint
from geri.backends.decoding import PromptCache, decode
from geri.backends.embedded import default_model_path
from geri.backends.loaded_model import LoadedModel, load_model

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["answered", "city", "country"],
    "properties": {"answered": {"const": True}, "city": {"type": "string", "maxLength": 24},
                   "country": {"enum": ["France", "Germany", "Italy"]}},
}
SOURCES = ("Paris is the capital and largest city of France. Berlin is the capital of Germany. "
           "Rome is the capital of Italy.")


class CountingModel:
    """The real model, counting its forward passes."""

    def __init__(self, model: Any) -> None:
        self.model, self.passes = model, 0
        self.forward = model.forward  # what the decode loop reads the cache argument's name from

    def __call__(self, **kwargs: Any) -> Any:
        self.passes += 1
        return self.model(**kwargs)


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    return load_model(default_model_path())


def prompt(loaded: LoadedModel, question: str) -> list[int]:
    return loaded.encode_chat([ChatMessage("system", "Answer in JSON from the sources. " + SOURCES),
                               ChatMessage("user", question)])


def run(loaded: LoadedModel, ids: list[int], *, cache: PromptCache | None = None, scope: str = "t",
        model: Any = None) -> tuple[str, int]:
    tokens: list[int] = []
    params = GenerationParams(max_tokens=60, temperature=0.0, json_schema=SCHEMA, cache_scope=scope)
    result = decode(model or loaded.model, ids, params, prompt_cache=cache, eos_ids=loaded.eos_ids,
                    constraint=JsonSchemaConstraint(loaded.grammar_tokenizer(), SCHEMA),
                    emit=tokens.extend, should_stop=lambda: False)
    assert result.completion_tokens == len(tokens)
    return loaded.tokenizer.decode(tokens, skip_special_tokens=True), len(tokens)


def test_forced_runs_take_one_pass_and_greedy_output_is_what_generate_writes(loaded: LoadedModel) -> None:
    ids = prompt(loaded, "What is the capital of Germany?")
    counting = CountingModel(loaded.model)
    text, produced = run(loaded, ids, model=counting)

    with torch.inference_mode():
        out = loaded.model.generate(
            input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=60, do_sample=False, temperature=None, top_p=None, top_k=None,
            pad_token_id=loaded.tokenizer.eos_token_id,
            logits_processor=[JsonSchemaConstraint(loaded.grammar_tokenizer(), SCHEMA)])
    expected = loaded.tokenizer.decode(out[0, len(ids):], skip_special_tokens=True)

    assert text == expected
    assert text.startswith('{"answered":true,"city":"')
    # Keys, quotes and the 'answered' constant are forced: far fewer passes than tokens written.
    assert counting.passes < produced / 2, (counting.passes, produced, text)


def test_a_shared_prefix_is_reused_within_a_tenant_only(loaded: LoadedModel) -> None:
    cache = PromptCache(max_entries=2)
    first = prompt(loaded, "What is the capital of Germany?")
    second = prompt(loaded, "What is the capital of Italy?")
    run(loaded, first, cache=cache, scope="acme")

    reused = cache.reusable("acme", second)
    assert reused > len(second) // 2  # the system prompt and the sources
    assert cache.reusable("globex", second) == 0  # another tenant starts from nothing

    fresh, _ = run(loaded, second)
    warm, _ = run(loaded, second, cache=cache, scope="acme")
    assert warm == fresh


def test_the_least_recently_used_tenant_is_dropped_and_zero_entries_keep_nothing(loaded: LoadedModel) -> None:
    ids = prompt(loaded, "What is the capital of France?")
    cache = PromptCache(max_entries=2)
    for tenant in ("a", "b", "c"):
        run(loaded, ids, cache=cache, scope=tenant)
    assert cache.reusable("a", ids) == 0
    assert cache.reusable("c", ids) == len(ids) - 1  # one token is always processed again

    off = PromptCache(max_entries=0)
    run(loaded, ids, cache=off, scope="a")
    assert off.reusable("a", ids) == 0


def test_a_follow_up_over_the_same_prompt_reads_the_cache_without_copying_it_and_writes_what_no_cache_does(
        loaded: LoadedModel) -> None:
    cache = PromptCache(max_entries=2)
    first = prompt(loaded, "What is the capital of Germany?")
    answer, _ = run(loaded, first, cache=cache, scope="acme")
    follow_up = loaded.encode_chat([
        ChatMessage("system", "Answer in JSON from the sources. " + SOURCES),
        ChatMessage("user", "What is the capital of Germany?"), ChatMessage("assistant", answer),
        ChatMessage("user", "And of Italy?")])
    assert cache.reusable("acme", follow_up) >= len(first) - 2  # all but the assistant turn's opening

    for _ in range(2):  # the second time reuses the follow-up's own cache, cut back to its prompt
        warm, _ = run(loaded, follow_up, cache=cache, scope="acme")
        assert warm == run(loaded, follow_up)[0]
    stored, reused = cache.take("acme", follow_up)
    assert reused == len(follow_up) - 1 and stored.get_seq_length() == reused
    # Handed over, not copied: while a generation holds the entry, the store has none for that tenant.
    assert cache.reusable("acme", follow_up) == 0
