"""benchmarks/toollens.py's reading of a COLT ToolLens folder (BEIR layout): the catalogue rows it routes (name and
description only), the labelled requests of each split, and the error for a folder that is not one."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

RECIPES = ('category_name:Food, tool_name:Worldwide Recipes, api_name:Suggestions, api_description:Get Suggestions, '
           'required_params: [{"name": "q", "type": "STRING", "description": ""}], optional_params: [], '
           'return_schema: {"success": "bool"}')
# a description holding ", " and a name holding "/": only the next field's key ends a field
NUTRITION = ('category_name:Food, tool_name:Nutrition by API-Ninjas, api_name:/v1/nutrition, api_description:Nutrition '
             'text, food or meal, per serving., required_params: [], optional_params: [], return_schema: {}')


@pytest.fixture
def toollens(benchmark) -> ModuleType:
    return benchmark("toollens")


def dataset(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": i, "title": "", "text": t, "metadata": {}})
                                                 for i, t in (("0", RECIPES), ("1", NUTRITION))) + "\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps({"_id": i, "text": t, "metadata": {}}) for i, t in (
        ("10", "a keto meal with cucumbers"), ("2", "calories in a bagel"), ("7", "dinner with salmon"))) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n10\t0\t1\n10\t1\t1\n2\t1\t1\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n7\t0\t1\n")
    return root


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_endpoints_become_rows_of_name_and_description_and_the_test_queries_requests(toollens, tmp_path) -> None:
    tools, requests = toollens.convert(dataset(tmp_path / "ToolLens"), tmp_path, dev=False)
    assert rows(tools) == [
        {"id": "t0", "name": "Worldwide Recipes: Suggestions", "description": "Get Suggestions"},
        {"id": "t1", "name": "Nutrition by API-Ninjas: /v1/nutrition",
         "description": "Nutrition text, food or meal, per serving."}]
    assert rows(requests) == [{"id": "q2", "query": "calories in a bagel", "gold": ["t1"]},
                              {"id": "q10", "query": "a keto meal with cucumbers", "gold": ["t0", "t1"]}]


def test_dev_reads_the_train_queries(toollens, tmp_path) -> None:
    _, requests = toollens.convert(dataset(tmp_path / "ToolLens"), tmp_path, dev=True)
    assert rows(requests) == [{"id": "q7", "query": "dinner with salmon", "gold": ["t0"]}]


def test_a_folder_that_is_not_toollens_is_named_with_what_it_lacks(toollens, tmp_path) -> None:
    (tmp_path / "corpus.jsonl").write_text("")
    with pytest.raises(SystemExit, match=r"has no queries\.jsonl, qrels/test\.tsv, qrels/train\.tsv: give --data "
                                         r"the datasets/ToolLens folder of a COLT checkout"):
        toollens.convert(tmp_path, tmp_path / "out", dev=False)
