"""Cross-validated tuning of fusion, weights and threshold (router.tune) on hand-written catalogues."""

from __future__ import annotations

import json

import numpy as np
import pytest

from router.config import RouterConfig
from router.errors import ConfigError
from router.evaluation.labels import Request
from router.evaluation.metrics import best_threshold, hit_at_k, recall_at_k, reciprocal_rank
from router.routing import Router
from router.tune import TuneResult, assign_folds, tune

# Eight skills from eight domains; each description carries one invented word that only BM25 can match exactly.
SKILLS = [
    ("mail", "Send email messages through the Vexlor relay.", "vexlor",
     ["write a note to my boss", "tell my landlord the rent is late"]),
    ("flights", "Book airline flights with the Quandry travel desk.", "quandry",
     ["get me a seat to Tokyo on a plane", "I need a ticket to fly to Rome"]),
    ("weather", "Forecast rain, wind and temperature from Zimbrat stations.", "zimbrat",
     ["will I need an umbrella tomorrow", "how cold will it get tonight"]),
    ("recipes", "Find cooking recipes in the Plonkett cookbook.", "plonkett",
     ["what can I make for dinner with eggs", "how do I bake bread"]),
    ("stocks", "Quote share prices from the Drivolt exchange.", "drivolt",
     ["how much is Apple trading at", "did the market go up today"]),
    ("music", "Play songs and albums from the Sarnex library.", "sarnex",
     ["put on some jazz", "I want to listen to the Beatles"]),
    ("maps", "Plan driving directions with Kobalu maps.", "kobalu",
     ["how do I get to the airport by car", "fastest way to drive downtown"]),
    ("translate", "Translate text between languages with the Myrtlex dictionary.", "myrtlex",
     ["say thank you in Japanese", "what is 'cat' in Spanish"]),
]
# Weather look-alikes: they push the maps skill far down for a weather request that names "maps".
LOOKALIKES = [(f"storm-{n}", f"Weather report number {n}: rain, snow, storm and hail alerts for tomorrow.")
              for n in range(1, 12)]
OFF_TOPIC = ["what is the capital of France", "how tall is mount everest", "who painted the Mona Lisa",
             "explain how vaccines work", "what year did the Roman empire fall"]


def make_router(tmp_path, encoder, examples: dict[str, list[str]] | None = None, extra=(), config=None,
                **options) -> Router:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "catalog.jsonl"
    rows = [{"id": sid, "name": sid, "description": text, "examples": (examples or {}).get(sid, [])}
            for sid, text in [(s[0], s[1]) for s in SKILLS] + list(extra)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return Router.from_catalog(path, config=config or RouterConfig(route_above=0),
                               index_folder=str(tmp_path / "idx"), encoder=encoder, **options)


def rare_word_requests() -> list[Request]:
    """40 requests: two plain ones per skill, and three that name the skill's invented word while their other
    words describe another skill's job (dense follows the words, BM25 the invented name)."""
    requests = []
    for n, (sid, _, rare, plain) in enumerate(SKILLS):
        requests += [Request(id=f"{sid}-plain{j}", query=q, gold=(sid,)) for j, q in enumerate(plain)]
        for j in range(3):
            other = SKILLS[(n + 1 + j) % len(SKILLS)][3][j % 2]
            requests.append(Request(id=f"{sid}-rare{j}", query=f"with {rare.capitalize()}: {other}", gold=(sid,)))
    return requests


def routed_metrics(router: Router, requests: list[Request]) -> dict[str, float]:
    """The metrics of the router's own rankings, request by request (the reference for tune's arrays)."""
    rankings = [[m.id for m in router.rank(r.query, k=10)] for r in requests if r.gold]
    golds = [r.gold for r in requests if r.gold]
    return {"hit@1": float(np.mean([hit_at_k(x, g, 1) for x, g in zip(rankings, golds)])),
            "recall@5": float(np.mean([recall_at_k(x, g, 5) for x, g in zip(rankings, golds)])),
            "mrr": float(np.mean([reciprocal_rank(x, g) for x, g in zip(rankings, golds)]))}


def test_rare_words_make_bm25_worth_a_weight(tmp_path, encoder):
    router = make_router(tmp_path, encoder)
    requests = rare_word_requests()
    result = tune(router, requests, folds=4)
    dense_only = [g for g in result.grid if g["bm25"] == 0.0]
    assert max(g["mrr"] for g in dense_only) < 0.9  # dense alone misroutes the rare-word requests
    assert result.config.weights["bm25"] > 0
    assert result.dev["mrr"] > max(g["mrr"] for g in dense_only)
    assert result.dev["mrr"] == max(g["mrr"] for g in result.grid)
    assert len(result.grid) == 2 * 5  # no examples: fusion x BM25 weight only
    assert result.config.threshold is None  # every request has a gold skill
    assert result.config.weights["dense"] == 1.0


def test_cross_validated_numbers_equal_the_routers_own_rankings(tmp_path, encoder):
    # Library examples, a request that names a skill ranked below the top 10 and an excluded gold skill: every
    # ranking rule at once.
    examples = {"music": ["play something relaxing"], "maps": ["avoid the toll roads"]}
    named = Request(id="named", query="maps: weather report, rain, snow, storm and hail alerts tomorrow",
                    gold=("maps",))
    router = make_router(tmp_path, encoder, examples=examples, extra=LOOKALIKES, excluded=["stocks"])
    fused = router.fuse(router.score_many([named.query]))[0]
    assert sorted(fused, reverse=True).index(fused[[s.id for s in router.skills].index("maps")]) >= 10
    requests = rare_word_requests() + [named]
    result = tune(router, requests, folds=3)
    assert len(result.grid) == 2 * 5 * 4
    reference = make_router(tmp_path / "reference", encoder, examples=examples, extra=LOOKALIKES,
                            excluded=["stocks"])
    for setting in (result.grid[0], result.grid[13], result.grid[-1]):
        config = RouterConfig(route_above=0, fusion=setting["fusion"],
                              weights={"bm25": setting["bm25"], "dense": 1.0, "examples": setting["examples"]})
        expected = routed_metrics(reference.with_config(config), requests)
        assert {k: setting[k] for k in expected} == pytest.approx(expected, abs=1e-12)
    assert {k: result.dev[f"default_{k}"] for k in ("hit@1", "recall@5", "mrr")} == \
        pytest.approx(routed_metrics(router, requests), abs=1e-12)


def test_same_seed_same_result(tmp_path, encoder):
    router = make_router(tmp_path, encoder)
    requests = rare_word_requests() + [Request(id=f"none{i}", query=q, gold=()) for i, q in enumerate(OFF_TOPIC)]
    first = tune(router, requests, folds=5, seed=7, examples_from_requests=True)
    second = tune(router, requests, folds=5, seed=7, examples_from_requests=True)
    assert first.to_json() == second.to_json()
    assert first == second


def test_folds_deal_gold_and_no_gold_requests_evenly_and_reproducibly():
    flags = [True] * 10 + [False] * 5
    folds = assign_folds(flags, 5, seed=3)
    assert folds.tolist() == assign_folds(flags, 5, seed=3).tolist()
    assert sorted(folds[:10].tolist()) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert sorted(folds[10:].tolist()) == [0, 1, 2, 3, 4]
    assert folds.tolist() != assign_folds(flags, 5, seed=4).tolist()


def test_threshold_separates_no_gold_from_gold_requests(tmp_path, encoder):
    router = make_router(tmp_path, encoder)
    gold = [Request(id=f"{sid}-{j}", query=q, gold=(sid,)) for sid, _, _, plain in SKILLS for j, q in enumerate(plain)]
    none = [Request(id=f"none{i}", query=q, gold=()) for i, q in enumerate(OFF_TOPIC)]
    result = tune(router, gold + none, folds=4)
    confidence = router.score_many([r.query for r in gold + none]).signals["dense"].max(axis=1)
    gold_conf, none_conf = confidence[: len(gold)], confidence[len(gold):]
    assert none_conf.max() < gold_conf.min()  # the data separate, so the F1-best cut lies between them
    threshold = result.config.threshold
    assert none_conf.max() < threshold <= gold_conf.min()
    assert threshold == best_threshold(confidence.tolist(), [True] * len(gold) + [False] * len(none))
    assert result.dev["abstention_f1"] == 1.0 and result.dev["false_abstention_rate"] == 0.0


def test_examples_from_requests_never_use_a_request_as_its_own_example(tmp_path, encoder):
    # One request per skill, about something its description never mentions: only the request itself, as an
    # example of its gold skill, could route it right.
    requests = [Request(id=sid, query=OFF_TOPIC[n % len(OFF_TOPIC)] + f" (case {n})", gold=(sid,))
                for n, (sid, _, _, _) in enumerate(SKILLS)]
    leaky = make_router(tmp_path / "leaky", encoder, examples={r.gold[0]: [r.query] for r in requests})
    leaky = leaky.with_config(RouterConfig(route_above=0, weights={"bm25": 0.0, "dense": 1.0, "examples": 4.0}))
    assert routed_metrics(leaky, requests)["hit@1"] == 1.0  # what leakage would score

    result = tune(make_router(tmp_path, encoder), requests, folds=2, examples_from_requests=True)
    assert max(g["hit@1"] for g in result.grid) <= 0.25
    assert result.dev["hit@1"] <= 0.25


def test_held_out_uses_every_dev_request_as_an_example(tmp_path, encoder):
    dev = [Request(id=f"{sid}-{j}", query=q, gold=(sid,)) for sid, _, _, plain in SKILLS for j, q in enumerate(plain)]
    # Held-out requests repeat dev requests word for word: with all dev requests as examples each meets its twin.
    held = [Request(id=f"h-{r.id}", query=r.query, gold=r.gold) for r in dev]
    # The examples alone: tune keeps catalogue_names as configured, and this catalogue's names ("flights" for "how
    # do I get to the airport by car") would outweigh the example the tuned weight 0.5 gives that request.
    names_off = RouterConfig(route_above=0, catalogue_names=0.0)
    result = tune(make_router(tmp_path, encoder, config=names_off), dev, folds=2, examples_from_requests=True,
                  held_out=held)
    assert result.config.weights["examples"] in (0.5, 1.0, 2.0, 4.0)
    assert result.held_out is not None and result.held_out["hit@1"] == 1.0
    without = tune(make_router(tmp_path / "plain", encoder), dev, folds=2, held_out=held)
    assert without.held_out == {k: without.dev[k] for k in ("hit@1", "recall@5", "mrr")}


def test_save_writes_a_loadable_config_with_its_tuning(tmp_path, encoder):
    router = make_router(tmp_path, encoder)
    result = tune(router, rare_word_requests(), folds=4)
    assert isinstance(result, TuneResult)
    path = tmp_path / "skill-router.json"
    result.save(path)
    assert RouterConfig.load(path) == result.config
    tuning = json.loads(path.read_text(encoding="utf-8"))["tuning"]
    assert tuning == {"dev": result.dev, "held_out": None, "check": result.check, "folds": 4, "seed": 0,
                      "objective": "mrr"}


@pytest.mark.parametrize("options, message", [
    ({"folds": 1}, "folds must be a whole number >= 2"),
    ({"folds": 41}, "41 folds but only 40 requests with gold skills"),
    ({"objective": "ndcg@5"}, "unknown objective 'ndcg@5'"),
])
def test_bad_options_are_refused(tmp_path, encoder, options, message):
    router = make_router(tmp_path, encoder)
    with pytest.raises(ConfigError, match=message):
        tune(router, rare_word_requests(), **options)


def test_gold_outside_the_library_is_refused(tmp_path, encoder):
    router = make_router(tmp_path, encoder)
    requests = rare_word_requests() + [Request(id="odd", query="x", gold=("nope",))]
    with pytest.raises(ConfigError, match="'odd' names gold skill"):
        tune(router, requests)


def test_body_weights_are_tuned_when_skills_have_bodies(tmp_path, encoder):
    from conftest import write_skill

    bodies = {"kiln": ("Fire ceramics.", "Glaze recipes, cone 6 schedules and bisque firing."),
              "loom": ("Weave textiles.", "Warp tension, heddles and twill drafts."),
              "forge": ("Work metal.", "Quenching steel, tempering colours and anvil work.")}
    for name, (description, body) in bodies.items():
        write_skill(tmp_path / "skills", name, description, body=f"# {name}\n{body}\n")
    router = Router.from_skills([str(tmp_path / "skills")], "genkit", RouterConfig(route_above=0),
                                index_folder=str(tmp_path / "idx"), encoder=encoder)
    requests = [Request(id=f"{name}-{i}", query=q, gold=(name,)) for i, (name, q) in enumerate(
        [("kiln", "what cone for my glaze"), ("loom", "my twill draft looks wrong"), ("forge", "tempering colours"),
         ("kiln", "bisque firing schedule"), ("loom", "heddles keep tangling"), ("forge", "quenching steel in oil")])]
    result = tune(router, requests, folds=2)
    assert len(result.grid) == 2 * 5 * 3 and {g["body_scale"] for g in result.grid} == {0.0, 1.0, 2.0}
    best = max(result.grid, key=lambda g: (round(g["mrr"], 12), -result.grid.index(g)))
    assert (result.config.fusion, result.config.weights["bm25"]) == (best["fusion"], best["bm25"])
    assert result.config.weights["passages"] == best["body_scale"] * 0.8
    assert result.config.weights["body_bm25"] == 0.0  # the default reads the body through passages
    assert result.config.weights["body_dense"] == 0.0  # the default does not embed bodies; tune keeps that
