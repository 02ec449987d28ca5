"""The cold path: a fresh process routes from a current index with the ONNX export, never importing torch, and
gives the same answers as the sentence-transformers path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import BUNDLED, ROOT
from indexes import Encoder
from router.config import RouterConfig
from router.routing import Router

HEAVY = ("torch", "transformers", "sentence_transformers", "faiss")
SHARED = ROOT.parent / "shared" / "datasets" / "metatool"


@pytest.fixture(scope="module")
def onnx(encoder: Encoder):
    """The bundled model's export in the user cache (what `skill-router index` makes), made once."""
    from indexes.onnx_export import ensure_onnx_encoder

    return ensure_onnx_encoder(encoder)


def fresh_process(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **env})


ROUTE = """
import json, sys
from router.cli import main
status = main(["route", "will it rain in Lyon this weekend?", "--skills", {skills!r}, "--profile", "genkit",
               "--index-dir", {index!r}, "--json", "-k", "5"])
print(json.dumps({{"status": status, "heavy": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def test_a_cold_route_from_a_current_index_imports_no_torch(tmp_path: Path, onnx, encoder: Encoder) -> None:
    index = tmp_path / "idx"
    Router.from_skills([str(BUNDLED)], "genkit", index_folder=str(index), encoder=encoder)
    code = ROUTE.format(skills=str(BUNDLED), index=str(index), heavy=HEAVY)
    cold = fresh_process(code, tmp_path)
    assert cold.returncode == 0, cold.stderr
    lines = cold.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert report == {"status": 0, "heavy": []}
    routed = json.loads("\n".join(lines[:-1]))
    assert routed[0]["id"] == "weather-forecast"
    # the same command with the ONNX path turned off loads sentence-transformers and answers the same
    warm = fresh_process(code, tmp_path, SKILL_ROUTER_ONNX="0")
    assert warm.returncode == 0, warm.stderr
    assert "sentence_transformers" in json.loads(warm.stdout.strip().splitlines()[-1])["heavy"]
    assert [r["id"] for r in json.loads("\n".join(warm.stdout.strip().splitlines()[:-1]))] == \
        [r["id"] for r in routed]


def requests() -> list[str]:
    rows = [json.loads(line) for line in (ROOT / "benchmarks/data/bundled-test.jsonl").read_text().splitlines()
            if line.strip()]
    texts = [r["query"] for r in rows if "query" in r]
    if SHARED.is_dir():  # a sample of the MetaTool test split, when the shared datasets are beside the repository
        lines = (SHARED / "queries_single_test.jsonl").read_text().splitlines()[::80]
        texts += [json.loads(line)["query"] for line in lines if line.strip()]
    return texts


def test_onnx_and_torch_routes_agree(tmp_path: Path, onnx, encoder: Encoder) -> None:
    """The export's float graph: top-5 sets equal on at least 99.9% of requests and fused scores within 1e-4. Its
    int8 request graph (what routing embeds requests with), whose vectors lie within a cosine of 0.95: top-5 sets
    equal on at least 75% and the first skill on at least 92% (measured 81.9% and 95.5% of 376; the swaps are
    near-ties, and no dev set's accuracy moved measurably, benchmarks/README.md)."""
    from indexes import OnnxEncoder

    texts = requests()
    config = RouterConfig(route_above=0)
    warm = Router.from_skills([str(BUNDLED)], "genkit", config, index_folder=str(tmp_path / "idx"),
                              encoder=encoder)
    scored_warm = warm.score_many(texts)
    fused_warm = warm.fuse(scored_warm)
    tops_warm = [[m.id for m in row] for row in warm.rank_scored(scored_warm, 5)]
    for int8, top5, top1 in ((False, 0.999, 0.999), (True, 0.75, 0.92)):
        cold = Router.from_skills([str(BUNDLED)], "genkit", config, index_folder=str(tmp_path / "idx"),
                                  encoder=OnnxEncoder.load(onnx.folder, int8=int8))
        assert cold.embedded_count == 0  # the vectors of the index are shared
        scored_cold = cold.score_many(texts)
        if not int8:
            assert float(np.abs(fused_warm - cold.fuse(scored_cold)).max()) <= 1e-4
        tops_cold = [[m.id for m in row] for row in cold.rank_scored(scored_cold, 5)]
        agree = sum(set(a) == set(b) for a, b in zip(tops_warm, tops_cold)) / len(texts)
        first = sum(a[0] == b[0] for a, b in zip(tops_warm, tops_cold)) / len(texts)
        assert agree >= top5 and first >= top1, (int8, agree, first)


def test_without_an_export_the_router_falls_back_with_a_note(tmp_path: Path, monkeypatch) -> None:
    from router import encoders

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    notes: list[str] = []
    chosen = encoders.choose(None, notes)
    assert type(chosen).__name__ == "Encoder" and notes == []  # never exported: nothing to say yet
    monkeypatch.setenv("SKILL_ROUTER_ONNX", "0")
    assert encoders.export_for_next_time(chosen, notes) is chosen and notes == []


def test_a_model_that_is_not_a_folder_is_noted_and_served_by_sentence_transformers(tmp_path: Path) -> None:
    from router import encoders
    from router.errors import ModelError

    notes: list[str] = []
    with pytest.raises(ModelError):
        encoders.choose(str(tmp_path / "no-such-model"), notes)
    assert len(notes) == 1 and notes[0].startswith("embedding with sentence-transformers: ")
