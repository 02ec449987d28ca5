"""``skill-router doctor [--profile P] [--json]``: is the prompt hook working, and if not, what fixes it.

Checks the chain a prompt goes through, in order, each step printed with what it found and, when it fails, the
command that fixes it: skills found, index built and fresh, the model's ONNX export cached, the warm server up,
the hook in the harness's settings (and trusted, for Codex), a sample prompt's round trip, the last hook
failures. Exit 0 when every step passes, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SAMPLE_PROMPT = "review my code for bugs before I commit"
#: A hook failure this recent fails the check (older ones are shown only).
RECENT_FAILURE_S = 3600


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    found: str
    fix: str = ""


def register(commands: Any) -> None:
    p = commands.add_parser("doctor", help="check the prompt hook's chain and say what fixes a broken step")
    p.add_argument("--profile", choices=("claude-code", "codex"), default="claude-code",
                   help="the harness whose hook is checked (default claude-code)")
    p.add_argument("--json", action="store_true", help="print the steps as JSON")
    p.set_defaults(run=cmd_doctor)


def cmd_doctor(args: Any) -> int:
    steps = diagnose(args.profile, Path.cwd())
    if args.json:
        from router.cli.common import print_json

        print_json({"ok": all(s.ok for s in steps), "steps": [asdict(s) for s in steps]})
    else:
        for step in steps:
            print(f"{'ok  ' if step.ok else 'FAIL'} {step.name}: {step.found}")
            if not step.ok and step.fix:
                print(f"     fix: {step.fix}")
    return 0 if all(s.ok for s in steps) else 1


def diagnose(harness: str, cwd: Path) -> list[Step]:
    from router import daemon

    library = daemon.Library.of(harness, str(cwd))
    setup = f"skill-router setup {harness}"
    steps = [_skills(library, setup)]
    index = daemon.index_folder(library)
    steps.append(_index(library, index, setup))
    steps.append(_export(library, setup))
    steps.append(_server(library, harness))
    steps.append(_hook(harness, cwd, setup))
    sample = _sample(harness, cwd)
    steps += [sample, _failures(harness, sample.ok)]
    return steps


def _skills(library: Any, setup: str) -> Step:
    from router.library import from_folders

    try:
        loaded = from_folders(list(library.skills) or None, library.profile)
    except Exception as exc:
        return Step("skills", False, f"cannot read the skills: {exc}", f"fix the folder, then {setup}")
    count = len(loaded.registry)
    errors = list(loaded.notes)
    found = f"{count} skills" + (f", {len(errors)} not loaded (first: {errors[0]})" if errors else "")
    if not count:
        return Step("skills", False, f"no {library.profile} skills seen from {library.cwd}",
                    f"put skills where {library.profile} reads them (skill-router list --profile {library.profile})")
    return Step("skills", not errors, found, f"skill-router lint --profile {library.profile}")


def _newest_skill_file(library: Any) -> float:
    from router.library import skill_folders

    newest = 0.0
    for folder in skill_folders(list(library.skills) or None, library.profile):
        for root, _, files in os.walk(folder):
            for name in files:
                if name == "SKILL.md":
                    try:
                        newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
                    except OSError:
                        pass
    return newest


def _index(library: Any, folder: str, setup: str) -> Step:
    manifest = os.path.join(folder, "manifest.json")
    try:
        built = os.stat(manifest).st_mtime
    except OSError:
        return Step("index", False, f"not built ({folder} has no manifest.json): a prompt cannot be routed "
                                    "in-process while no server runs", setup)
    stale = _newest_skill_file(library) > built
    found = f"{folder}, built {time.strftime('%Y-%m-%d %H:%M', time.localtime(built))}"
    return Step("index", True, found + (" (a SKILL.md changed since: refreshed on the next load)" if stale else ""))


def _export(library: Any, setup: str) -> Step:
    try:
        from indexes.onnx_encoder import MANIFEST, export_dir

        folder = export_dir(library.model)
    except Exception as exc:
        return Step("model export", False, f"cannot be used: {exc}", "pip install 'skill-router[onnx]', then "
                                                                      + setup)
    if not (folder / MANIFEST).exists():
        return Step("model export", False, f"not made yet ({folder})", setup)
    return Step("model export", True, f"{folder}{_requests_graph(folder)}")


def _requests_graph(folder: Any) -> str:
    """What embeds requests, said after the export's folder: its int8 copy, or why the float graph does (not a
    failure: the answers are the same within noise, only slower)."""
    from router import encoders

    if not encoders.int8_enabled():
        return f", requests by the float graph ({encoders.INT8_ENV}=0)"
    try:
        from indexes.onnx_encoder import int8_file, read_manifest

        manifest = read_manifest(folder)
    except Exception as exc:
        return f", requests by the float graph ({exc})"
    if int8_file(folder, manifest) is not None:
        return ", requests by its int8 copy"
    record = manifest.get("int8")
    if isinstance(record, dict) and record.get("passed") is False:
        return f", requests by the float graph (its int8 copy failed its check: cosine {record.get('min_cosine')})"
    return ", requests by the float graph (no int8 copy yet: 'skill-router setup' or the next index build makes it)"


def _metrics(state: Any, harness: str) -> str:
    import urllib.request

    from router import daemon

    request = urllib.request.Request(f"{state.url}/metrics", headers=daemon.auth_headers(state))
    opener = daemon._opener()
    with opener.open(request, timeout=5) as answer:
        text = answer.read().decode("utf-8", "replace")
    route = f'route="/v1/hooks/{harness}"'
    count, buckets = 0.0, []
    for line in text.splitlines():
        if line.startswith("skill_router_requests_total{") and route in line:
            count += float(line.rsplit(" ", 1)[1])
        if line.startswith("skill_router_request_seconds_bucket{") and route in line:
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    found = f"{count:.0f} hook requests"
    total = buckets[-1][1] if buckets else 0
    if total:
        def quantile(q: float) -> str:
            bound = next(b for b, n in buckets if n >= q * total)
            return f"<= {bound * 1000:.0f} ms" if bound != float("inf") else "over the largest bucket"

        found += f", p50 {quantile(0.5)}, p99 {quantile(0.99)}"
    return found


def _server(library: Any, harness: str) -> Step:
    from router import daemon

    state = daemon.live_state(library)
    start = f'skill-router route --daemon --profile {harness} "test"'
    if state is None:
        recorded = daemon.read_state(daemon.state_file(library))
        why = ("its state file names a process that is gone" if recorded is not None else "none runs")
        return Step("server", False, f"{why}; the next prompt starts one but gets nothing itself", start)
    if not state.url:
        return Step("server", False, f"pid {state.pid} is starting (log {daemon.log_file(library)})",
                    f"wait a few seconds; if it stays so, see the log and run skill-router stop, then {start}")
    try:
        import urllib.request

        request = urllib.request.Request(f"{state.url}/readyz", headers=daemon.auth_headers(state))
        opener = daemon._opener()
        with opener.open(request, timeout=5) as answer:
            ready = json.loads(answer.read().decode("utf-8"))
        usage = _metrics(state, harness)
    except Exception as exc:
        return Step("server", False, f"pid {state.pid} at {state.url} is not ready: {exc} (log "
                                     f"{daemon.log_file(library)})", f"skill-router stop, then {start}")
    uptime = time.time() - state.started
    return Step("server", True, f"pid {state.pid}, version {state.version}, {state.url}, up {uptime / 60:.0f} min, "
                                f"{ready.get('skills')} skills, {usage}")


def _hook(harness: str, cwd: Path, setup: str) -> Step:
    from router.cli import setup as installer
    from router.files import read_text

    places = [installer.settings_path(harness, scope, cwd) for scope in ("user", "project")]
    if harness == "claude-code":
        places.append(cwd / ".claude" / "settings.json")
    for path in places:
        try:
            settings = json.loads(read_text(path, 1 << 20))
        except (OSError, ValueError):
            continue
        groups = (settings.get("hooks") or {}).get("UserPromptSubmit") or [] if isinstance(settings, dict) else []
        for group in groups:
            for handler in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if installer.is_ours(handler, harness):
                    command = handler.get("command")
                    if command and not os.path.exists(command.split()[0]):
                        return Step("hook", False, f"{path} runs {command.split()[0]}, which does not exist", setup)
                    found = f"{path}: {command or handler.get('url')}"
                    if harness == "codex":
                        return _trusted(found, cwd, setup)
                    return Step("hook", True, found)
    return Step("hook", False, f"no skill-router UserPromptSubmit hook in {', '.join(str(p) for p in places)}",
                setup)


def _trusted(found: str, cwd: Path, setup: str) -> Step:
    import shutil

    from router.cli import setup as installer

    binary = shutil.which("codex")
    if binary is None:
        return Step("hook", True, found + " (trust not checked: codex is not on PATH)")
    try:
        hooks = installer.codex_hooks(binary, cwd)
    except Exception as exc:
        return Step("hook", True, found + f" (trust not checked: {exc})")
    ours = [h for h in hooks if "skill-router" in json.dumps(h) or "router.cli" in json.dumps(h)]
    if ours and all(h.get("trustStatus") == "trusted" for h in ours):
        return Step("hook", True, found + " (trusted)")
    return Step("hook", False, found + " is not trusted: codex exec skips it without a word",
                f"{setup} --codex {binary}")


def _sample(harness: str, cwd: Path) -> Step:
    from router.cli import setup as installer

    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": SAMPLE_PROMPT, "cwd": str(cwd),
                          "session_id": "skill-router-doctor"})
    start = time.perf_counter()
    try:
        done = subprocess.run([*installer.executable(), "hook", harness], input=payload, capture_output=True,
                              text=True, timeout=30, cwd=str(cwd))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Step("sample prompt", False, f"the hook did not run: {exc}", f"skill-router setup {harness}")
    seconds = time.perf_counter() - start
    if not done.stdout.strip():
        why = done.stderr.strip().removeprefix("skill-router hook: ") or "the router abstained"
        return Step("sample prompt", False, f"no context in {seconds * 1000:.0f} ms: {why}",
                    f"skill-router setup {harness}")
    names = [line[2:].split(":", 1)[0] for line in
             json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"].splitlines()[1:]]
    return Step("sample prompt", True, f"{len(names)} skills in {seconds * 1000:.0f} ms ({', '.join(names)})")


def _failures(harness: str, answering: bool) -> Step:
    """The last failures logged; recent ones fail the check unless the sample prompt just got its context."""
    from router import daemon

    found = [f for f in daemon.failures(50) if f.get("harness") == harness][-5:]
    if not found:
        return Step("hook failures", True, f"none logged ({daemon.failure_log()})")
    last = found[-1]
    try:
        age = time.time() - time.mktime(time.strptime(last["time"], "%Y-%m-%dT%H:%M:%S"))
    except (KeyError, ValueError):
        age = 0.0
    lines = "; ".join(f"{f.get('time')}: {f.get('message')}" for f in found[-3:])
    recent = age < RECENT_FAILURE_S and not answering
    return Step("hook failures", not recent, f"{len(found)} recent, last {age / 60:.0f} min ago: {lines}",
                f"fix what the last one says; the full list is in {daemon.failure_log()}")
