"""Whether the bundled MiniLM, trained on public request -> tool pairs, routes skill libraries better (dev only).

    python benchmarks/adapt_choice.py                                  # MetaTool dev + Seal-Tools dev pairs
    python benchmarks/adapt_choice.py --toollens <COLT>/datasets/ToolLens --toollens-pairs 2000   # and ToolLens

The question: is the vocabulary gap (a request that names the task in words its skill never uses) the model's, and
does it close when the model has seen many requests written for tools? The only embedding weights the package
registry ships are all-MiniLM-L6-v2's, so training it is the one way to another model here.

Training pairs: each labelled request with the name and description of each of its gold tools ("name: description",
one pair per gold tool), from MetaTool's single-tool dev split (4,212 requests, 199 tools), Seal-Tools' dev split
(700 requests, 4,076 tools) and, with ``--toollens``, the first ``--toollens-pairs`` pairs of ToolLens' train split
(the queries toollens.py's ``--dev`` reads; its test split is never read). One epoch of in-batch contrastive
training (each request against every description of its batch, scale 20, as sentence-transformers'
MultipleNegativesRankingLoss), batches of ``--batch`` pairs with no tool twice, AdamW at ``--lr`` with a linear
warm-up over the first tenth, texts cut at ``--max-tokens`` tokens, fixed seed; on two CPU cores about 3.3 s a batch
(8,020 pairs: 15 minutes).

Judged where nothing was trained: the single-skill rows of the skill-library dev sets (users-corpora-dev,
corpora-dev, users-bundled-dev, bundled-dev) and of the later users' files (``name_choice.UNREAD``), each library
built once with the default config and once with ``model`` set to the trained folder; hit@1 / hit@5 / MRR per set
and pooled, each paired against the default (wins, losses, sign-flip p). MetaTool and Seal-Tools are left out: their
dev requests are the training data. Writes benchmarks/results/NAME.json (``--name``, default adapt_choice); the
trained model and the indexes go to ``--work``, by default a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import users
from catalogue_choice import compare, pooled, scored_outcomes
from common import DATASETS, read_jsonl, save
from name_choice import UNREAD, library_sets

SEED = 20
SCALE = 20.0


def pairs_of(tools: list[dict[str, Any]], requests: list[dict[str, Any]], tag: str) -> list[tuple[str, str, str]]:
    """(request, "name: description", tool key) for each gold tool of each request."""
    by_id = {t["id"]: t for t in tools}
    return [(r["query"], f"{by_id[g]['name']}: {by_id[g]['description']}", f"{tag}/{g}")
            for r in requests for g in r["gold"] if g in by_id]


def training_pairs(toollens: Path | None, toollens_pairs: int) -> list[tuple[str, str, str]]:
    pairs = pairs_of(read_jsonl(DATASETS / "metatool" / "tools.jsonl"),
                     read_jsonl(DATASETS / "metatool" / "queries_single_dev.jsonl"), "metatool")
    pairs += pairs_of(read_jsonl(DATASETS / "sealtools" / "tools.jsonl"),
                      read_jsonl(DATASETS / "sealtools" / "dev.jsonl"), "sealtools")
    if toollens is not None:
        import toollens as lens

        with tempfile.TemporaryDirectory(prefix="adapt-toollens-") as folder:
            tools, requests = lens.convert(toollens, Path(folder), True)
            pairs += pairs_of(read_jsonl(tools), read_jsonl(requests), "toollens")[:toollens_pairs]
    return pairs


def batches(pairs: list[tuple[str, str, str]], size: int) -> list[list[tuple[str, str, str]]]:
    """``pairs`` shuffled into batches of ``size`` in which no tool comes twice (a second request for the same tool
    would count its own description as a wrong answer)."""
    pool = list(pairs)
    random.Random(SEED).shuffle(pool)
    out = []
    while pool:
        seen: set[str] = set()
        batch: list[tuple[str, str, str]] = []
        rest: list[tuple[str, str, str]] = []
        for pair in pool:
            if pair[2] in seen or len(batch) >= size:
                rest.append(pair)
            else:
                batch.append(pair)
                seen.add(pair[2])
        out.append(batch)
        pool = rest
    return out


def train(pairs: list[tuple[str, str, str]], out: Path, *, batch: int, lr: float, max_tokens: int) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F

    from indexes import Encoder

    torch.manual_seed(SEED)
    model = Encoder()._model()  # the bundled MiniLM as sentence-transformers loads it, offline
    model.max_seq_length = max_tokens
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    planned = batches(pairs, batch)
    warm = max(1, len(planned) // 10)
    start, losses = time.perf_counter(), []
    for step, group in enumerate(planned):
        for params in optimiser.param_groups:
            params["lr"] = lr * min(1.0, (step + 1) / warm)
        requests = F.normalize(model(model.preprocess([p[0] for p in group]))["sentence_embedding"], dim=-1)
        tools = F.normalize(model(model.preprocess([p[1] for p in group]))["sentence_embedding"], dim=-1)
        loss = F.cross_entropy(SCALE * requests @ tools.T, torch.arange(len(group)))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
        if step % 50 == 0:
            print(f"  step {step} of {len(planned)}: loss {np.mean(losses[-50:]):.3f}, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    model.eval()
    model.save(str(out))
    return {"pairs": len(pairs), "batches": len(planned), "first_loss": round(float(np.mean(losses[:20])), 3),
            "last_loss": round(float(np.mean(losses[-20:])), 3), "seconds": round(time.perf_counter() - start)}


def judged(model: str | None, work: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The default's outcomes (``model`` None) or the trained model's, on the dev sets and on the unread rows."""
    from router.config import RouterConfig

    users.INDEX = work / ("index-default" if model is None else "index-trained")
    config = RouterConfig(model=model)
    return (scored_outcomes(library_sets(config=config))[1],
            scored_outcomes(library_sets(files=UNREAD, config=config))[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--toollens", type=Path, help="a ToolLens folder (toollens.py --data): its train pairs too")
    parser.add_argument("--toollens-pairs", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--work", type=Path, help="where the trained model and the indexes go (default: temporary)")
    parser.add_argument("--name", default="adapt_choice")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="adapt-choice-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        pairs = training_pairs(args.toollens, args.toollens_pairs)
        print(f"training on {len(pairs)} pairs", flush=True)
        trained = train(pairs, work / "model", batch=args.batch, lr=args.lr, max_tokens=args.max_tokens)
        print(json.dumps(trained), flush=True)
        dev_default, unread_default = judged(None, work)
        dev_trained, unread_trained = judged(str(work / "model"), work)
    dev = {"trained": dev_trained}
    unread = {"trained": unread_trained}
    save(args.name, {"training": {**trained, "toollens": args.toollens is not None, "batch": args.batch,
                                  "lr": args.lr, "max_tokens": args.max_tokens},
                     "dev": compare(dev_default, dev), "dev_pooled": pooled(dev_default, dev),
                     "unread": compare(unread_default, unread), "unread_pooled": pooled(unread_default, unread)})


if __name__ == "__main__":
    main()
