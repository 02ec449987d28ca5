"""``UserPromptSubmit`` prompt hooks for Claude Code and Codex.

Both harnesses run a command with the hook's JSON on stdin and read, on exit 0,
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}`` from stdout
(``shared/specs/harness-profiles.md``, sections codex and claude-code). The context names the few skills that fit
the prompt, best first, in the harness's own listing-line format (the ``hook_context`` of the ``claude-code`` and
``codex`` profiles)::

    Skills most relevant to this request (skill-router):
    - {name}: {description}                      (claude-code: description cut at 250 characters)
    - {name}: {description} (file: {path})       (codex)

Rules every answer keeps: at most 5 skills and :data:`MAX_CONTEXT_CHARS` characters (whole lines are dropped from
the end until it fits); nothing when the router abstains or the library is small enough to be listed whole.

The command (:func:`main`) must never break a prompt: on any failure it exits 0 with no output and one line on
stderr, and it answers within its time budget. It asks the running server first (``--url``); when nothing listens
there it routes in-process under what is left of the budget: with the model's ONNX export (made once by a server)
that takes about half a second; with torch, whose import alone takes longer than the budget, the hook prints
nothing and says why on stderr. This module imports only the
standard library at the top: a hook's start-up time is paid on every prompt.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any, Mapping, Sequence

from router.safetext import safe_value  # re and typing only: nothing a hook's start-up would notice

HARNESSES = ("claude-code", "codex")
MAX_CONTEXT_CHARS = 2000
EVENT = "UserPromptSubmit"
DEFAULT_URL = "http://127.0.0.1:8765"
DEFAULT_BUDGET_S = 2.0
MAX_STDIN_BYTES = 1 << 20
_EXIT_MARGIN_S = 0.1


class HookError(Exception):
    """Why a hook printed nothing (one line on stderr)."""


# -- what the hook says -------------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    return " ".join(text.split())


def _invocable(skill: Any) -> bool:
    """False for a skill whose frontmatter says ``disable-model-invocation: true``. The claude-code profile reads
    that flag when it parses; a library served with another profile keeps the raw key, checked here."""
    flag = (skill.metadata or {}).get("disable-model-invocation")
    return not (flag is True or (isinstance(flag, str) and flag.strip().lower() == "true"))


def hook_context(harness: str, skills: Sequence[Any]) -> str:
    """The additional context naming ``skills`` (best first) for ``harness``: the harness profile's own
    ``hook_context``, with whole lines dropped from the end until it fits :data:`MAX_CONTEXT_CHARS`; '' for none."""
    if harness not in HARNESSES:
        raise HookError(f"unknown harness '{harness}': choose one of {', '.join(HARNESSES)}")
    from router.profiles import get_profile

    render = get_profile(harness).hook_context  # type: ignore[attr-defined]
    if harness == "claude-code":
        skills = [s for s in skills if _invocable(s)]
    skills = list(skills)
    for n in range(len(skills), 0, -1):
        text = render(skills[:n])
        if len(text) <= MAX_CONTEXT_CHARS:
            return text
    return ""


def routing_context(harness: str, routing: Any) -> str:
    """The context for one :class:`router.routing.Routing`: '' when it abstained or did not route."""
    if routing.abstained or not routing.routed or not routing.shown:
        return ""
    rank = {m.id: m.rank for m in routing.matches}
    ordered = sorted(routing.shown, key=lambda s: rank.get(s.id, len(rank) + 1))
    return hook_context(harness, ordered)


def hook_output(context: str) -> dict[str, Any]:
    """Exactly the documented output shape (Claude Code rejects any other key), or {} for nothing to add."""
    if not context:
        return {}
    return {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": context}}


def prompt_of(payload: Any) -> str:
    """The prompt of a ``UserPromptSubmit`` payload; '' for another event or an empty prompt."""
    if not isinstance(payload, Mapping):
        raise HookError(f"hook input must be a JSON object, got {type(payload).__name__}")
    event = payload.get("hook_event_name")
    if event is not None and event != EVENT:
        raise HookError(f"hook_event_name is '{event}': this hook answers {EVENT} only")
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise HookError("hook input has no 'prompt' string")
    return prompt


# -- the command --------------------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2, which Claude Code treats as "block the prompt"
        raise HookError(message)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=HARNESSES, help="whose UserPromptSubmit JSON comes on stdin")
    parser.add_argument("--url", default=os.environ.get("SKILL_ROUTER_URL", DEFAULT_URL),
                        help=f"the running 'skill-router serve' (default {DEFAULT_URL} or $SKILL_ROUTER_URL)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                        help=f"the whole hook's time budget (default {DEFAULT_BUDGET_S})")
    parser.add_argument("--token-file", metavar="FILE", help="bearer token of a server started with --token-file")
    parser.add_argument("--no-fallback", action="store_true", help="never route in-process when no server answers")
    parser.add_argument("--skills", action="append", metavar="DIR",
                        help="library for the in-process fallback (default: the harness's skill folders)")
    parser.add_argument("--catalog", metavar="FILE", help="a JSONL catalogue for the in-process fallback")
    parser.add_argument("--profile", help="profile for the in-process fallback (default: the harness's, else "
                                          "agentskills)")
    parser.add_argument("--config", metavar="FILE", help="router parameters for the in-process fallback")
    parser.add_argument("--model", metavar="NAME_OR_PATH", help=argparse.SUPPRESS)
    parser.add_argument("--index-dir", metavar="DIR", help="index folder for the in-process fallback")


class _Unreachable(Exception):
    """Nothing listens at the URL (connection refused or no such host): the in-process fallback may run."""


def ask_server(url: str, harness: str, payload: Mapping[str, Any], timeout: float, token: str | None) -> str:
    """The context the server gives for this payload ('' for none)."""
    import socket
    import urllib.error
    import urllib.request

    body = json.dumps(payload).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{url.rstrip('/')}/v1/hooks/{harness}", data=body, headers=headers,
                                     method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    try:
        with opener.open(request, timeout=max(timeout, 0.01)) as response:
            answer = json.loads(response.read(MAX_STDIN_BYTES).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise HookError(f"the server at {url} answered HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (ConnectionRefusedError, socket.gaierror, FileNotFoundError)):
            raise _Unreachable(str(exc.reason)) from None
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise HookError(f"the server at {url} did not answer within {timeout:.2f} s") from None
        raise HookError(f"cannot reach the server at {url}: {exc.reason}") from None
    except (TimeoutError, socket.timeout):
        raise HookError(f"the server at {url} did not answer within {timeout:.2f} s") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise HookError(f"the server at {url} answered something that is not JSON") from None
    if not isinstance(answer, dict):
        raise HookError(f"the server at {url} answered a JSON {type(answer).__name__}, not an object")
    if not answer:
        return ""
    output = answer.get("hookSpecificOutput")
    context = output.get("additionalContext") if isinstance(output, dict) else None
    if not isinstance(context, str):
        raise HookError(f"the server at {url} answered without hookSpecificOutput.additionalContext")
    return context


def _default_roots(harness: str, cwd: str) -> list[str]:
    home = os.path.expanduser("~")
    if harness == "claude-code":
        candidates = [os.path.join(home, ".claude", "skills"), os.path.join(cwd, ".claude", "skills")]
    else:
        codex_home = os.environ.get("CODEX_HOME") or os.path.join(home, ".codex")
        candidates = [os.path.join(cwd, ".codex", "skills"), os.path.join(codex_home, "skills"),
                      os.path.join(home, ".agents", "skills"), os.path.join(cwd, ".agents", "skills")]
    return [c for c in dict.fromkeys(candidates) if os.path.isdir(c)]


def route_in_process(harness: str, prompt: str, args: argparse.Namespace, cwd: str) -> str:
    """Route with the library's own router in this process (slow: loads the embedding model)."""
    from router.cli.common import make_router
    from router.profiles import profile_names

    options = argparse.Namespace(**vars(args))
    if not options.catalog and not options.skills:
        options.skills = _default_roots(harness, cwd)
        if not options.skills:
            raise HookError(f"no server answered and no {harness} skills folder exists to route in-process")
    if not options.profile:
        options.profile = harness if harness in profile_names() else "agentskills"
    # The router embeds the request with the model's ONNX export when one is cached (a server or a build made it),
    # which fits the budget; torch takes longer to import than that.
    return routing_context(harness, make_router(options).route(prompt))


def _read_token(path: str | None) -> str | None:
    if not path:
        return None
    try:
        from router.files import MAX_TOKEN_FILE_BYTES, read_text

        return read_text(path, MAX_TOKEN_FILE_BYTES, errors="replace").strip() or None
    except OSError as exc:
        raise HookError(f"cannot read --token-file '{path}': {exc.strerror or exc}") from None


def run(argv: Sequence[str], stdin: Any, stdout: Any, stderr: Any, *, started: float | None = None) -> int:
    """Parse the hook's options and answer it; returns the exit status (always 0). Never raises."""
    started = time.monotonic() if started is None else started
    try:
        parser = _Parser(prog="skill-router hook", description="answer a UserPromptSubmit hook")
        add_arguments(parser)
        args = parser.parse_args(list(argv))
    except HookError as exc:
        _say(stderr, str(exc))
        return 0
    return answer(args, stdin, stdout, stderr, started=started)


def answer(args: argparse.Namespace, stdin: Any, stdout: Any, stderr: Any, *, started: float | None = None) -> int:
    """Read the hook JSON from ``stdin`` and print the hook output (or nothing); always returns 0."""
    started = time.monotonic() if started is None else started
    try:
        budget = args.timeout if args.timeout > 0 else DEFAULT_BUDGET_S
        deadline = started + budget - _EXIT_MARGIN_S
        raw = stdin.buffer.read(MAX_STDIN_BYTES + 1) if hasattr(stdin, "buffer") else stdin.read().encode()
        if len(raw) > MAX_STDIN_BYTES:
            raise HookError(f"hook input is larger than {MAX_STDIN_BYTES} bytes")
        try:
            payload = safe_value(json.loads(raw.decode("utf-8")))  # "\ud800" escapes: U+FFFD, once
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HookError(f"hook input is not JSON: {exc}") from None
        prompt = prompt_of(payload)
        if not prompt.strip():
            return 0
        token = _read_token(args.token_file)
        try:
            context = ask_server(args.url, args.harness, payload, deadline - time.monotonic(), token)
        except _Unreachable as exc:
            if args.no_fallback:
                raise HookError(f"no server at {args.url} ({exc})") from None
            context = _fallback(args, prompt, payload, deadline)
        if len(context) > MAX_CONTEXT_CHARS:
            raise HookError(f"context of {len(context)} characters is over the {MAX_CONTEXT_CHARS} limit")
        if context:
            stdout.write(json.dumps(hook_output(context)) + "\n")
            stdout.flush()
    except HookError as exc:
        _say(stderr, str(exc))
    except Exception as exc:  # a hook must never break a prompt, whatever went wrong
        _say(stderr, f"{type(exc).__name__}: {exc}")
    return 0


def _fallback(args: argparse.Namespace, prompt: str, payload: Mapping[str, Any], deadline: float) -> str:
    outcome: dict[str, Any] = {}
    given = payload.get("cwd")
    cwd = given if isinstance(given, str) else os.getcwd()

    def work() -> None:
        try:
            outcome["context"] = route_in_process(args.harness, prompt, args, cwd)
        except BaseException as exc:  # reported by the waiting thread
            outcome["error"] = exc

    thread = threading.Thread(target=work, name="skill-router-hook", daemon=True)
    thread.start()
    thread.join(max(deadline - time.monotonic(), 0))
    if thread.is_alive():
        raise HookError(f"no server at {args.url}, and routing in-process did not finish within the "
                    f"{args.timeout:g} s budget: start 'skill-router serve' for fast hooks")
    if "error" in outcome:
        error = outcome["error"]
        raise HookError(f"no server at {args.url}; in-process routing failed: {error}")
    return outcome["context"]


def _say(stderr: Any, message: str) -> None:
    try:
        stderr.write(f"skill-router hook: {_one_line(message)}\n")
        stderr.flush()
    except Exception:  # a closed stderr must not turn into a non-zero exit
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """``skill-router hook HARNESS``: always exits 0 (a non-zero exit would block or flag the prompt)."""
    started = time.monotonic()
    code = run(sys.argv[2:] if argv is None else argv, sys.stdin, sys.stdout, sys.stderr, started=started)
    leave_now(code)
    return code


def leave_now(code: int) -> None:
    """Exit at once if the in-process fallback is still loading the model, rather than wait for it."""
    if any(t.name == "skill-router-hook" and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
