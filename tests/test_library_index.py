"""Building is explicit: LibraryIndex.build writes nothing, save() writes the folder once, and a router over a
built index routes without building (router/index.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexes import FakeEncoder
from router.config import RouterConfig
from router.errors import IndexSaveError
from router.index import LibraryIndex
from router.routing import Router
from router.spec import LibrarySpec
from serve_support import write_skill

SKILLS = {"weather-forecast": "Give the weather forecast for a city.", "go-review": "Review Go code for bugs.",
          "sql-tuning": "Speed up a slow SQL query."}


@pytest.fixture()
def spec(tmp_path: Path) -> LibrarySpec:
    for name, description in SKILLS.items():
        write_skill(tmp_path / "skills", name, description)
    return LibrarySpec.create([str(tmp_path / "skills")], profile="genkit", index_dir=tmp_path / "idx")


def test_build_writes_nothing_and_save_writes_once(spec: LibrarySpec, tmp_path: Path) -> None:
    encoder = FakeEncoder()
    index, report = LibraryIndex.build(spec, RouterConfig(route_above=0), encoder=encoder)
    # one description each and the bodies' one head passage ("Steps.", the same body for all three)
    assert report.embedded == 3 + 1 and encoder.calls == 3 + 1
    assert not (tmp_path / "idx").exists()
    assert index.save() is True and (tmp_path / "idx" / "manifest.json").is_file()
    assert index.save() is False
    again, report = LibraryIndex.build(spec, RouterConfig(route_above=0), encoder=encoder)
    assert report.embedded == 0 and encoder.calls == 3 + 1 and again.save() is False


def test_a_router_over_a_built_index_routes_without_building(spec: LibrarySpec) -> None:
    encoder = FakeEncoder()
    index, _ = LibraryIndex.build(spec, RouterConfig(route_above=0, k=2), encoder=encoder)
    router = Router.from_index(index)
    assert router.signals is index.signals
    ranked = [m.id for m in router.rank("weather forecast for Lyon")]
    assert encoder.calls == 3 + 1 + 1  # the build's descriptions and head, then the request, nothing else
    assert ranked == [m.id for m in Router.from_spec(spec, RouterConfig(route_above=0, k=2),
                                                     encoder=FakeEncoder()).rank("weather forecast for Lyon")]
    assert ranked[0] == "weather-forecast" and router.build_report is index.report  # the index's own build


def test_a_save_that_cannot_write_names_the_folder(tmp_path: Path, spec: LibrarySpec) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    spec = LibrarySpec.create(spec.roots, profile="genkit", index_dir=blocked / "idx")
    index, _ = LibraryIndex.build(spec, RouterConfig(route_above=0), encoder=FakeEncoder())
    with pytest.raises(IndexSaveError, match=f"^the index could not be saved to {blocked / 'idx'}: "):
        index.save()
