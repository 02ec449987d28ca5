"""Would an int8 copy of the request encoder meet the warm route goal (p50 <= 10 ms at ~700 skills) without costing
accuracy? Dev splits only.

    nice python benchmarks/quant_choice.py --work /tmp/quant-bench            # speed and dev accuracy
    nice python benchmarks/quant_choice.py --work /tmp/quant-bench --only speed [--library bundled]
    nice python benchmarks/quant_choice.py --work /tmp/quant-bench --processes --rounds 4   # after --only speed

The copies are made in ``--work`` from the router's cached, checked ONNX export of the bundled all-MiniLM-L6-v2
with onnxruntime's dynamic quantization (``quantize_dynamic``: int8 weights, activations quantized per run), of
the graph's MatMul nodes only: quantizing its opset-23 Attention nodes as well gives com.microsoft QAttention nodes
that onnxruntime 1.32 refuses to load (``Unrecognized attribute: is_causal``). Two copies: ``int8`` (one scale per
weight tensor) and ``int8-pc`` (one scale per output channel). Skill vectors stay those of the fp32 index; only
the request side is swapped, by giving the router's encoder another session over the same tokenizer.

- speed: the 683-skill library of ``speed_goals.py`` (genkit profile, passages on, built once in ``--work``; or
  with ``--library bundled`` the bundled skills/ folder, the same profile), a warm
  router, ``Router.route`` of each real-library dev request (benchmarks/data/corpora-dev.jsonl) after 5 to warm up,
  the variants alternating request by request (the order turning each time) for ``--rounds`` passes: p50 / p95
  wall and p50 CPU ms; the request embedding alone the same way. ``--processes``: fp32 and int8-pc instead each in
  a process of its own (one variant for every request, as speed_goals.py's warm child), alternating;
- agreement: the cosine of each variant's request vector with fp32's, over every dev request below;
- accuracy: hit@1 / hit@5 / MRR (0 past rank 10) of ``Router.rank_many`` on corpora-dev (683 skills, three corpus
  roots, agentskills profile, as real_libraries.py), the users' dev requests over the corpora and the bundled
  library (the first file of each, requests with gold, as users.py) and MetaTool single-tool dev (199 tools),
  each variant paired against fp32 (paired bootstrap, router.evaluation.stats).

- ``--adopted``: the int8 request graph as the router ships it (``OnnxEncoder.encode_requests``: the export's
  checked int8 copy, each request run alone) against ``SKILL_ROUTER_INT8=0`` (the float graph), over the same
  fp32 indexes, on the dev sets above: hit@1 / hit@5 / MRR, paired, the cosines, and top-1 / top-5 agreement.

The variants above are made by hand from the float export, so this script runs its routers with
``SKILL_ROUTER_INT8=0``; ``--adopted`` loads both encoders itself.

Writes benchmarks/results/<name>.json (default ``quant_choice``), with the load average at start and end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["SKILL_ROUTER_INT8"] = "0"  # the variants are sessions made here (module docstring)

from common import CORPORA, DATASETS, ROOT, corpus_folder, read_jsonl, save  # noqa: E402
from router import Router  # noqa: E402
from router.config import RouterConfig  # noqa: E402
from router.evaluation.labels import load_requests  # noqa: E402
from router.evaluation.stats import paired_comparison  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
ROOTS = [CORPORA / "anthropic-skills/skills", CORPORA / "scientific-skills/scientific-skills",
         CORPORA / "awesome-skills/skills"]
MT = DATASETS / "metatool"
WARMUP = 5
DEPTH = 10
# name -> (the quantized copy, None for the export itself; intra-op threads, None for the router's own)
SPEED_VARIANTS: dict[str, tuple[str | None, int | None]] = {
    "fp32": (None, None), "int8-pc": ("int8-pc", None), "int8-pc-1thread": ("int8-pc", 1)}
ACCURACY_VARIANTS = ("int8", "int8-pc")


def quantize(encoder: Any, work: Path) -> dict[str, Path]:
    """The two int8 copies of the encoder's export (module docstring), made once in ``work``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = encoder.folder / "model.onnx"
    made = {}
    for name, per_channel in (("int8", False), ("int8-pc", True)):
        path = work / f"{name}.onnx"
        if not path.exists():
            start = time.perf_counter()
            quantize_dynamic(str(source), str(path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                             per_channel=per_channel)
            print(f"{name}: quantized in {time.perf_counter() - start:.1f} s, {path.stat().st_size:,} bytes",
                  flush=True)
        made[name] = path
    return made


def sessions(encoder: Any, copies: dict[str, Path], wanted: dict[str, tuple[str | None, int | None]]) -> dict[str, Any]:
    """One onnxruntime session per variant, each made as the encoder makes its own (its options, its threads)."""
    original, threads, path = encoder._session, encoder.threads, encoder.model_path()
    out = {}
    for name, (copy, count) in wanted.items():
        if copy is None and count is None:
            out[name] = original
            continue
        encoder.threads = threads if count is None else count
        encoder._open(path if copy is None else copies[copy])
        out[name] = encoder._session
    encoder.threads, encoder._model_path = threads, path
    encoder._session, encoder._bulk_session = original, None
    return out


def use(encoder: Any, session: Any) -> None:
    """Run every call of ``encoder`` on ``session``: a request's texts and a batch of many (the one-thread
    session a multi-threaded encoder opens for those, ``OnnxEncoder._bulk``)."""
    encoder._session = encoder._bulk_session = session


def timed(call: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return 1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu)


def speed(work: Path, rounds: int, library: str) -> dict[str, Any]:
    from speed_goals import build, prepare

    skills, index = work / "683" / "skills", work / "683" / "index"
    if library == "bundled":
        skills, index = ROOT / "skills", work / "bundled-genkit"
    elif not index.exists():
        prepare(work, ("683",))
        print(f"683 library built in {build(skills, index):.1f} s", flush=True)
    router = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0), index_folder=str(index))
    if router.embedded_count:  # the bundled library's first run here: route from the index just built
        router = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0), index_folder=str(index))
    assert router.embedded_count == 0, "the index was not warm"
    encoder = router.encoder
    variants = sessions(encoder, quantize(encoder, work), SPEED_VARIANTS)
    original = encoder._session
    queries = [row["query"] for row in read_jsonl(DATA / "corpora-dev.jsonl")]
    names = list(variants)
    found: dict[str, dict[str, list[float]]] = {n: {"route": [], "route_cpu": [], "encode": []} for n in names}
    for query in queries[:WARMUP]:
        for name in names:
            use(encoder, variants[name])
            router.route(query)
    turn = 0
    for _ in range(rounds):
        for query in queries:
            turn += 1
            for name in names[turn % len(names):] + names[:turn % len(names)]:
                use(encoder, variants[name])
                wall, cpu = timed(lambda: router.route(query))
                found[name]["route"].append(wall)
                found[name]["route_cpu"].append(cpu)
                found[name]["encode"].append(timed(lambda: encoder.encode([query]))[0])
    encoder._session, encoder._bulk_session = original, None

    def p(values: list[float], q: float) -> float:
        return round(sorted(values)[int(q * (len(values) - 1))], 2)

    return {"library": library, "skills": len(router.skills), "requests": len(queries), "rounds": rounds,
            "intra_op_threads": encoder.threads,
            "variants": {n: {"route_p50_ms": round(statistics.median(v["route"]), 2),
                             "route_p95_ms": p(v["route"], 0.95),
                             "route_cpu_p50_ms": round(statistics.median(v["route_cpu"]), 2),
                             "encode_p50_ms": round(statistics.median(v["encode"]), 2),
                             "encode_p95_ms": p(v["encode"], 0.95)} for n, v in found.items()}}


def child(work: Path, variant: str) -> dict[str, float]:
    """One process, one variant for every request: a warm router over the 683 index, as speed_goals.py's child."""
    router = Router.from_skills([str(work / "683" / "skills")], "genkit", RouterConfig(route_above=0),
                                index_folder=str(work / "683" / "index"))
    assert router.embedded_count == 0, "the index was not warm: run --only speed first"
    if variant != "fp32":
        router.encoder._open(work / f"{variant}.onnx")
    queries = [row["query"] for row in read_jsonl(DATA / "corpora-dev.jsonl")]
    for query in queries[:WARMUP]:
        router.route(query)
    walls, cpus = zip(*(timed(lambda: router.route(query)) for query in queries))
    return {"route_p50_ms": round(statistics.median(walls), 2), "route_cpu_p50_ms": round(statistics.median(cpus), 2)}


def processes(work: Path, rounds: int) -> list[dict[str, Any]]:
    """fp32 and int8-pc in alternate child processes, ``rounds`` each."""
    import json
    import subprocess

    rows = []
    for round_ in range(rounds):
        for variant in ("fp32", "int8-pc") if round_ % 2 == 0 else ("int8-pc", "fp32"):
            done = subprocess.run([sys.executable, __file__, "--work", str(work), "--child", variant], check=True,
                                  capture_output=True, text=True)
            row = {"variant": variant, "round": round_ + 1, **json.loads(done.stdout.strip().splitlines()[-1]),
                   "load": round(os.getloadavg()[0], 2)}
            print(row, flush=True)
            rows.append(row)
    return rows


def measures(ranking: list[str], gold: set[str]) -> dict[str, float]:
    first = next((i + 1 for i, ident in enumerate(ranking) if ident in gold), None)
    return {"hit@1": float(first == 1), "hit@5": float(first is not None and first <= 5),
            "mrr": 1.0 / first if first is not None and first <= DEPTH else 0.0}


def dev_sets(work: Path, encoder: Any = None) -> dict[str, tuple[Router, list[Any], list[set[str]]]]:
    """Each dev set: its router (fp32 index; ``encoder`` None: the router's own choice), its requests and their
    gold skill ids."""
    config = RouterConfig(route_above=0)
    out = {}
    corpora = Router.from_skills([str(r) for r in ROOTS], "agentskills", config, index_folder=str(work / "corpora"),
                                 encoder=encoder)
    by_path = {corpus_folder(s.path): s.id for s in corpora.skills}
    rows = [r for r in read_jsonl(DATA / "corpora-dev.jsonl") if any(g in by_path for g in r["gold"])]
    out["corpora-dev"] = (corpora, [r["query"] for r in rows], [{by_path[g] for g in r["gold"] if g in by_path}
                                                                 for r in rows])
    rows = [r for r in read_jsonl(DATA / "users-corpora-dev.jsonl") if any(g in by_path for g in r["gold"])]
    out["users-corpora-dev"] = (corpora, [r["messages"] if r.get("messages") else r["query"] for r in rows],
                                [{by_path[g] for g in r["gold"] if g in by_path} for r in rows])
    bundled = Router.from_skills([str(ROOT / "skills")], "agentskills", config, index_folder=str(work / "bundled"),
                                 encoder=encoder)
    by_name = {s.name: s.id for s in bundled.skills}
    rows = [r for r in read_jsonl(DATA / "users-bundled-dev.jsonl") if any(g in by_name for g in r["gold"])]
    out["users-bundled-dev"] = (bundled, [r["messages"] if r.get("messages") else r["query"] for r in rows],
                                [{by_name[g] for g in r["gold"] if g in by_name} for r in rows])
    metatool = Router.from_catalog(MT / "tools.jsonl", config=config, index_folder=str(work / "metatool"),
                                   encoder=encoder)
    requests = load_requests(MT / "queries_single_dev.jsonl")
    out["metatool-dev"] = (metatool, [r.query for r in requests], [set(r.gold) for r in requests])
    return out


def accuracy(work: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    wanted = {"fp32": (None, None), **{name: (name, None) for name in ACCURACY_VARIANTS}}
    for set_name, (router, queries, gold) in dev_sets(work).items():
        encoder = router.encoder
        variants = sessions(encoder, quantize(encoder, work), wanted)
        original = encoder._session
        per: dict[str, list[dict[str, float]]] = {}
        vectors = {}
        texts = [router.conversation(q).request for q in queries]
        for name, session in variants.items():
            use(encoder, session)
            rankings = router.rank_many(queries, k=DEPTH)
            per[name] = [measures([m.id for m in ranked], g) for ranked, g in zip(rankings, gold, strict=True)]
            vectors[name] = encoder.encode(texts)
        encoder._session, encoder._bulk_session = original, None
        row: dict[str, Any] = {"requests": len(queries), "skills": len(router.skills)}
        for name in variants:
            row[name] = {m: round(100 * float(np.mean([v[m] for v in per[name]])), 1)
                         for m in ("hit@1", "hit@5", "mrr")}
        for name in ACCURACY_VARIANTS:
            cos = (vectors["fp32"] * vectors[name]).sum(axis=1)
            row[name]["cosine_to_fp32"] = {"min": round(float(cos.min()), 4),
                                           "p5": round(float(np.percentile(cos, 5)), 4),
                                           "median": round(float(np.median(cos)), 4)}
            for metric in ("hit@1", "hit@5", "mrr"):
                test = paired_comparison([v[metric] for v in per["fp32"]], [v[metric] for v in per[name]], seed=0)
                row[name][f"{metric} - fp32"] = {
                    "diff": round(100 * test.mean_diff, 2), "low": round(100 * test.low, 2),
                    "high": round(100 * test.high, 2), "p": round(test.p_value, 4), "wins": test.wins,
                    "losses": test.losses}
        results[set_name] = row
        print(set_name, {k: v for k, v in row.items()}, flush=True)
    return results


def adopted(work: Path) -> dict[str, Any]:
    """``--adopted`` (module docstring): the shipped int8 request path against the float graph, paired."""
    from indexes import OnnxEncoder
    from indexes.onnx_export import ensure_onnx_encoder

    folder = ensure_onnx_encoder().folder
    plain, int8 = OnnxEncoder.load(folder, int8=False), OnnxEncoder.load(folder, int8=True)
    assert int8.int8_requests, "the export has no int8 copy"
    results: dict[str, Any] = {}
    sets = {"fp32": dev_sets(work, plain), "int8": dev_sets(work, int8)}
    for set_name in sets["fp32"]:
        per: dict[str, list[dict[str, float]]] = {}
        tops: dict[str, list[list[str]]] = {}
        for name in ("fp32", "int8"):
            router, queries, gold = sets[name][set_name]
            assert router.embedded_count == 0 or name == "fp32", "the int8 router must read the fp32 index"
            rankings = router.rank_many(queries, k=DEPTH)
            tops[name] = [[m.id for m in ranked] for ranked in rankings]
            per[name] = [measures(top, g) for top, g in zip(tops[name], gold, strict=True)]
        router, queries, gold = sets["int8"][set_name]
        texts = [router.conversation(q).request for q in queries]
        cos = (plain.encode(texts) * int8.encode_requests(texts)).sum(axis=1)
        row: dict[str, Any] = {"requests": len(queries), "skills": len(router.skills)}
        for name in ("fp32", "int8"):
            row[name] = {m: round(100 * float(np.mean([v[m] for v in per[name]])), 1)
                         for m in ("hit@1", "hit@5", "mrr")}
        row["cosine_to_fp32"] = {"min": round(float(cos.min()), 4), "p5": round(float(np.percentile(cos, 5)), 4),
                                 "median": round(float(np.median(cos)), 4)}
        pairs = list(zip(tops["fp32"], tops["int8"], strict=True))
        row["agreement"] = {"top1": round(100 * float(np.mean([a[:1] == b[:1] for a, b in pairs])), 1),
                            "top5_set": round(100 * float(np.mean([set(a[:5]) == set(b[:5]) for a, b in pairs])), 1)}
        for metric in ("hit@1", "hit@5", "mrr"):
            test = paired_comparison([v[metric] for v in per["fp32"]], [v[metric] for v in per["int8"]], seed=0)
            row[f"{metric} int8 - fp32"] = {
                "diff": round(100 * test.mean_diff, 2), "low": round(100 * test.low, 2),
                "high": round(100 * test.high, 2), "p": round(test.p_value, 4), "wins": test.wins,
                "losses": test.losses}
        results[set_name] = row
        print(set_name, row, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="the copies, the libraries and their indexes")
    parser.add_argument("--only", choices=("speed", "accuracy"))
    parser.add_argument("--rounds", type=int, default=3, help="passes over the requests for the speed part")
    parser.add_argument("--library", choices=("683", "bundled"), default="683",
                        help="the speed part's library: speed_goals.py's 683 skills, or the bundled skills/ folder")
    parser.add_argument("--name", default="quant_choice")
    parser.add_argument("--processes", action="store_true",
                        help="the speed part as fp32 and int8-pc in alternate child processes instead")
    parser.add_argument("--adopted", action="store_true",
                        help="the shipped int8 request path against the float graph on the dev sets (accuracy)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import json

        print(json.dumps(child(args.work, args.child)))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    started, load_start = time.time(), os.getloadavg()
    result: dict[str, Any] = {}
    if args.adopted:
        result["adopted"] = adopted(args.work)
    elif args.processes:
        result["processes"] = processes(args.work, args.rounds)
    elif args.only != "accuracy":
        result["speed"] = speed(args.work, args.rounds, args.library)
        for name, row in result["speed"]["variants"].items():
            print(f"{name:16} route p50 {row['route_p50_ms']} ms (p95 {row['route_p95_ms']}, cpu "
                  f"{row['route_cpu_p50_ms']}), encode p50 {row['encode_p50_ms']} ms, load {os.getloadavg()[0]:.2f}",
                  flush=True)
    if args.only != "speed" and not args.processes and not args.adopted:
        result["accuracy"] = accuracy(args.work)
    result.update(minutes=round((time.time() - started) / 60, 1),
                  loadavg={"start": [round(x, 2) for x in load_start],
                           "end": [round(x, 2) for x in os.getloadavg()]})
    save(args.name, result)


if __name__ == "__main__":
    main()
