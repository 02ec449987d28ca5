import json
import math

import pytest

from router.evaluation import Request, check_gates, evaluate
from router.evaluation import runner as runner_module

L3 = math.log2(3)

REQUESTS = [
    Request("q1", "one", ("x",)),
    Request("q2", "two", ("y", "z")),
    Request("q3", "none", ()),
    Request("q4", "four", ("x",)),
]
BASELINE = {
    "q1": [("x", 0.9), ("y", 0.5)],
    "q2": [("z", 0.8), ("x", 0.4), ("y", 0.3)],
    "q3": [("x", 0.2)],
    "q4": [("y", 0.6), ("x", 0.5)],
}
OTHER = {"q1": [("y", 0.7), ("x", 0.6)], "q2": [("x", 0.5)], "q3": [], "q4": [("x", 0.9)]}


class WordCounter:
    name = "words"

    def count(self, text):
        return len(text.split())


def run(**kwargs):
    options = dict(
        ks=(1, 2),
        route_k=2,
        render=" ".join,
        catalogue=["x", "y", "z"],
        token_counter=WordCounter(),
        thresholds={"other": 0.6},
        progress=False,
    )
    options.update(kwargs)
    retrievers = {"other": lambda r: OTHER[r.id], "baseline": lambda r: BASELINE[r.id]}
    return evaluate(REQUESTS, retrievers, **options)


def test_metrics_from_hand_computed_rankings():
    result = run()
    base = result.retriever("baseline").metrics
    assert base == pytest.approx({
        "hit@1": 2 / 3, "hit@2": 1.0,
        "recall@1": (1 + 0.5 + 0) / 3, "recall@2": (1 + 0.5 + 1) / 3,
        "all@1": 1 / 3, "all@2": 2 / 3,
        "ndcg@1": 2 / 3, "ndcg@2": (1 + 1 / (1 + 1 / L3) + 1 / L3) / 3,
        "mrr": (1 + 1 + 0.5) / 3, "top1": 2 / 3,
    })
    other = result.retriever("other").metrics
    assert other == pytest.approx({
        "hit@1": 1 / 3, "hit@2": 2 / 3,
        "recall@1": 1 / 3, "recall@2": 2 / 3,
        "all@1": 1 / 3, "all@2": 2 / 3,
        "ndcg@1": 1 / 3, "ndcg@2": (1 / L3 + 0 + 1) / 3,
        "mrr": (0.5 + 0 + 1) / 3, "top1": 1 / 3,
    })
    assert result.retriever("other").per_request["mrr"] == (0.5, 0.0, 1.0)
    assert result.gold_request_ids == ("q1", "q2", "q4")
    assert (result.requests, result.no_gold_requests, result.ks, result.route_k) == (4, 1, (1, 2), 2)


def test_abstention_configured_and_best_f1():
    result = run()
    # baseline top scores .9 .8 .2 .6 with gold T T F T: threshold .6 abstains only on q3 -> F1 1
    assert result.retriever("baseline").abstention == {
        "threshold_source": "best-f1", "threshold": 0.6, "precision": 1.0, "recall": 1.0, "f1": 1.0,
        "false_abstention_rate": 0.0, "abstentions": 1, "no_gold_requests": 1, "gold_requests": 3,
    }
    # other top scores .7 .5 None .9 at the configured .6: abstains on q2 (gold) and q3 (empty ranking)
    other = result.retriever("other").abstention
    assert other["threshold_source"] == "configured"
    assert (other["threshold"], other["precision"], other["recall"]) == (0.6, 0.5, 1.0)
    assert other["false_abstention_rate"] == 1 / 3


def test_no_abstention_without_no_gold_requests():
    result = evaluate(REQUESTS[:2], {"b": lambda r: BASELINE[r.id]}, progress=False)
    assert result.retriever("b").abstention is None
    assert result.retriever("b").tokens is None and result.tokenizer is None


def test_tokens_routed_versus_full_catalogue():
    result = run()
    assert result.tokenizer == "words"
    # baseline renders 2, 2, 1, 2 words; the catalogue is 3 words
    assert result.retriever("baseline").tokens == {"routed_mean": 1.75, "full": 3, "saving": 1 - 1.75 / 3, "route_k": 2}
    # other renders 2, 1, 0, 1
    assert result.retriever("other").tokens == {"routed_mean": 1.0, "full": 3, "saving": 1 - 1 / 3, "route_k": 2}


def test_default_token_counter_is_cl100k():
    result = run(token_counter=None, render=lambda ids: "hello world" if ids else "")
    assert result.tokenizer == "cl100k_base"
    assert result.retriever("baseline").tokens["full"] == 2


def test_per_skill_recall_and_confusions():
    result = run()
    base = result.retriever("baseline")
    assert [(s.id, s.support, s.recall) for s in base.per_skill] == [("y", 1, 0.0), ("x", 2, 1.0), ("z", 1, 1.0)]
    assert [(c.gold, c.predicted, c.count) for c in base.confusions] == [("x", "y", 1)]
    other = result.retriever("other")
    assert [(c.gold, c.predicted, c.count) for c in other.confusions] == [("x", "y", 1), ("y", "x", 1), ("z", "x", 1)]


def test_default_comparison_is_against_the_retriever_named_baseline():
    result = run()
    by_metric = {c.metric: c for c in result.comparisons}
    assert set(by_metric) == {"hit@1", "mrr"}  # recall@5 is not computed with ks=(1, 2)
    hit = by_metric["hit@1"]
    assert (hit.a, hit.b, hit.mean_diff, hit.wins, hit.losses, hit.ties) == ("baseline", "other", -1 / 3, 1, 2, 0)
    assert by_metric["mrr"].mean_diff == pytest.approx(-1 / 3)
    explicit = run(compare=[("other", "baseline")]).comparisons
    assert [(c.a, c.b) for c in explicit] == [("other", "baseline")] * 2
    assert explicit[0].mean_diff == pytest.approx(1 / 3)


def test_latency_percentiles_from_the_clock(monkeypatch):
    ticks = iter([0.0, 0.001, 0.0, 0.002] * 2 + [0.0, 0.003, 0.0, 0.004] * 2)  # (start, end) per call
    monkeypatch.setattr(runner_module.time, "perf_counter", lambda: next(ticks))
    result = run()
    # other: 1, 1, 3, 3 ms; baseline: 2, 2, 4, 4 ms (numpy linear interpolation)
    assert result.retriever("other").latency_ms == pytest.approx({"p50": 2.0, "p95": 3.0, "mean": 2.0})
    assert result.retriever("baseline").latency_ms == pytest.approx({"p50": 3.0, "p95": 4.0, "mean": 3.0})


def test_json_schema_is_stable_and_serialisable():
    data = json.loads(json.dumps(run(ks=(1, 3, 5)).to_json()))
    assert list(data) == ["schema", "requests", "no_gold_requests", "ks", "route_k", "tokenizer", "retrievers",
                          "comparisons"]
    assert data["schema"] == "skill-router.eval/1"
    assert [r["name"] for r in data["retrievers"]] == ["other", "baseline"]
    entry = data["retrievers"][1]
    assert list(entry) == ["name", "metrics", "ci", "abstention", "tokens", "latency_ms", "per_skill", "confusions"]
    assert list(entry["metrics"]) == [
        "hit@1", "hit@3", "hit@5", "recall@1", "recall@3", "recall@5", "all@1", "all@3", "all@5",
        "ndcg@1", "ndcg@3", "ndcg@5", "mrr", "top1",
    ]
    assert all(0.0 <= v <= 1.0 for v in entry["metrics"].values())
    assert set(entry["ci"]) == {"hit@1", "recall@5", "mrr"}
    for metric, (low, high) in entry["ci"].items():
        assert low <= entry["metrics"][metric] <= high
    assert entry["per_skill"][0] == {"id": "y", "support": 1, "recall": 0.0}
    assert entry["confusions"] == [{"gold": "x", "predicted": "y", "count": 1}]
    assert list(data["comparisons"][0]) == ["a", "b", "metric", "mean_diff", "low", "high", "p_value", "wins",
                                            "losses", "ties"]


def test_gates_pass_and_fail_lines():
    result = run()
    # no retriever is named "default", so a bare metric applies to the first, "other"
    assert check_gates(result, ["hit@1=0.5", "baseline.mrr=0.8", "baseline.hit@2=1"]) == [
        "other hit@1 = 0.3333 < 0.5000",
    ]
    assert check_gates(result, ["hit@1=0.3", "baseline.all@2=0.6"]) == []


def test_gates_prefer_the_retriever_named_default():
    result = evaluate(REQUESTS, {"bm25": lambda r: OTHER[r.id], "default": lambda r: BASELINE[r.id]}, ks=(1,),
                      progress=False)
    assert check_gates(result, ["mrr=0.9"]) == ["default mrr = 0.8333 < 0.9000"]


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ("recall@5=0.1", "unknown metric 'recall@5'; known: hit@1, hit@2, recall@1"),
        ("bm25.mrr=0.1", "unknown retriever 'bm25'; known: other, baseline"),
        ("mrr", "must read METRIC=VALUE or RETRIEVER.METRIC=VALUE"),
        ("mrr=high", "'high' is not a number"),
        ("mrr=80", r"metrics are fractions in \[0, 1\], got 80 \(write 0.8, not 80\)"),
    ],
)
def test_bad_gates_raise(gate, message):
    with pytest.raises(ValueError, match=message):
        check_gates(run(), [gate])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"requests": []}, "no requests to evaluate"),
        ({"retrievers": {}}, "no retrievers to evaluate"),
        ({"ks": (0, 1)}, r"ks must be positive integers, got \[0, 1\]"),
        ({"thresholds": {"bm25": 0.1}}, "threshold given for unknown retriever 'bm25'; known: b"),
        ({"compare": [("b", "c")]}, "comparison names unknown retriever 'c'; known: b"),
        ({"render": " ".join}, "render needs catalogue"),
        ({"requests": [Request("u", "q", None)]}, r"1 requests have no gold labels \(first: 'u'\)"),
        ({"retrievers": {"b": lambda r: [("x", 1.0), ("x", 0.5)]}},
         r"retriever 'b' repeated ids \['x'\] for request 'q1'"),
    ],
)
def test_evaluate_rejects_bad_input(kwargs, message):
    options = {"requests": REQUESTS, "retrievers": {"b": lambda r: BASELINE[r.id]}, "progress": False, **kwargs}
    requests, retrievers = options.pop("requests"), options.pop("retrievers")
    with pytest.raises(ValueError, match=message):
        evaluate(requests, retrievers, **options)


def test_all_no_gold_requests_leave_metrics_undefined():
    result = evaluate([REQUESTS[2]], {"b": lambda r: BASELINE[r.id]}, ks=(1,), thresholds={"b": 0.5},
                      progress=False)
    assert result.retriever("b").metrics == {"hit@1": None, "recall@1": None, "all@1": None, "ndcg@1": None,
                                             "mrr": None, "top1": None}
    assert result.retriever("b").abstention["recall"] == 1.0
    assert check_gates(result, ["b.mrr=0.5"]) == ["b mrr = n/a < 0.5000"]
