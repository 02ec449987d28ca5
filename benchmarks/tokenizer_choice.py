"""Which tokenizer (and BM25 variant) should BM25 use? Measured on the dev splits only.

Ground truth: MetaTool ``queries_single_dev.jsonl`` over its 199 tools, Seal-Tools ``dev.jsonl`` over its 4,076
tools. Index text = tool name split into words + " " + description. Metrics: R@k = share of the gold tools in
the top k (top-k accuracy for one gold tool), hit@1 = any gold tool first, MRR = 1 / rank of the first gold tool.

    .venv/bin/python benchmarks/tokenizer_choice.py

Prints two tables and writes benchmarks/results/tokenizer_choice.json.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexes.bm25 import VARIANTS, BM25Index  # noqa: E402
from indexes.tokenize import Tokenizer  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
DATASETS = {
    "metatool": (DATA / "metatool" / "tools.jsonl", DATA / "metatool" / "queries_single_dev.jsonl"),
    "sealtools": (DATA / "sealtools" / "tools.jsonl", DATA / "sealtools" / "dev.jsonl"),
}
OUT = ROOT / "benchmarks" / "results" / "tokenizer_choice.json"
WORDS = re.compile(r"\w+")


class Baseline:
    """Lowercase ``\\w+`` tokens, the tokenizer of the published rank-bm25 numbers."""

    def __call__(self, text: str) -> list[str]:
        return WORDS.findall(text.lower())


VARIANT_TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "baseline \\w+": Baseline(),
    **{
        "+".join(["split", *([f"{stop}-stop"] if stop != "none" else []),
                  *([f"{stem}-stem"] if stem != "none" else [])]):
        Tokenizer(stopwords=stop, stem=stem)
        for stop in ("none", "lucene", "english")
        for stem in ("none", "s", "light")
    },
}


def name_words(name: str) -> str:
    """Split a tool name into words (same for every variant, so only the tokenizer differs)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    return re.sub(r"[_\-]+", " ", spaced)


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def evaluate(index: BM25Index, queries: list[dict]) -> dict[str, float]:
    totals = {"R@1": 0.0, "R@5": 0.0, "hit@1": 0.0, "MRR": 0.0}
    for query in queries:
        gold = set(query["gold"])
        # The full deterministic ranking of the tools sharing a token with the query (search's own order).
        ranked = [hit.id for hit in index.search(query["query"], len(index))]
        totals["R@1"] += len(gold & set(ranked[:1])) / len(gold)
        totals["R@5"] += len(gold & set(ranked[:5])) / len(gold)
        totals["hit@1"] += float(bool(ranked) and ranked[0] in gold)
        first = next((rank for rank, tool in enumerate(ranked, start=1) if tool in gold), None)
        totals["MRR"] += 1 / first if first else 0.0
    return {name: round(100 * value / len(queries), 2) for name, value in totals.items()}


def main() -> None:
    data = {}
    for dataset, (tools_path, queries_path) in DATASETS.items():
        tools = read_jsonl(tools_path)
        queries = [q for q in read_jsonl(queries_path) if q["gold"]]
        texts = [name_words(tool["name"]) + " " + tool["description"] for tool in tools]
        data[dataset] = ([tool["id"] for tool in tools], texts, queries)

    results: dict[str, dict] = {"tokenizers": {}, "bm25_variants": {}}
    print(f"{'tokenizer':<28}" + "".join(f"{d + ' ' + m:>18}" for d in data for m in ("R@1", "R@5", "MRR")))
    for label, tokenizer in VARIANT_TOKENIZERS.items():
        row = {}
        for dataset, (ids, texts, queries) in data.items():
            start = time.perf_counter()
            index = BM25Index.from_texts(ids, texts, tokenizer=tokenizer)
            row[dataset] = evaluate(index, queries) | {"seconds": round(time.perf_counter() - start, 2)}
        results["tokenizers"][label] = row
        print(f"{label:<28}" + "".join(f"{row[d][m]:>18.2f}" for d in data for m in ("R@1", "R@5", "MRR")))

    def mean_recall(row: dict) -> float:
        return sum(row[d]["R@1"] + row[d]["R@5"] for d in data) / (2 * len(data))

    candidates = {label: row for label, row in results["tokenizers"].items() if label != "baseline \\w+"}
    best = max(candidates, key=lambda label: mean_recall(candidates[label]))
    results["chosen_tokenizer"] = best
    print(f"\nbest tokenizer by mean of R@1 and R@5 over both dev sets: {best}\n")

    print(f"{'variant':<28}" + "".join(f"{d + ' ' + m:>18}" for d in data for m in ("R@1", "R@5", "MRR")))
    for variant in VARIANTS:
        row = {}
        for dataset, (ids, texts, queries) in data.items():
            index = BM25Index.from_texts(ids, texts, tokenizer=VARIANT_TOKENIZERS[best], variant=variant)
            row[dataset] = evaluate(index, queries)
        results["bm25_variants"][variant] = row
        print(f"{variant:<28}" + "".join(f"{row[d][m]:>18.2f}" for d in data for m in ("R@1", "R@5", "MRR")))

    results["setup"] = {
        "k1": 1.5, "b": 0.75, "tokenizer_table_variant": "lucene", "splits": "dev only",
        "queries": {dataset: len(queries) for dataset, (_, _, queries) in data.items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
