"""Evidence from each skill's own body at build time, and a second stage, measured on the dev sets (vocabulary gap).

Document-side expansion from each skill's own body, and a second stage over the fused top list, for the
vocabulary gap (requests in words the skill's description never uses), measured on the dev sets before any is kept.

    python benchmarks/expansion_choice.py            # every method below on the four skill-library dev sets
    python benchmarks/expansion_choice.py --quick    # the cheap methods only (no passage embedded)
    python benchmarks/expansion_choice.py --only use --only strip   # some families (kw heads use strip first pass)
    python benchmarks/expansion_choice.py --confirm  # the combo lead on single-skill rows no choice here has read

Sets: the single-skill rows of users-corpora-dev (with its ``vocab`` tag reported apart), corpora-dev,
users-bundled-dev and bundled-dev, each library built and scored once by the default router. MetaTool and
Seal-Tools have no bodies, so no method here changes them (they rank as the default: 0 won, 0 lost), and the
project's rule (the best mean MRR over the dev sets with no set more than 0.5 below the default) reduces to these
four. Each method gives one score a skill ``S`` (requests x skills); it is added to the default's fused scores
``F`` as ``F + w * zscore(S)`` (``sig``), or only among ``F``'s top ``K`` (``rr K``: a second stage, the z-score
taken over those ``K``), or, for the lexical expansions, put in the place of the ``bm25`` signal (``swap``). The
request split's share of ``F`` is kept as it is (parts are not scored by the new evidence).

Methods, all computed from the library itself (no word list, no outside data):

- ``kw N``: each body's ``N`` most distinctive words, by TF-IDF against the library's bodies (``(1 + log tf) *
  log(n / df)``, alphabetic stems of 3+ letters), as a lexical field of their own (BM25 over the keywords alone),
  ``kwnew N`` the same without the words the name and description already hold, ``desc+kw N`` appended to the
  ``bm25`` signal's text (the description's lexical field expanded, swapped in for ``bm25``);
- ``kwvec N``: the same keywords embedded as one text per skill ("w1, w2, ..."), cosine with the request;
  ``desc+kwvec N``: the description and its keywords embedded together;
- ``heads``: the body's headings joined into one text and embedded; ``headmax``: every heading embedded, a skill
  scored by its best one (MaxP, Dai & Callan 2019);
- ``firstmax``: the first sentence (up to 32 words, heading in front) of each of the first 24 sections embedded,
  the best one; ``passmax``: every passage of the body (router.passages, 150-word windows) embedded, the best one;
- ``usemax`` / ``usemean`` (family ``use``): the items of the body's "Use this skill when" / "When to Use" sections
  (465 of the 697 corpus files have one), each embedded (the best one) or joined into one text;
- ``null K`` (family ``null``, only when named): ``kwnew 10``'s keyword lists dealt to the skills in a random order
  (seeds 0-19), what chance gives a lexical field of the same shape; the spread of their mean MRR at ``sig w=0.1`` is
  printed, the yardstick for a gain found by searching a grid;
- ``combo`` (family ``combo``, only when named): ``kwnew 10`` and ``kwvec 25`` added together at 0.05 / 0.1 each,
  on the default or on the bodies without do-not-use sections;
- ``no do-not-use sections`` (family ``strip``): the ``passages`` and ``passage_dense`` signals rebuilt from bodies
  without their "Do not use this skill when" sections (305 corpus files), whose words are evidence against the
  skill; ``same bodies (a check)`` rebuilds them from the bodies as they are and must equal the default.

``--confirm`` checks the one lead of the grid (``combo`` at :data:`LEAD`) on requests the grid never read: the
single-skill rows of the later users' files (``users-{corpora,bundled}-dev-{tasks,abstain}.jsonl``, 122 requests,
written before any routing), each set paired with the default and all of them pooled (hit@1, hit@5 and MRR wins,
losses and a sign-flip p). Writes benchmarks/results/expansion_choice-confirm.json.

A skill without a body scores its description's cosine in the dense methods and 0 in the lexical ones. Embeddings
are kept by text in /tmp/skill-router-expansion-bench so that a second run embeds nothing. Prints hit@1 / hit@5 /
MRR per set and the vocab tag, the mean MRR and the worst set's change, and times each method's build (texts
embedded, CPU seconds). Writes benchmarks/results/expansion_choice[-quick][-FAMILY...].json.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import users
from common import best_of_pieces, read_jsonl, save
from indexes import BM25Index
from indexes.fusion import normalise
from indexes.tokenize import Tokenizer
from name_choice import UNREAD, paired
from passage_dense_choice import ranked
from router import Router, glossary
from router import passages as passage_cut
from router.config import RouterConfig
from router.routing import Scored
from router.texts import index_text, dense_text

CACHE = Path("/tmp/skill-router-expansion-bench")
SURFACE = Tokenizer(stem="none")
WEIGHTS = (0.1, 0.2, 0.3, 0.5)
RERANK = (20, 30)
FAMILIES = ("kw", "heads", "use", "strip", "first", "pass", "null", "combo")
NULLS = 20
SETS = (("corpora", ("users-corpora-dev", "corpora-dev")), ("bundled", ("users-bundled-dev", "bundled-dev")))
#: The grid's lead (``--only combo``): its two keyword rows at 0.05 each on bodies without do-not-use sections.
LEAD = "combo strip kwnew10 0.05 kwvec25 0.05"
_WORD = re.compile(r"^[a-z][a-z]+$")
#: Headings of the sections that say when NOT to use a skill ("## Do not use this skill when", 305 of the 697 corpus
#: files) and of those that say when to use it ("## Use this skill when", "## When to Use This Skill": 465).
NEGATIVE = re.compile(r"(?i)^(do not use|don'?t use|when not to use|what this is not)\b")
POSITIVE = re.compile(r"(?i)^(use this skill when|when to use( this skill)?$|use when|when to apply|"
                      r"(common |example )?use cases)")
_HEADING_LINE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)")


class Embeddings:
    """Unit embeddings of texts by the router's encoder, kept by text digest on disk between runs."""

    def __init__(self, router: Router, name: str) -> None:
        self.router = router
        self.path = CACHE / f"{name}.npz"
        self.store: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                self.store = dict(zip(data["keys"].tolist(), data["vectors"]))
        self.embedded = 0
        self.seconds = 0.0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()

    def __call__(self, texts: list[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in self.store}.items())
        if missing:
            start = time.process_time()
            vectors = self.router.encode([t for _, t in missing]).astype(np.float32)
            self.seconds += time.process_time() - start
            self.embedded += len(missing)
            self.store.update({k: v for (k, _), v in zip(missing, vectors)})
            CACHE.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, keys=np.array(list(self.store)), vectors=np.stack(list(self.store.values())))
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.store[k] for k in keys])


def distinctive_words(router: Router, n: int, new_only: bool) -> list[list[str]]:
    """Each body's ``n`` most distinctive words by TF-IDF against the library's bodies, as surface words (the most
    frequent surface form of each stem in that body), best first; ``new_only`` leaves out the stems of the
    skill's name and description."""
    stem = router.signals.bm25.tokenizer
    bodies = [s.body or "" for s in router.skills]
    counts: list[Counter[str]] = []
    surface: list[dict[str, Counter[str]]] = []
    for body in bodies:
        c: Counter[str] = Counter()
        forms: dict[str, Counter[str]] = {}
        for word, s in zip(SURFACE(body), stem(body), strict=True):
            if len(s) >= 3 and _WORD.match(s) and word.isascii():
                c[s] += 1
                forms.setdefault(s, Counter())[word] += 1
        counts.append(c)
        surface.append(forms)
    with_body = sum(1 for c in counts if c)
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    out = []
    for skill, c, forms in zip(router.skills, counts, surface):
        own = set(stem(index_text(skill))) if new_only else set()
        weights = {s: (1 + math.log(tf)) * math.log(with_body / df[s]) for s, tf in c.items() if s not in own}
        best = sorted(weights, key=lambda s: (-weights[s], s))[:n]
        out.append([forms[s].most_common(1)[0][0] for s in best])
    return out


def max_cosine(router: Router, embed: Embeddings, pieces: list[list[str]], queries: np.ndarray) -> np.ndarray:
    """Each skill's best cosine over its ``pieces`` (its description's cosine without any)."""
    flat = [p for ps in pieces for p in ps]
    owners = np.array([i for i, ps in enumerate(pieces) for _ in ps], dtype=np.int64)
    vectors = embed(flat).astype(np.float64)
    return best_of_pieces(queries @ vectors.T, owners, queries @ router.signals.dense.vectors.astype(np.float64).T)


def one_vector(router: Router, embed: Embeddings, texts: list[str], queries: np.ndarray) -> np.ndarray:
    """Cosine with one embedded text a skill (its description's vector where the text is empty)."""
    vectors = router.signals.dense.vectors.astype(np.float64).copy()
    rows = [i for i, t in enumerate(texts) if t.strip()]
    if rows:
        vectors[rows] = embed([texts[i] for i in rows])
    return queries @ vectors.T


def first_sentences(body: str, sections: int = 24, words: int = 32) -> list[str]:
    out = []
    for heading, text in passage_cut.sections(body)[:sections]:
        sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0] if text else ""
        piece = " ".join(f"{heading} {sentence}".split()[:words]).strip()
        if piece:
            out.append(piece)
    return out


def without_negative(body: str) -> str:
    """``body`` without its sections under a heading of :data:`NEGATIVE` (fenced code is not read for headings)."""
    out, skipping, fenced = [], False, False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        found = None if fenced else _HEADING_LINE.match(line)
        if found:
            skipping = bool(NEGATIVE.match(found.group(1)))
        if not skipping:
            out.append(line)
    return "\n".join(out)


def use_when(body: str) -> list[str]:
    """The items of ``body``'s sections under a heading of :data:`POSITIVE` (each bullet, or the section's text)."""
    out = []
    current: list[str] | None = None
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        found = None if fenced else _HEADING_LINE.match(line)
        if found:
            current = [] if POSITIVE.match(found.group(1)) and not NEGATIVE.match(found.group(1)) else None
            continue
        if current is not None and not fenced:
            item = _BULLET.match(line)
            if item:
                out.append(" ".join(item.group(1).replace("**", "").split()[:32]))
    return out


def methods(router: Router, embed: Embeddings, routed: list[str], queries: np.ndarray,
            families: set[str]) -> dict[str, tuple[str, np.ndarray, dict[str, Any]]]:
    """name -> (kind: 'lexical' | 'dense' | 'swap', scores, cost)."""
    ids = [s.id for s in router.skills]
    out: dict[str, tuple[str, np.ndarray, dict[str, Any]]] = {}

    def timed(name: str, kind: str, make: Any) -> None:
        before, seconds = embed.embedded, embed.seconds
        start = time.process_time()
        scores = make()
        out[name] = (kind, scores, {"cpu_s": round(time.process_time() - start, 2), "embedded": embed.embedded - before,
                                    "embed_cpu_s": round(embed.seconds - seconds, 2)})
        print(f"  {name}: {out[name][2]}", flush=True)

    def bm25(texts: list[str]) -> np.ndarray:
        index = BM25Index.from_texts(ids, texts)
        return np.stack([index.scores(t) for t in routed])

    for n in (10, 25, 50) if "kw" in families else ():
        words = distinctive_words(router, n, new_only=False)
        new = distinctive_words(router, n, new_only=True)
        timed(f"kw {n}", "lexical", lambda w=words: bm25([" ".join(x) for x in w]))
        timed(f"kwnew {n}", "lexical", lambda w=new: bm25([" ".join(x) for x in w]))
        timed(f"desc+kw {n}", "swap", lambda w=words: bm25([f"{index_text(s)}. {' '.join(x)}"
                                                            for s, x in zip(router.skills, w)]))
        if n <= 25:
            timed(f"kwvec {n}", "dense", lambda w=words: one_vector(router, embed, [", ".join(x) for x in w], queries))
            timed(f"desc+kwvec {n}", "dense", lambda w=words: one_vector(
                router, embed, [f"{dense_text(s)} {', '.join(x)}" if x else "" for s, x in zip(router.skills, w)],
                queries))
    if "null" in families:  # what chance gives: kwnew 10's keyword lists dealt to the wrong skills
        new = distinctive_words(router, 10, new_only=True)
        for seed in range(NULLS):
            dealt = [new[i] for i in np.random.default_rng(seed).permutation(len(new))]
            timed(f"null{seed}", "lexical", lambda w=dealt: bm25([" ".join(x) for x in w]))
    headings = [[h for h, _ in passage_cut.sections(s.body or "") if h] for s in router.skills]
    if "heads" in families:
        timed("heads", "dense", lambda: one_vector(router, embed, [". ".join(h) for h in headings], queries))
        timed("headmax", "dense", lambda: max_cosine(router, embed, headings, queries))
    if "use" in families:
        uses = [use_when(s.body or "") for s in router.skills]
        timed("usemax", "dense", lambda: max_cosine(router, embed, uses, queries))
        timed("usemean", "dense", lambda: one_vector(router, embed, [". ".join(u) for u in uses], queries))
    if "first" in families:
        timed("firstmax", "dense", lambda: max_cosine(
            router, embed, [first_sentences(s.body or "") for s in router.skills], queries))
    if "pass" in families:
        timed("passmax", "dense", lambda: max_cosine(
            router, embed, [passage_cut.passages(s.body or "") if (s.body or "").strip() else []
                            for s in router.skills], queries))
    return out


def body_signals(router: Router, embed: Embeddings, bodies: list[str], routed: list[str],
                 queries: np.ndarray) -> dict[str, np.ndarray]:
    """The ``passages`` and ``passage_dense`` scores the default would give if the skills had these ``bodies``."""
    from router.signals.passage_dense import body_heads

    index = passage_cut.PassageIndex.build([s.id for s in router.skills], bodies)
    heads = body_heads(bodies, router.signals.dense.vectors, lambda texts: embed(list(texts)))
    assert heads is not None
    return {"passages": index.scores_many(routed), "passage_dense": heads.scores_many(queries)}


def rerank(fused: np.ndarray, extra: np.ndarray, k: int, weight: float, order: np.ndarray) -> np.ndarray:
    """``fused`` with ``weight`` times the z-score of ``extra`` over each request's top ``k`` added to those ``k``."""
    from indexes.fusion import ranking

    top = ranking(fused, order)[:, :k]
    rows = np.arange(len(fused))[:, None]
    out = fused.copy()
    out[rows, top] += weight * normalise(extra[rows, top], "zscore")
    return out


def confirm(results: dict[str, Any], pooled: dict[str, list[np.ndarray]], rng: np.random.Generator) -> None:
    """Print and save :data:`LEAD` against the default on each confirming set and on all of them pooled."""
    base, lead = np.concatenate(pooled["default"]), np.concatenate(pooled[LEAD])
    every = np.ones(len(base), bool)
    together = paired(lead, base, [("hit@1", 0, every), ("hit@5", 1, every), ("mrr", 2, every)], rng)
    together["default"] = paired(base, base, [("hit@1", 0, every), ("hit@5", 1, every), ("mrr", 2, every)], None)
    together["n"] = len(base)
    for name, row in (*((n, results[n][LEAD]) for n in results), ("pooled", together)):
        default = results[name]["default"] if name in results else together["default"]
        print(f"{name:28} default {default['hit@1']}/{default['hit@5']}/{default['mrr']} -> lead " + ", ".join(
            f"{m} {row[m]} {row[m + '_wins_losses_p']}" for m in ("hit@1", "hit@5", "mrr")), flush=True)
    sets = {n: {"default": results[n]["default"], "lead": results[n][LEAD]} for n in results}
    save("expansion_choice-confirm", {"lead": LEAD, "sets": sets, "pooled": together})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no passage embedded (firstmax, passmax left out)")
    parser.add_argument("--only", choices=FAMILIES, action="append", help="only these families (repeatable)")
    parser.add_argument("--confirm", action="store_true",
                        help=f"the lead ({LEAD}) on the later users' files, which no choice here has read")
    args = parser.parse_args()
    if args.confirm:
        args.only = ["combo"]
    families = set(args.only or set(FAMILIES) - {"null", "combo"}) - ({"first", "pass"} if args.quick else set())
    users.INDEX = CACHE / "index"
    rng = np.random.default_rng(20)
    results: dict[str, Any] = {}
    costs: dict[str, Any] = {}
    pooled: dict[str, list[np.ndarray]] = {"default": [], LEAD: []}
    for library, names in UNREAD if args.confirm else SETS:
        router, by = users.load(library, RouterConfig())
        embed = Embeddings(router, library + ("-" + "-".join(sorted(families)) if args.only else ""))
        for name in names:
            rows = [r for r in read_jsonl(users.DATA / f"{name}.jsonl")
                    if r["gold"] and r.get("kind", "single") == "single"]
            needs = [(users.query_of(r), [{by[g] for g in r["gold"] if g in by}]) for r in rows]
            vocab = np.array(["vocab" in r.get("tags", ()) for r in rows])
            scored = router.score_many([q for q, _ in needs])
            fused = router.fuse(scored)
            base = ranked(router, needs, fused, scored)
            routed = [glossary.with_glosses(t) if router.config.glosses else t for t in scored.texts]
            print(f"{name}: {len(rows)} requests", flush=True)
            found = methods(router, embed, routed, scored.vectors.astype(np.float64), families)
            for method, (_, _, cost) in found.items():  # the library's first set pays the embedding
                costs.setdefault(library, {}).setdefault(method, cost)
            candidates: dict[str, np.ndarray] = {"default": fused}
            variants = (("same bodies (a check)", [s.body or "" for s in router.skills]),
                        ("no do-not-use sections", [without_negative(s.body or "") for s in router.skills]))
            for label, bodies in variants if "strip" in families else ():
                changed = body_signals(router, embed, bodies, routed, scored.vectors.astype(np.float64))
                candidates[label] = router.fuse(Scored(scored.texts, scored.vectors, {**scored.signals, **changed},
                                                       scored.context, scored.context_rows))
            if "combo" in families:  # the three best of the grid together, on bodies without do-not-use sections
                bodies = [without_negative(s.body or "") for s in router.skills]
                stripped = router.fuse(Scored(scored.texts, scored.vectors, {**scored.signals, **body_signals(
                    router, embed, bodies, routed, scored.vectors.astype(np.float64))}, scored.context,
                    scored.context_rows))
                words = distinctive_words(router, 25, new_only=False)
                lexical = BM25Index.from_texts([s.id for s in router.skills], [
                    " ".join(x[:10]) for x in distinctive_words(router, 10, new_only=True)])
                kw = normalise(np.stack([lexical.scores(t) for t in routed]), "zscore")
                vec = normalise(one_vector(router, embed, [", ".join(x) for x in words],
                                           scored.vectors.astype(np.float64)), "zscore")
                for a, b in itertools.product((0.0, 0.05, 0.1), (0.0, 0.05, 0.1)):
                    candidates[f"combo strip kwnew10 {a} kwvec25 {b}"] = stripped + a * kw + b * vec
                    if a or b:
                        candidates[f"combo kwnew10 {a} kwvec25 {b}"] = fused + a * kw + b * vec
            for method, (kind, scores, _) in found.items():
                if kind == "swap":
                    bm25_weight = router.config.weights["bm25"]
                    candidates[f"{method} swap"] = fused + bm25_weight * (
                        normalise(scores, "zscore") - normalise(scored.signals["bm25"], "zscore"))
                    continue
                for w in WEIGHTS:
                    candidates[f"{method} sig w={w}"] = fused + w * normalise(scores, "zscore")
                for k, w in itertools.product(RERANK, (0.25, 0.5, 1.0)):
                    candidates[f"{method} rr{k} w={w}"] = rerank(fused, scores, k, w, router.order)
            metrics = [("hit@1", 0, np.ones(len(rows), bool)), ("hit@5", 1, np.ones(len(rows), bool)),
                       ("mrr", 2, np.ones(len(rows), bool))]
            if vocab.any():
                metrics += [("vocab_hit@1", 0, vocab), ("vocab_hit@5", 1, vocab), ("vocab_mrr", 2, vocab)]
            for method, scores in candidates.items():
                values = ranked(router, needs, scores, scored)
                results.setdefault(name, {})[method] = paired(values, base, metrics,
                                                              rng if method != "default" else None)
                if method in pooled:
                    pooled[method].append(values)
    if args.confirm:
        confirm(results, pooled, rng)
        return
    names = list(results)
    table = []
    for method in results[names[0]]:
        if not all(method in results[s] for s in names):
            continue
        mean = float(np.mean([results[s][method]["mrr"] for s in names]))
        worst = min(results[s][method]["mrr"] - results[s]["default"]["mrr"] for s in names)
        table.append((mean, worst, method))
    table.sort(key=lambda x: (-x[0], x[2]))
    base_mean = next(m for m, _, name in table if name == "default")
    print(f"\nsets: {', '.join(names)} (hit@1/hit@5/MRR); {names[0]} vocab tag hit@1/hit@5/MRR")
    for mean, worst, method in table[:40]:
        cells = " | ".join(f"{results[s][method]['hit@1']}/{results[s][method]['hit@5']}/{results[s][method]['mrr']}"
                           for s in names)
        v = results[names[0]][method]
        print(f"{method:28} mean {mean:6.2f} ({mean - base_mean:+.2f}) worst {worst:+5.1f}"
              f"{'' if worst >= -0.5 else ' X'} | {cells} | vocab {v['vocab_hit@1']}/{v['vocab_hit@5']}/"
              f"{v['vocab_mrr']}")
    nulls = sorted(m - base_mean for m, _, name in table if name.startswith("null") and name.endswith("sig w=0.1"))
    if nulls:
        print(f"chance ({len(nulls)} nulls at w=0.1): mean MRR change min {nulls[0]:+.2f}, median "
              f"{nulls[len(nulls) // 2]:+.2f}, max {nulls[-1]:+.2f}")
    allowed = [(m, name) for m, w, name in table if w >= -0.5]
    print(f"chosen by the rule: {allowed[0][1]} ({allowed[0][0]:.2f} against {base_mean:.2f})")
    save("expansion_choice" + ("-quick" if args.quick else "") + "".join(f"-{f}" for f in args.only or ()),
         {"results": results, "costs": costs, "by_rule": allowed[0][1],
          "table": [{"method": m, "mean_mrr": round(a, 2), "worst_delta": round(b, 2)} for a, b, m in table]})


if __name__ == "__main__":
    main()
