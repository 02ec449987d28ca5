"""A refresh after one change (an edited body or description, a skill added, a skill removed) gives exactly the
index a build from scratch gives: the same score for every signal, skill and request, in the same process (where
the texts of unchanged skills are remembered) and read back from the index folder by another router."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import write_skill
from indexes.bm25 import BM25Index
from indexes.fake import FakeEncoder
from router import index as library_index
from router import passages
from router.config import RouterConfig
from router.profiles import base as profiles_base
from router.routing import Router

REPO = Path(__file__).resolve().parents[1]

SKILLS = {
    "weather-now": ("Report the current weather conditions observed right now at a place.",
                    "# Weather\n\nAsk the station for rain, wind and temperature.\n\n## Forecast\n\nTomorrow too.\n"),
    "csv-cleanup": ("Clean messy CSV files and fix broken dates, types, duplicates and missing values.",
                    "# CSV\n\nRead the file with pandas, then fix the dates.\n\n## Types\n\nCast every column.\n"),
    "sql-tuning": ("Make one slow SQL query faster with query plans and indexes.",
                   "# SQL\n\nRun EXPLAIN ANALYZE first.\n\n## Indexes\n\nAdd a btree index on the filter.\n"),
    "poem-writer": ("Write short rhyming poems and haiku on any topic.",
                    "# Poems\n\nCount syllables: five, seven, five.\n"),
    "git-bisect": ("Find the commit that broke a build by bisecting the history.",
                   "# Bisect\n\nMark good and bad commits until one is left.\n"),
}
REQUESTS = ("is it raining right now", "fix the dates in my csv", "which commit broke the build",
            "write me a villanelle", "explain analyze shows a sequential scan", "syllables of a haiku")


def write_library(root: Path) -> Path:
    for folder, (description, body) in SKILLS.items():
        write_skill(root, folder, description, body=body)
    return root


def router(skills: Path, index: Path, encoder: FakeEncoder) -> Router:
    return Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0), index_folder=str(index),
                              encoder=encoder)


def forget() -> None:
    """Empty what this process remembers of earlier builds, as a new process starts."""
    profiles_base._PARSED.clear()
    library_index._TEXTS.clear()
    passages._MEMO.clear()
    passages._CUT.clear()


def assert_same_scores(got: Router, want: Router) -> None:
    assert [s.id for s in got.skills] == [s.id for s in want.skills]
    left, right = got.score_many(list(REQUESTS)).signals, want.score_many(list(REQUESTS)).signals
    assert sorted(left) == sorted(right)
    for name in right:
        assert np.array_equal(left[name], right[name]), name
    for name in ("bm25", "body_bm25"):
        a, b = got.signals.indexes[name], want.signals.indexes[name]
        assert a.vocabulary == b.vocabulary, name
        for part in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(a._weights, part), getattr(b._weights, part)), (name, part)


def edit_body(skills: Path) -> None:
    path = skills / "poem-writer" / "SKILL.md"
    path.write_text(path.read_text().replace("Count syllables", "Villanelles and sonnets too. Count syllables"),
                    encoding="utf-8")


def edit_description(skills: Path) -> None:
    path = skills / "sql-tuning" / "SKILL.md"
    path.write_text(path.read_text().replace("Make one slow SQL query faster", "Tune slow PostgreSQL queries"),
                    encoding="utf-8")


def add(skills: Path) -> None:
    write_skill(skills, "pdf-forms", "Fill PDF forms and extract their fields.", body="# PDF\n\nUse pypdf.\n")


def remove(skills: Path) -> None:
    (skills / "weather-now" / "SKILL.md").unlink()
    (skills / "weather-now").rmdir()


@pytest.mark.parametrize("change", [edit_body, edit_description, add, remove])
def test_a_refresh_after_one_change_scores_exactly_as_a_build_from_scratch(tmp_path: Path, change,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiles_base, "RACY_S", -1.0)  # unchanged files are not read again, however new
    forget()
    skills = write_library(tmp_path / "skills")
    encoder = FakeEncoder()
    first = router(skills, tmp_path / "idx", encoder)
    assert "passages" in first.signals.indexes and first.saved is True
    change(skills)
    refreshed = router(skills, tmp_path / "idx", encoder)  # same process: texts of unchanged skills remembered
    assert refreshed.saved is True and refreshed.notes == []
    forget()
    scratch = router(skills, tmp_path / "scratch", FakeEncoder())
    assert_same_scores(refreshed, scratch)
    forget()  # a new process: everything read back from the refreshed index folder
    reread = router(skills, tmp_path / "idx", encoder)
    assert reread.saved is None and reread.embedded_count == 0
    assert_same_scores(reread, scratch)


def test_a_skill_whose_text_comes_from_its_file_is_read_again_after_an_edit(tmp_path: Path) -> None:
    """genkit reads no description from a frontmatter that repeats a key (the skill shows the placeholder); the
    router indexes a lenient parse of the file instead, so an edit of that description changes no field of the
    skill and must still reach the index."""
    skills = write_library(tmp_path / "skills")
    repeated = "---\nname: forecast\nname: forecast\ndescription: {}\n---\n\nSteps.\n"
    path = write_skill(skills, "forecast", text=repeated.format("Rain reports for any town"))
    encoder = FakeEncoder()
    before = router(skills, tmp_path / "idx", encoder)
    assert "rain" in before.index_texts()[[s.id for s in before.skills].index("forecast")].lower()
    path.write_text(repeated.format("Snowfall depth at ski resorts"), encoding="utf-8")
    after = router(skills, tmp_path / "idx", encoder)
    text = after.index_texts()[[s.id for s in after.skills].index("forecast")]
    assert text == "forecast. Snowfall depth at ski resorts"
    assert after.rank("snowfall depth", 1)[0].id == "forecast"
    forget()
    assert_same_scores(after, router(skills, tmp_path / "scratch", FakeEncoder()))


def test_an_index_is_built_from_the_texts_of_the_signals_it_builds_only(tmp_path: Path) -> None:
    skills = write_library(tmp_path / "skills")
    built = router(skills, tmp_path / "idx", FakeEncoder())
    texts = built.source.build_texts()
    assert "body_dense" not in texts  # bodies are not embedded by default
    everything = built.signal_texts()
    assert texts == {name: everything[name] for name in texts}
    # name_dense's text (the name's words) is wanted while catalogue_names weighs it: whether the names count is
    # decided at build time, from the library
    assert sorted(texts) == ["bm25", "body_bm25", "centrality", "dense", "examples", "name_dense", "passages"]


def test_bm25_weights_are_the_term_major_matrix_of_the_documents() -> None:
    """Built without scipy: row t of the weight matrix lists, in ascending order, exactly the documents holding
    term t, each with its BM25 weight (Lucene idf; k1 1.5, b 0.75)."""
    from indexes.tokenize import tokenize

    texts = [" ".join(SKILLS[k][0] for k in list(SKILLS)[:i + 1]) for i in range(len(SKILLS))] + ["", "dates dates"]
    index = BM25Index.from_texts([f"d{i}" for i in range(len(texts))], texts)
    tokens = [tokenize(t) for t in texts]
    lengths = [len(t) for t in tokens]
    average = sum(lengths) / len(texts)
    weights = index._weights
    for row, term in enumerate(index.vocabulary):
        holding = [d for d, words in enumerate(tokens) if term in words]
        assert weights.indices[weights.indptr[row]:weights.indptr[row + 1]].tolist() == holding, term
        idf = np.log(1 + (len(texts) - len(holding) + 0.5) / (len(holding) + 0.5))
        for d, weight in zip(holding, weights.data[weights.indptr[row]:weights.indptr[row + 1]]):
            tf = tokens[d].count(term)
            expected = idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * lengths[d] / average))
            assert weight == pytest.approx(expected, rel=1e-12), (term, d)


def test_building_and_updating_bm25_imports_no_scipy(tmp_path: Path) -> None:
    """scipy's import alone took 0.17-0.34 s of a refresh in a new process."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from indexes.bm25 import BM25Index
        first = BM25Index.from_texts(["a", "b"], ["rain in town", "dates in a csv"])
        second = BM25Index.from_texts(["a", "b"], ["rain in town", "broken dates"], reuse=first)
        print(second.scores("broken dates").tolist(), "scipy" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out[-1] == "False"


def test_remembered_digests_are_the_digests_of_the_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    from indexes import bm25

    monkeypatch.setattr(bm25, "_DIGESTS_KEPT", 3)
    monkeypatch.setattr(bm25, "_DIGESTS", {})
    texts = ["rain in town", "broken dates", "", "rain in town", "snow"]
    for batch in (texts, texts[:2], ["broken dates!", "snow"], texts):
        assert bm25.text_digests(batch) == [bm25.text_digest(t) for t in batch]
    import hashlib

    assert bm25.text_digest("rain in town") == hashlib.blake2b(b"rain in town", digest_size=16).digest()
    assert len(bm25._DIGESTS) <= 5


def _counting_parses(monkeypatch: pytest.MonkeyPatch, profile: str = "genkit") -> list[str]:
    from router.profiles.agentskills import AgentSkillsProfile
    from router.profiles.genkit import GenkitProfile

    kind, method = (GenkitProfile, "_parse") if profile == "genkit" else (AgentSkillsProfile, "parse_with_notes")
    parsed: list[str] = []
    original = getattr(kind, method)

    def counting(self, path, raw, folder_name):  # type: ignore[no-untyped-def]
        parsed.append(folder_name)
        return original(self, path, raw, folder_name)

    monkeypatch.setattr(kind, method, counting)
    return parsed


@pytest.mark.parametrize("name", ["genkit", "agentskills"])
def test_a_second_discovery_reads_only_the_files_that_changed(tmp_path: Path, monkeypatch, name: str) -> None:
    from router.profiles import base, get_profile

    monkeypatch.setattr(base, "RACY_S", -1.0)  # the files were written a moment ago: trust their stamps anyway
    monkeypatch.setattr(base, "_PARSED", {})
    PROFILE = get_profile(name)
    skills = write_library(tmp_path / "skills")
    parsed = _counting_parses(monkeypatch, name)
    first = PROFILE.discover([str(skills)])
    assert sorted(parsed) == sorted(SKILLS)
    parsed.clear()
    edit_description(skills)
    add(skills)
    remove(skills)
    again = PROFILE.discover([str(skills)])
    assert sorted(parsed) == ["pdf-forms", "sql-tuning"]
    assert sorted(s.name for s in again.skills) == sorted([*set(SKILLS) - {"weather-now"}, "pdf-forms"])
    by_name = {s.name: s for s in again.skills}
    assert by_name["sql-tuning"].description.startswith("Tune slow PostgreSQL queries")
    assert by_name["poem-writer"] is {s.name: s for s in first.skills}["poem-writer"]  # the same value, not read
    assert PROFILE.discover([str(skills)]).skills == again.skills


def test_an_edit_that_keeps_the_size_and_modification_time_is_read_again(tmp_path: Path, monkeypatch) -> None:
    import os

    from router.profiles import base
    from router.profiles.genkit import PROFILE

    monkeypatch.setattr(base, "RACY_S", -1.0)
    monkeypatch.setattr(base, "_PARSED", {})
    skills = write_library(tmp_path / "skills")
    path = skills / "poem-writer" / "SKILL.md"
    stat = path.stat()
    PROFILE.discover([str(skills)])
    parsed = _counting_parses(monkeypatch)
    path.write_text(path.read_text().replace("rhyming", "limping"), encoding="utf-8")  # as many bytes
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    found = {s.name: s for s in PROFILE.discover([str(skills)]).skills}
    assert parsed == ["poem-writer"] and "limping" in found["poem-writer"].description


def test_files_written_a_moment_ago_are_read_every_time(tmp_path: Path, monkeypatch) -> None:
    """A stamp younger than RACY_S may hide a second write in the same clock tick: such files are not trusted."""
    from router.profiles import base
    from router.profiles.genkit import PROFILE

    monkeypatch.setattr(base, "_PARSED", {})
    skills = write_library(tmp_path / "skills")
    parsed = _counting_parses(monkeypatch)
    PROFILE.discover([str(skills)])
    PROFILE.discover([str(skills)])
    assert sorted(parsed) == sorted([*SKILLS, *SKILLS])


def test_a_router_over_the_same_ids_and_names_shares_their_places_and_a_new_skill_gets_its_own(
        tmp_path: Path) -> None:
    skills = write_library(tmp_path / "skills")
    encoder = FakeEncoder()
    first = router(skills, tmp_path / "idx", encoder)
    edit_body(skills)
    second = router(skills, tmp_path / "idx", encoder)
    assert second._names is first._names and second.order is first.order
    assert not second.order.flags.writeable
    add(skills)
    third = router(skills, tmp_path / "idx", encoder)
    assert third._names is not first._names
    assert [m.id for m in third.rank("use pdf-forms on this file", 1)] == ["pdf-forms"]
    assert third.rank("use pdf-forms on this file", 1)[0].reason == "named"
    ids = [s.id for s in third.skills]
    assert third.order.tolist() == [sorted(ids).index(i) for i in ids]


def test_bm25_weights_of_a_vocabulary_past_16_bits_are_term_major_too() -> None:
    import itertools
    import string

    from indexes.tokenize import tokenize

    words = ["".join(w) for w in itertools.islice(itertools.product(string.ascii_lowercase, repeat=4), 66_000)]
    texts = [" ".join(words[i::3] + words[:50]) for i in range(3)]  # the first 50 words in every document
    index = BM25Index.from_texts(["a", "b", "c"], texts)
    assert len(index.vocabulary) > 1 << 16
    weights = index._weights
    holding = {term: [d for d, text in enumerate(texts) if term in set(tokenize(text))] for term in
               (*index.vocabulary[:60], *index.vocabulary[-60:])}
    for row, term in enumerate(index.vocabulary):
        if term in holding:
            assert weights.indices[weights.indptr[row]:weights.indptr[row + 1]].tolist() == holding[term], term
    assert np.all(np.diff(weights.indptr) >= 1) and weights.indptr[-1] == sum(len(set(tokenize(t))) for t in texts)
