"""Two catalogue-text methods for MetaTool's paraphrased requests, measured on the six dev sets before any is kept.

    python benchmarks/catalogue_choice.py                  # both families, about 15 minutes at load 2
    python benchmarks/catalogue_choice.py --only maxsim    # one family (maxsim, segment)
    python benchmarks/catalogue_choice.py --confirm        # maxsim on single-skill rows the grid never read

The sets are ``name_choice.py``'s dev sets (single-skill rows of users-corpora-dev, corpora-dev, users-bundled-dev
and bundled-dev; MetaTool single-tool dev; Seal-Tools dev with its multi-tool recall@5), each scored once by the
default router. Judged by the project's rule: the best mean MRR over the six sets, no set more than 0.5 below.

- ``maxsim w`` (late interaction, as ColBERT scores, on the bundled MiniLM's own token vectors): every request
  token's best cosine with a description's tokens, averaged over the request's tokens ([CLS] and [SEP] left out),
  added to the default's fused scores as ``w * zscore``. A word of the request that matches one word of a
  description counts whole, where the pooled sentence vector blurs it.
- ``segment replace`` / ``segment both`` (name words): 35 of MetaTool's 199 names are lower-case words run together
  (``stellarexplorer``, ``seoanalysis``, ``airqualityforeast``), which identifier splitting leaves whole. Each such
  run of 6+ letters is cut by ``wordsegment`` (Norvig's unigram and bigram counts) where every piece has 3+ letters
  (``lsongai`` -> "l song a i" is refused), and the pieces replace the run or follow it in the name words that BM25,
  the names' embedding and the name table read. Every library is built again in a folder of its own.

``--confirm`` runs ``maxsim`` on the single-skill rows of the later users' files
(``users-{corpora,bundled}-dev-{tasks,abstain}.jsonl``, 122 requests written before any routing, which no weight
here was chosen on), each set and all four pooled (``results/catalogue_choice-confirm.json``).

Prints hit@1 / hit@5 / MRR per set, the mean MRR and the worst set's change, each against the default with wins,
losses and a sign-flip p. Writes benchmarks/results/catalogue_choice[-FAMILY].json. ``segment`` needs
``pip install wordsegment``.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import name_choice
import users
from centrality_choice import ranked_outcomes
from common import save
from indexes.fusion import normalise
from name_choice import UNREAD, Rows, choice_sets, library_sets, paired
from router import Router
from weights_grid import measures, outcomes

FAMILIES = ("maxsim", "segment")
WEIGHTS = (0.1, 0.2, 0.3, 0.5)
#: The rule's bound: no dev set's MRR more than this below the default's.
WORST = 0.5


def token_vectors(model: Any, texts: list[str]) -> list[np.ndarray]:
    """Each text's unit token vectors from the model's last layer, without [CLS] and [SEP]."""
    out = []
    for tokens in model.encode(texts, output_value="token_embeddings", batch_size=64):
        vectors = tokens.numpy().astype(np.float64)
        vectors = vectors[1:-1] if len(vectors) > 2 else vectors
        out.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    return out


def maxsim(requests: list[np.ndarray], documents: list[np.ndarray]) -> np.ndarray:
    """Late-interaction scores (requests x documents): mean over request tokens of the best document token."""
    flat = np.concatenate(documents)
    starts = np.r_[0, np.cumsum([len(d) for d in documents])[:-1]]
    return np.stack([np.maximum.reduceat(tokens @ flat.T, starts, axis=1).mean(axis=0) for tokens in requests])


def segmented_name_words(mode: str) -> Any:
    """``router.texts.name_words`` with lower-case runs cut into words (``mode``: replace the run, or keep both)."""
    import wordsegment

    from indexes.tokenize import split_identifier
    from router import texts

    wordsegment.load()

    def cut(part: str) -> list[str] | None:
        if not re.fullmatch(r"[a-z]{6,}", part):
            return None
        pieces = wordsegment.segment(part)
        return pieces if len(pieces) > 1 and all(len(p) >= 3 for p in pieces) else None

    @functools.lru_cache(maxsize=texts.NAME_WORDS_KEPT)
    def name_words(name: str) -> str:
        out: list[str] = []
        for word in texts._WORD.findall(name):
            for part in split_identifier(word):
                pieces = cut(part)
                out.extend([part] if pieces is None else pieces if mode == "replace" else [part, *pieces])
        return " ".join(out)
    return name_words


def compare(default: dict[str, np.ndarray], methods: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:
    """Each method against the default on every set (paired), with the rule's mean MRR and worst set."""
    rng = np.random.default_rng(20)
    base_mean = float(np.mean([measures(v)["mrr"] for v in default.values()]))
    out: dict[str, Any] = {"default": {n: measures(v) for n, v in default.items()}, "default_mean_mrr": base_mean}
    print(f"{'default':22} mean MRR {base_mean:.2f} | " + " | ".join(
        f"{n} {m['hit@1']}/{m['hit@5']}/{m['mrr']}" for n, m in out["default"].items()), flush=True)
    for method, sets in methods.items():
        row: dict[str, Any] = {}
        for name, values in sets.items():
            base = default[name]
            single = base[:, 3] == 0
            row[name] = paired(values, base, (("hit@1", 0, single), ("hit@5", 1, single), ("mrr", 2, single)), rng, 2)
        mean = float(np.mean([row[n]["mrr"] for n in row]))
        worst = min(row[n]["mrr"] - out["default"][n]["mrr"] for n in row)
        out[method] = {"sets": row, "mean_mrr": round(mean, 2), "worst_set_mrr_change": round(worst, 2),
                       "passes_rule": bool(worst >= -WORST)}
        print(f"{method:22} mean MRR {mean:.2f} ({mean - base_mean:+.2f}, worst set {worst:+.2f}) | " + " | ".join(
            f"{n} {r['hit@1']}/{r['hit@5']}/{r['mrr']} {r['mrr_wins_losses_p']}" for n, r in row.items()), flush=True)
    return out


def pooled(default: dict[str, np.ndarray], methods: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:
    """Every method against the default over the requests of all sets together."""
    rng = np.random.default_rng(20)
    base = np.concatenate(list(default.values()))
    every = np.ones(len(base), bool)
    out: dict[str, Any] = {"n": len(base), "default": measures(base)}
    for method, sets in methods.items():
        values = np.concatenate([sets[n] for n in default])
        out[method] = paired(values, base, (("hit@1", 0, every), ("hit@5", 1, every), ("mrr", 2, every)), rng, 2)
        print(f"pooled {method:15} {out['default']} -> " + ", ".join(
            f"{m} {out[method][m]} {out[method][m + '_wins_losses_p']}" for m in ("hit@1", "hit@5", "mrr")),
            flush=True)
    return out


def scored_outcomes(sets: dict[str, tuple[Router, Rows]]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Each set scored once, and the default's outcomes from those scores."""
    scored = {name: router.score_many([q for q, _ in rows]) for name, (router, rows) in sets.items()}
    return scored, {name: outcomes(router, rows, scored[name]) for name, (router, rows) in sets.items()}


def maxsim_family(sets: dict[str, tuple[Router, Rows]], scored: dict[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    from indexes import Encoder

    model = Encoder()._model()  # the bundled MiniLM as sentence-transformers loads it, offline
    found: dict[str, dict[str, np.ndarray]] = {}
    for name, (router, rows) in sets.items():
        fused = router.fuse(scored[name])
        late = normalise(maxsim(token_vectors(model, list(scored[name].texts)),
                                token_vectors(model, [s.description for s in router.skills])), "zscore")
        for weight in WEIGHTS:
            found.setdefault(f"maxsim {weight}", {})[name] = ranked_outcomes(router, rows, scored[name],
                                                                               fused + weight * late)
        print(f"  maxsim scored {name}", flush=True)
    return found


def segment_family() -> dict[str, dict[str, np.ndarray]]:
    from router import texts
    from router.signals import name_dense

    original = texts.name_words
    found = {}
    try:
        for mode in ("replace", "both"):
            texts.name_words = name_dense.name_words = segmented_name_words(mode)  # type: ignore[assignment]
            with tempfile.TemporaryDirectory(prefix="catalogue-choice-") as folder:
                users.INDEX = Path(folder) / "index"  # built again: the texts changed, the skills did not
                name_choice.RESULTS = Path(folder) / "results"
                found[f"segment {mode}"] = scored_outcomes(choice_sets(False))[1]
            print(f"  segment {mode} scored", flush=True)
    finally:
        texts.name_words = name_dense.name_words = original  # type: ignore[assignment]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", choices=FAMILIES, action="append", help="only these families (repeatable)")
    parser.add_argument("--confirm", action="store_true", help="maxsim on the users' rows no weight here was chosen on")
    args = parser.parse_args()
    if args.confirm:
        sets = library_sets(files=UNREAD)
        scored, default = scored_outcomes(sets)
        methods = maxsim_family(sets, scored)
        save("catalogue_choice-confirm", {"sets": compare(default, methods), "pooled": pooled(default, methods)})
        return
    families = set(args.only or FAMILIES)
    if "segment" in families:
        try:
            import wordsegment  # noqa: F401
        except ImportError:
            sys.exit("catalogue_choice.py: the segment family needs wordsegment: pip install wordsegment")
    index, results = users.INDEX, name_choice.RESULTS
    sets = choice_sets(False)
    scored, default = scored_outcomes(sets)
    methods = maxsim_family(sets, scored) if "maxsim" in families else {}
    if "segment" in families:
        methods.update(segment_family())
    users.INDEX, name_choice.RESULTS = index, results
    save("catalogue_choice" + "".join(f"-{f}" for f in args.only or ()), compare(default, methods))


if __name__ == "__main__":
    main()
