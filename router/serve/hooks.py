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
there it routes in-process under what is left of the budget (:func:`route_apart`): the embedding model (its ONNX
export, made once by ``setup`` or a server) loads in a process of its own while the hook's child reads the library
and its index, about 0.45 s of CPU on ~700 skills shared by two processes; with torch, whose import alone takes
longer than the budget, the hook prints nothing and says why on stderr. This module imports only the
standard library at the top: a hook's start-up time is paid on every prompt.

The budget (``--timeout``) is one deadline for the whole call, counted from the moment the process was created
(:func:`process_started`, the kernel's start time of this process: on a busy machine the interpreter alone can
take half a second to reach :func:`main`): reading stdin, connecting, sending, every read of the answer and the
in-process fallback all share it. The work runs in one worker thread that the main thread waits for until the
deadline; a server that drips its answer a byte at a time, accepts and never answers, announces more bytes than it
sends or sends no HTTP at all costs the budget and no more, and the hook then prints nothing. The deadline is
``budget - EXIT_MARGIN_S`` after the process started (``STARTUP_MARGIN_S`` after :func:`main` started where the
kernel does not say when the process started). The in-process fallback is not tried when the last one for this
library took longer than what is left (:func:`router.daemon.in_process_estimate`): the hook then prints nothing at
once and leaves the machine to the warm server it started.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn, Sequence, TextIO

from router.safetext import safe_text, safe_value  # re and typing only: nothing a hook's start-up would notice

if TYPE_CHECKING:
    import socket

    from router.daemon import Library
    from router.index import LibrarySource
    from router.profiles import Profile
    from router.config import RouterConfig
    from router.ranking import Routing
    from router.routing import Router
    from router.skill import Skill
    from router.spec import LibrarySpec

MAX_CONTEXT_CHARS = 2000
EVENT = "UserPromptSubmit"
DEFAULT_URL = "http://127.0.0.1:8765"
DEFAULT_BUDGET_S = 2.0
MAX_STDIN_BYTES = 1 << 20
#: Largest answer read from the server (an answer holds at most MAX_CONTEXT_CHARS characters of context).
MAX_ANSWER_BYTES = 1 << 20
#: Time the interpreter takes to reach :func:`main`, counted against the budget where the kernel does not tell
#: when the process started (measured: 0.04-0.11 s on an idle machine, 0.3-0.6 s on a busy one).
STARTUP_MARGIN_S = 0.15
#: Time kept back at the deadline for printing and leaving the process (at load 13 on 2 cores, 0.1 s let one hook
#: in ten end 15 ms past its budget, counted from spawn to reaping: the kernel tears a 200 MB process down).
EXIT_MARGIN_S = 0.15
_WORKER = "skill-router-hook"


class HookError(Exception):
    """Why a hook printed nothing (one line on stderr)."""


# -- what the hook says -------------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    return " ".join(text.split())


def harnesses() -> tuple[str, ...]:
    """The harnesses with a prompt hook: the profiles that provide one (imported when asked: a hook that only asks
    the server never pays for loading the profiles)."""
    from router.profiles import Capability, with_capability

    return with_capability(Capability.HOOK)


def harness_profile(harness: str) -> Profile:
    """The profile of ``harness``; HookError naming the harnesses with a hook otherwise."""
    from router.errors import ConfigError
    from router.profiles import Capability, get_profile

    try:
        profile: Profile | None = get_profile(harness)
    except ConfigError:
        profile = None
    if profile is None or not profile.provides(Capability.HOOK):
        raise HookError(f"unknown harness '{harness}': choose one of {', '.join(harnesses())}")
    return profile


def hook_context(harness: str, skills: Sequence[Skill]) -> str:
    """The additional context naming ``skills`` (best first) for ``harness``: the harness profile's own
    ``hook_context``, with whole lines dropped from the end until it fits :data:`MAX_CONTEXT_CHARS`; '' for none."""
    render = harness_profile(harness).hook_context
    skills = list(skills)
    for n in range(len(skills), 0, -1):
        text = render(skills[:n])
        if len(text) <= MAX_CONTEXT_CHARS:
            return text
    return ""


def routing_context(harness: str, routing: Routing) -> str:
    """The context for one :class:`router.routing.Routing`: '' when it abstained, fits no skill
    (:mod:`router.abstain`) or did not route."""
    if routing.abstained or routing.no_skill or not routing.routed or not routing.shown:
        return ""
    rank = {m.id: m.rank for m in routing.matches}
    ordered = sorted(routing.shown, key=lambda s: rank.get(s.id, len(rank) + 1))
    return hook_context(harness, ordered)


def hook_output(context: str) -> dict[str, object]:
    """Exactly the documented output shape (Claude Code rejects any other key), or {} for nothing to add."""
    if not context:
        return {}
    return {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": context}}


def prompt_of(payload: object) -> str:
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
    def error(self, message: str) -> NoReturn:  # argparse exits 2, which Claude Code treats as "block the prompt"
        raise HookError(message)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", metavar="HARNESS", help="whose UserPromptSubmit JSON comes on stdin (a profile "
                                                           "with a prompt hook)")
    parser.add_argument("--url", default=os.environ.get("SKILL_ROUTER_URL") or None,
                        help="a running 'skill-router serve' to ask (default $SKILL_ROUTER_URL; without either, the "
                             "library's own warm server, started when none runs)")
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
    parser.add_argument("--no-start", action="store_true", help="never start a warm server")


class _Unreachable(Exception):
    """Nothing listens at the URL (connection refused or no such host): the in-process fallback may run."""


class _Late(Exception):
    """The deadline came before the server's answer did."""


class _NotReady(Exception):
    """The server answered 503: still loading its library, or busy."""


def ask_server(url: str, harness: str, payload: Mapping[str, object], deadline: float, token: str | None) -> str:
    """The context the server gives for this payload ('' for none), by ``deadline`` (a :func:`time.monotonic`
    time) at the latest: connecting, sending and every read get only what is left of it."""
    body = json.dumps(payload).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    status, data = _post(url, f"/v1/hooks/{harness}", body, headers, deadline)
    if status == 503:
        raise _NotReady(f"the server at {url} is not ready (HTTP 503)")
    if status != 200:
        raise HookError(f"the server at {url} answered HTTP {status}{_error_of(data)}")
    try:
        answer = json.loads(data.decode("utf-8"))
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


def _error_of(data: bytes) -> str:
    """``: message`` of the service's ``{"error": {"message": ...}}`` answer, else ''."""
    try:
        error = json.loads(data.decode("utf-8")).get("error")
        return f": {error['message']}" if isinstance(error, dict) and isinstance(error.get("message"), str) else ""
    except (ValueError, UnicodeDecodeError, AttributeError):
        return ""


def _post(url: str, path: str, body: bytes, headers: Mapping[str, str], deadline: float) -> tuple[int, bytes]:
    """(status, body) of an HTTP/1.0 POST, every socket operation bounded by what is left until ``deadline``.

    A plain HTTP client rather than urllib: urllib's timeout bounds each socket read, so a server sending one byte
    every half second keeps it reading for as long as it likes. Never goes through a proxy (the server is local).
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HookError(f"--url '{url}' is not an http:// or https:// URL")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise HookError(f"--url '{url}' has no valid port") from None

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    try:
        conn = socket.create_connection((host, port), timeout=left())
    except (ConnectionRefusedError, socket.gaierror) as exc:
        raise _Unreachable(str(exc)) from None
    except (TimeoutError, socket.timeout):
        raise _Late from None
    except OSError as exc:
        raise HookError(f"cannot reach the server at {url}: {exc.strerror or exc}") from None
    try:
        if parts.scheme == "https":
            import ssl

            conn.settimeout(left())
            conn = ssl.create_default_context().wrap_socket(conn, server_hostname=host)
        lines = [f"POST {path} HTTP/1.0", f"Host: {parts.netloc.rpartition('@')[2]}",
                 f"Content-Length: {len(body)}", "Connection: close",
                 *(f"{name}: {value}" for name, value in headers.items())]
        conn.settimeout(left())
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        return _read_answer(conn, url, left)
    except (TimeoutError, socket.timeout):
        raise _Late from None
    except OSError as exc:
        raise HookError(f"the connection to the server at {url} failed: {exc.strerror or exc}") from None
    finally:
        conn.close()


def _read_answer(conn: socket.socket, url: str, left: Callable[[], float]) -> tuple[int, bytes]:
    """Read an HTTP response from ``conn`` until its Content-Length (or the end of the connection)."""
    data = bytearray()
    head_end, length = -1, None
    while True:
        conn.settimeout(left())
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_ANSWER_BYTES:
            raise HookError(f"the server at {url} answered more than {MAX_ANSWER_BYTES} bytes")
        if head_end < 0:
            head_end = data.find(b"\r\n\r\n")
            if head_end < 0:
                if not data.startswith(b"HTTP/"[:len(data)]):
                    raise HookError(f"the server at {url} answered something that is not HTTP")
                continue
            length = _content_length(bytes(data[:head_end]), url)
        if length is not None and len(data) - head_end - 4 >= length:
            break
    if head_end < 0:
        raise HookError(f"the server at {url} closed the connection before its answer's headers ended")
    head = bytes(data[:head_end]).decode("latin-1")
    status_line = head.split("\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/") or not status_line[1].isdigit():
        raise HookError(f"the server at {url} answered something that is not HTTP")
    payload = bytes(data[head_end + 4:])
    if length is not None:
        if len(payload) < length:
            raise HookError(f"the server at {url} closed the connection after {len(payload)} of {length} "
                            "announced bytes")
        payload = payload[:length]
    return int(status_line[1]), payload


def _content_length(head: bytes, url: str) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"transfer-encoding":
            raise HookError(f"the server at {url} answered with a transfer encoding; an HTTP/1.0 request "
                            "expects none")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                length = -1
            if length < 0:
                raise HookError(f"the server at {url} answered a Content-Length that is not a number")
            return length
    return None


def library_of(args: argparse.Namespace, cwd: str) -> Library:
    """The library this hook routes against (:class:`router.daemon.Library`): the options', else the harness's own
    skills as its discovery finds them from ``cwd``, with the harness's profile."""
    from router import daemon

    return daemon.Library.of(args.profile or args.harness, cwd, skills=args.skills, catalog=args.catalog,
                             config=args.config, model=args.model, index_dir=args.index_dir)


def not_prepared(library: Library, index_dir: str) -> str | None:
    """Why routing in-process would not fit a prompt's budget (no index built yet, no ONNX export of the model),
    or None when it would: building an index or exporting the model is 'setup''s or the server's work."""
    if not os.path.isfile(os.path.join(index_dir, "manifest.json")):
        return "its index is not built yet"
    try:
        from indexes.onnx_encoder import MANIFEST, export_dir

        if not (export_dir(library.model) / MANIFEST).exists():
            return "the model's ONNX export is not made yet"
    except Exception as exc:
        return f"the model's ONNX export cannot be used ({_one_line(str(exc))})"
    return None


def in_process_spec(harness: str, args: argparse.Namespace, cwd: str, *, config: RouterConfig | None = None
                    ) -> tuple[LibrarySpec, RouterConfig]:
    """The library ``skill-router`` reads from ``cwd`` (:class:`router.spec.LibrarySpec`) and the config, as the
    in-process fallback routes them: ``--skills``/``--catalog``, else the folders the harness reads from the
    working folder the hook reports, and the same index; ``--profile``, else the harness's; ``--config``, else
    ``./skill-router.json``, else the defaults (never announced: stderr is for failures only)."""
    from router.config import find_config
    from router.spec import LibrarySpec

    profile = args.profile or harness
    roots = args.skills or None
    if roots is None and not args.catalog and profile != harness:  # another profile's rules over the harness's folders
        roots = list(LibrarySpec.create(profile=harness, cwd=cwd).folders)
    spec = LibrarySpec.create(roots, catalog=args.catalog, profile=profile, cwd=cwd, index_dir=args.index_dir)
    if spec.catalog is None and not spec.folders:
        raise HookError(f"no server answered and no {harness} skills folder exists to route in-process")
    return spec, config if config is not None else find_config(args.config).with_(model=args.model)


def in_process_library(harness: str, args: argparse.Namespace, cwd: str, *, keep: bool = True,
                       config: RouterConfig | None = None) -> LibrarySource:
    """The library of the in-process fallback (:func:`in_process_spec`), read but not indexed. The skills come
    from the copy saved beside the index when no SKILL.md changed since (:mod:`router.fresh`: a stat per file),
    else they are read, and with ``keep`` that reading is saved for the next time."""
    from router import fresh
    from router.index import LibrarySource

    spec, config = in_process_spec(harness, args, cwd, config=config)
    confine = spec.confine or config.confine
    loaded = fresh.read(spec, confine=confine)
    if loaded is None:
        loaded = spec.load(confine=confine)
        if keep:
            fresh.save(spec, loaded, confine=confine)
    return LibrarySource.read(spec, config, loaded=loaded)


def in_process_router(harness: str, args: argparse.Namespace, cwd: str, *, keep: bool = True,
                      model: _Apart | None = None) -> Router:
    """The router of the in-process fallback over :func:`in_process_library` (its index loaded now). The
    embedding model loads meanwhile: in ``model``'s forked child when one is given (:class:`_Apart`, for a
    process that routes once and leaves; the caller stops it), else on another thread, so that what of it runs
    outside the interpreter lock (reading the model, onnxruntime's own work) overlaps."""
    from dataclasses import replace

    from router.config import find_config
    from router.index import LibraryIndex
    from router.routing import Router

    config = find_config(args.config).with_(model=args.model)
    encoder: _Background | _Apart = model if model is not None else _Background(config.model)
    source = in_process_library(harness, args, cwd, keep=keep, config=config)
    chosen, notes = encoder.result()
    source = replace(source, chosen_encoder=chosen, notes=source.notes + tuple(notes))
    return Router(LibraryIndex.create(source))


#: In the child :func:`apart` forks: the pipe its answer goes through, which a process it forks must not hold,
#: and what to do once the answer is sent.
_ANSWER_FD: int | None = None
_AFTER_ANSWER: list[Callable[[], None]] = []


class _Apart:
    """The embedding model of the in-process fallback (``args``' config's model) loading in a forked child of its
    own (:class:`router.encoder_process.EncoderProcess`) from construction on, then embedding ``prompt``; on a
    thread (:class:`_Background`) where it cannot fork."""

    def __init__(self, args: argparse.Namespace, prompt: str = "") -> None:
        from router.encoder_process import EncoderProcess

        def model() -> str | None:
            from router.config import find_config

            return find_config(args.config).with_(model=args.model).model

        self._fallback: _Background | None = None
        self.process: EncoderProcess | None = None
        try:
            self.process = EncoderProcess(model, close_fds=() if _ANSWER_FD is None else (_ANSWER_FD,),
                                          prefetch=[safe_text(prompt)] if prompt.strip() else [])
        except (OSError, AttributeError):  # cannot fork (AttributeError: no os.fork on this system)
            self._fallback = _Background(model())

    def result(self) -> tuple[Any, list[str]]:
        if self._fallback is not None:
            return self._fallback.result()
        return self.process, []

    def close(self, *, wait: bool = True) -> None:
        if self.process is not None:
            self.process.close(wait=wait)


class _Background:
    """:func:`router.encoders.choose` for ``model``, run on its own thread from construction on."""

    def __init__(self, model: str | None) -> None:
        self._notes: list[str] = []
        self._encoder: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._load, args=(model,), name="skill-router-encoder", daemon=True)
        self._thread.start()

    def _load(self, model: str | None) -> None:
        try:
            from router import encoders

            self._encoder = encoders.choose(model, self._notes)
        except BaseException as exc:  # raised where the result is asked for
            self._error = exc

    def result(self) -> tuple[Any, list[str]]:
        """(encoder, notes), or the error choosing it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._encoder, self._notes


def keep_library(library: Library) -> bool:
    """Read ``library`` (what a hook for it routes in-process) and keep it beside its index with the stamps of its
    files (:func:`router.fresh.save`), so that the first in-process answer does not parse every SKILL.md;
    ``setup`` calls it after building the index. False when it could not be kept."""
    from router import fresh

    options = argparse.Namespace(profile=None, skills=list(library.skills) or None, catalog=library.catalog,
                                 config=library.config, model=library.model, index_dir=library.index_dir)
    spec, config = in_process_spec(library.profile, options, library.cwd)
    confine = spec.confine or config.confine
    return fresh.save(spec, spec.load(confine=confine), confine=confine)


def in_process_options(args: argparse.Namespace, library: Library) -> argparse.Namespace:
    """``args`` naming ``library`` as the warm server for it is started (its paths absolute, its config found in
    its working folder): the in-process fallback then reads the same library, config and index as that server."""
    return argparse.Namespace(**{**vars(args), "skills": list(library.skills) or None, "catalog": library.catalog,
                                 "config": library.config, "index_dir": library.index_dir})


def route_in_process(harness: str, prompt: str, args: argparse.Namespace, cwd: str) -> str:
    """Route with the library's own router in this process (slow: loads the embedding model)."""
    # The router embeds the request with the model's ONNX export when one is cached (a server or a build made it),
    # which fits the budget; torch takes longer to import than that.
    return routing_context(harness, in_process_router(harness, args, cwd).route(prompt))


def route_apart(harness: str, prompt: str, args: argparse.Namespace, library: Library, why: str) -> str:
    """:func:`route_in_process` for a process that routes once and leaves (the hook's child, :func:`apart`): the
    embedding model loads in a process of its own (:class:`_Apart`) while this one reads the library and its
    index, and is stopped once the answer is known. HookError (``why`` no server answered, first) when the
    library is not prepared for it (:func:`not_prepared`: the index is checked here, the model's export there)."""
    import numpy  # noqa: F401  (both processes need it: imported once, before the fork)

    from router import daemon
    from router.encoder_process import Unprepared

    model = _Apart(args, prompt)  # the router embeds the prompt as it is made safe (router.routing.Router)
    try:
        index_dir = daemon.index_folder(library)
        reason = None if os.path.isfile(os.path.join(index_dir, "manifest.json")) else "its index is not built yet"
        if reason is None and model.process is None:
            reason = not_prepared(library, index_dir)
        if reason is None:
            try:
                return routing_context(harness, in_process_router(harness, args, library.cwd, model=model)
                                       .route(prompt))
            except Unprepared as exc:  # the child found no export of the model
                reason = str(exc)
        raise HookError(f"{why}, and this library cannot be routed in-process within a prompt: {reason}; run "
                        f"'skill-router setup {harness}' once")
    finally:
        if _ANSWER_FD is None:
            model.close()
        else:  # stopped once the answer is on its way: freeing the model's memory is no part of the answer
            _AFTER_ANSWER.append(lambda: model.close(wait=False))


def _read_token(path: str | None) -> str | None:
    if not path:
        return None
    from router.files import MAX_TOKEN_FILE_BYTES, read_user_text

    return read_user_text(path, "--token-file", HookError, limit=MAX_TOKEN_FILE_BYTES, errors="replace").strip() \
        or None


def run(argv: Sequence[str], stdin: TextIO, stdout: TextIO, stderr: TextIO, *, started: float | None = None) -> int:
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


def answer(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO, *,
           started: float | None = None) -> int:
    """Read the hook JSON from ``stdin`` and print the hook output (or nothing); always returns 0.

    Everything from reading stdin to the in-process fallback runs in one worker thread, waited for until
    ``started + budget - EXIT_MARGIN_S``; a worker still busy then is abandoned (:func:`leave_now`). The in-process
    fallback runs in a child process (:func:`apart`), so that nothing it does can hold the waiting thread past the
    deadline."""
    started = time.monotonic() if started is None else started
    budget = args.timeout if args.timeout > 0 else DEFAULT_BUDGET_S
    deadline = started + budget - EXIT_MARGIN_S
    # What is under way, as the message to print when the deadline comes first.
    outcome: dict[str, Any] = {"late": lambda budget: f"the hook input did not arrive within the {budget:g} s budget"}

    def work() -> None:
        try:
            outcome["context"] = _context(args, stdin, deadline, outcome)
        except BaseException as exc:  # reported by the waiting thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=_WORKER, daemon=True)
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0))
    try:
        if worker.is_alive() or isinstance(outcome.get("error"), _Late):
            raise HookError(outcome["late"](budget))
        if "error" in outcome:
            raise outcome["error"]
        context = outcome["context"]
        if context:
            stdout.write(json.dumps(hook_output(context)) + "\n")
            stdout.flush()
    except HookError as exc:
        _failed(args, stderr, str(exc))
    except Exception as exc:  # a hook must never break a prompt, whatever went wrong
        _failed(args, stderr, f"{type(exc).__name__}: {exc}")
    return 0


def _failed(args: argparse.Namespace, stderr: TextIO, message: str) -> None:
    """Say why on stderr, and keep one line in the failure log that 'skill-router doctor' reads."""
    _say(stderr, message)
    from router import daemon

    daemon.record_failure(args.harness, _one_line(message))


def _context(args: argparse.Namespace, stdin: TextIO, deadline: float, outcome: dict[str, Any]) -> str:
    """The context to print ('' for none): the server's, else the in-process router's. ``outcome["late"]`` gives
    the message for what is under way, should the deadline come first."""
    raw = stdin.buffer.read(MAX_STDIN_BYTES + 1) if hasattr(stdin, "buffer") else stdin.read().encode()
    if len(raw) > MAX_STDIN_BYTES:
        raise HookError(f"hook input is larger than {MAX_STDIN_BYTES} bytes")
    try:
        payload = safe_value(json.loads(raw.decode("utf-8")))  # "\ud800" escapes: U+FFFD, once
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HookError(f"hook input is not JSON: {exc}") from None
    prompt = prompt_of(payload)
    if not prompt.strip():
        return ""
    given = payload.get("cwd")
    library = library_of(args, given if isinstance(given, str) and os.path.isdir(given) else os.getcwd())
    if args.url:
        token = _read_token(args.token_file)
        outcome["late"] = lambda budget: f"the server at {args.url} did not answer within the {budget:g} s budget"
        try:
            context = ask_server(args.url, args.harness, payload, deadline, token)
        except (_Unreachable, _NotReady) as exc:
            if args.no_fallback:
                raise HookError(f"no server at {args.url} ({exc})") from None
            context = _in_process(args, prompt, library, outcome, f"no server answered at {args.url}", deadline)
    else:
        context = _warm(args, payload, prompt, library, deadline, outcome)
    if len(context) > MAX_CONTEXT_CHARS:
        raise HookError(f"context of {len(context)} characters is over the {MAX_CONTEXT_CHARS} limit")
    return context


def _warm(args: argparse.Namespace, payload: Mapping[str, object], prompt: str, library: Library, deadline: float,
          outcome: dict[str, Any]) -> str:
    """The library's warm server's answer; when none answers, one is started and this prompt is answered
    in-process (when the library is prepared for that), else gets nothing."""
    from router import daemon

    state = daemon.live_state(library)
    why = "no warm server was running"
    if state is not None and state.url:
        outcome["late"] = lambda budget: f"the warm server at {state.url} did not answer within the {budget:g} s budget"
        token = daemon.read_token(state.token_file) if state.token_file else None
        try:
            return ask_server(state.url, args.harness, payload, deadline, token)
        except (_Unreachable, _NotReady) as exc:
            why = str(exc)
    elif state is not None:
        why = "the warm server is starting"
    if state is None and not args.no_start:
        state, started = daemon.start(library)
        if started:
            why += f" (started one: pid {state.pid if state else '?'}, log {daemon.log_file(library)})"
    if args.no_fallback:
        raise HookError(why)
    return _in_process(args, prompt, library, outcome, why, deadline)


def _in_process(args: argparse.Namespace, prompt: str, library: Library, outcome: dict[str, Any], why: str,
                deadline: float) -> str:
    """The in-process router's context, unless the last in-process answer for this library took longer than what
    is left until ``deadline`` (then HookError at once)."""
    from router import daemon

    left = deadline - time.monotonic()
    estimate = daemon.in_process_estimate(library)
    if estimate is not None and estimate > left:
        raise HookError(f"{why}, and routing in-process took {estimate:.2f} s last time, more than the {left:.2f} s "
                        "left of the budget")
    begun = time.monotonic()

    def late(budget: float) -> str:
        # it takes at least that long: not tried next time with less time left
        daemon.record_in_process(library, time.monotonic() - begun, at_least=True)
        return f"{why}, and routing in-process did not finish within the {budget:g} s budget"

    outcome["late"] = late
    options = in_process_options(args, library)
    try:
        context = apart(lambda: route_apart(args.harness, prompt, options, library, why), deadline)
    except (HookError, _Late):
        raise
    except Exception as error:
        raise HookError(f"{why}; in-process routing failed: {error}") from None
    daemon.record_in_process(library, time.monotonic() - begun)
    return context


def apart(work: Callable[[], str], deadline: float) -> str:
    """``work()`` run in a forked child process, its answer read through a pipe by ``deadline``; the child is
    killed then (:class:`_Late`). A thread would not do: a long call that holds the interpreter lock (parsing a
    JSON file, onnxruntime building its session) keeps the waiting thread from waking at the deadline, and on a
    busy machine the hook then ran 0.2-0.4 s past its budget. Where there is no fork, ``work`` runs here."""
    if not hasattr(os, "fork"):
        return work()
    import select
    import signal

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, never touch the hook's stdout or stderr, leave at once
        code = 0
        try:
            import gc

            # A process that answers once and leaves: reference cycles are freed by its exit, and the collector's
            # passes over the library's objects cost 15-25 ms of a ~0.2 s answer.
            gc.disable()
            global _ANSWER_FD
            _ANSWER_FD = write
            os.close(read)
            quiet = os.open(os.devnull, os.O_RDWR)  # a harness reading the hook's output waits for every holder
            for fd in (0, 1, 2):
                os.dup2(quiet, fd)
            try:
                answer: dict[str, str] = {"context": work()}
            except HookError as exc:
                answer = {"hook_error": str(exc)}
            except BaseException as exc:
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            data = json.dumps(answer).encode("utf-8")
            while data:
                data = data[os.write(write, data):]
            os.close(write)  # the answer is complete: the hook goes on at once
            for then in _AFTER_ANSWER:
                then()
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    received = bytearray()
    answered = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Late
            ready, _, _ = select.select([read], [], [], left)
            if ready:
                chunk = os.read(read, 65536)
                if not chunk:
                    answered = True
                    break
                received += chunk
    finally:
        os.close(read)
        if not answered:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(pid, 0 if answered else os.WNOHANG)  # it closed the pipe as it left: reaped at once
        except ChildProcessError:
            pass
    try:
        answer = json.loads(received.decode("utf-8"))
    except ValueError:
        raise HookError("in-process routing ended without an answer") from None
    if "hook_error" in answer:
        raise HookError(answer["hook_error"])
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return str(answer["context"])


def _say(stderr: TextIO, message: str) -> None:
    try:
        stderr.write(f"skill-router hook: {_one_line(message)}\n")
        stderr.flush()
    except Exception:  # a closed stderr must not turn into a non-zero exit
        pass


def process_started() -> float:
    """When this process was created, as a :func:`time.monotonic` time: from ``/proc/self/stat`` (in clock ticks
    since boot) on Linux, else :data:`STARTUP_MARGIN_S` before now. The interpreter's start-up is part of the
    budget: under load it alone takes several times the margin an idle machine needs."""
    from router.files import read_bytes

    now = time.monotonic()
    try:
        fields = read_bytes("/proc/self/stat", 4096).rsplit(b")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of stat(5); the first two (pid, comm) are before the ')'
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, AttributeError):
        return now - STARTUP_MARGIN_S
    if not 0 <= age < 60:  # a clock that does not agree with the kernel's: assume the usual start-up
        return now - STARTUP_MARGIN_S
    return now - age


def main(argv: Sequence[str] | None = None) -> int:
    """``skill-router hook HARNESS``: always exits 0 (a non-zero exit would block or flag the prompt)."""
    started = process_started()  # the interpreter's start-up already spent part of the budget
    code = run(sys.argv[2:] if argv is None else argv, sys.stdin, sys.stdout, sys.stderr, started=started)
    leave_now(code)
    return code


def leave_now(code: int) -> None:
    """Exit at once, without the interpreter's finalisation: a worker may still be busy (a slow server), and
    tearing down numpy and onnxruntime after an in-process answer took 0.3-0.5 s on a busy machine, all of it after
    the hook had answered and all of it counted by the harness."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
