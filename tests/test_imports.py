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


def test_the_distribution_owns_its_top_level_names() -> None:
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    assert set(owners.get("router", ())) == {"skill-router"} and set(owners.get("indexes", ())) == {"skill-router"}


def test_version_names_where_the_packages_live(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "router.cli", "--version"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    from router import __version__

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"skill-router {__version__} (router: {ROOT / 'router'}, "
                                   f"indexes: {ROOT / 'indexes'})")


MODULES = sorted(str(p.relative_to(ROOT).with_suffix("")).replace(os.sep, ".")
                 for package in ("router", "indexes") for p in (ROOT / package).rglob("*.py")
                 if p.name not in ("__main__.py",))


def test_no_module_imports_in_a_circle() -> None:
    """Module-level imports between the project's modules form no cycle (imports inside functions are lazy on
    purpose and not counted), and no ``indexes`` module imports ``router``."""
    import ast

    names = {m.removesuffix(".__init__") for m in MODULES}
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        name = module.removesuffix(".__init__")
        tree = ast.parse((ROOT / (module.replace(".", os.sep) + ".py")).read_text(encoding="utf-8"))
        edges = set()
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = [f"{node.module}.{alias.name}" for alias in node.names]
                targets = [t for t in submodules if t in names] or [node.module]
            edges |= {t for t in targets if t in names and t != name}
        graph[name] = edges
    assert not [n for n, e in graph.items() if n.startswith("indexes") and any(t.startswith("router") for t in e)]
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        assert node not in visiting, f"import cycle: {' -> '.join(visiting[visiting.index(node):] + [node])}"
        visiting.append(node)
        for target in sorted(graph.get(node, ())):
            visit(target)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)


FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "openai", "claude_agent_sdk",
              "google")


def test_import_router_and_its_adapters_package_leaves_every_framework_unloaded(tmp_path: Path) -> None:
    done = _run("import sys, json, router, router.adapters, router.adapters.base\n"
                "print(json.dumps(sorted(sys.modules)))", tmp_path)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout)
    assert "router.adapters.base" in modules
    assert sorted(m for m in modules if m.split(".")[0] in FRAMEWORKS) == []
    assert _heavy(modules) == []


def test_a_command_line_with_a_profile_imports_that_profile_alone(tmp_path: Path) -> None:
    """Checking ``--profile`` imports the profile named, not all of them (codex's alone imports tomllib and its
    listing rules); an unknown name still lists every profile."""
    code = ("import sys, json, router.cli\n"
            "router.cli.build_parser().parse_args(['route', 'rain?', '--profile', 'agentskills'])\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('router.profiles.'))))")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["router.profiles.agentskills", "router.profiles.base"]
    wrong = _run("import router.cli; router.cli.main(['route', 'rain?', '--profile', 'nope'])", tmp_path)
    assert "invalid choice: 'nope' (choose from 'agentskills', 'claude-code', 'codex', 'genkit', 'unreal')" \
        in wrong.stderr
