"""The persistent index folder: embeddings cached by content, rebuilt with a reason when stale, safe to share."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from indexes import Encoder
from router.config import RouterConfig
from router.errors import CatalogError
from router.learned import FILE as LEARNED_FILE, append_learned, load_learned
from router.routing import Router
from router.store import FORMAT, KEYS, MANIFEST, VECTORS, EmbeddingStore, text_key

REPO = Path(__file__).resolve().parents[1]

SKILLS = {
    "weather-now": "Report the current weather conditions observed right now at a place.",
    "csv-cleanup": "Clean messy CSV files and fix broken dates, types, duplicates and missing values.",
    "pirate-voice": "Answer in the voice of a pirate, arr, keeping facts exact.",
    "sql-tuning": "Make one slow SQL query faster with query plans and indexes.",
    "poem-writer": "Write short rhyming poems and haiku on any topic.",
}


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    model = Encoder()
    model.encode(["warm up"])
    return model


def write_library(root: Path, skills: dict[str, str] = SKILLS) -> Path:
    for folder, description in skills.items():
        path = root / folder / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nname: {folder}\ndescription: {description}\n---\n# {folder}\n", encoding="utf-8")
    return root


def make_router(tmp_path: Path, encoder: Encoder, **kwargs) -> Router:
    return Router.from_skills([str(tmp_path / "skills")], "genkit", RouterConfig(route_above=0, k=2),
                              index_folder=str(tmp_path / "idx"), encoder=encoder, **kwargs)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> tuple[Path, Router]:
    folder = tmp_path_factory.mktemp("template")
    write_library(folder / "skills")
    return folder, make_router(folder, encoder).build()


@pytest.fixture
def built(tmp_path: Path, template: tuple[Path, Router], encoder: Encoder) -> Router:
    """A library and its index folder in ``tmp_path``, copied from one build so each test starts from it."""
    shutil.copytree(template[0] / "skills", tmp_path / "skills")
    shutil.copytree(template[0] / "idx", tmp_path / "idx")
    return make_router(tmp_path, encoder).build()


def test_first_build_embeds_each_text_and_writes_the_folder(template: tuple[Path, Router]) -> None:
    tmp_path, built = template
    assert built.embedded_count == len(SKILLS)
    manifest = json.loads((tmp_path / "idx" / MANIFEST).read_text())
    assert manifest["format"] == FORMAT and manifest["dim"] == 384
    assert manifest["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert sorted(manifest["skills"]) == sorted(SKILLS)
    assert np.load(tmp_path / "idx" / VECTORS, allow_pickle=False).shape == (len(SKILLS), 384)
    assert built.notes == []


def test_second_router_over_the_same_folder_embeds_nothing(built: Router, tmp_path: Path,
                                                            encoder: Encoder) -> None:
    before = encoder.encoded_count
    again = make_router(tmp_path, encoder).build()
    assert again.embedded_count == 0
    assert encoder.encoded_count == before
    assert again.rank("fix the broken dates in my CSV")[0].id == "csv-cleanup"


def test_changing_one_description_embeds_exactly_one_text(built: Router, tmp_path: Path,
                                                           encoder: Encoder) -> None:
    changed = dict(SKILLS, **{"poem-writer": "Compose limericks and sonnets about the sea."})
    write_library(tmp_path / "skills", changed)
    before = encoder.encoded_count
    rebuilt = make_router(tmp_path, encoder).build()
    assert rebuilt.embedded_count == 1
    assert encoder.encoded_count == before + 1
    keys = json.loads((tmp_path / "idx" / KEYS).read_text())
    assert len(keys) == len(SKILLS)  # the old text's row is dropped, not kept forever


def test_truncated_vectors_are_rebuilt_with_a_note(built: Router, tmp_path: Path, encoder: Encoder) -> None:
    vectors = tmp_path / "idx" / VECTORS
    vectors.write_bytes(vectors.read_bytes()[:200])
    router = make_router(tmp_path, encoder).build()
    assert any("corrupt" in note and VECTORS in note for note in router.notes), router.notes
    assert router.embedded_count == 0  # recovered from the saved dense index, nothing re-embedded
    assert router.rank("is it raining right now")[0].id == "weather-now"
    again = make_router(tmp_path, encoder).build()
    assert again.embedded_count == 0 and again.notes == []  # the rebuilt folder is whole again


def test_corrupt_vectors_and_dense_index_are_rebuilt_from_the_skills(built: Router, tmp_path: Path,
                                                                     encoder: Encoder) -> None:
    vectors = tmp_path / "idx" / VECTORS
    vectors.write_bytes(vectors.read_bytes()[:200])
    faiss_files = [p for p in (tmp_path / "idx" / "dense").iterdir() if p.name != "signature.txt"]
    for path in faiss_files:
        path.write_bytes(path.read_bytes()[:10])
    router = make_router(tmp_path, encoder).build()
    assert any("corrupt" in note for note in router.notes), router.notes
    assert router.embedded_count == len(SKILLS)
    assert router.rank("is it raining right now")[0].id == "weather-now"
    assert make_router(tmp_path, encoder).build().embedded_count == 0


def test_saved_indexes_are_loaded_rather_than_rebuilt(built: Router, tmp_path: Path, encoder: Encoder) -> None:
    for name in ("bm25", "dense"):
        assert (tmp_path / "idx" / name / "signature.txt").is_file()
    router = make_router(tmp_path, encoder)
    from indexes import BM25Index, DenseIndex

    calls = []
    original = BM25Index.from_texts.__func__, DenseIndex.from_vectors.__func__
    try:
        BM25Index.from_texts = classmethod(lambda cls, *a, **k: calls.append("bm25") or original[0](cls, *a, **k))
        DenseIndex.from_vectors = classmethod(lambda cls, *a, **k: calls.append("dense") or original[1](cls, *a, **k))
        router.build()
    finally:
        BM25Index.from_texts, DenseIndex.from_vectors = classmethod(original[0]), classmethod(original[1])
    assert calls == [] and router.embedded_count == 0
    assert router.rank("is it raining right now")[0].id == "weather-now"


def test_another_model_is_rebuilt_with_a_note_naming_both(built: Router, tmp_path: Path,
                                                          encoder: Encoder) -> None:
    path = tmp_path / "idx" / MANIFEST
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "model": "acme/other-embedder"}))
    router = make_router(tmp_path, encoder).build()
    note = next(n for n in router.notes if "model" in n)
    assert "acme/other-embedder" in note and encoder.model_id in note
    # The saved dense index's signature is made of this model's text hashes, so its vectors refill the cache.
    assert router.embedded_count == 0
    assert json.loads(path.read_text())["model"] == encoder.model_id


def test_a_folder_built_by_another_model_is_re_embedded(built: Router, tmp_path: Path, encoder: Encoder) -> None:
    path = tmp_path / "idx" / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), "model": "acme/other-embedder"}))
    for name in ("bm25", "dense"):  # what another model's build would have signed
        (tmp_path / "idx" / name / "signature.txt").write_text("0" * 64 + "\n")
    router = make_router(tmp_path, encoder).build()
    assert any("acme/other-embedder" in n for n in router.notes)
    assert router.embedded_count == len(SKILLS)
    assert router.rank("is it raining right now")[0].id == "weather-now"


def test_another_format_is_rebuilt_with_a_note(built: Router, tmp_path: Path, encoder: Encoder) -> None:
    path = tmp_path / "idx" / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": FORMAT + 98}))
    router = make_router(tmp_path, encoder).build()
    assert any(f"format {FORMAT + 98}" in note and f"format {FORMAT}" in note for note in router.notes), router.notes
    assert router.embedded_count == 0  # the signed dense index of this format refills the cache
    assert json.loads(path.read_text())["format"] == FORMAT


def test_arrays_round_trip(built: Router, tmp_path: Path, encoder: Encoder) -> None:
    store = EmbeddingStore(str(tmp_path / "idx"), encoder.model_id, encoder.dim)
    assert store.notes == [] and len(store) == len(SKILLS)

    def refuse(texts: list[str]) -> np.ndarray:
        raise AssertionError(f"re-embedded {texts}")

    reloaded = store.embed(built.index_texts(), refuse)
    np.testing.assert_array_equal(reloaded, built.signals.dense.vectors)
    assert reloaded.dtype == np.float32


def test_store_without_folder_ignores_a_manifest_in_the_working_folder(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / MANIFEST).write_text("not json")
    monkeypatch.chdir(tmp_path)
    store = EmbeddingStore("", "m", 3)
    assert store.notes == [] and len(store) == 0


def test_store_embeds_each_distinct_text_once(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.eye(3, dtype=np.float32)[[len(t) % 3 for t in texts]]

    store = EmbeddingStore(str(tmp_path / "idx"), "m", 3)
    out = store.embed(["ab", "abc", "ab"], encode)
    assert calls == [["ab", "abc"]]
    np.testing.assert_array_equal(out, np.eye(3, dtype=np.float32)[[2, 0, 2]])
    store.save({}, {}, keep=[text_key("m", "abc")])
    again = EmbeddingStore(str(tmp_path / "idx"), "m", 3)
    assert len(again) == 1
    np.testing.assert_array_equal(again.embed(["abc"], encode), np.eye(3, dtype=np.float32)[[0]])
    assert len(calls) == 1


CONCURRENT_BUILD = textwrap.dedent("""
    import hashlib, os, sys, time
    import numpy as np
    sys.path.insert(0, {repo!r})
    from router.config import RouterConfig
    from router.routing import Router

    class HashEncoder:
        model_id, dim = "test/hash-encoder", 8

        def encode(self, texts, progress=False, batch_size=64):
            rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], dtype=np.uint8)[:8] for t in texts]
            vectors = np.array(rows, dtype=np.float32) + 1
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    while not os.path.exists({go!r}):
        time.sleep(0.005)
    for _ in range(5):
        router = Router.from_skills([{skills!r}], "genkit", RouterConfig(route_above=0),
                                    index_folder={index!r}, encoder=HashEncoder()).build()
        assert router.rank("broken dates in a CSV", 1), "no ranking"
    print(router.notes)
""")


def test_concurrent_builds_both_succeed_and_leave_a_clean_folder(tmp_path: Path) -> None:
    skills = write_library(tmp_path / "skills")
    index, go = tmp_path / "idx", tmp_path / "go"
    script = CONCURRENT_BUILD.format(repo=str(REPO), go=str(go), skills=str(skills), index=str(index))
    processes = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
    go.touch()
    results = [p.communicate(timeout=120) for p in processes]
    for process, (out, err) in zip(processes, results):
        assert process.returncode == 0, err
        assert out.strip() == "[]", out  # neither saw a half-written folder
    store = EmbeddingStore(str(index), "test/hash-encoder", 8)
    assert store.notes == [] and len(store) == len(SKILLS)
    assert not [p.name for p in index.iterdir() if p.name.endswith(".tmp")]


# -- learned examples --------------------------------------------------------------------------------------------

def test_learned_examples_in_the_index_folder_are_loaded(tmp_path: Path, encoder: Encoder) -> None:
    index = tmp_path / "idx"
    request = "turn my grocery list into a limerick"
    bundled = [str(REPO / "skills")]
    plain = Router.from_skills(bundled, "genkit", RouterConfig(route_above=0), index_folder=str(index),
                               encoder=encoder)
    assert "unit-conversion" not in [m.id for m in plain.rank(request, 5)]
    assert append_learned(str(index), {"unit-conversion": [request, request], "ghost-skill": ["anything"]}) == 2
    router = Router.from_skills(bundled, "genkit", RouterConfig(route_above=0), index_folder=str(index),
                                encoder=encoder)
    assert router.skill_by_id("unit-conversion").examples == (request,)
    assert any("ghost-skill" in note for note in router.notes)
    top = router.rank(request)[0]
    assert top.id == "unit-conversion" and top.scores["examples"] == pytest.approx(1.0, abs=1e-5)
    assert router.embedded_count == 1  # only the example: the skills' vectors come from the folder
    assert append_learned(str(index), {"unit-conversion": [request]}) == 0


def test_sidecar_examples_are_read(built: Router, tmp_path: Path, encoder: Encoder) -> None:
    request = "what should I name my new boat"
    before = [m.id for m in make_router(tmp_path, encoder).rank(request, 5)].index("sql-tuning")
    (tmp_path / "skills" / "sql-tuning" / "routing-examples.txt").write_text(
        f"# comment\n\n{request}\n", encoding="utf-8")
    router = make_router(tmp_path, encoder)
    assert router.skill_by_id("sql-tuning").examples == (request,)
    ranked = router.rank(request, 5)
    assert [m.id for m in ranked].index("sql-tuning") < before
    assert ranked[[m.id for m in ranked].index("sql-tuning")].scores["examples"] == pytest.approx(1.0, abs=1e-5)
    assert router.embedded_count == 1


@pytest.mark.parametrize("line", ['{"id": "a"}', "[1, 2]", "not json", '{"id": "a", "query": null}'])
def test_bad_learned_rows_name_the_line(tmp_path: Path, line: str) -> None:
    (tmp_path / LEARNED_FILE).write_text('{"id": "a", "query": "ok"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=f"{LEARNED_FILE}:2"):
        load_learned(str(tmp_path))


def test_load_learned_without_a_file_is_empty(tmp_path: Path) -> None:
    assert load_learned(str(tmp_path)) == {} and load_learned(None) == {}
