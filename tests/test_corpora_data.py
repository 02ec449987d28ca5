"""The labelled requests over ../shared/corpora: the split is reproducible and every row checks out.

Reads the data files only; nothing here routes the requests.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_union_resplits_to_the_same_files():
    split = load("split_corpora")
    dev, test = split.split(split.read([split.DEV, split.TEST]))
    assert split.DEV.read_text(encoding="utf-8") == split.dumps(dev)
    assert split.TEST.read_text(encoding="utf-8") == split.dumps(test)


def test_rows_and_gold_paths():
    check = load("check_corpora")
    if not check.CORPORA.is_dir():
        pytest.skip(f"no corpora at {check.CORPORA}")
    rows = [r for part in check.load().values() for r in part]
    assert check.errors_in(rows) == []
    assert len(rows) >= check.MINIMUM["total"]
    assert sum(r["kind"] == "multi" for r in rows) >= check.MINIMUM["multi"]
    assert sum(r["kind"] == "none" for r in rows) >= check.MINIMUM["none"]
    assert sum(r["lang"] != "en" for r in rows) >= check.MINIMUM["non-English"]


def test_split_does_not_depend_on_gold_or_order():
    split = load("split_corpora")
    rows = split.read([split.DEV, split.TEST])
    dev, _ = split.split(rows)
    changed = [dict(r, gold=list(reversed(r["gold"])) + (["x/y"] if r["gold"] else [])) for r in reversed(rows)]
    dev2, _ = split.split(changed)
    assert [r["id"] for r in dev] == [r["id"] for r in dev2]
