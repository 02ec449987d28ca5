"""A refresh after one change (an edited body or description, a skill added, a skill removed) gives exactly the
index a build from scratch gives: the same score for every signal, skill and request, in the same process (where
the texts of unchanged skills are remembered) and read back from the index folder by another router."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import write_skill
from indexes import bm25
from indexes.bm25 import BM25Index
from indexes.fake import FakeEncoder
from router import fresh
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


def router(skills: Path, index: Path, encoder: FakeEncoder, profile: str = "genkit") -> Router:
    return Router.from_skills([str(skills)], profile, RouterConfig(route_above=0), index_folder=str(index),
                              encoder=encoder)


def forget() -> None:
    """Empty what this process remembers of earlier builds, as a new process starts."""
    profiles_base._PARSED.clear()
    profiles_base._FRONTS.clear()
    profiles_base._FRONTS_ADDED.clear()
    fresh._FRONTS_SEEN.clear()
    fresh._DISCOVERED.clear()
    fresh._PARSES_SEEN.clear()
    fresh.NOTES.clear()
    library_index._TEXTS.clear()
    passages._MEMO.clear()
    passages._CUT.clear()
    bm25._DIGESTS.clear()


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


def rename(skills: Path) -> None:
    """A skill folder renamed (and its name with it): the same frontmatter under another name."""
    path = skills / "git-bisect" / "SKILL.md"
    path.write_text(path.read_text().replace("name: git-bisect", "name: bisect-history"), encoding="utf-8")
    (skills / "git-bisect").rename(skills / "bisect-history")


def replace_keeping_size_and_time(skills: Path) -> None:
    """A file replaced by another of the same size and modification time: only its inode (and ctime) changed."""
    import os

    path = skills / "csv-cleanup" / "SKILL.md"
    stat = path.stat()
    other = path.with_name("SKILL.md.new")
    other.write_text(path.read_text().replace("Clean messy CSV", "Clean dirty TSV"), encoding="utf-8")
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(other, path)
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert path.stat().st_ino != stat.st_ino


CHANGES = [edit_body, edit_description, add, remove, rename, replace_keeping_size_and_time]
#: The frontmatters each change makes a new process parse (the others' parses are kept beside the index).
NEW_FRONTMATTERS = {"edit_body": 0, "edit_description": 1, "add": 1, "remove": 0, "rename": 1,
                    "replace_keeping_size_and_time": 1}
PROFILES = ["genkit", "agentskills", "claude-code", "codex"]


def recording(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """The first argument of each call of ``owner.name`` from now on (the function itself still runs)."""
    seen: list[Any] = []
    original = getattr(owner, name)

    def record(first, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(first)
        return original(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, record)
    return seen


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SKILL.md files the discoveries read from now on."""
    return recording(monkeypatch, profiles_base, "read_bytes_stat")


def counting_frontmatter(monkeypatch: pytest.MonkeyPatch, profile: str) -> list[str]:
    """The frontmatters ``profile`` parses from now on (its YAML step, the one kept by text)."""
    from router.profiles import agentskills, claude_code, codex, genkit

    module, name = {"genkit": (genkit, "_decoded"), "agentskills": (agentskills, "_frontmatter"),
                    "claude-code": (claude_code, "load_yaml"), "codex": (codex, "read_fields")}[profile]
    return recording(monkeypatch, module, name)


@pytest.mark.parametrize("change", CHANGES)
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


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("change", CHANGES)
def test_a_new_process_after_one_change_parses_only_the_new_frontmatter_and_scores_as_a_build_from_scratch(
        tmp_path: Path, change, profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``skill-router route`` or ``index`` after an edit: the frontmatter parses the last process kept beside the
    index are used, so only a frontmatter never parsed before is parsed, and the index is the one a build from
    scratch gives. The library read is kept whole beside the index too (trusted here however new its files are):
    the change is seen by the stamps of its files and folders."""
    monkeypatch.setattr(fresh, "RACY_S", -1.0)
    forget()
    skills = write_library(tmp_path / "skills")
    encoder = FakeEncoder()
    first = router(skills, tmp_path / "idx", encoder, profile)
    assert first.saved is True and (tmp_path / "idx" / fresh.FRONTS_FILE).is_file()
    assert (tmp_path / "idx" / fresh.FILE).is_file()
    change(skills)
    forget()  # a new process
    parsed = counting_frontmatter(monkeypatch, profile)
    refreshed = router(skills, tmp_path / "idx", encoder, profile)
    assert len(parsed) == NEW_FRONTMATTERS[change.__name__], parsed
    assert refreshed.saved is True and refreshed.notes == first.notes
    forget()
    scratch = router(skills, tmp_path / "scratch", FakeEncoder(), profile)
    assert_same_scores(refreshed, scratch)
    assert [(s.name, s.description, s.body, s.path, dict(s.metadata)) for s in refreshed.skills] == \
        [(s.name, s.description, s.body, s.path, dict(s.metadata)) for s in scratch.skills]
    if change is rename:
        ids = [s.id for s in refreshed.skills]
        assert "bisect-history" in ids and "git-bisect" not in ids
    parsed.clear()
    forget()  # and the process after it reads nothing: nothing changed, the library kept whole is used
    reads = counting_reads(monkeypatch)
    again = router(skills, tmp_path / "idx", encoder, profile)
    assert parsed == [] and reads == [] and again.embedded_count == 0
    assert_same_scores(again, scratch)


def test_a_second_index_folder_in_one_process_gets_its_kept_parses_too(tmp_path: Path) -> None:
    """A process that parsed a library's frontmatter for one index folder writes the kept parses into a second
    folder as well: the next process reading that folder parses none."""
    forget()
    skills = write_library(tmp_path / "skills")
    router(skills, tmp_path / "idx", FakeEncoder())
    router(skills, tmp_path / "other", FakeEncoder())  # every parse already known to this process
    assert (tmp_path / "other" / fresh.FRONTS_FILE).read_bytes() == (tmp_path / "idx" / fresh.FRONTS_FILE).read_bytes()


def without_stamped_reads(index: Path) -> None:
    """Remove what the build before kept by file stamp (the library and each file's parse): once the files are 2 s
    old it would be read back instead of the frontmatter, whose own kept file is what the test is about."""
    for name in (fresh.FILE, fresh.PARSES_FILE):
        (index / name).unlink(missing_ok=True)


def test_a_damaged_or_foreign_file_of_kept_parses_is_not_used(tmp_path: Path, monkeypatch) -> None:
    forget()
    skills = write_library(tmp_path / "skills")
    scratch = router(skills, tmp_path / "scratch", FakeEncoder())
    kept = tmp_path / "scratch" / fresh.FRONTS_FILE
    whole = kept.read_text(encoding="ascii")
    for damaged in (whole[: len(whole) // 2], whole.replace('"format": 1', '"format": 0'),
                    whole.replace('"kind": "GenkitProfile"', '"kind": "CodexProfile"')):
        (tmp_path / "idx").mkdir(exist_ok=True)
        (tmp_path / "idx" / fresh.FRONTS_FILE).write_text(damaged, encoding="ascii")
        without_stamped_reads(tmp_path / "idx")
        forget()
        parsed = counting_frontmatter(monkeypatch, "genkit")
        assert_same_scores(router(skills, tmp_path / "idx", FakeEncoder()), scratch)
        assert len(parsed) == len(SKILLS)
        monkeypatch.undo()
    import json

    data = json.loads(whole)
    data["parses"] = {front: "{not json" for front in data["parses"]}  # each parse damaged: each parsed again
    (tmp_path / "idx" / fresh.FRONTS_FILE).write_text(json.dumps(data), encoding="ascii")
    without_stamped_reads(tmp_path / "idx")
    forget()
    parsed = counting_frontmatter(monkeypatch, "genkit")
    assert_same_scores(router(skills, tmp_path / "idx", FakeEncoder()), scratch)
    assert len(parsed) == len(SKILLS)


def test_a_parse_json_would_not_give_back_is_not_kept() -> None:
    import datetime

    calls: list[str] = []

    def parse(front: str) -> object:
        calls.append(front)
        return {"when": datetime.date(2024, 1, 1)} if "when" in front else [{"name": "a"}, ("t", "u")] \
            if "tuple" in front else [{"name": "a"}, False]

    kind = "TestProfile"
    try:
        for _ in range(2):
            for front in ("when: 2024-01-01", "tuple", "plain"):
                profiles_base.front_parse(kind, front, parse)
        assert calls == ["when: 2024-01-01", "tuple", "plain", "when: 2024-01-01", "tuple"]
        assert profiles_base.fronts(kind) == {"plain": '[{"name": "a"}, false]'}
        first, second = (profiles_base.front_parse(kind, "plain", parse) for _ in range(2))
        assert first == second == [{"name": "a"}, False] and first is not second  # a copy each time
    finally:
        profiles_base._FRONTS.pop(kind, None)
        profiles_base._FRONTS_ADDED.pop(kind, None)


def test_a_new_process_after_one_description_edit_parses_one_frontmatter(tmp_path: Path) -> None:
    """The same in real processes: ``Router.from_skills`` in one, an edit, then in another."""
    skills = write_library(tmp_path / "skills")
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(REPO)!r})
        sys.path.insert(0, {str(REPO / "tests")!r})
        from indexes.fake import FakeEncoder
        from router.config import RouterConfig
        from router.profiles import genkit
        from router.routing import Router
        parsed = []
        original = genkit._decoded
        genkit._decoded = lambda front: parsed.append(front) or original(front)
        router = Router.from_skills([sys.argv[1]], "genkit", RouterConfig(route_above=0), index_folder=sys.argv[2],
                                    encoder=FakeEncoder())
        scores = router.score_many({list(REQUESTS)!r}).signals
        print(json.dumps([len(parsed), {{k: v.tolist() for k, v in scores.items()}}]))
    """)

    def run(index: Path) -> tuple[int, dict[str, list[list[float]]]]:
        done = subprocess.run([sys.executable, "-c", script, str(skills), str(index)], capture_output=True,
                              text=True, check=True)
        import json

        count, scores = json.loads(done.stdout.strip().splitlines()[-1])
        return count, scores

    assert run(tmp_path / "idx")[0] == len(SKILLS)
    edit_description(skills)
    count, refreshed = run(tmp_path / "idx")
    assert count == 1
    assert refreshed == run(tmp_path / "scratch")[1]


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
    texts = built.source.build_texts().texts
    assert "body_dense" not in texts  # bodies are not embedded by default
    everything = built.signal_texts()
    assert texts == {name: everything[name] for name in texts}
    # name_dense's text (the name's words) is wanted while catalogue_names weighs it: whether the names count is
    # decided at build time, from the library
    assert sorted(texts) == ["bm25", "body_bm25", "centrality", "dense", "examples", "name_dense",
                             "passage_dense", "passages"]


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
    from router.profiles.claude_code import ClaudeCodeProfile
    from router.profiles.codex import CodexProfile
    from router.profiles.genkit import GenkitProfile

    kind, method = {"genkit": (GenkitProfile, "_parse"), "agentskills": (AgentSkillsProfile, "parse_with_notes"),
                    "claude-code": (ClaudeCodeProfile, "parse"), "codex": (CodexProfile, "parse")}[profile]
    parsed: list[str] = []
    original = getattr(kind, method)

    def counting(self, path, raw, folder_name):  # type: ignore[no-untyped-def]
        parsed.append(folder_name)
        return original(self, path, raw, folder_name)

    monkeypatch.setattr(kind, method, counting)
    return parsed


@pytest.mark.parametrize("name", PROFILES)
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
    earlier = {s.name: s for s in first.skills}["poem-writer"]
    assert by_name["poem-writer"] == earlier and by_name["poem-writer"].body is earlier.body  # not read again
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


def test_the_kept_parses_are_bounded_the_least_recently_used_going_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiles_base, "MAX_FRONTS", 3)
    kind = "TestBoundProfile"
    try:
        profiles_base.remember_fronts(kind, {f"f{i}": "0" for i in range(5)})
        assert list(profiles_base.fronts(kind)) == ["f2", "f3", "f4"]
        profiles_base.front_parse(kind, "f2", int)  # used: now the most recent
        profiles_base.front_parse(kind, "7", int)  # new: the least recently used one goes
        assert list(profiles_base.fronts(kind)) == ["f4", "f2", "7"]
    finally:
        profiles_base._FRONTS.pop(kind, None)
        profiles_base._FRONTS_ADDED.pop(kind, None)


# -- a new process reads only the SKILL.md files whose stamp changed (router.fresh.PARSES_FILE) --------------------
def touch(skills: Path) -> None:
    """A file written again with the same text: its stamp changed, so it is read again (and gives the same skill)."""
    path = skills / "csv-cleanup" / "SKILL.md"
    path.write_bytes(path.read_bytes())


#: The SKILL.md files each change makes a new process read (every other one's parse is kept by its stamp).
CHANGED_FILES = {"edit_body": 1, "edit_description": 1, "add": 1, "remove": 0, "rename": 1,
                 "replace_keeping_size_and_time": 1, "touch": 1}


def counting_body_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SKILL.md files read from now on for a body that was not read with its skill (a kept parse's)."""
    return recording(monkeypatch, profiles_base, "read_skill_file")


def large_library(monkeypatch: pytest.MonkeyPatch, bodies_read: int = 1000) -> None:
    """As for a library too large to be kept whole (library.saved), read by stamp; past ``bodies_read`` skills
    (router.passages.MAX_SKILLS, where the passage index ends) bodies are read only when asked for."""
    monkeypatch.setattr(profiles_base, "RACY_S", -1.0)  # the files just written are trusted
    monkeypatch.setattr(fresh, "KEPT_BYTES", -1)
    monkeypatch.setattr(fresh, "_ALL_BODIES_READ", bodies_read)
    monkeypatch.setattr(passages, "MAX_SKILLS", bodies_read)


def fields(skills: object) -> list[tuple[object, ...]]:
    return [(s.name, s.description, s.body, s.path, s.id, s.examples, dict(s.metadata))  # type: ignore[attr-defined]
            for s in skills]  # type: ignore[attr-defined]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("change", [*CHANGES, touch])
def test_a_new_process_after_one_change_reads_only_the_changed_file_and_scores_as_a_build_from_scratch(
        tmp_path: Path, change, profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``skill-router route`` after one edit of a large library: each unchanged SKILL.md's parse comes back from
    the kept parses by its stamp, without reading the file, and the router is the one a build from scratch
    gives: the same skills (bodies included, read when asked for) and the same score for every signal."""
    large_library(monkeypatch)
    forget()
    skills = write_library(tmp_path / "skills")
    first = router(skills, tmp_path / "idx", FakeEncoder(), profile)
    assert (tmp_path / "idx" / fresh.PARSES_FILE).is_file() and not (tmp_path / "idx" / fresh.FILE).exists()
    change(skills)
    forget()  # a new process
    reads = counting_reads(monkeypatch)
    refreshed = router(skills, tmp_path / "idx", FakeEncoder(), profile)
    assert len(reads) == CHANGED_FILES[change.__name__], reads
    assert refreshed.notes == first.notes
    forget()
    scratch = router(skills, tmp_path / "scratch", FakeEncoder(), profile)
    assert_same_scores(refreshed, scratch)
    assert fields(refreshed.skills) == fields(scratch.skills)
    assert list(refreshed.skills) == list(scratch.skills)  # a skill read back equals the skill its file parses to
    forget()  # and the next process reads none
    reads.clear()
    again = router(skills, tmp_path / "idx", FakeEncoder(), profile)
    assert reads == [] and again.embedded_count == 0
    assert_same_scores(again, scratch)


def test_past_the_passage_index_an_unchanged_body_is_read_only_when_asked_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past router.passages.MAX_SKILLS skills nothing indexes a whole body: a new process after one body edit reads
    that one SKILL.md; every other skill's texts come back with its parse, and its body is read from its file
    (the same parse) the first time it is asked for."""
    import pickle

    from router.skill import Skill

    large_library(monkeypatch, bodies_read=2)
    forget()
    skills = write_library(tmp_path / "skills")
    router(skills, tmp_path / "idx", FakeEncoder())
    edit_body(skills)
    forget()
    reads, bodies = counting_reads(monkeypatch), counting_body_reads(monkeypatch)
    refreshed = router(skills, tmp_path / "idx", FakeEncoder())
    assert [Path(p).parent.name for p in reads] == ["poem-writer"]
    # at most the first skill's: whether the library has bodies at all (router.signals.name_dense)
    assert [Path(p).parent.name for p in bodies] in ([], ["csv-cleanup"])
    assert "passages" not in refreshed.signals.indexes
    forget()
    scratch = router(skills, tmp_path / "scratch", FakeEncoder())
    assert_same_scores(refreshed, scratch)
    bodies.clear()
    kept = refreshed.source.registry.lookup("sql-tuning")
    assert kept is not None and type(kept) is not Skill and bodies == []
    assert kept.body == scratch.source.registry.lookup("sql-tuning").body  # type: ignore[union-attr]
    assert [Path(p).parent.name for p in bodies] == ["sql-tuning"]
    kept.body  # noqa: B018 - read once, then held
    assert len(bodies) == 1
    plain = scratch.source.registry.lookup("sql-tuning")
    assert kept == plain and plain == kept and hash(kept) == hash(plain)
    assert type(pickle.loads(pickle.dumps(kept))) is Skill and pickle.loads(pickle.dumps(kept)) == plain


def test_a_kept_body_is_read_as_the_file_is_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A body asked for after its file changed is the file's body now (never an older text); a file gone since
    gives an empty body, not an error."""
    large_library(monkeypatch, bodies_read=2)
    forget()
    skills = write_library(tmp_path / "skills")
    router(skills, tmp_path / "idx", FakeEncoder())
    forget()
    refreshed = router(skills, tmp_path / "idx", FakeEncoder())
    path = skills / "sql-tuning" / "SKILL.md"
    path.write_text(path.read_text().replace("Run EXPLAIN ANALYZE first.", "Vacuum first."), encoding="utf-8")
    (skills / "git-bisect" / "SKILL.md").unlink()
    assert "Vacuum first." in refreshed.source.registry.lookup("sql-tuning").body  # type: ignore[union-attr]
    assert refreshed.source.registry.lookup("git-bisect").body == ""  # type: ignore[union-attr]


def test_texts_kept_under_one_config_are_not_used_under_another(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept texts are the texts of one config's index part: a new process under another body length computes
    the texts again (from the bodies), and scores as a build from scratch under that config."""
    large_library(monkeypatch, bodies_read=2)
    forget()
    skills = write_library(tmp_path / "skills")
    router(skills, tmp_path / "idx", FakeEncoder())
    forget()
    config = RouterConfig(route_above=0, body_tokens=3)
    other = Router.from_skills([str(skills)], "genkit", config, index_folder=str(tmp_path / "idx"),
                               encoder=FakeEncoder())
    forget()
    scratch = Router.from_skills([str(skills)], "genkit", config, index_folder=str(tmp_path / "scratch"),
                                 encoder=FakeEncoder())
    assert_same_scores(other, scratch)
    assert other.body_texts() == scratch.body_texts() and len(other.body_texts()[0].split()) == 3


def test_the_skills_whose_kept_texts_a_build_computed_are_what_it_reports_and_are_kept_with_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build names the skills read back without its config's texts (``texts_computed``): none on a first build,
    every one under a new config, whose kept parses are then kept with those texts too, so the next process under
    either config computes none, and reads no file."""
    large_library(monkeypatch, bodies_read=2)
    forget()
    skills = write_library(tmp_path / "skills")
    first = router(skills, tmp_path / "idx", FakeEncoder())
    assert first.index.report is not None and first.index.report.texts_computed == frozenset()
    config = RouterConfig(route_above=0, body_tokens=3)

    def build(under: RouterConfig) -> Router:
        forget()  # a new process
        return Router.from_skills([str(skills)], "genkit", under, index_folder=str(tmp_path / "idx"),
                                  encoder=FakeEncoder())

    other = build(config)
    assert other.index.report is not None and other.index.report.texts_computed == frozenset(SKILLS)
    reads = counting_reads(monkeypatch)
    for under in (config, RouterConfig(route_above=0)):
        again = build(under)
        assert again.index.report is not None and again.index.report.texts_computed == frozenset(), under
        assert reads == []
    assert_same_scores(again, first)


def test_a_damaged_or_foreign_file_of_parses_by_stamp_is_not_used(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept-parses file of another version or kind, or cut, is not used (every SKILL.md is read, with a note
    naming the file); a damaged line costs the read of its file only."""
    large_library(monkeypatch)
    forget()
    skills = write_library(tmp_path / "skills")
    scratch = router(skills, tmp_path / "scratch", FakeEncoder())
    whole = (tmp_path / "scratch" / fresh.PARSES_FILE).read_bytes()
    head, _, rest = whole.partition(b"\n")
    lines = rest.splitlines()
    # valid JSON still, the same length: only the line's checksum tells (a text kept wrong is never used)
    inside = next(n for n, line in enumerate(lines) if b"good and bad" in line)
    cases = {
        "version": (whole.replace(f'"format": {fresh.PARSES_FORMAT}'.encode(), b'"format": 0'), len(SKILLS),
                    "not usable"),
        "kind": (whole.replace(b'"kind": "GenkitProfile"', b'"kind": "CodexProfile"'), len(SKILLS), "not usable"),
        "header": (b"{cut" + whole[40:], len(SKILLS), "not usable"),
        "one line": (b"\n".join([head, lines[0][:30], *lines[1:]]) + b"\n", 1, "1 damaged line"),
        "inside a text": (b"\n".join([head, *lines[:inside], lines[inside].replace(b"good and bad", b"g00d and bad"),
                                      *lines[inside + 1:]]) + b"\n", 1, "1 damaged line"),
        "cut": (whole[: len(head) + 1 + len(lines[0]) + 1 + 20], len(SKILLS) - 1, "1 damaged line"),
    }
    for name, (damaged, read, note) in cases.items():
        (tmp_path / "idx").mkdir(exist_ok=True)
        (tmp_path / "idx" / fresh.PARSES_FILE).write_bytes(damaged)
        forget()
        reads = counting_reads(monkeypatch)
        got = router(skills, tmp_path / "idx", FakeEncoder())
        assert len(reads) == read, name
        assert any(note in n and fresh.PARSES_FILE in n for n in got.notes), (name, got.notes)
        assert_same_scores(got, scratch)
        assert fields(got.skills) == fields(scratch.skills)
        monkeypatch.undo()
        large_library(monkeypatch)


def test_a_new_process_after_one_edit_hashes_only_the_edited_skills_texts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept parses hold each text's digest: a new process after one body edit hashes the edited skill's texts
    only (BM25's term counts and the index's skill hashes find the others by their kept digests), and scores as a
    build from scratch."""
    large_library(monkeypatch)
    forget()
    skills = write_library(tmp_path / "skills")
    router(skills, tmp_path / "idx", FakeEncoder())
    edit_body(skills)
    forget()
    digest = bm25.text_digest
    hashed = recording(monkeypatch, bm25, "text_digest")
    refreshed = router(skills, tmp_path / "idx", FakeEncoder())
    edited = [s.id for s in refreshed.skills].index("poem-writer")
    texts = refreshed.index.source.build_texts().texts
    others = {text for column in texts.values() for n, text in enumerate(column) if n != edited and text}
    assert any("Villanelles" in text for text in hashed) and not others & set(hashed), hashed
    assert len(hashed) <= 8, hashed  # its texts and its body's passages (router.passages), each once
    monkeypatch.setattr(bm25, "text_digest", digest)
    forget()
    assert_same_scores(refreshed, router(skills, tmp_path / "scratch", FakeEncoder()))


def test_edits_are_appended_and_the_file_is_written_whole_when_old_lines_pile_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new process after an edit appends the changed file's line (a later line for a file replaces an
    earlier one); past COMPACT_RATIO lines per entry the file is written whole again, one line per file."""
    large_library(monkeypatch)
    monkeypatch.setattr(fresh, "COMPACT_RATIO", 1.0)
    forget()
    skills = write_library(tmp_path / "skills")
    router(skills, tmp_path / "idx", FakeEncoder())
    kept = tmp_path / "idx" / fresh.PARSES_FILE
    assert len(kept.read_bytes().splitlines()) == 1 + len(SKILLS)
    path = skills / "poem-writer" / "SKILL.md"
    sizes = []
    for n in range(70):
        path.write_text(path.read_text().replace("Count syllables", f"Form {n}. Count syllables", 1), encoding="utf-8")
        forget()
        got = router(skills, tmp_path / "idx", FakeEncoder())
        sizes.append(len(kept.read_bytes().splitlines()))
        assert f"Form {n}." in got.source.registry.lookup("poem-writer").body  # type: ignore[union-attr]
    assert sizes[:3] == [1 + len(SKILLS) + 1, 1 + len(SKILLS) + 2, 1 + len(SKILLS) + 3]
    assert min(sizes) == 1 + len(SKILLS) and max(sizes) <= 1 + len(SKILLS) + 64 + 1
    forget()
    reads = counting_reads(monkeypatch)
    router(skills, tmp_path / "idx", FakeEncoder())
    assert reads == []


def test_the_passage_size_limit_is_where_bodies_are_all_read() -> None:
    assert fresh._ALL_BODIES_READ == passages.MAX_SKILLS


def test_a_kept_entry_that_does_not_decode_costs_the_read_of_its_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    large_library(monkeypatch)
    forget()
    skills = write_library(tmp_path / "skills")
    scratch = router(skills, tmp_path / "scratch", FakeEncoder())
    kept = tmp_path / "scratch" / fresh.PARSES_FILE
    head, *lines = kept.read_bytes().splitlines()
    import json
    import zlib

    key, stamp, _ = json.loads(lines[2][9:])  # after its checksum: 8 hexadecimal digits and a space
    entry = json.dumps([key, stamp, {"\0skill": ["too", "short"]}]).encode()
    lines[2] = b"%08x " % zlib.crc32(entry) + entry  # whole, so it is read, and does not decode
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / fresh.PARSES_FILE).write_bytes(b"\n".join([head, *lines]) + b"\n")
    forget()
    reads = counting_reads(monkeypatch)
    got = router(skills, tmp_path / "idx", FakeEncoder())
    assert len(reads) == 0  # the file was read by the same parse (read_skill_file), not by the discovery
    assert any("damaged entry" in n for n in got.notes)
    assert_same_scores(got, scratch)
    assert fields(got.skills) == fields(scratch.skills)


def test_a_root_given_twice_gets_the_same_kept_parse_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    large_library(monkeypatch)
    forget()
    skills = write_library(tmp_path / "skills")
    twice = [str(skills), str(skills)]
    Router.from_skills(twice, "genkit", RouterConfig(route_above=0), index_folder=str(tmp_path / "idx"),
                       encoder=FakeEncoder())
    forget()
    reads = counting_reads(monkeypatch)
    got = Router.from_skills(twice, "genkit", RouterConfig(route_above=0), index_folder=str(tmp_path / "idx"),
                             encoder=FakeEncoder())
    assert reads == [] and sorted(s.id for s in got.skills) == sorted(SKILLS)
    assert fields(got.skills) == fields(router(skills, tmp_path / "scratch", FakeEncoder()).skills)
