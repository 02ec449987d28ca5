"""Importing the package and asking the command for help must not load the heavy embedding stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "sentence_transformers", "faiss")
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "skill-router"


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


def _heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_import_router_leaves_heavy_modules_unloaded(tmp_path: Path) -> None:
    done = _run("import sys, json, router; print(json.dumps(sorted(sys.modules)))", tmp_path)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout)
    assert "router" in modules
    assert _heavy(modules) == []


def test_help_leaves_heavy_modules_unloaded(tmp_path: Path) -> None:
    code = ("import sys, json, contextlib, io, router.cli\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    try:\n"
            "        router.cli.main(['--help'])\n"
            "    except SystemExit as exc:\n"
            "        status = exc.code\n"
            "print(json.dumps({'status': status, 'help': out.getvalue(), 'modules': sorted(sys.modules)}))")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == 0
    assert report["help"].startswith("usage: skill-router")
    assert "router.cli.library" in report["modules"]  # the parser really was built
    assert _heavy(report["modules"]) == []


def test_subcommand_help_leaves_heavy_modules_unloaded(tmp_path: Path) -> None:
    code = ("import sys, json, contextlib, io, router.cli\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    try:\n"
            "        router.cli.main(['route', '--help'])\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(json.dumps({'help': out.getvalue(), 'modules': sorted(sys.modules)}))")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "--queries" in report["help"]
    assert _heavy(report["modules"]) == []


def test_python_dash_m_and_console_script_print_help(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    by_module = subprocess.run([sys.executable, "-m", "router.cli", "--help"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=60)
    assert by_module.returncode == 0, by_module.stderr
    assert by_module.stdout.startswith("usage: skill-router")
    if SCRIPT.exists():
        by_script = subprocess.run([str(SCRIPT), "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                                   timeout=60)
        assert by_script.returncode == 0, by_script.stderr
        assert by_script.stdout == by_module.stdout
