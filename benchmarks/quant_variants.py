"""Whether the request embedding should run on an int8 graph: speed, closeness and dev accuracy (dev only).

    python benchmarks/quant_variants.py                  # every variant: speed, cosines, users' corpora dev accuracy
    python benchmarks/quant_variants.py --no-accuracy    # speed and cosines only (about a minute)

The variants are onnxruntime's dynamic quantization (``quantize_dynamic``: int8 weights, activations quantized at
run time) of the cached all-MiniLM-L6-v2 export's MatMuls (the graph's Attention nodes cannot be quantized by it),
with weights per tensor or per output channel, all of them or all but some layers' (each transformer layer has six
MatMuls: query, key, value, attention output, feed-forward in and out). Only the request side changes: the skills'
vectors stay the fp32 ones of the index, as they would for a router whose index is already built.

For each variant, in one process and alternating with the fp32 graph (so the ratio holds on a busy machine): the
p50 of one request embedded alone (the 163 corpora-dev requests, one thread), the cosine of each request's vector
with its fp32 vector, and (unless ``--no-accuracy``) benchmarks/users.py's corpus evaluation with the router's
session opened over the variant: single-skill hit@1 / hit@5 / MRR, Chinese hit@1, the no-skill decision, and an
exact sign test of each request's hit@1 against fp32. Writes benchmarks/results/quant_variants.json.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import users
from common import ROOT, read_jsonl, save
from indexes.onnx_encoder import OnnxEncoder, find_onnx_encoder
from router.config import RouterConfig

PER_LAYER = 6  # MatMuls a transformer layer: query, key, value, attention output, feed-forward in, out


def variants(names: list[str]) -> dict[str, dict[str, Any]]:
    ffn_out = [n for i, n in enumerate(names) if i % PER_LAYER == PER_LAYER - 1]
    ffn = [n for i, n in enumerate(names) if i % PER_LAYER >= PER_LAYER - 2]
    return {"int8 per tensor": {"per_channel": False, "exclude": []},
            "int8 per channel": {"per_channel": True, "exclude": []},
            "per channel, feed-forward out fp32": {"per_channel": True, "exclude": ffn_out},
            "per channel, feed-forward fp32": {"per_channel": True, "exclude": ffn}}


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial p of ``wins`` against ``losses`` (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def one_at_a_time(encoder: OnnxEncoder, requests: list[str]) -> list[float]:
    out = []
    for request in requests:
        start = time.perf_counter()
        encoder.encode([request])
        out.append(1000 * (time.perf_counter() - start))
    return out


def accuracy(graph: Path | None) -> dict[str, Any]:
    """users.py's corpus evaluation with every OnnxEncoder session opened over ``graph`` (None: the export's)."""
    opened = OnnxEncoder._open
    if graph is not None:
        OnnxEncoder._open = lambda self, path=None: opened(self, graph)  # type: ignore[method-assign]
    try:
        return users.evaluate("corpora", RouterConfig())
    finally:
        OnnxEncoder._open = opened  # type: ignore[method-assign]


def summary(result: dict[str, Any]) -> dict[str, Any]:
    table = result["table"]
    return {"single": {m: table["single"][m] for m in ("hit@1", "hit@5", "mrr")}, "zh_hit@1": table["zh"]["hit@1"],
            "no_skill_given_nothing": result["abstention"]["both"]["none_given_nothing"],
            "single_wrongly_dropped": result["abstention"]["both"]["single_wrongly_dropped"]}


def hits(result: dict[str, Any]) -> dict[str, bool]:
    return {d["id"]: d["first_gold"] == 1 for d in result["details"] if d["kind"] == "single" and d["set"] == "first"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-accuracy", action="store_true", help="speed and cosines only")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--name", default="quant_variants")
    args = parser.parse_args()
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    base = find_onnx_encoder(threads=1)
    if base is None:
        raise SystemExit("no cached ONNX export: run `skill-router index` once (it exports the model)")
    graph = base.model_path()
    names = [n.name for n in onnx.load(str(graph), load_external_data=False).graph.node if n.op_type == "MatMul"]
    requests = [row["query"] for row in read_jsonl(ROOT / "benchmarks" / "data" / "corpora-dev.jsonl")
                if isinstance(row["query"], str)]
    reference = np.asarray(base.encode(requests))
    out: dict[str, Any] = {"graph": graph.name, "matmuls": len(names), "requests": len(requests), "variants": {}}
    fp32_accuracy = None if args.no_accuracy else accuracy(None)
    if fp32_accuracy is not None:
        out["fp32"] = summary(fp32_accuracy)
        print("fp32", out["fp32"], flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for name, spec in variants(names).items():
            path = Path(scratch) / (name.replace(" ", "_").replace(",", "") + ".onnx")
            quantize_dynamic(str(graph), str(path), op_types_to_quantize=["MatMul"], per_channel=spec["per_channel"],
                             weight_type=QuantType.QInt8, nodes_to_exclude=spec["exclude"])
            quantized = find_onnx_encoder(threads=1)
            assert quantized is not None
            quantized._open(path)
            vectors = np.asarray(quantized.encode(requests))
            cosines = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
            fp32_ms: list[float] = []
            int8_ms: list[float] = []
            for r in range(args.rounds):  # alternating, after a warm-up of each
                first, second = (base, quantized) if r % 2 == 0 else (quantized, base)
                one_at_a_time(first, requests[:10])
                one_at_a_time(second, requests[:10])
                a, b = one_at_a_time(first, requests), one_at_a_time(second, requests)
                (fp32_ms if first is base else int8_ms).extend(a)
                (int8_ms if first is base else fp32_ms).extend(b)
            row: dict[str, Any] = {
                "fp32_fallback_matmuls": len(spec["exclude"]), "bytes": path.stat().st_size,
                "p50_ms": round(statistics.median(int8_ms), 2), "fp32_p50_ms": round(statistics.median(fp32_ms), 2),
                "cosine_min": round(float(cosines.min()), 4), "cosine_median": round(float(np.median(cosines)), 4)}
            if fp32_accuracy is not None:
                result = accuracy(path)
                row.update(summary(result))
                before, after = hits(fp32_accuracy), hits(result)
                wins = sum(after[i] and not before[i] for i in before)
                losses = sum(before[i] and not after[i] for i in before)
                row["hit@1_wins_losses_p"] = [wins, losses, round(sign_test(wins, losses), 3)]
            out["variants"][name] = row
            print(name, row, flush=True)
    save(args.name, out)


if __name__ == "__main__":
    main()
