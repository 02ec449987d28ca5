"""``skill-router setup claude-code|codex``: the prompt hook in one command, and ``--remove`` to undo it.

What it does, in order, printing each step:

1. reads the harness's skills as the profile does from the working folder, and builds the library's index in the
   user cache folder (which also makes the model's ONNX export, so no prompt ever pays for either);
2. writes the hook into the harness's settings file, merged with what is there (other hooks are kept; running it
   again changes nothing), after a byte-exact backup of the file, with the absolute path of this installation's
   ``skill-router`` so the harness's PATH does not matter:

   - claude-code: ``~/.claude/settings.json`` (``--scope user``, the default) or ``.claude/settings.local.json``
     (``--scope project``: the project's own settings that are not committed, since the path is this machine's);
     ``--http`` writes Claude Code's ``{"type": "http"}`` form instead, sending the token as
     ``Authorization: Bearer $SKILL_ROUTER_TOKEN`` (``allowedEnvVars``), the variable set in the same file's
     ``env``;
   - codex: ``$CODEX_HOME/hooks.json`` (user) or ``.codex/hooks.json`` (project). Codex 0.171.0 runs a hook only
     once its hash is trusted (``[hooks.state."<key>"] trusted_hash = "<hash>"`` in ``$CODEX_HOME/config.toml``;
     an untrusted hook is skipped without a word). With a ``codex`` binary (``--codex``, else ``codex`` on PATH)
     setup asks it for the key and hash (``codex app-server``, ``hooks/list``) and writes that entry too;
3. starts the warm server and sends one test prompt through it, printing the round-trip time.

``--remove`` undoes exactly what setup wrote: when the file is as setup left it, the backup is put back byte for
byte (or the file removed, when setup created it); when it was edited since, only setup's entries are taken out.
What setup wrote is recorded in ``${XDG_CACHE_HOME:-~/.cache}/skill-router/setup/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from router.errors import ConfigError
from router.files import read_bytes, read_text

HARNESS_TIMEOUT_S = 10  # what the harness waits for the hook: above the hook's own 2 s budget
HTTP_PORT = 8765
TOKEN_VARIABLE = "SKILL_ROUTER_TOKEN"
TEST_PROMPT = "review my code for bugs before I commit"


def register(commands: Any) -> None:
    p = commands.add_parser("setup", help="install the prompt hook for Claude Code or Codex (one command)")
    p.add_argument("harness", choices=("claude-code", "codex"), help="the harness to install the hook into")
    p.add_argument("--scope", choices=("user", "project"), default="user",
                   help="the user's settings (default) or this project's")
    p.add_argument("--http", action="store_true", help="claude-code: the http hook form (a server on --port that "
                                                       "does not stop when idle)")
    p.add_argument("--port", type=int, default=HTTP_PORT, help=f"port of the --http server (default {HTTP_PORT})")
    p.add_argument("--remove", action="store_true", help="undo what setup wrote")
    p.add_argument("--codex", metavar="BINARY", help="the codex binary to ask for the hook's trust key (default: "
                                                     "codex on PATH)")
    p.add_argument("--settings-only", action="store_true", help="only write the settings: build no index, start no "
                                                                "server, send no test prompt")
    p.set_defaults(run=cmd_setup)


# -- where things are ---------------------------------------------------------------------------------------------
def executable() -> list[str]:
    """This installation's command: the ``skill-router`` script beside this Python, else ``python -m router``."""
    script = Path(sys.executable).parent / "skill-router"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "router.cli"]


def hook_command(harness: str) -> str:
    return shlex.join([*executable(), "hook", harness])


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def settings_path(harness: str, scope: str, cwd: Path) -> Path:
    if harness == "claude-code":
        return Path.home() / ".claude" / "settings.json" if scope == "user" else cwd / ".claude" / \
            "settings.local.json"
    return codex_home() / "hooks.json" if scope == "user" else cwd / ".codex" / "hooks.json"


def _records() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "skill-router" / "setup"


def record_path(settings: Path) -> Path:
    digest = hashlib.sha256(str(settings.absolute()).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return _records() / f"{digest}.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the entries --------------------------------------------------------------------------------------------------
def is_ours(handler: Any, harness: str) -> bool:
    """True for a hook handler setup wrote (any installation's): its command runs ``... hook HARNESS`` of
    skill-router, or its url is a skill-router server's hook endpoint."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    if isinstance(command, str):
        words = command.split()
        return words[-2:] == ["hook", harness] and any("skill-router" in w or w == "router.cli" for w in words)
    url = handler.get("url")
    return isinstance(url, str) and url.endswith(f"/v1/hooks/{harness}") and TOKEN_VARIABLE in json.dumps(handler)


def handler_for(harness: str, http_url: str | None) -> dict[str, Any]:
    if http_url:
        return {"type": "http", "url": http_url, "headers": {"Authorization": f"Bearer ${TOKEN_VARIABLE}"},
                "allowedEnvVars": [TOKEN_VARIABLE], "timeout": HARNESS_TIMEOUT_S}
    return {"type": "command", "command": hook_command(harness), "timeout": HARNESS_TIMEOUT_S}


def merged(settings: dict[str, Any], harness: str, handler: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """``settings`` with ``handler`` as the one skill-router UserPromptSubmit hook (others untouched)."""
    out = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("the settings file's 'hooks' is not an object: fix it by hand, then run setup again")
    groups = hooks.setdefault("UserPromptSubmit", [])
    if not isinstance(groups, list):
        raise ConfigError("the settings file's 'hooks.UserPromptSubmit' is not a list: fix it by hand, then run "
                          "setup again")
    placed = False
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for i, existing in enumerate(group["hooks"]):
                if is_ours(existing, harness):
                    if not placed:
                        group["hooks"][i] = handler
                        placed = True
                    else:
                        group["hooks"][i] = None
            group["hooks"] = [h for h in group["hooks"] if h is not None]
    hooks["UserPromptSubmit"] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
    if not placed:
        hooks["UserPromptSubmit"].append({"hooks": [handler]})
    if env:
        out.setdefault("env", {}).update(env)
    elif isinstance(out.get("env"), dict):
        out["env"].pop(TOKEN_VARIABLE, None)
        if not out["env"]:
            del out["env"]
    return out


def without_ours(settings: dict[str, Any], harness: str) -> dict[str, Any]:
    out = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    if isinstance(hooks, dict) and isinstance(hooks.get("UserPromptSubmit"), list):
        groups = []
        for group in hooks["UserPromptSubmit"]:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h, harness)]
                if not group["hooks"]:
                    continue
            groups.append(group)
        hooks["UserPromptSubmit"] = groups
        if not groups:
            del hooks["UserPromptSubmit"]
        if not hooks:
            del out["hooks"]
    if isinstance(out.get("env"), dict) and TOKEN_VARIABLE in out["env"]:
        del out["env"][TOKEN_VARIABLE]
        if not out["env"]:
            del out["env"]
    return out


def _read_json(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not data.strip():
        return data, {}
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}): fix it, then run setup again; nothing was "
                          "changed") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{path} holds a JSON {type(value).__name__}, not an object: fix it, then run setup "
                          "again; nothing was changed")
    return data, value


def _dump(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def backed_up(path: Path, before: bytes | None) -> tuple[Path, dict[str, Any]]:
    """The record of what setup wrote to ``path`` and how to undo it: the one already kept when ``path`` still
    holds what setup last wrote, else a new one, with what ``path`` held (``before``) backed up byte for byte."""
    record = record_path(path)
    known = json.loads(read_text(record)) if record.is_file() else None
    if known is None or known.get("written") != (_sha(before) if before is not None else None):
        backup = None
        if before is not None:
            backup = path.with_name(path.name + ".skill-router-backup")
            backup.write_bytes(before)
        known = {"path": str(path), "existed": before is not None, "backup": str(backup) if backup else None}
    return record, known


def write_settings(path: Path, value: dict[str, Any]) -> str:
    """Merge-write ``value`` into ``path`` (what it said before backed up once, byte for byte); what happened."""
    before, _ = _read_json(path)
    data = _dump(value)
    if before == data:
        return f"{path}: already set up, unchanged"
    record, known = backed_up(path, before)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".skill-router-tmp")
    temporary.write_bytes(data)
    if before is not None:
        shutil.copymode(path, temporary)
    os.replace(temporary, path)
    known["written"] = _sha(data)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(known), encoding="utf-8")
    saved = f" (backup: {known['backup']})" if known.get("backup") else " (new file)"
    return f"{path}: hook written{saved}"


def remove_settings(path: Path, harness: str) -> str:
    before, value = _read_json(path)
    record = record_path(path)
    known = json.loads(read_text(record)) if record.is_file() else None
    if before is not None and known is not None and known.get("written") == _sha(before):
        if known.get("existed") and known.get("backup"):
            backup = Path(known["backup"])
            path.write_bytes(read_bytes(backup))
            backup.unlink()
            message = f"{path}: restored from its backup, byte for byte"
        else:
            path.unlink()
            message = f"{path}: removed (setup had created it)"
        record.unlink()
        return message
    if before is None:
        return f"{path}: does not exist, nothing to remove"
    cleaned = without_ours(value, harness)
    if cleaned == value:
        return f"{path}: holds no skill-router hook, unchanged"
    path.write_bytes(_dump(cleaned))
    if record.is_file():
        record.unlink()
    return f"{path}: edited since setup, so only the skill-router hook was taken out"


# -- codex trust --------------------------------------------------------------------------------------------------
def codex_hooks(binary: str, cwd: Path, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The hooks ``codex app-server`` lists for ``cwd`` (each with ``key``, ``currentHash``, ``trustStatus``)."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"clientInfo": {"name": "skill-router", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "initialized"},
             {"jsonrpc": "2.0", "id": 1, "method": "hooks/list", "params": {"cwds": [str(cwd)]}}]
    import threading

    try:
        process = subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, cwd=str(cwd))
    except OSError as exc:
        raise ConfigError(f"cannot run {binary}: {exc.strerror or exc}") from None
    timer = threading.Timer(timeout, process.kill)  # it serves until its input ends: the answer is read first
    timer.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("".join(json.dumps(x) + "\n" for x in lines))
        process.stdin.flush()
        for text in process.stdout:
            try:
                message = json.loads(text)
            except ValueError:
                continue
            if message.get("id") == 1 and "result" in message:
                return [h for entry in message["result"].get("data", []) for h in entry.get("hooks", [])]
    finally:
        timer.cancel()
        process.kill()
        process.wait(timeout=10)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
    raise ConfigError(f"{binary} app-server did not answer hooks/list within {timeout:g} s")


def trust_entry(key: str, digest: str) -> str:
    return f"[hooks.state.{json.dumps(key)}]\ntrusted_hash = {json.dumps(digest)}\n"


def trust_codex_hook(binary: str | None, cwd: Path) -> tuple[str, bool]:
    """(what happened, trusted) for the skill-router hook in Codex's config.toml."""
    found = binary or shutil.which("codex")
    if not found:
        return ("codex is not on PATH, so the hook is not trusted yet and 'codex exec' skips it without a word: "
                "run 'skill-router setup codex --codex /path/to/codex', or add the entry that "
                "'codex app-server' hooks/list names to config.toml", False)
    try:
        listed = codex_hooks(found, cwd)
    except ConfigError as exc:
        return f"{exc}: the hook is not trusted yet, and 'codex exec' skips it without a word", False
    ours = [h for h in listed if "skill-router" in json.dumps(h) or "router.cli" in json.dumps(h)]
    if not ours:
        return f"{found} lists no skill-router hook for {cwd}", False
    config = codex_home() / "config.toml"
    text = read_text(config) if config.is_file() else ""
    added = [trust_entry(h["key"], h["currentHash"]) for h in ours if h.get("trustStatus") != "trusted"]
    if not added:
        return f"{config}: the hook is already trusted", True
    before = read_bytes(config) if config.is_file() else None
    record, known = backed_up(config, before)
    data = (text + ("\n" if text and not text.endswith("\n") else "") + "".join(added)).encode("utf-8")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(data)
    known["written"] = _sha(data)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(known), encoding="utf-8")
    return f"{config}: trusted the hook ({', '.join(h['key'] for h in ours)})", True


def untrust_codex(binary: str | None) -> str | None:
    config = codex_home() / "config.toml"
    record = record_path(config)
    if not record.is_file() or not config.is_file():
        return None
    known = json.loads(read_text(record))
    if known.get("written") != _sha(read_bytes(config)):
        return f"{config}: edited since setup; remove its [hooks.state] entry for the skill-router hook by hand"
    if known.get("existed") and known.get("backup"):
        config.write_bytes(read_bytes(known["backup"]))
        Path(known["backup"]).unlink()
        message = f"{config}: restored from its backup, byte for byte"
    else:
        config.unlink()
        message = f"{config}: removed (setup had created it)"
    record.unlink()
    return message


# -- the command --------------------------------------------------------------------------------------------------
def cmd_setup(args: Any) -> int:
    from router import daemon

    cwd = Path.cwd()
    if args.http and args.harness != "claude-code":
        raise ConfigError("--http is Claude Code's hook form; Codex runs command hooks only: drop --http")
    path = settings_path(args.harness, args.scope, cwd)
    library = daemon.Library.of(args.harness, str(cwd))
    if args.remove:
        print(remove_settings(path, args.harness))
        if args.harness == "codex":
            message = untrust_codex(args.codex)
            if message:
                print(message)
        return 0
    if not args.settings_only:
        print(index_library(library))
    http_url = None
    env: dict[str, str] = {}
    if args.http and args.settings_only:
        http_url = f"http://127.0.0.1:{args.port}/v1/hooks/claude-code"
        env = {TOKEN_VARIABLE: daemon.read_token(daemon.ensure_token()) or ""}
    elif args.http:
        token = daemon.read_token(daemon.ensure_token()) or ""
        state = start_http_server(library, args.port)
        http_url = f"{state.url}/v1/hooks/claude-code"
        env = {TOKEN_VARIABLE: token}
    _, settings = _read_json(path)
    print(write_settings(path, merged(settings, args.harness, handler_for(args.harness, http_url), env)))
    trusted = True
    if args.harness == "codex":
        message, trusted = trust_codex_hook(args.codex, cwd)
        print(message)
    if not args.settings_only:
        print(round_trip(library, args.harness, cwd))
    print("check the whole chain any time with: skill-router doctor --profile " + args.harness)
    return 0 if trusted else 1


def index_library(library: Any) -> str:
    """Build the library's index (and with it the model's ONNX export) where the hook and the server read it."""
    import argparse

    from router import daemon
    from router.cli.common import make_router

    options = argparse.Namespace(profile=library.profile, skills=list(library.skills) or None,
                                 catalog=library.catalog, config=library.config, model=library.model,
                                 index_dir=daemon.index_folder(library), announce_config=False, confine=False,
                                 pin=None, exclude=None, harness_model=None)
    start = time.perf_counter()
    router = make_router(options)
    if not len(router.skills):
        raise ConfigError(f"no {library.profile} skills found from {library.cwd}: put skills in the folders the "
                          "harness reads (see 'skill-router list --profile " + library.profile + "')")
    from router.serve.hooks import keep_library

    keep_library(library)  # the in-process fallback then reads the skills with a stat each, not a parse
    from router.encoders import choose

    notes: list[str] = []
    encoder = choose(library.model, notes)
    if type(encoder).__name__ != "OnnxEncoder":
        from router.encoders import export_for_next_time

        export_for_next_time(encoder, notes)
    else:
        from router.encoders import lacks_int8, with_int8

        if lacks_int8(encoder):  # an export made before its int8 request graph existed
            with_int8(encoder, notes)
    return (f"indexed {len(router.skills)} skills in {time.perf_counter() - start:.1f} s: "
            f"{daemon.index_folder(library)}")


def start_http_server(library: Any, port: int) -> Any:
    """The server the http hook form posts to: on a fixed port, and not stopped when idle."""
    from router import daemon

    state = daemon.live_state(library)
    if state is not None and state.port != port:
        daemon.stop_pid(state.pid)
    if state is None or state.port != port:
        command = [*executable(), "serve", *library.options(), "--port", str(port), "--no-mcp", "--token-file",
                   daemon.ensure_token(), "--state-file", daemon.state_file(library)]
        with open(daemon.log_file(library), "ab") as log:
            daemon._STARTED.append(subprocess.Popen(command, cwd=library.cwd, stdin=subprocess.DEVNULL,
                                                    stdout=log, stderr=log, start_new_session=True))
    ready = daemon.wait_ready(library, 120)
    if ready is None:
        raise ConfigError(f"the server on port {port} did not start: see {daemon.log_file(library)} (another "
                          "program may hold the port: pass --port N)")
    return ready


def round_trip(library: Any, harness: str, cwd: Path) -> str:
    """Send one test prompt through the warm server (started if need be) and say how long it took."""
    from router import daemon

    if daemon.live_state(library) is None:
        daemon.start(library)
    ready = daemon.wait_ready(library, 120)
    if ready is None:
        return f"the warm server did not become ready: see {daemon.log_file(library)}"
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": TEST_PROMPT, "cwd": str(cwd),
                          "session_id": "skill-router-setup"})
    start = time.perf_counter()
    done = subprocess.run([*executable(), "hook", harness], input=payload, capture_output=True, text=True,
                          timeout=60, cwd=str(cwd))
    seconds = time.perf_counter() - start
    if not done.stdout.strip():
        why = done.stderr.strip() or "the router abstained"
        return f"test prompt: no context came back in {seconds:.2f} s ({why}); the server is {ready.url}"
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    names = [line[2:].split(":", 1)[0] for line in context.splitlines()[1:]]
    return (f"test prompt {TEST_PROMPT!r}: {len(names)} skills ({', '.join(names)}) in {seconds * 1000:.0f} ms "
            f"through the warm server {ready.url} (pid {ready.pid})")
