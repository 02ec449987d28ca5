"""Which skills a request names (:class:`router.ranking.NameTable`): the hashed table gives the positions, in the
order, that a dict of every name's keys gives."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from router.ranking import KeyIndex, NameTable, _NameKeys
from router.skill import Skill
from router.texts import name_words

_WORDS = re.compile(r"[^\W_]+")
NAMES = ["pdf", "PDF Tools", "pdf-tools", "go-code-review", "weather_forecast", "weather-forecast", "x", "makeSlides",
         "make slides", "s3-upload", "S3Upload", "日本語 ツール", "ñandú-fotos", "a-b-c-d-e-f-g", "---", "pdf",
         "csv2json", "CSV to JSON", "review", "code"]


def reference(skills: list[Skill], text: str) -> list[int]:
    """The dict of keys the table replaced: key -> its positions in order, looked up for every run of words."""
    table: dict[str, list[int]] = {}
    longest = 0
    for position, skill in enumerate(skills):
        for variant in {skill.name, name_words(skill.name)}:
            words = [w.lower() for w in _WORDS.findall(variant)]
            if words:
                longest = max(longest, len(words))
                positions = table.setdefault(" ".join(words), [])
                if position not in positions:
                    positions.append(position)
    words = [w.lower() for w in _WORDS.findall(text)]
    found: list[int] = []
    for start in range(len(words)):
        for length in range(1, min(longest, len(words) - start) + 1):
            for position in table.get(" ".join(words[start:start + length]), []):
                if position not in found:
                    found.append(position)
    return found


def test_the_positions_a_dict_of_the_keys_gives() -> None:
    rng = random.Random(3)
    skills = [Skill(name=n, description="d", id=f"{i}-{n}") for i, n in enumerate(NAMES)]
    skills += [Skill(name=f"{rng.choice(['git', 'pdf', 'chart'])}-{rng.choice(['merge', 'fill', 'plot'])}-{i}",
                     description="d", id=f"gen-{i}") for i in range(300)]
    table = NameTable.build(skills)
    vocabulary = [w for s in skills for w in _WORDS.findall(name_words(s.name))] + ["please", "the", "and", "Lyon"]
    texts = ["use the PDF tools and then make slides", "Go code review of s3 upload", "csv to json, or csv2json?",
             "weather forecast for 日本語 ツール", "a b c d e f g", "nothing here", "", "pdf pdf PDF"]
    texts += [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 25))) for _ in range(500)]
    answers = [table.named(t) for t in texts]
    assert answers == [reference(skills, t) for t in texts]
    assert sum(bool(a) for a in answers) > 300 and max(len(a) for a in answers) > 3  # the texts do name skills
    assert table.named("use the PDF tools") == [0, 15, 1, 2]  # pdf (both), then "pdf tools" (two spellings)
    assert table.longest == 7


def test_a_hash_collision_names_nothing() -> None:
    skills = [Skill(name="pdf", description="d")]
    # both of the skill's keys ("pdf") stored under the hash of words the request holds
    keys = _NameKeys(("pdf",), kept=True)
    collided = NameTable(KeyIndex(keys, np.array([0, 1], dtype=np.int32), np.full(2, hash("lighthouse keeper"))), 2)
    assert collided.index.every(["lighthouse keeper", "lighthouse"]) == [[], []]
    assert collided.named("the lighthouse keeper logs") == []
    assert NameTable.build(skills).named("the lighthouse keeper logs") == []
    assert NameTable.build(skills).named("a PDF please") == [0]


def test_a_table_of_no_skills_names_nothing() -> None:
    assert NameTable.build([]).named("pdf") == []


def test_a_key_index_gives_the_positions_a_dict_gives() -> None:
    rng = random.Random(5)
    keys = [rng.choice(["pdf", "git", "chart", "Pdf", "pdf ", "日本語", ""]) for _ in range(400)]
    index = KeyIndex.build(keys)
    reference: dict[str, list[int]] = {}
    for position, key in enumerate(keys):
        reference.setdefault(key, []).append(position)
    asked = ["pdf", "Pdf", "", "PDF", "nothing", "日本語", "git"]
    assert index.every(asked) == [reference.get(k, []) for k in asked]
    assert [index.first(k) for k in asked] == [reference[k][0] if k in reference else -1 for k in asked]
    assert index.first(3) == -1 and index.distinct == len(reference) == 7
    assert KeyIndex.build([]).every(["pdf"]) == [[]] and KeyIndex.build(["a"]).every([]) == []


def test_a_name_tables_keys_are_each_names_and_its_words() -> None:
    keys = _NameKeys(("makeSlides", "---", "PDF Tools"), kept=False)
    assert list(keys) == ["makeslides", "make slides", "", "", "pdf tools", "pdf tools"]
    assert keys[-1] == "pdf tools" and keys[1:3] == ["make slides", ""]
    with pytest.raises(IndexError):
        keys[6]
