"""Terminal tables that fit: the skill name is never cut; score columns give way first, and the caption says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from router.cli import main
from router.tables import Column, fitted_table

LONG = "weather-forecast-for-the-coming-fortnight"


def render(table, width: int) -> str:
    from rich.console import Console

    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(table)
    console.file.close()
    return console.export_text()


COLUMNS = [Column("rank"), Column("skill", justify="left", name=True), Column("fused", drop=1),
           Column("bm25", drop=2), Column("dense", drop=3)]
ROWS = [["1", LONG, "8.184", "6.753 (1)", "0.304 (1)"], ["2", "git-commit", "5.976", "3.280 (2)", "0.245 (2)"]]


def test_a_table_that_fits_keeps_every_column() -> None:
    fitted = fitted_table(COLUMNS, ROWS, 120)
    assert fitted.left_out == ()
    text = render(fitted.table, 120)
    assert f"│    1 │ {LONG} │ 8.184 │ 6.753 (1) │ 0.304 (1) │" in text


def test_narrower_the_last_score_columns_go_first_and_the_caption_names_them() -> None:
    fitted = fitted_table(COLUMNS, ROWS, 60, left_out_note="left out: {}")
    assert fitted.left_out == ("bm25", "dense")
    text = render(fitted.table, 60)
    assert f"│    1 │ {LONG} │ 8.184 │" in text
    assert "left out: bm25, dense" in text
    assert "…" not in text


def test_when_even_the_name_does_not_fit_it_wraps_whole() -> None:
    fitted = fitted_table(COLUMNS, ROWS, 30)
    assert fitted.left_out == ("fused", "bm25", "dense")
    text = render(fitted.table, 30)
    assert "…" not in text
    assert LONG in "".join(line.strip("│ ").split("│")[-1].strip() for line in text.splitlines()
                           if line.startswith("│"))


def _library(root: Path) -> Path:
    for name, text in {LONG: "Forecast rain and temperature for the coming two weeks in any city.",
                       "current-weather-conditions-right-now": "The weather right now: temperature, wind, rain.",
                       "git-commit": "Write a conventional commit message from a staged diff."}.items():
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {text}\n---\n{text} Body.\n")
    return root


@pytest.mark.parametrize("width", [60, 80, 120, None])
def test_route_and_list_never_cut_a_skill_name(tmp_path: Path, capsys, monkeypatch, width: int | None,
                                               encoder) -> None:
    library = _library(tmp_path / "skills")
    if width is None:  # piped: rich's default of 80 columns
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    argv = ["--skills", str(library), "--index-dir", str(tmp_path / "idx")]
    assert main(["route", "will it rain in Lyon in the next two weeks?", *argv]) == 0
    out = capsys.readouterr().out
    assert LONG in out and "current-weather-conditions-right-now" in out and "…" not in out
    assert max(len(line) for line in out.splitlines()) <= (width or 80)
    assert main(["route", "will it rain in Lyon in the next two weeks?", *argv, "--json"]) == 0
    names = [m["name"] for m in json.loads(capsys.readouterr().out)]  # --json stays the machine format
    assert LONG in names and "current-weather-conditions-right-now" in names
    assert main(["list", "--skills", str(library)]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    names = "".join(line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│"))
    assert LONG in (out if width != 60 else names)  # at 60 columns the name wraps onto a second line, whole
