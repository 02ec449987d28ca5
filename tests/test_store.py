"""The persistent index folder: embeddings cached by content, every file checked, rebuilt with a reason when
damaged, one folder per library, readers that never wait, writers that clean up after a crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from indexes import Encoder
from router.config import RouterConfig
from router.errors import CatalogError
from router.fresh import FILE as LIBRARY_FILE
from router.fresh import FRONTS_FILE, PARSES_FILE
from router.learned import FILE as LEARNED_FILE, append_learned, load_learned
from router.routing import Router
from router.store import FORMAT, MANIFEST, VECTORS, EmbeddingCache, IndexFolder, default_index_folder, text_key

REPO = Path(__file__).resolve().parents[1]

SKILLS = {
    "weather-now": "Report the current weather conditions observed right now at a place.",
    "csv-cleanup": "Clean messy CSV files and fix broken dates, types, duplicates and missing values.",
    "pirate-voice": "Answer in the voice of a pirate, arr, keeping facts exact.",
    "sql-tuning": "Make one slow SQL query faster with query plans and indexes.",
    "poem-writer": "Write short rhyming poems and haiku on any topic.",
}
RAIN = "is it raining right now"


def write_library(root: Path, skills: dict[str, str] = SKILLS) -> Path:
    for folder, description in skills.items():
        path = root / folder / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nname: {folder}\ndescription: {description}\n---\n# {folder}\n", encoding="utf-8")
    return root


def make_router(tmp_path: Path, encoder, **kwargs) -> Router:
    # No body lead (body "none"): each skill embeds its description and its body's head (passage_dense), which
    # for these bodies is one passage, the heading alone.
    return Router.from_skills([str(tmp_path / "skills")], "genkit", RouterConfig(route_above=0, k=2, body="none"),
                              index_folder=str(tmp_path / "idx"), encoder=encoder, **kwargs)


class Refusing:
    """The real encoder's identity, but any call to encode fails the test: nothing may be embedded."""

    def __init__(self, encoder: Encoder) -> None:
        self.model_id, self.dim, self._encoder = encoder.model_id, encoder.dim, encoder

    def encode(self, texts, **_):
        if len(texts) != 1:
            raise AssertionError(f"re-embedded {texts}")
        return self._encoder.encode(texts)  # one request at a time is routing, not indexing


def manifest(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "idx" / MANIFEST).read_text())


def generation(tmp_path: Path) -> Path:
    return tmp_path / "idx" / manifest(tmp_path)["generation"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    folder = tmp_path_factory.mktemp("template")
    write_library(folder / "skills")
    make_router(folder, encoder)
    return folder


@pytest.fixture
def built(tmp_path: Path, template: Path, encoder: Encoder) -> Path:
    """A library and its index folder in ``tmp_path``, copied from one build so each test starts from it."""
    shutil.copytree(template / "skills", tmp_path / "skills")
    shutil.copytree(template / "idx", tmp_path / "idx")
    return tmp_path


def test_first_build_embeds_each_text_and_writes_every_file_with_its_checksum(template: Path) -> None:
    data = manifest(template)
    assert data["format"] == FORMAT and data["dim"] == 384 and len(data["skills"]) == len(SKILLS)
    files = set(data["files"])
    assert {"vectors.npy", "keys.json", "bm25/index.json", "dense/vectors.npy", "dense/ids.json"} <= files
    assert sorted(p.name for p in (template / "idx").iterdir() if p.name != LIBRARY_FILE) == sorted(
        [".lock", MANIFEST, data["generation"], "passages", FRONTS_FILE, PARSES_FILE])  # router.passages, router.fresh


def test_a_current_index_loads_without_embedding_or_building(built: Path, encoder: Encoder) -> None:
    from indexes import BM25Index, DenseIndex

    calls = []
    original = BM25Index.from_texts.__func__, DenseIndex.from_vectors.__func__
    try:
        BM25Index.from_texts = classmethod(lambda cls, *a, **k: calls.append("bm25") or original[0](cls, *a, **k))
        DenseIndex.from_vectors = classmethod(lambda cls, *a, **k: calls.append("dense") or original[1](cls, *a, **k))
        router = make_router(built, Refusing(encoder))
    finally:
        BM25Index.from_texts, DenseIndex.from_vectors = classmethod(original[0]), classmethod(original[1])
    assert calls == [] and router.embedded_count == 0 and router.notes == [] and router.saved is None
    assert router.rank(RAIN)[0].id == "weather-now"


def test_changing_one_description_embeds_exactly_one_text_and_drops_the_old_row(built: Path, encoder) -> None:
    path = built / "skills" / "poem-writer" / "SKILL.md"
    path.write_text(path.read_text().replace("haiku", "limericks"), encoding="utf-8")
    router = make_router(built, encoder)
    assert router.embedded_count == 1 and router.saved is True
    assert len(json.loads((generation(built) / "keys.json").read_text())) == 2 * len(SKILLS)  # description, head


def test_a_flipped_vector_is_detected_by_its_checksum_and_rebuilt(built: Path, encoder: Encoder) -> None:
    path = generation(built) / "dense" / "vectors.npy"
    vectors = np.load(path)
    vectors[0] = -vectors[0]  # same shape and dtype: only the checksum can tell
    np.save(path, vectors)
    router = make_router(built, encoder)
    assert any("dense/vectors.npy (checksum mismatch)" in n and "rebuilding" in n for n in router.notes), router.notes
    assert router.rank(RAIN)[0].id == "weather-now"
    assert make_router(built, Refusing(encoder)).notes == []  # whole again


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda idx: (idx / MANIFEST).write_bytes(bytes(range(256)) * 4), "corrupt manifest.json"),
    (lambda idx: (idx / MANIFEST).write_text(json.dumps({**json.loads((idx / MANIFEST).read_text()), "files": []})),
     "without the checksums of its files"),
    (lambda idx: (idx / json.loads((idx / MANIFEST).read_text())["generation"] / "dense" / "ids.json")
     .write_bytes(b'["\xff"]'), "dense/ids.json (checksum mismatch)"),
    (lambda idx: (idx / MANIFEST).unlink(), "missing its manifest.json"),
    (lambda idx: (idx / MANIFEST).write_text(json.dumps({**json.loads((idx / MANIFEST).read_text()), "dim": "384"})),
     "(dim '384'), the router is configured with"),
    (lambda idx: (idx / json.loads((idx / MANIFEST).read_text())["generation"] / VECTORS).write_bytes(b"\x93NUMPY"),
     "vectors.npy (checksum mismatch)"),
    (lambda idx: shutil.rmtree(idx / json.loads((idx / MANIFEST).read_text())["generation"] / "bm25"),
     "missing gen-"),
])
def test_damage_is_rebuilt_with_one_note_saying_what_was_wrong(built: Path, encoder: Encoder, damage,
                                                              reason: str) -> None:
    damage(built / "idx")
    router = make_router(built, encoder)
    notes = [n for n in router.notes if "rebuilding it from the skills" in n]
    assert len(notes) == 1 and reason in notes[0], router.notes
    assert router.rank(RAIN)[0].id == "weather-now"
    again = make_router(built, Refusing(encoder))
    assert again.notes == [] and again.embedded_count == 0


def test_another_model_or_format_is_rebuilt_with_a_note_naming_both(built: Path, encoder: Encoder) -> None:
    path = built / "idx" / MANIFEST
    path.write_text(json.dumps({**manifest(built), "model": "acme/other-embedder"}))
    router = make_router(built, encoder)
    note = next(n for n in router.notes if "model" in n)
    assert "acme/other-embedder" in note and encoder.model_id in note
    assert manifest(built)["model"] == encoder.model_id
    path.write_text(json.dumps({**manifest(built), "format": FORMAT + 98}))
    router = make_router(built, encoder)
    assert any(f"format {FORMAT + 98}" in n and f"format {FORMAT}" in n for n in router.notes), router.notes


def test_two_libraries_beside_each_other_keep_their_own_index(tmp_path: Path, encoder: Encoder) -> None:
    a = write_library(tmp_path / "share" / "libA", dict(list(SKILLS.items())[:3]))
    b = write_library(tmp_path / "share" / "libB", dict(list(SKILLS.items())[3:]))
    folders = {default_index_folder([str(a)], None, "genkit"), default_index_folder([str(b)], None, "genkit"),
               default_index_folder([str(a)], None, "unreal")}
    assert len(folders) == 3 and all(f.startswith(str(tmp_path / "share" / ".skill-router-index")) for f in folders)

    def build(root: Path) -> Router:
        return Router.from_skills([str(root)], "genkit", RouterConfig(route_above=0, body="none"),
                                  encoder=encoder)

    assert build(a).embedded_count == 2 * 3  # a description and a head (the heading) per skill
    assert build(b).embedded_count == 2 * 2
    assert build(a).embedded_count == 0  # B's save did not touch A's vectors
    append_learned(build(a).index_folder, {"weather-now": ["umbrella today?"]})
    assert build(a).skill_by_id("weather-now").examples == ("umbrella today?",)
    assert all(not s.examples for s in build(b).skills)  # learned examples never cross libraries


def test_an_index_folder_shared_on_purpose_reuses_vectors_but_not_learned_examples(tmp_path: Path,
                                                                                   encoder: Encoder) -> None:
    a = write_library(tmp_path / "a", SKILLS)
    b = write_library(tmp_path / "b", SKILLS)
    shared = str(tmp_path / "idx")
    Router.from_skills([str(a)], "genkit", RouterConfig(body="none"), index_folder=shared, encoder=encoder)
    append_learned(shared, {"weather-now": ["umbrella today?"]})
    router = Router.from_skills([str(b)], "genkit", RouterConfig(body="none"), index_folder=shared,
                                encoder=encoder)
    assert router.embedded_count == 0  # same texts, same model: the cached vectors serve
    assert all(not s.examples for s in router.skills)
    assert any("learned for another library" in n for n in router.notes)


def test_a_killed_writer_leaves_nothing_behind_after_the_next_save(built: Path, encoder: Encoder) -> None:
    idx = built / "idx"
    (idx / ".gen-dead.abc.tmp").mkdir()
    (idx / ".gen-dead.abc.tmp" / "vectors.npy").write_bytes(b"half")
    (idx / ".manifest.json.xyz.tmp").write_text("{")
    (idx / "gen-000000000000").mkdir()
    path = built / "skills" / "poem-writer" / "SKILL.md"
    path.write_text(path.read_text().replace("haiku", "sonnets"), encoding="utf-8")
    make_router(built, encoder)
    assert sorted(p.name for p in idx.iterdir() if p.name != LIBRARY_FILE) == sorted(
        [".lock", MANIFEST, manifest(built)["generation"], "passages", FRONTS_FILE, PARSES_FILE])


def test_an_unwritable_index_folder_is_reported_and_routing_carries_on(tmp_path: Path, encoder: Encoder) -> None:
    write_library(tmp_path / "skills")
    (tmp_path / "afile").write_text("not a folder")
    router = Router.from_skills([str(tmp_path / "skills")], "genkit", RouterConfig(route_above=0),
                                index_folder=str(tmp_path / "afile"), encoder=encoder)
    assert router.saved is False
    assert any(n.startswith(f"could not save the index to {tmp_path / 'afile'}") for n in router.notes), router.notes
    assert router.rank(RAIN)[0].id == "weather-now"


HOLD_LOCK = textwrap.dedent("""
    import sys, time
    from filelock import FileLock
    with FileLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def test_readers_never_wait_for_a_writer(built: Path, encoder: Encoder) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(built / "idx" / ".lock"), "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        router = make_router(built, Refusing(encoder))
        assert router.rank(RAIN)[0].id == "weather-now"
        assert time.monotonic() - start < 2.0 and router.notes == []
    finally:
        holder.kill()
        holder.communicate()


def test_a_writer_that_waits_says_so(built: Path, encoder: Encoder, capsys: pytest.CaptureFixture[str]) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(built / "idx" / ".lock"), "3"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        path = built / "skills" / "poem-writer" / "SKILL.md"
        path.write_text(path.read_text().replace("haiku", "odes"), encoding="utf-8")
        router = make_router(built, encoder)
    finally:
        holder.kill()
        holder.communicate()
    assert router.saved is True
    assert f"waiting for another process that is writing the index at {built / 'idx'}" in capsys.readouterr().err


def test_cache_embeds_each_distinct_text_once_and_prunes() -> None:
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.eye(3, dtype=np.float32)[[len(t) % 3 for t in texts]]

    cache = EmbeddingCache(3)
    keys = [text_key("m", t) for t in ("ab", "abc", "ab")]
    out = cache.embed(keys, ["ab", "abc", "ab"], encode)
    assert calls == [["ab", "abc"]] and cache.added == 2
    np.testing.assert_array_equal(out, np.eye(3, dtype=np.float32)[[2, 0, 2]])
    kept = cache.pruned([keys[1], "not-cached"])
    assert len(kept) == 1 and keys[1] in kept and keys[0] not in kept
    np.testing.assert_array_equal(kept.get([keys[1]]), np.eye(3, dtype=np.float32)[[0]])


def test_a_snapshot_round_trips_the_vectors(built: Path, encoder: Encoder) -> None:
    router = make_router(built, encoder)
    snapshot = IndexFolder(str(built / "idx")).read(encoder.model_id, encoder.dim)
    assert snapshot is not None
    keys = [text_key(encoder.model_id, t) for t in router.dense_texts()]
    np.testing.assert_array_equal(snapshot.cache.get(keys), router.signals.dense.vectors)
    assert IndexFolder(str(built / "nothing-here")).read(encoder.model_id, encoder.dim) is None


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
    for i in range(5):
        router = Router.from_skills([{skills!r}], "genkit", RouterConfig(route_above=0, body="none",
                                                                             body_tokens=1 + i % 2),
                                    index_folder={index!r}, encoder=HashEncoder())
        assert router.rank("broken dates in a CSV", 1), "no ranking"
    print([n for n in router.notes if "waiting" not in n])
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
    snapshot = IndexFolder(str(index)).read("test/hash-encoder", 8)
    assert snapshot is not None and len(snapshot.cache) == 2 * len(SKILLS)  # a description and a head each
    assert sorted(p.name for p in index.iterdir() if p.name != LIBRARY_FILE) == sorted(
        [".lock", MANIFEST, snapshot.manifest["generation"], "passages", FRONTS_FILE, PARSES_FILE])


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


def test_sidecar_examples_are_read(built: Path, encoder: Encoder) -> None:
    request = "what should I name my new boat"
    before = [m.id for m in make_router(built, encoder).rank(request, 5)].index("sql-tuning")
    (built / "skills" / "sql-tuning" / "routing-examples.txt").write_text(
        f"# comment\n\n{request}\n", encoding="utf-8")
    router = make_router(built, encoder)
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


def test_learned_examples_that_are_not_utf8_name_the_file(tmp_path: Path) -> None:
    (tmp_path / LEARNED_FILE).write_bytes(b'{"id": "a", "query": "caf\xe9"}\n')
    with pytest.raises(CatalogError, match=f"^learned examples '{tmp_path}/{LEARNED_FILE}' cannot be read: not UTF-8 "
                                           r"\(invalid continuation byte at byte 25\); fix or delete the file$"):
        load_learned(str(tmp_path))


def test_load_learned_without_a_file_is_empty(tmp_path: Path) -> None:
    assert load_learned(str(tmp_path)) == {} and load_learned(None) == {}


def test_a_changed_body_alone_is_re_embedded_and_its_signals_rebuilt(tmp_path: Path, encoder: Encoder) -> None:
    skills = write_library(tmp_path / "skills")
    config = RouterConfig(route_above=0, weights={"body_dense": 0.5})  # the body embedded as well

    def build(index: str) -> Router:
        return Router.from_skills([str(skills)], "genkit", config, index_folder=str(tmp_path / index),
                                  encoder=encoder)

    assert build("idx").embedded_count == 3 * len(SKILLS)  # a description, a body lead and a body head each
    path = skills / "poem-writer" / "SKILL.md"
    path.write_text(path.read_text().replace("# poem-writer", "# poem-writer\nSonnets and villanelles too."),
                    encoding="utf-8")
    refreshed, fresh = build("idx"), build("fresh")
    assert refreshed.embedded_count == 2  # the edited body's lead and head
    # the same vectors as a fresh build, up to the float rounding of another batch's padding
    np.testing.assert_allclose(refreshed.signals.body_dense.vectors, fresh.signals.body_dense.vectors, atol=1e-5)
    request = "write me a villanelle"
    assert [m.id for m in refreshed.rank(request)] == [m.id for m in fresh.rank(request)]
    assert refreshed.rank(request)[0].scores["body_bm25"] == fresh.rank(request)[0].scores["body_bm25"] > 0


def _inodes(index: Path) -> dict[str, int]:
    data = json.loads((index / MANIFEST).read_text())
    return {name: (index / data["generation"] / name).stat().st_ino for name in data["files"]}


def _checksums_hold(index: Path) -> bool:
    from router.store import sha256_file

    data = json.loads((index / MANIFEST).read_text())
    return all(sha256_file(index / data["generation"] / name) == digest for name, digest in data["files"].items())


def _body_router(tmp_path: Path, encoder, index: str = "idx") -> Router:
    return Router.from_skills([str(tmp_path / "skills")], "genkit",
                              RouterConfig(route_above=0, weights={"body_dense": 0.5}),
                              index_folder=str(tmp_path / index), encoder=encoder)


def test_by_default_a_body_edit_embeds_nothing_and_rebuilds_body_bm25(tmp_path: Path, encoder: Encoder) -> None:
    """body_dense weighs 0 by default, so of a body only its head is embedded (passage_dense); its BM25 follows an
    edit."""
    skills = write_library(tmp_path / "skills")

    def build(index: str) -> Router:
        return Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0),
                                  index_folder=str(tmp_path / index), encoder=encoder)

    first = build("idx")
    assert first.embedded_count == 2 * len(SKILLS) and first.signals.body_dense is None  # descriptions, heads
    assert "body_dense" not in first.score_many(["write me a villanelle"]).signals
    _edit_body(skills)
    refreshed = build("idx")
    assert refreshed.embedded_count == 1  # the edited body's head
    assert refreshed.rank("write me a villanelle")[0].scores["body_bm25"] > 0
    assert first.rank("write me a villanelle")[0].scores.get("body_bm25", 0) == 0
    # giving body_dense a weight embeds the bodies (once) and the router rebuilds rather than sharing the signals
    embedded = refreshed.with_config(weights={**refreshed.config.weights, "body_dense": 0.5})
    assert embedded.signals.body_dense is not None and embedded.embedded_count == len(SKILLS)


def _edit_body(skills: Path) -> None:
    path = skills / "poem-writer" / "SKILL.md"
    path.write_text(path.read_text().replace("# poem-writer", "# poem-writer\nSonnets and villanelles too."),
                    encoding="utf-8")


def test_a_body_edit_links_the_unchanged_indexes_and_the_new_generation_reads_back_whole(tmp_path: Path,
                                                                                       encoder: Encoder) -> None:
    write_library(tmp_path / "skills")
    _body_router(tmp_path, encoder)
    before = _inodes(tmp_path / "idx")
    _edit_body(tmp_path / "skills")
    refreshed = _body_router(tmp_path, encoder)
    assert refreshed.embedded_count == 2 and refreshed.saved is True and refreshed.notes == []  # its lead, head
    after = _inodes(tmp_path / "idx")
    linked = {name for name in after if before.get(name) == after[name]}
    # the description's indexes did not change: the new generation links their files; the rest is written anew
    assert linked == {name for name in after if name.split("/")[0] in ("bm25", "dense")} and linked
    assert all(name.split("/")[0] == "body_bm25" or name in (VECTORS, "keys.json") for name in set(after) - linked)
    assert not any(name.startswith("body_dense/") for name in after)  # assembled from the cache, never saved
    assert _checksums_hold(tmp_path / "idx")
    assert sorted(p.name for p in (tmp_path / "idx").iterdir() if p.name != LIBRARY_FILE) == sorted(
        [".lock", MANIFEST, manifest(tmp_path)["generation"], "passages", FRONTS_FILE, PARSES_FILE])
    # read back by a new router: nothing rebuilt, and the same scores as a build from scratch
    reloaded, fresh = _body_router(tmp_path, Refusing(encoder)), _body_router(tmp_path, encoder, "fresh")
    assert reloaded.notes == [] and reloaded.saved is None
    for request in ("write me a villanelle", RAIN, "make my sql query faster"):
        got, want = reloaded.score_many([request]).signals, fresh.score_many([request]).signals
        for name in ("bm25", "body_bm25"):
            assert np.array_equal(got[name], want[name]), name
        np.testing.assert_allclose(got["body_dense"], want["body_dense"], atol=1e-5)


def test_a_file_that_cannot_be_linked_is_written_and_checksummed(tmp_path: Path, encoder: Encoder,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    write_library(tmp_path / "skills")
    _body_router(tmp_path, encoder)
    before = _inodes(tmp_path / "idx")

    def no_links(*_: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr("router.store.os.link", no_links)
    _edit_body(tmp_path / "skills")
    refreshed = _body_router(tmp_path, encoder)
    assert refreshed.saved is True and refreshed.notes == []
    assert not set(before.values()) & set(_inodes(tmp_path / "idx").values())
    assert _checksums_hold(tmp_path / "idx")
    assert _body_router(tmp_path, Refusing(encoder)).notes == []


def test_a_damaged_linked_file_is_detected_and_rebuilt(tmp_path: Path, encoder: Encoder) -> None:
    write_library(tmp_path / "skills")
    _body_router(tmp_path, encoder)
    _edit_body(tmp_path / "skills")
    _body_router(tmp_path, encoder)
    path = generation(tmp_path) / "bm25" / "weights_data.npy"
    weights = np.load(path)
    weights[0] += 1.0
    np.save(path, weights)
    router = _body_router(tmp_path, encoder)
    assert any("bm25/weights_data.npy (checksum mismatch)" in n and "rebuilding" in n for n in router.notes)
    assert _checksums_hold(tmp_path / "idx") and _body_router(tmp_path, Refusing(encoder)).notes == []


def test_an_edit_that_keeps_the_size_and_modification_time_is_still_seen(built: Path, encoder: Encoder) -> None:
    path = built / "skills" / "poem-writer" / "SKILL.md"
    stat = path.stat()
    text = path.read_text()
    path.write_text(text.replace("haiku", "verse"), encoding="utf-8")  # same length
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    router = make_router(built, encoder)
    assert router.embedded_count == 1 and router.rank("some verse")[0].id == "poem-writer"
    assert router.rank("some verse")[0].scores["bm25"] > 0


def test_a_bm25_index_saved_without_term_counts_loads_and_is_rebuilt_with_them(tmp_path: Path,
                                                                               encoder: Encoder) -> None:
    write_library(tmp_path / "skills")
    _body_router(tmp_path, encoder)
    index = tmp_path / "idx"
    data = json.loads((index / MANIFEST).read_text())
    for name in [n for n in data["files"] if "/doc_" in n]:  # what an earlier version saved
        (index / data["generation"] / name).unlink()
        del data["files"][name]
    (index / MANIFEST).write_text(json.dumps(data))
    loaded = _body_router(tmp_path, Refusing(encoder))
    assert loaded.notes == [] and loaded.saved is None and loaded.signals.bm25.counts is None
    _edit_body(tmp_path / "skills")
    refreshed = _body_router(tmp_path, encoder)
    assert refreshed.notes == [] and refreshed.signals.body_bm25.counts is not None
    assert any(n.startswith("body_bm25/doc_") for n in manifest(tmp_path)["files"]) and _checksums_hold(index)
    fresh = _body_router(tmp_path, encoder, "fresh")
    assert np.array_equal(refreshed.score_many(["villanelle"]).signals["body_bm25"],
                          fresh.score_many(["villanelle"]).signals["body_bm25"])
