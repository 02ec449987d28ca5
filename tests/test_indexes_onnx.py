"""The onnxruntime encoder on the real bundled all-MiniLM-L6-v2, exported once per session, against Encoder.

Tests that use the export depend on the shared ``encoder`` fixture and so carry the ``model`` marker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from indexes import Encoder, OnnxEncoder, OnnxUnavailable, ensure_onnx_encoder, find_onnx_encoder
from indexes import onnx_encoder, onnx_export
from indexes.onnx_encoder import (
    EXTERNAL_DATA_FILE,
    EXTERNAL_MODEL_FILE,
    INT8_DATA_FILE,
    INT8_MIN_COSINE,
    INT8_MODEL_FILE,
    MANIFEST,
    MODEL_FILE,
    TOLERANCE,
    export_dir,
    model_hash,
)

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "sentence_transformers", "faiss")
LONG = " ".join(f"Paragraph {i} explains how to merge PDF files and fill their forms." for i in range(40))
TEXTS = ["Fill in a PDF form", "", "Prévisions météo à Lyon ☔ 天气预报", LONG, "Build slide decks from notes"]


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    """A cache holding the bundled model's export, made once for the session."""
    folder = tmp_path_factory.mktemp("onnx-cache")
    ensure_onnx_encoder(encoder, cache_dir=folder)
    return folder


@pytest.fixture(scope="session")
def onnx(cache: Path) -> OnnxEncoder:
    found = find_onnx_encoder(cache_dir=cache)
    assert found is not None
    return found


@pytest.fixture()
def export_copy(cache: Path, tmp_path: Path) -> Path:
    """A private copy of the session's export, for tests that damage it."""
    copy = tmp_path / "export"
    shutil.copytree(export_dir(cache_dir=cache), copy)
    return copy


def test_export_passes_its_check_and_records_it(cache: Path) -> None:
    folder = export_dir(cache_dir=cache)
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["check"]["passed"] is True
    assert manifest["check"]["max_abs_diff"] <= TOLERANCE
    assert manifest["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert (manifest["dim"], manifest["max_seq_length"]) == (384, 256)
    assert manifest["model_hash"] == folder.name
    assert manifest["versions"]["onnxruntime"] and manifest["versions"]["torch"]


def test_same_vectors_as_sentence_transformers(onnx: OnnxEncoder, encoder: Encoder) -> None:
    assert len(onnx._tokenizer.encode(LONG).ids) == 256  # truncated where sentence-transformers truncates
    assert (onnx.model_id, onnx.dim) == (encoder.model_id, encoder.dim)
    got, want = onnx.encode(TEXTS), encoder.encode(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384) and got.flags.c_contiguous
    assert np.abs(got - want).max() <= 1e-5
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_same_ranking_as_sentence_transformers(onnx: OnnxEncoder, encoder: Encoder) -> None:
    docs = ["Fill and extract PDF forms", "Weather forecast for a city", "Build slide decks", "Translate text",
            "Search flights and hotels", "Summarise a long report"]
    queries = ["is it going to rain tomorrow", "make a presentation", "book a trip to Rome", "tl;dr this paper"]
    got = onnx.encode(queries) @ onnx.encode(docs).T
    want = encoder.encode(queries) @ encoder.encode(docs).T
    assert (np.argsort(-got, axis=1) == np.argsort(-want, axis=1)).all()
    assert np.abs(got - want).max() <= 1e-5


def test_bulk_batches_keep_input_order(onnx: OnnxEncoder) -> None:
    texts = [f"{'very ' * (i % 7)}short text number {i}" for i in range(40)] + [LONG, ""]
    bulk = onnx.encode(texts, batch_size=8)
    alone = np.concatenate([onnx.encode([t]) for t in texts])
    assert np.abs(bulk - alone).max() <= 1e-5
    assert onnx.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="wrap it in a list"):
        onnx.encode("one string")
    with pytest.raises(ValueError, match="batch_size"):
        onnx.encode(["x"], batch_size=0)


def test_a_few_texts_are_split_over_the_cores(onnx: OnnxEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's batch of requests keeps every core busy, not one run that leaves a core idle: 6 requests run as one
    part per core, 14 as runs of BATCH_SIZE (4) shared by the two cores."""
    texts = [f"route request number {i} to a skill" for i in range(14)]
    expected = np.concatenate([onnx.encode([t]) for t in texts])
    runs: list[int] = []
    session = onnx._session
    monkeypatch.setattr(onnx, "_workers", 2)

    class Counting:
        def run(self, names: object, feed: dict[str, np.ndarray]) -> object:
            runs.append(len(next(iter(feed.values()))))
            return session.run(names, feed)

    monkeypatch.setattr(onnx, "_session", Counting())
    split = onnx.encode(texts)
    assert sorted(runs) == [2, 4, 4, 4]
    assert np.abs(split - expected).max() <= 1e-5
    runs.clear()
    assert np.abs(onnx.encode(texts[:6]) - expected[:6]).max() <= 1e-5 and sorted(runs) == [3, 3]


def test_cache_hit_does_not_export_again(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (export_dir(cache_dir=cache) / MODEL_FILE).stat().st_mtime_ns

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_export, "export_onnx", refuse)
    again = ensure_onnx_encoder(cache_dir=cache)
    assert again.folder == export_dir(cache_dir=cache)
    assert (again.folder / MODEL_FILE).stat().st_mtime_ns == before


def test_uncached_model_is_none(tmp_path: Path) -> None:
    assert find_onnx_encoder(cache_dir=tmp_path) is None


def test_truncated_export_is_detected(export_copy: Path) -> None:
    with (export_copy / MODEL_FILE).open("r+b") as handle:
        handle.truncate(1000)
    with pytest.raises(OnnxUnavailable, match="bytes.*re-export"):
        OnnxEncoder.load(export_copy)


def test_altered_export_is_detected(export_copy: Path) -> None:
    path = export_copy / MODEL_FILE
    with path.open("r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(OnnxUnavailable, match="altered"):
        OnnxEncoder.load(export_copy)


def test_corrupt_or_missing_manifest_is_detected(export_copy: Path) -> None:
    (export_copy / MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(OnnxUnavailable, match="corrupt"):
        OnnxEncoder.load(export_copy)
    (export_copy / MANIFEST).unlink()
    with pytest.raises(OnnxUnavailable, match="no ONNX export"):
        OnnxEncoder.load(export_copy)


def test_ensure_replaces_a_corrupt_cached_export(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = export_dir(cache_dir=cache)
    shutil.copytree(cache, tmp_path / "cache")
    damaged = tmp_path / "cache" / good.name
    (damaged / MODEL_FILE).write_bytes(b"")
    calls: list[Path] = []

    def export(model: object, out_dir: Path) -> Path:  # the real export is tested above; copying keeps this fast
        calls.append(out_dir)
        shutil.rmtree(out_dir)
        shutil.copytree(good, out_dir)
        return out_dir

    monkeypatch.setattr(onnx_export, "export_onnx", export)
    repaired = ensure_onnx_encoder(cache_dir=tmp_path / "cache")
    assert calls == [damaged] and repaired.encode(["ok"]).shape == (1, 384)


def test_failed_check_is_recorded_and_not_repeated(encoder: Encoder, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_export, "_check", lambda folder, model: 0.5)
    out_dir = tmp_path / "cache" / model_hash(onnx_encoder.model_identity(None)[1])
    with pytest.raises(OnnxUnavailable, match="failed its check.*5.00e-01"):
        onnx_export.export_onnx(encoder, out_dir)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [out_dir.name]  # no temporary folder left
    assert sorted(p.name for p in out_dir.iterdir()) == [MANIFEST]
    assert json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))["check"]["passed"] is False

    monkeypatch.setattr(onnx_export, "export_onnx", lambda *a, **k: pytest.fail("check repeated"))
    with pytest.raises(OnnxUnavailable, match="failed its check"):
        find_onnx_encoder(cache_dir=tmp_path / "cache")
    with pytest.raises(OnnxUnavailable, match="failed its check"):
        ensure_onnx_encoder(cache_dir=tmp_path / "cache")


def test_model_that_is_not_a_local_folder_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(OnnxUnavailable, match="not a local folder"):
        find_onnx_encoder("some-org/some-model", cache_dir=tmp_path)


def test_missing_runtime_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(OnnxUnavailable, match="onnxruntime is not installed"):
        find_onnx_encoder(cache_dir=tmp_path)


def test_model_hash_follows_content_and_is_remembered(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "1_Pooling" / "config.json").write_text('{"mean": true}')
    (model / "README.md").write_text("docs do not change vectors")
    first = model_hash(model, cache_dir=tmp_path / "cache")
    assert json.loads((tmp_path / "cache" / "sources.json").read_text())[str(model)]["hash"] == first
    assert model_hash(model) == first
    (model / "README.md").write_text("other docs")
    assert model_hash(model) == first
    (model / "1_Pooling" / "config.json").write_text('{"mean": false}')
    assert model_hash(model, cache_dir=tmp_path / "cache") != first


def test_default_cache_dir_honours_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert onnx_encoder.default_cache_dir() == tmp_path / "skill-router" / "onnx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert onnx_encoder.default_cache_dir() == Path.home() / ".cache" / "skill-router" / "onnx"


def test_cached_export_encodes_without_torch(cache: Path, onnx: OnnxEncoder) -> None:
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from indexes import find_onnx_encoder\n"
        f"encoder = find_onnx_encoder(cache_dir=Path({str(cache)!r}))\n"
        "vector = encoder.encode(['will it rain in Lyon this weekend?'])[0]\n"
        "print(json.dumps({'vector': vector.tolist(), 'modules': sorted(sys.modules)}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(m for m in report["modules"] if m.split(".")[0] in HEAVY) == []
    assert "onnxruntime" in report["modules"]
    expected = onnx.encode(["will it rain in Lyon this weekend?"])[0]
    assert np.abs(np.array(report["vector"], dtype=np.float32) - expected).max() <= 1e-6


def test_local_model_folder_with_the_same_content_shares_the_export(cache: Path, tmp_path: Path) -> None:
    copy = tmp_path / "my-model"
    shutil.copytree(onnx_encoder.model_identity(None)[1], copy)
    found = find_onnx_encoder(str(copy), cache_dir=cache)
    assert found is not None
    assert found.folder == export_dir(cache_dir=cache)  # keyed by content, not by where the folder is
    assert found.model_id == str(copy)  # the id the torch Encoder reports for that folder


def test_the_external_weights_copy_gives_the_same_vectors_and_is_what_loads(cache: Path, onnx: OnnxEncoder) -> None:
    folder = export_dir(cache_dir=cache)
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert sorted(manifest["external"]["files"]) == [EXTERNAL_MODEL_FILE, EXTERNAL_DATA_FILE]
    assert manifest["external"]["same_vectors_as"] == MODEL_FILE
    assert (folder / EXTERNAL_MODEL_FILE).stat().st_size < 2_000_000 < (folder / EXTERNAL_DATA_FILE).stat().st_size
    assert onnx.model_path() == folder / EXTERNAL_MODEL_FILE
    inline = OnnxEncoder(folder, manifest, onnx._tokenizer)
    inline._open(folder / MODEL_FILE)
    assert np.array_equal(onnx.encode(TEXTS), inline.encode(TEXTS))  # bit for bit


def test_a_damaged_external_copy_falls_back_to_model_onnx(export_copy: Path, onnx: OnnxEncoder) -> None:
    with (export_copy / EXTERNAL_DATA_FILE).open("r+b") as handle:
        handle.truncate(1000)
    loaded = OnnxEncoder.load(export_copy)
    assert loaded.model_path() == export_copy / MODEL_FILE
    assert np.array_equal(loaded.encode(TEXTS), onnx.encode(TEXTS))


def test_an_export_made_before_the_copy_gets_it_from_ensure(cache: Path, tmp_path: Path) -> None:
    shutil.copytree(cache, tmp_path / "cache")
    folder = export_dir(cache_dir=tmp_path / "cache")
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    del manifest["external"]
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    del manifest["int8"]
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    for name in (EXTERNAL_MODEL_FILE, EXTERNAL_DATA_FILE, INT8_MODEL_FILE, INT8_DATA_FILE):
        (folder / name).unlink()
    before = OnnxEncoder.load(folder)
    assert before.model_path() == folder / MODEL_FILE and not before.int8_requests
    got = ensure_onnx_encoder(cache_dir=tmp_path / "cache")
    assert got.model_path() == folder / EXTERNAL_MODEL_FILE and got.request_path() == folder / INT8_MODEL_FILE
    assert OnnxEncoder.load(folder).model_path() == folder / EXTERNAL_MODEL_FILE
    assert sorted(p.name for p in folder.iterdir()) == sorted([MANIFEST, MODEL_FILE, "tokenizer.json",
                                                               EXTERNAL_MODEL_FILE, EXTERNAL_DATA_FILE,
                                                               INT8_MODEL_FILE, INT8_DATA_FILE])


def test_requests_run_the_checked_int8_copy_and_a_library_s_texts_the_float_graph(cache: Path,
                                                                                  onnx: OnnxEncoder) -> None:
    folder = export_dir(cache_dir=cache)
    record = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["int8"]
    assert record["passed"] is True and record["threshold"] == INT8_MIN_COSINE == 0.95
    assert INT8_MIN_COSINE <= record["min_cosine"] < 1.0
    for name in (INT8_MODEL_FILE, INT8_DATA_FILE):
        assert record["files"][name]["bytes"] == (folder / name).stat().st_size
    # the weights in the data file, which onnxruntime maps: the graph itself is small
    assert (folder / INT8_MODEL_FILE).stat().st_size < 2_000_000 < (folder / INT8_DATA_FILE).stat().st_size
    assert onnx.int8_requests and onnx.request_path() == folder / INT8_MODEL_FILE
    inline = OnnxEncoder(folder, json.loads((folder / MANIFEST).read_text(encoding="utf-8")), onnx._tokenizer)
    inline._open(folder / MODEL_FILE)
    assert np.array_equal(onnx.encode(TEXTS), inline.encode(TEXTS))  # what is indexed: the float graph's bits
    asked = onnx.encode_requests(TEXTS)
    assert asked.dtype == np.float32 and asked.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(asked, axis=1), 1.0, atol=1e-5)
    cosines = (asked * inline.encode(TEXTS)).sum(axis=1)
    assert cosines.min() >= INT8_MIN_COSINE and cosines.max() < 0.99999  # close, and really another graph
    alone = np.concatenate([onnx.encode_requests([text]) for text in TEXTS])
    assert np.array_equal(alone, asked)  # what other requests it is embedded with does not change a vector
    assert onnx.encode_requests([]).shape == (0, 384)


def test_a_router_process_opens_only_the_int8_session_until_it_embeds_a_library_text(cache: Path) -> None:
    loaded = OnnxEncoder.load(export_dir(cache_dir=cache), threads=2)
    assert loaded._session is None and loaded._request_session is not None
    loaded.encode_requests(TEXTS[:1] * 9)  # many requests: a one-thread int8 session, still no float one
    assert loaded._session is None
    assert np.array_equal(loaded.encode(TEXTS[:1]), OnnxEncoder.load(export_dir(cache_dir=cache),
                                                                     int8=False).encode(TEXTS[:1]))
    assert loaded._session is not None


def test_int8_off_embeds_requests_by_the_float_graph(cache: Path, onnx: OnnxEncoder) -> None:
    plain = OnnxEncoder.load(export_dir(cache_dir=cache), int8=False)
    assert not plain.int8_requests and plain.request_path() == plain.model_path()
    assert np.array_equal(plain.encode_requests(TEXTS), onnx.encode(TEXTS))


def test_a_damaged_int8_copy_falls_back_to_the_float_graph(export_copy: Path, onnx: OnnxEncoder) -> None:
    with (export_copy / INT8_DATA_FILE).open("r+b") as handle:
        handle.truncate(1000)
    loaded = OnnxEncoder.load(export_copy)
    assert not loaded.int8_requests
    assert onnx_export.wants_int8(export_copy, json.loads((export_copy / MANIFEST).read_text(encoding="utf-8")))
    assert np.array_equal(loaded.encode_requests(TEXTS), onnx.encode(TEXTS))


def test_an_int8_copy_that_fails_its_check_is_recorded_not_used_and_not_made_again(
        export_copy: Path, onnx: OnnxEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (INT8_MODEL_FILE, INT8_DATA_FILE):
        (export_copy / name).unlink()
    monkeypatch.setattr(onnx_export, "INT8_MIN_COSINE", 0.99999)  # no int8 vector is that close
    assert onnx_export.add_int8_copy(export_copy) is False
    manifest = json.loads((export_copy / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["int8"]["passed"] is False and "files" not in manifest["int8"]
    assert INT8_MIN_COSINE <= manifest["int8"]["min_cosine"] < 0.99999
    assert not (export_copy / INT8_MODEL_FILE).exists() and not (export_copy / INT8_DATA_FILE).exists()
    assert not onnx_export.wants_int8(export_copy, manifest)  # the same library versions would fail it again
    manifest["int8"]["versions"] = {"onnxruntime": "0.0"}
    assert onnx_export.wants_int8(export_copy, manifest)  # other versions may pass
    loaded = OnnxEncoder.load(export_copy)
    assert not loaded.int8_requests
    assert np.array_equal(loaded.encode_requests(TEXTS), onnx.encode(TEXTS))
