"""``skill-router setup``: the hook merged into the harness's settings (others kept, idempotent, backed up, the
absolute executable), and ``--remove`` giving back the very bytes that were there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_support import run
from router.cli import setup


class Done:
    def __init__(self, result: tuple[int, str, str]) -> None:
        self.code, self.out, self.err = result


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    return lambda argv: Done(run(capsys, *argv))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    return tmp_path / "home"


ORIGINAL = (b'{"model":"opus",  "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", '
            b'"command": "echo mine"}]}],\n "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}')


def test_the_hook_is_merged_once_and_removed_byte_for_byte(run_cli, home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.write_bytes(ORIGINAL)
    first = run_cli(["setup", "claude-code", "--settings-only"])
    assert first.code == 0 and f"{settings}: hook written (backup: {settings}.skill-router-backup)" in first.out
    written = json.loads(settings.read_text())
    assert written["model"] == "opus" and written["hooks"]["Stop"] == [{"hooks": [{"type": "command",
                                                                                   "command": "true"}]}]
    mine, ours = written["hooks"]["UserPromptSubmit"]
    assert mine == {"hooks": [{"type": "command", "command": "echo mine"}]}
    assert ours == {"hooks": [{"type": "command", "command": setup.hook_command("claude-code"), "timeout": 10}]}
    assert Path(setup.executable()[0]).is_absolute() and setup.executable()[0].startswith(str(Path(sys.executable)
                                                                                              .parent))
    after_first = settings.read_bytes()
    again = run_cli(["setup", "claude-code", "--settings-only"])
    assert f"{settings}: already set up, unchanged" in again.out and settings.read_bytes() == after_first
    removed = run_cli(["setup", "claude-code", "--remove"])
    assert f"{settings}: restored from its backup, byte for byte" in removed.out
    assert settings.read_bytes() == ORIGINAL and not Path(f"{settings}.skill-router-backup").exists()


def test_remove_after_an_edit_takes_out_only_the_hook(run_cli, home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.write_bytes(ORIGINAL)
    run_cli(["setup", "claude-code", "--settings-only"])
    edited = json.loads(settings.read_text())
    edited["theme"] = "dark"
    settings.write_text(json.dumps(edited))
    removed = run_cli(["setup", "claude-code", "--remove"])
    assert "edited since setup, so only the skill-router hook was taken out" in removed.out
    assert json.loads(settings.read_text()) == {**json.loads(ORIGINAL), "theme": "dark"}


def test_a_file_setup_created_is_removed_again(run_cli, home: Path, tmp_path: Path) -> None:
    local = tmp_path / ".claude" / "settings.local.json"
    assert "hook written (new file)" in run_cli(["setup", "claude-code", "--scope", "project",
                                                 "--settings-only"]).out
    assert json.loads(local.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].endswith(
        " hook claude-code")
    assert "removed (setup had created it)" in run_cli(["setup", "claude-code", "--scope", "project",
                                                        "--remove"]).out
    assert not local.exists()


def test_the_http_form_sends_the_token_through_an_allowed_variable(run_cli, home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    run_cli(["setup", "claude-code", "--http", "--port", "8799", "--settings-only"])
    written = json.loads(settings.read_text())
    token = Path(home.parent / "skill-router" / "token").read_text().strip()
    assert written == {"hooks": {"UserPromptSubmit": [{"hooks": [{
        "type": "http", "url": "http://127.0.0.1:8799/v1/hooks/claude-code",
        "headers": {"Authorization": "Bearer $SKILL_ROUTER_TOKEN"}, "allowedEnvVars": ["SKILL_ROUTER_TOKEN"],
        "timeout": 10}]}]}, "env": {"SKILL_ROUTER_TOKEN": token}}
    # switching back to the command form replaces the http hook and drops the token
    run_cli(["setup", "claude-code", "--settings-only"])
    assert json.loads(settings.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": setup.hook_command("claude-code"), "timeout": 10}]}]}}


def test_codex_gets_hooks_json_and_is_told_how_the_hook_becomes_trusted(run_cli, home: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(home))  # no codex on PATH
    done = run_cli(["setup", "codex", "--settings-only"])
    hooks_json = home / ".codex" / "hooks.json"
    assert json.loads(hooks_json.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": setup.hook_command("codex"), "timeout": 10}]}]}}
    assert done.code == 1 and "the hook is not trusted yet and 'codex exec' skips it" in done.out
    assert "skill-router setup codex --codex /path/to/codex" in done.out


def test_settings_that_are_not_json_are_left_alone(run_cli, home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.write_bytes(b'{"model": "opus",')
    done = run_cli(["setup", "claude-code", "--settings-only"])
    assert done.code == 2 and "is not valid JSON" in done.err and "nothing was changed" in done.err
    assert settings.read_bytes() == b'{"model": "opus",'
