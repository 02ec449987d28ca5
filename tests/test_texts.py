"""What the router indexes for each skill: name words, lenient descriptions and body text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from router.profiles import get_profile
from router.skill import Skill
from router.texts import body_text, index_text, is_degenerate, lenient_description, name_words

BODY = """# Weather forecast

Intro line that is not a heading.

## Steps ##

```bash
# fetch the forecast (a comment, not a heading)
curl https://example.invalid
```

#hashtag is not a heading either
### Pitfalls
"""


def write(root: Path, folder: str, front: str, body: str = "# Title\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "words"), [
    ("go-code-review", "go code review"),
    ("getWeatherForecast", "get Weather Forecast"),
    ("snake_case_name", "snake case name"),
    ("HTTPServer2", "HTTP Server 2"),
    ("pdf", "pdf"),
    ("--", ""),
])
def test_name_words(name: str, words: str) -> None:
    assert name_words(name) == words


@given(st.text(alphabet="abcXYZ019-_ ", max_size=20))
def test_name_words_keeps_every_letter_and_digit(name: str) -> None:
    assert name_words(name).replace(" ", "") == "".join(ch for ch in name if ch.isalnum())


@pytest.mark.parametrize(("description", "degenerate"), [
    ("", True), ("  ", True), ("|", True), (">", True), ("|-", True), (">+", True),
    ("No description provided.", True), ("Use for CSV files.", False), ("| pipes in text", False),
])
def test_is_degenerate(description: str, degenerate: bool) -> None:
    assert is_degenerate(description) is degenerate


def test_block_description_under_unreal_indexes_the_lenient_yaml_text(tmp_path: Path) -> None:
    write(tmp_path, "forecast", "name: forecast\ndescription: |\n  Give the weather forecast\n  for the next days.\n")
    skill = get_profile("unreal").discover([str(tmp_path)]).skills[0]
    assert skill.description == "|"  # what the harness shows stays untouched
    assert lenient_description(skill) == "Give the weather forecast for the next days."
    assert index_text(skill) == "forecast. Give the weather forecast for the next days."


def test_quoted_description_under_unreal_adds_the_unquoted_text(tmp_path: Path) -> None:
    write(tmp_path, "forecast", 'name: forecast\ndescription: "Weather: the next days"\n')
    skill = get_profile("unreal").discover([str(tmp_path)]).skills[0]
    assert skill.description == '"Weather: the next days"'
    assert lenient_description(skill) == "Weather: the next days"


def test_plain_description_needs_no_lenient_text(tmp_path: Path) -> None:
    write(tmp_path, "forecast", "name: forecast\ndescription: Give the weather forecast.\n")
    for profile in ("unreal", "genkit", "agentskills"):
        skill = get_profile(profile).discover([str(tmp_path)]).skills[0]
        assert lenient_description(skill) == ""
        assert index_text(skill) == "forecast. Give the weather forecast."


def test_genkit_placeholder_gets_the_lenient_text(tmp_path: Path) -> None:
    # a repeated key fails the Go YAML decode, so genkit shows its placeholder; PyYAML keeps the last value
    write(tmp_path, "forecast", "name: forecast\ndescription: Weather ahead\ndescription: Weather for days ahead\n")
    skill = get_profile("genkit").discover([str(tmp_path)]).skills[0]
    assert skill.description == "No description provided."
    assert lenient_description(skill) == "Weather for days ahead"
    assert index_text(skill) == "forecast. Weather for days ahead"


def test_catalogue_skill_without_file_has_no_lenient_text() -> None:
    assert lenient_description(Skill(name="x", description="|")) == ""
    skill = Skill(name="x", description="|", index_description="Stored lenient text")
    assert index_text(skill) == "x. Stored lenient text"


def test_body_modes() -> None:
    assert body_text(BODY, "none") == ""
    assert body_text(BODY, "headings") == "Weather forecast Steps Pitfalls"
    assert body_text(BODY, "lead", 4) == "# Weather forecast Intro"
    assert body_text("", "headings") == ""
    assert body_text("#\nnext line\n", "headings") == ""


def test_index_text_never_holds_the_body() -> None:
    skill = Skill(name="weather-forecast", description="Forecasts.", body=BODY)
    assert index_text(skill) == "weather forecast. Forecasts."
    assert body_text(BODY, "both", 3) == "Weather forecast Steps Pitfalls # Weather forecast"


_WORDS = st.sampled_from(["a", "bb", "ccc ccc", "x" * 300, "\n\n", "é", "\u3000y", "\t", "  "])


@given(st.lists(_WORDS, max_size=600), st.sampled_from([0, 1, 5, 150]))
def test_the_lead_is_the_first_words_of_the_whole_body(words: list[str], tokens: int) -> None:
    # body_text splits only a prefix of a long body; the words must be those of splitting all of it.
    body = " ".join(words)
    assert body_text(body, "lead", tokens) == " ".join(body.split()[:tokens])
