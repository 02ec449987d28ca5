"""A replica's registry (:class:`router.pgstore.StoredRegistry`) finds skills by id and name as the registry of the
same skills does, through two sorted hash arrays instead of two dicts, and shares them with the generations that
edit rows in place."""

from __future__ import annotations

import numpy as np
import pytest

from router.errors import SkillNotFoundError
from router.pgstore import StoredRegistry, StoredSkill
from router.registry import SkillRegistry
from router.skill import Skill

ROWS = [("pdf", "pdf"), ("pdf#2", "pdf"), ("weather-forecast", "weather-forecast"), ("s3", "s3-upload"),
        ("x", "make-slides"), ("make-slides", "make-slides-2"), ("日本", "日本語-ツール")]


def stored(rows: list[tuple[str, str]], born: int = 1) -> tuple[StoredSkill, ...]:
    return tuple(StoredSkill.at(None, slot, born, skill_id, name)  # type: ignore[arg-type]
                 for slot, (skill_id, name) in enumerate(rows))


def test_the_same_answers_as_the_registry_of_the_same_skills() -> None:
    mine = StoredRegistry(stored(ROWS))
    theirs = SkillRegistry(Skill(name=name, description="d", id=skill_id) for skill_id, name in ROWS)
    keys = [k for row in ROWS for k in row] + ["PDF", "missing", "", "pdf ", "make", "日本語-ツール"]
    for key in keys:
        for method in ("find", "lookup"):
            got, want = getattr(mine, method)(key), getattr(theirs, method)(key)
            assert (got and got.id) == (want and want.id), (method, key)
        assert (key in mine) == (key in theirs), key
    assert [mine.get(n).id for _, n in ROWS] == [theirs.get(n).id for _, n in ROWS] == \
        ["pdf", "pdf", "weather-forecast", "s3", "x", "make-slides", "日本"]  # a shared name finds its first skill
    assert len(mine) == len(theirs) == 7 and mine.names == theirs.names
    with pytest.raises(SkillNotFoundError) as mine_error:
        mine.get("make-slide")
    with pytest.raises(SkillNotFoundError) as their_error:
        theirs.get("make-slide")
    assert str(mine_error.value) == str(their_error.value)
    assert "did you mean 'make-slides', 'make-slides-2'" in str(mine_error.value)
    assert mine.find(3) is None  # type: ignore[arg-type]


def test_many_rows_are_found_by_id_and_name() -> None:
    rows = [(f"s{i:06d}-tool", f"tool-{i % 5000}") for i in range(20000)]
    mine = StoredRegistry(stored(rows))
    assert all(mine.lookup(skill_id)._slot == i for i, (skill_id, _) in enumerate(rows))  # type: ignore[union-attr]
    assert [mine.find(f"tool-{i}")._slot for i in range(5000)] == list(range(5000))  # type: ignore[union-attr]
    assert mine.find("tool-5000") is None and len(mine) == 20000


def test_a_patched_registry_shares_the_index_and_finds_the_edited_rows_new_skills() -> None:
    class Gen:
        def __init__(self, born: list[int]) -> None:
            self.born = np.array(born, dtype=np.int64)

    before = StoredRegistry(stored(ROWS))
    after = before.patched(Gen([1, 1, 2, 1, 1, 1, 1]), Gen([1] * 7))  # type: ignore[arg-type]
    assert after._ids is before._ids and after._names is before._names
    edited = after.lookup("weather-forecast")
    assert edited is not None and edited._born == 2 and edited is not before.lookup("weather-forecast")
    assert after.find("pdf") is before.find("pdf") and after.get("weather-forecast") is edited
    assert before.lookup("weather-forecast")._born == 1  # type: ignore[union-attr]  # the old one reads its own
