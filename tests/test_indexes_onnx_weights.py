"""The export's weights in a file of their own, memory-mapped by onnxruntime (``onnx_encoder.mapped_model``).

A small graph built with the ``onnx`` package checks the split itself in milliseconds; the bundled model's export
(``model`` marker) checks that the session over the split weights gives the inline model's vectors to the last bit.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from indexes import Encoder, OnnxEncoder, ensure_onnx_encoder
from indexes import onnx_encoder
from indexes.onnx_encoder import MAPPED, MAPPED_MODEL, MODEL_FILE, WEIGHTS_FILE, split_weights

LONG = " ".join(f"Paragraph {i} explains how to merge PDF files and fill their forms." for i in range(40))
TEXTS = ["Fill in a PDF form", "", "Prévisions météo à Lyon ☔ 天气预报", LONG, "Build slide decks from notes"] + \
    [f"route request number {i} to the skill that handles {w}" for i, w in enumerate(["git", "charts", "email"] * 6)]


def small_model(path: Path) -> dict[str, np.ndarray]:
    """y = Gather(table, ids) @ weight + bias: a 1000x64 table and a 64x32 weight (moved out), a 32-value bias
    (128 bytes: stays inline), written with every tensor inline. Returns the initializers."""
    rng = np.random.default_rng(7)
    values = {"table": rng.standard_normal((1000, 64)).astype(np.float32),
              "weight": rng.standard_normal((64, 32)).astype(np.float32),
              "bias": rng.standard_normal(32).astype(np.float32)}
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"]),
             helper.make_node("MatMul", ["rows", "weight"], ["product"]),
             helper.make_node("Add", ["product", "bias"], ["y"])]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 32])],
                              [numpy_helper.from_array(v, name) for name, v in values.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return values


def run(path: Path, ids: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})[0]


def test_split_moves_large_initializers_to_page_aligned_references(tmp_path: Path) -> None:
    values = small_model(tmp_path / "inline.onnx")
    split_weights(tmp_path / "inline.onnx", tmp_path / "split.onnx", tmp_path / "split.weights")
    model = onnx.load(str(tmp_path / "split.onnx"), load_external_data=False)
    where = {t.name: {e.key: e.value for e in t.external_data} for t in model.graph.initializer}
    assert where == {"table": {"location": "split.weights", "offset": "0", "length": str(1000 * 64 * 4)},
                     "weight": {"location": "split.weights", "offset": str(63 * 4096), "length": str(64 * 32 * 4)},
                     "bias": {}}  # the table's 256,000 bytes end inside page 62 (62.5 pages): the next one is at 63
    assert os.path.getsize(tmp_path / "split.weights") == 63 * 4096 + 64 * 32 * 4
    full = onnx.load(str(tmp_path / "split.onnx"))
    assert {t.name: numpy_helper.to_array(t).tolist() for t in full.graph.initializer} == \
        {name: v.tolist() for name, v in values.items()}
    original = onnx.load(str(tmp_path / "inline.onnx"))
    for m in (full, original):
        m.graph.ClearField("initializer")
    assert full.SerializeToString() == original.SerializeToString()  # every other field copied byte for byte
    ids = np.array([0, 999, 3, 3, 512], dtype=np.int64)
    assert np.array_equal(run(tmp_path / "split.onnx", ids), run(tmp_path / "inline.onnx", ids))


def test_split_of_a_split_graph_changes_nothing(tmp_path: Path) -> None:
    small_model(tmp_path / "inline.onnx")
    split_weights(tmp_path / "inline.onnx", tmp_path / "split.onnx", tmp_path / "split.weights")
    split_weights(tmp_path / "split.onnx", tmp_path / "again.onnx", tmp_path / "again.weights",
                  location="split.weights")
    assert (tmp_path / "again.onnx").read_bytes() == (tmp_path / "split.onnx").read_bytes()
    assert os.path.getsize(tmp_path / "again.weights") == 0


def test_a_file_that_is_not_protobuf_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.onnx").write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 20)  # a field longer than the file
    with pytest.raises(onnx_encoder.OnnxUnavailable, match="truncated"):
        split_weights(tmp_path / "bad.onnx", tmp_path / "out.onnx", tmp_path / "out.weights")


# -- the bundled model's export -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    """A cache with the bundled model's export whose weights were never split."""
    folder = tmp_path_factory.mktemp("onnx-cache")
    found = ensure_onnx_encoder(encoder, cache_dir=folder)
    for name in (MAPPED, MAPPED_MODEL, WEIGHTS_FILE):
        (found.folder / name).unlink(missing_ok=True)
    return found.folder


@pytest.fixture()
def fresh(export: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "export"
    shutil.copytree(export, copy)
    return copy


def inline(folder: Path, monkeypatch: pytest.MonkeyPatch) -> OnnxEncoder:
    """The encoder as it was before the split: the session over model.onnx, weights inline."""
    with monkeypatch.context() as patch:
        patch.setattr(onnx_encoder, "mapped_model", lambda folder, manifest: folder / MODEL_FILE)
        encoder = OnnxEncoder.load(folder)
    assert encoder.model_file == MODEL_FILE
    return encoder


def mapped_weights() -> set[str]:
    """The weights files this process has memory-mapped."""
    with open("/proc/self/maps", encoding="utf-8") as handle:
        return {line.split()[-1] for line in handle if line.rstrip().endswith(WEIGHTS_FILE)}


@pytest.mark.model
def test_first_load_splits_and_gives_the_inline_vectors_to_the_bit(fresh: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    before = inline(fresh, monkeypatch).encode(TEXTS)
    encoder = OnnxEncoder.load(fresh)
    assert encoder.model_file == MAPPED_MODEL
    assert str(fresh / WEIGHTS_FILE) in mapped_weights()  # memory-mapped, not read into the process
    assert np.array_equal(encoder.encode(TEXTS), before)
    assert np.array_equal(encoder.encode(TEXTS, batch_size=4), inline(fresh, monkeypatch).encode(TEXTS, batch_size=4))
    record = json.loads((fresh / MAPPED).read_text(encoding="utf-8"))
    manifest = json.loads((fresh / onnx_encoder.MANIFEST).read_text(encoding="utf-8"))
    assert record["source"] == manifest["files"][MODEL_FILE]["sha256"]
    assert record["files"][WEIGHTS_FILE]["bytes"] == (fresh / WEIGHTS_FILE).stat().st_size
    assert sorted(p.name for p in fresh.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.model
def test_second_load_reuses_the_split(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    OnnxEncoder.load(fresh)
    stamp = (fresh / WEIGHTS_FILE).stat().st_mtime_ns
    monkeypatch.setattr(onnx_encoder, "split_weights", lambda *a, **k: pytest.fail("split again"))
    assert OnnxEncoder.load(fresh).model_file == MAPPED_MODEL
    assert (fresh / WEIGHTS_FILE).stat().st_mtime_ns == stamp


@pytest.mark.model
def test_altered_or_foreign_weights_are_split_again(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = inline(fresh, monkeypatch).encode(TEXTS)
    OnnxEncoder.load(fresh)
    path = fresh / WEIGHTS_FILE
    with path.open("r+b") as handle:  # one weight's byte flipped: same size, another mtime and hash
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert np.array_equal(OnnxEncoder.load(fresh).encode(TEXTS), want)
    record = json.loads((fresh / MAPPED).read_text(encoding="utf-8"))
    (fresh / MAPPED).write_text(json.dumps({**record, "source": "0" * 64}), encoding="utf-8")  # another model.onnx
    stamp = path.stat().st_mtime_ns
    assert np.array_equal(OnnxEncoder.load(fresh).encode(TEXTS), want)
    assert path.stat().st_mtime_ns != stamp


@pytest.mark.model
def test_a_cache_that_cannot_be_written_loads_the_inline_model(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = inline(fresh, monkeypatch).encode(TEXTS)

    def read_only(source: Path, graph: Path, weights: Path, **options: object) -> None:
        graph.write_bytes(b"partial")
        raise PermissionError(13, "Permission denied", str(weights))

    monkeypatch.setattr(onnx_encoder, "split_weights", read_only)
    encoder = OnnxEncoder.load(fresh)
    assert encoder.model_file == MODEL_FILE and str(fresh / WEIGHTS_FILE) not in mapped_weights()
    assert np.array_equal(encoder.encode(TEXTS), want)
    assert sorted(p.name for p in fresh.iterdir()) == sorted(["model.onnx", "onnx.json", "tokenizer.json"])


@pytest.mark.model
def test_a_split_graph_onnxruntime_refuses_falls_back_to_the_inline_model(fresh: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    want = inline(fresh, monkeypatch).encode(TEXTS)
    OnnxEncoder.load(fresh)
    (fresh / MAPPED_MODEL).write_bytes(b"not an onnx graph")
    record = json.loads((fresh / MAPPED).read_text(encoding="utf-8"))
    record["files"][MAPPED_MODEL] = onnx_encoder._file_record(fresh / MAPPED_MODEL)  # consistent, but unloadable
    (fresh / MAPPED).write_text(json.dumps(record), encoding="utf-8")
    encoder = OnnxEncoder.load(fresh)
    assert encoder.model_file == MODEL_FILE
    assert np.array_equal(encoder.encode(TEXTS), want)


@pytest.mark.model
def test_the_session_without_arena_or_memory_pattern_gives_a_default_session_s_vectors(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = OnnxEncoder.load(fresh)
    got = encoder.encode(TEXTS)
    default = onnxruntime.InferenceSession(str(fresh / MODEL_FILE), providers=["CPUExecutionProvider"])
    monkeypatch.setattr(encoder, "_session", default)  # arena, memory pattern and threads as onnxruntime sets them
    assert np.array_equal(got, encoder.encode(TEXTS))
    assert np.array_equal(encoder.encode([LONG] * 16), np.repeat(got[3:4], 16, axis=0))
