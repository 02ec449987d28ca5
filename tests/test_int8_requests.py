"""Requests are embedded by the export's int8 graph and a library's texts by its float graph: the index holds the
very vectors it holds without the int8 graph, routing embeds its requests with the int8 one, ``SKILL_ROUTER_INT8=0``
turns it off, and an export made before the int8 graph existed gets it from the next build that embeds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from indexes import Encoder, OnnxEncoder, ensure_onnx_encoder
from indexes.onnx_encoder import INT8_DATA_FILE, INT8_MIN_COSINE, INT8_MODEL_FILE, MANIFEST
from router import encoders
from router.config import RouterConfig
from router.routing import Router

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = ["review my go code for bugs before I commit", "turn these meeting notes into action items",
            "will it rain in Lyon this weekend?"]

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    """An XDG cache folder holding the bundled model's export (with its int8 copy)."""
    home = tmp_path_factory.mktemp("xdg-cache")
    ensure_onnx_encoder(encoder, cache_dir=home / "skill-router" / "onnx")
    return home


def folder_of(cache: Path) -> Path:
    return ensure_onnx_encoder(cache_dir=cache / "skill-router" / "onnx").folder


def bundled(index: Path, encoder: OnnxEncoder) -> Router:
    return Router.from_skills([str(ROOT / "skills")], "genkit", RouterConfig(route_above=0),
                              index_folder=str(index), encoder=encoder)


def test_the_index_holds_the_float_vectors_and_routing_embeds_requests_by_the_int8_graph(cache: Path,
                                                                                        tmp_path: Path) -> None:
    folder = folder_of(cache)
    quantized, plain = OnnxEncoder.load(folder), OnnxEncoder.load(folder, int8=False)
    assert quantized.int8_requests and not plain.int8_requests
    with_int8, without = bundled(tmp_path / "a", quantized), bundled(tmp_path / "b", plain)
    assert with_int8.embedded_count == without.embedded_count > 0  # both built their own index
    assert np.array_equal(with_int8.signals.dense.vectors, without.signals.dense.vectors)  # type: ignore[attr-defined]
    assert np.array_equal(with_int8.signals.dense.vectors,  # type: ignore[attr-defined]
                          plain.encode(with_int8.dense_texts()))
    scored = with_int8.score_many(REQUESTS)
    assert np.array_equal(scored.vectors, quantized.encode_requests(REQUESTS))
    assert np.array_equal(without.score_many(REQUESTS).vectors, plain.encode(REQUESTS))
    cosines = (scored.vectors * plain.encode(REQUESTS)).sum(axis=1)
    assert cosines.min() >= INT8_MIN_COSINE and cosines.max() < 0.99999
    assert np.array_equal(with_int8.encode(REQUESTS), plain.encode(REQUESTS))  # Router.encode: a library's texts
    assert np.array_equal(with_int8.encode_requests(REQUESTS), quantized.encode_requests(REQUESTS))


def test_the_switch_turns_the_int8_graph_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv(encoders.ENV_SWITCH, raising=False)
    monkeypatch.delenv(encoders.INT8_ENV, raising=False)
    chosen = encoders.choose(None, [])
    assert isinstance(chosen, OnnxEncoder) and chosen.int8_requests
    for off in ("0", "false", "off", " No "):
        monkeypatch.setenv(encoders.INT8_ENV, off)
        chosen = encoders.choose(None, [])
        assert isinstance(chosen, OnnxEncoder) and not chosen.int8_requests
        assert not encoders.lacks_int8(chosen)  # off means off: not made either
    monkeypatch.setenv(encoders.INT8_ENV, "1")
    assert encoders.choose(None, []).int8_requests  # type: ignore[attr-defined]


def test_a_build_that_embeds_makes_the_int8_graph_an_older_export_lacks(cache: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(cache, tmp_path / "xdg")
    folder = folder_of(tmp_path / "xdg")
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    del manifest["int8"]
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    for name in (INT8_MODEL_FILE, INT8_DATA_FILE):
        (folder / name).unlink()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(encoders.INT8_ENV, raising=False)
    older = encoders.choose(None, [])
    assert isinstance(older, OnnxEncoder) and not older.int8_requests and encoders.lacks_int8(older)
    router = Router.from_skills([str(ROOT / "skills")], "genkit", RouterConfig(route_above=0),
                                index_folder=str(tmp_path / "index"))
    assert router.embedded_count > 0
    assert isinstance(router.encoder, OnnxEncoder) and router.encoder.int8_requests
    assert json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["int8"]["passed"] is True
    again = Router.from_skills([str(ROOT / "skills")], "genkit", RouterConfig(route_above=0),
                               index_folder=str(tmp_path / "index"))
    assert again.embedded_count == 0 and again.encoder.int8_requests  # type: ignore[attr-defined]
    assert [m.id for m in again.route(REQUESTS[0]).matches] == [m.id for m in router.route(REQUESTS[0]).matches]
