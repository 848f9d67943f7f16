"""A grounded answer streamed through the OpenAI-compatible gateway: how soon the first words arrive, and how
often the check revises the provisional text — the figures behind the gateway's ``stream_provisional``
default (docs/decisions/0335-thin-odin-streaming.md).

Real services: Freki over ../shared/eval/squad-answers (the 244 indexed paragraphs, cached index), Geri with
the embedded SmolLM2, the gateway on a local port, the official ``openai`` client with ``stream: true`` and
``"stream_provisional": true``. Per question: seconds to the first content delta (what a user waits for
with provisional streaming), seconds to the last (what they wait for without it: the checked answer comes
at once at the end), answered, and whether the content ended with the gateway's correction (the checked
text did not extend what was streamed). Dev questions only (settings are chosen on them).

    .venv/bin/python -m scripts.bench.gateway_stream --limit 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from scripts.common import cpu_description

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import openai
import uvicorn

from geri.server import build_server
from geri.settings import GeriSettings
from odin_client import OdinSettings
from odin_client.gateway import GatewaySettings, create_app
from odin_client.gateway.answer_stream import REVISED_NOTE
from scripts.eval.answers import load, split_of
from scripts.evalsets.harness import data_dir_for, eval_settings, freki_server, index_corpus, running_freki
from tests.local_servers_support import free_port


def ask(client: openai.OpenAI, question: str, top_k: int) -> dict[str, Any]:
    """One streamed grounded answer, timed."""
    started = time.perf_counter()
    first = 0.0
    parts: list[str] = []
    rag: dict[str, Any] = {}
    for chunk in client.chat.completions.create(model="", messages=[{"role": "user", "content": question}],
                                                stream=True, extra_body={"stream_provisional": True, "top_k": top_k}):
        content = chunk.choices[0].delta.content if chunk.choices else None
        if content:
            first = first or time.perf_counter() - started
            parts.append(content)
        rag = (chunk.model_extra or {}).get("rag") or rag
    text = "".join(parts)
    return {"first_s": first, "total_s": time.perf_counter() - started, "answered": bool(rag.get("answered")),
            "streamed": bool(rag.get("provisional_streamed")), "corrected": REVISED_NOTE in text,
            "geri_revised": bool(rag.get("revised"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=30, help="answerable dev questions to ask")
    parser.add_argument("--top-k", type=int, default=5)
    args = parser.parse_args()
    corpus, questions = load()
    asked = [q for q in questions if q["answerable"] and split_of(q["_id"]) == "dev"][: args.limit]
    data_dir = data_dir_for("squad-answers", corpus, eval_settings(Path(".")))
    with running_freki(eval_settings(data_dir)) as stub:
        index_corpus(stub, corpus, data_dir)
    records = []
    geri_handle = build_server(GeriSettings(host="127.0.0.1", port=0, backend="embedded"))
    with freki_server(eval_settings(data_dir)) as freki:
        geri = geri_handle.address
        port = free_port()
        app = create_app(GatewaySettings(port=port), OdinSettings(freki_target=freki, geri_target=geri,
                                                                  generate_deadline_s=600))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-", max_retries=0, timeout=600)
        ask(client, "Warm-up: which port?", args.top_k)
        for q in asked:
            records.append(ask(client, q["question"], args.top_k))
        server.should_exit = True
        thread.join(10)
    geri_handle.stop(2.0)
    answered = [r for r in records if r["answered"]]
    streamed = [r for r in answered if r["streamed"]]
    firsts = [r["first_s"] for r in streamed]
    print(f"CPU: {cpu_description()}; load {os.getloadavg()[0]:.1f}; {len(records)} answerable dev questions, "
          f"top_k {args.top_k}")
    print("| answered | provisional text streamed | ended with a correction | Geri revised | "
          "first content p50 / p90 s | last content p50 / p90 s |\n|---|---|---|---|---|---|")
    print(f"| {len(answered)} | {len(streamed)} | {sum(r['corrected'] for r in answered)} | "
          f"{sum(r['geri_revised'] for r in answered)} | {pct(firsts, 50):.2f} / {pct(firsts, 90):.2f} | "
          f"{pct([r['total_s'] for r in records], 50):.2f} / {pct([r['total_s'] for r in records], 90):.2f} |")


def pct(values: list[float], p: int) -> float:
    if not values:
        return 0.0
    return statistics.quantiles(values, n=100)[p - 1] if len(values) > 1 else values[0]


if __name__ == "__main__":
    main()
