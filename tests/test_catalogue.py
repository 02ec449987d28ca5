"""JSONL tool catalogues (router/catalog.py): real datasets load; malformed files fail naming file and line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from router.catalog import load_catalog
from router.errors import CatalogError


def shared_folder() -> Path | None:
    candidates = [Path(__file__).resolve().parents[2] / "shared"]
    if os.environ.get("SKILL_ROUTER_SHARED"):
        candidates.append(Path(os.environ["SKILL_ROUTER_SHARED"]))
    return next((c for c in candidates if (c / "datasets").is_dir()), None)


SHARED = shared_folder()
needs_shared = pytest.mark.skipif(SHARED is None, reason="the shared datasets folder (../shared relative to the "
                                                         "repository, or $SKILL_ROUTER_SHARED) is not present")


def write_rows(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@needs_shared
@pytest.mark.parametrize(("dataset", "rows"), [("metatool", 199), ("sealtools", 4076)])
def test_real_catalogues_load(dataset, rows):
    path = SHARED / "datasets" / dataset / "tools.jsonl"
    skills = load_catalog(path)
    assert len(skills) == rows
    expected = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert [s.id for s in skills] == [row.get("id") or row["name"] for row in expected]
    assert [s.description for s in skills] == [row.get("description", "").strip() for row in expected]
    assert all(s.path == "" and s.body == "" for s in skills)


@needs_shared
def test_metatool_first_row():
    first = load_catalog(SHARED / "datasets" / "metatool" / "tools.jsonl")[0]
    assert (first.id, first.name, first.description) == (
        "timeport", "timeport",
        "Begin an exciting journey through time, interact with unique characters, and learn history in this "
        "time-travel game!")


def test_rows_become_skills(tmp_path):
    path = write_rows(tmp_path / "tools.jsonl",
                      '{"id": "t1", "name": "Search", "description": "  Find things.  ", "field": "web"}',
                      "",
                      '{"name": "only-name", "description": "d", "examples": ["find a cat", "look up dogs"]}',
                      '{"id": "id-only"}')
    skills = load_catalog(path)
    assert [(s.id, s.name, s.description) for s in skills] == [
        ("t1", "Search", "Find things."), ("only-name", "only-name", "d"), ("id-only", "id-only", "")]
    assert dict(skills[0].metadata) == {"field": "web"}
    assert skills[1].examples == ("find a cat", "look up dogs")


def test_line_separators_inside_a_row_are_not_row_ends(tmp_path):
    path = tmp_path / "tools.jsonl"
    row = {"id": "sep", "name": "sep", "description": "one\u2028two\x85three\x1cfour"}
    path.write_text(json.dumps(row, ensure_ascii=False) + "\r\n", encoding="utf-8")
    (skill,) = load_catalog(path)
    assert skill.description == "one\u2028two\x85three\x1cfour"


def test_bad_json_line(tmp_path):
    path = write_rows(tmp_path / "tools.jsonl", '{"id": "a", "name": "a"}', "not json")
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert str(caught.value) == f"{path}:2: not valid JSON (Expecting value at column 1)"


def test_row_that_is_not_an_object(tmp_path):
    path = write_rows(tmp_path / "tools.jsonl", '["a"]')
    with pytest.raises(CatalogError, match=r":1: expected a JSON object, got list$"):
        load_catalog(path)


def test_missing_name(tmp_path):
    path = write_rows(tmp_path / "tools.jsonl", '{"id": "a"}', '{"description": "no name or id"}')
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert str(caught.value) == f"{path}:2: a row needs a non-empty string 'name' or 'id'"


def test_repeated_id(tmp_path):
    path = write_rows(tmp_path / "tools.jsonl", '{"id": "a", "name": "x"}', '{"id": "b", "name": "y"}',
                      '{"id": "a", "name": "z"}')
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert str(caught.value) == f"{path}:3: id 'a' appears more than once"


def test_wrong_field_types(tmp_path):
    with pytest.raises(CatalogError, match=r":1: 'description' of 'a' must be a string$"):
        load_catalog(write_rows(tmp_path / "d.jsonl", '{"id": "a", "description": 3}'))
    with pytest.raises(CatalogError, match=r":1: 'examples' of 'a' must be a list of strings$"):
        load_catalog(write_rows(tmp_path / "e.jsonl", '{"id": "a", "examples": "one"}'))
    with pytest.raises(CatalogError, match=r":1: 'id' must be a string$"):
        load_catalog(write_rows(tmp_path / "i.jsonl", '{"id": 7, "name": "a"}'))


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(CatalogError) as caught:
        load_catalog(missing)
    assert str(caught.value) == (f"catalogue '{missing}' does not exist: pass --catalog with a JSONL file of "
                                 '{"id", "name", "description"} rows')


def test_empty_and_undecodable_files(tmp_path):
    empty = write_rows(tmp_path / "empty.jsonl", "", "  ")
    with pytest.raises(CatalogError) as caught:
        load_catalog(empty)
    assert str(caught.value) == f"catalogue '{empty}' has no rows"
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(b'{"id": "caf\xe9"}\n')
    with pytest.raises(CatalogError, match=f"^catalogue '{latin1}' cannot be read: "):
        load_catalog(latin1)


def test_a_repeated_name_is_named_by_its_id_in_every_command(tmp_path, capsys):
    from router.cli import main

    path = tmp_path / "tools.jsonl"
    path.write_text('{"id": "w1", "name": "weather", "description": "Forecast by city."}\n'
                    '{"id": "w2", "name": "weather", "description": "Radar maps."}\n', encoding="utf-8")
    assert [(s.id, s.name) for s in load_catalog(path)] == [("w1", "weather"), ("w2", "w2")]
    assert main(["list", "--catalog", str(path), "--json"]) == 0
    assert [row["name"] for row in json.loads(capsys.readouterr().out)] == ["weather", "w2"]
    main(["use", "w2", "--catalog", str(path), "--profile", "unreal"])
    assert "not found" not in capsys.readouterr().out  # the name resolves (a row has no file to load)
    assert main(["prompt", "--catalog", str(path), "--profile", "genkit"]) == 0
    out = capsys.readouterr().out
    assert "Radar maps." in out and "Forecast by city." in out


def test_a_repeated_name_whose_id_is_also_a_name_is_an_error(tmp_path):
    path = tmp_path / "tools.jsonl"
    path.write_text('{"id": "a", "name": "b"}\n{"id": "b", "name": "x"}\n{"id": "c", "name": "b"}\n'
                    '{"id": "x", "name": "b"}\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"tools.jsonl:4: name 'b' repeats line 1 and id 'x' is already a name"):
        load_catalog(path)
