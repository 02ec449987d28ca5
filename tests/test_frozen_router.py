"""A router is a value over a built index: made with from_skills it is built (or loaded) at once, routing writes no
file and changes no attribute, and the passage index is part of the built index (router/index.py, routing.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexes import FakeEncoder
from router.config import RouterConfig
from router.index import LibraryIndex
from router.routing import Router
from router.spec import LibrarySpec
from serve_support import write_skill

SKILLS = {"weather-forecast": ("Give the weather forecast for a city.", "# Forecast\nRead the barometer first.\n"),
          "go-review": ("Review Go code for bugs.", "# Review\nRun go vet, then read the diff.\n"),
          "sql-tuning": ("Speed up a slow SQL query.", "# Tuning\nRead the query plan and add an index.\n")}


@pytest.fixture()
def skills(tmp_path: Path) -> Path:
    for name, (description, body) in SKILLS.items():
        write_skill(tmp_path / "skills", name, description, body=body)
    return tmp_path / "skills"


def files_and_times(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))}


def test_from_skills_builds_at_once_and_a_second_run_loads_what_the_first_saved(skills: Path, tmp_path: Path) -> None:
    encoder = FakeEncoder()
    router = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0), index_folder=str(tmp_path / "i"),
                                encoder=encoder)
    # built before any request: the three descriptions and the bodies' heads (one passage each) embedded, the
    # index and the passage index saved
    assert encoder.calls == 3 + 3 and router.embedded_count == 3 + 3 and router.saved is True
    assert (tmp_path / "i" / "manifest.json").is_file() and (tmp_path / "i" / "passages").is_dir()
    saved = files_and_times(tmp_path / "i")
    again = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0),
                               index_folder=str(tmp_path / "i"), encoder=encoder)
    assert encoder.calls == 3 + 3 and again.embedded_count == 0 and again.saved is None  # loaded, nothing rebuilt
    assert files_and_times(tmp_path / "i") == saved
    assert [m.id for m in again.rank("weather in Lyon")] == [m.id for m in router.rank("weather in Lyon")]


def test_routing_writes_no_file_and_changes_no_attribute(skills: Path, tmp_path: Path) -> None:
    router = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0, k=2),
                                index_folder=str(tmp_path / "i"), encoder=FakeEncoder())
    folder = tmp_path / "i"
    before_files = files_and_times(folder)
    before = dict(vars(router))
    index_before = dict(vars(router.index))
    routing = router.route("barometer forecast for Lyon")
    router.rank_many(["slow query plan", "review the diff"], pin=["go-review"])
    router.score_many([[{"role": "user", "content": "go vet"}, {"role": "user", "content": "then sql"}]])
    router.render("weather")
    assert routing.matches[0].id == "weather-forecast"
    assert files_and_times(folder) == before_files
    assert vars(router).keys() == before.keys()
    assert all(vars(router)[k] is v for k, v in before.items())
    assert all(vars(router.index)[k] is v for k, v in index_before.items())


def test_the_passage_index_is_built_with_the_index_and_saved_by_save(skills: Path, tmp_path: Path) -> None:
    spec = LibrarySpec.create([str(skills)], profile="genkit", index_dir=tmp_path / "i")
    index, _ = LibraryIndex.build(spec, RouterConfig(route_above=0), encoder=FakeEncoder())
    assert "passages" in index.signals.indexes
    assert not (tmp_path / "i").exists()  # built, nothing written
    router = Router.from_index(index)
    assert router.rank("barometer")[0].scores["passages"] > 0
    assert not (tmp_path / "i").exists()  # routing over it writes nothing either
    assert index.save() is True
    assert len(os.listdir(tmp_path / "i" / "passages")) == 1
    loaded, report = LibraryIndex.build(spec, RouterConfig(route_above=0), encoder=FakeEncoder())
    assert report.embedded == 0 and report.pending is None and loaded.save() is False


def test_with_config_shares_the_index_for_ranking_fields_and_builds_one_for_index_fields(skills: Path,
                                                                                          tmp_path: Path) -> None:
    encoder = FakeEncoder()
    router = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0), index_folder=str(tmp_path / "i"),
                                encoder=encoder)
    ranked = router.with_config(k=1, fusion="rrf", weights={"bm25": 1.0})
    assert ranked.signals is router.signals and ranked.config.k == 1 and router.config.k == 5
    assert encoder.calls == 3 + 3  # descriptions, heads
    named = router.with_config(dense_name=True)  # the embedded text changes: built now, for the new texts
    assert named.signals is not router.signals and encoder.calls == 9 and named.embedded_count == 3
    without_passages = router.with_config(weights={"passages": 0.0})  # one signal fewer is built
    assert "passages" not in without_passages.signals.indexes
    assert "passages" in router.signals.indexes


def test_a_library_shown_whole_is_built_too_and_ranks(skills: Path, tmp_path: Path) -> None:
    router = Router.from_skills([str(skills)], "genkit", index_folder=str(tmp_path / "i"), encoder=FakeEncoder())
    assert not router.route("weather").routed  # three skills: shown whole
    assert router.rank("weather", 1)[0].id == "weather-forecast"


class FixedStore:
    """A store that holds its own scores (as PostgreSQL does): the router ranks with them and builds nothing."""

    def __init__(self) -> None:
        self.built = 0

    def index_folder(self, spec: LibrarySpec) -> str | None:
        return None

    def build(self, source, *, persist: bool, progress: bool):
        from router.signals import BuildReport

        self.built += 1
        ids = tuple(s.id for s in source.skills)

        class Scores:
            def __init__(self) -> None:
                self.ids = ids

            def score(self, texts, vectors):
                import numpy as np

                row = [1.0 if i == "sql-tuning" else 0.0 for i in ids]
                return {"bm25": np.array([row] * len(texts)), "dense": np.array([row] * len(texts))}

        return Scores(), BuildReport()


def test_a_store_supplies_the_scores_through_the_declared_seam(skills: Path, tmp_path: Path) -> None:
    store = FixedStore()
    router = Router.from_skills([str(skills)], "genkit", RouterConfig(route_above=0),
                                index_folder=str(tmp_path / "i"), encoder=FakeEncoder(), store=store)
    assert store.built == 1 and router.index_folder is None and not (tmp_path / "i").exists()
    assert router.rank("weather in Lyon", 1)[0].id == "sql-tuning"
    assert router.with_config(k=1).index.store is store and store.built == 1  # ranking fields: the same index
