"""Offline evaluation of routing: labelled requests, ranking and abstention metrics, bootstrap statistics, the
runner that scores several retrievers in one pass, and reports (terminal, Markdown, HTML).

    from router.evaluation import load_requests, evaluate
    result = evaluate(load_requests("dev.jsonl"), {"bm25": bm25, "default": router_fn})
    print(result.to_json()["retrievers"][0]["metrics"]["recall@5"])
"""

from router.evaluation.labels import LabelsError, Request, load_requests
from router.evaluation.runner import EvalResult, RetrieverResult, check_gates, evaluate

__all__ = ["EvalResult", "LabelsError", "Request", "RetrieverResult", "check_gates", "evaluate", "load_requests"]
