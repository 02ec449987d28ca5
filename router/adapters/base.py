"""What every framework adapter shares: one turn's routing, which tools it keeps, and the text it adds.

An adapter holds a :class:`Shortlist`, built from a :class:`router.Router` (routing in this process) or from the
URL of a running ``skill-router serve`` (one warm index shared by many processes; ``POST /v1/route``). Per turn:

1. the framework's messages become ``{"role", "content"}`` dicts and the router's one conversation rule
   (:mod:`router.conversation`) picks the text to route: the last user turn, earlier user turns as context;
2. the router decides what is shown (:attr:`Turn.shown`: the routed skills best first, pinned ones after them;
   what it shows when it abstains is its ``on_abstain`` setting);
3. a tool is a *skill tool* when its name is a skill's name or id, or when ``tools`` maps it to one; a skill tool
   is kept only when its skill is shown, every other tool (the framework's own) passes through untouched;
4. :attr:`Turn.context` is the shown skills' catalogue in the router profile's own format (what
   ``Router.render`` returns), added to the instructions; '' when nothing is shown.

A turn with no user text to route (only an image, say) is left as it is: every tool, nothing added.
The routing of the last conversation is remembered, so the model calls of one turn (before and after a tool
runs) see the same tools without routing again.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.conversation import conversation_text
from router.errors import ConfigError, SkillNotFoundError, SkillRouterError
from router.skill import Skill

__all__ = ["Adapter", "MissingExtraError", "RouterServerError", "Shortlist", "Turn", "require"]

DEFAULT_TIMEOUT_S = 10.0
#: What ``POST /v1/route`` accepts per message and per conversation (router.serve.schemas).
MAX_TEXT_CHARS = 8000
MAX_MESSAGES = 200


class MissingExtraError(SkillRouterError, ImportError):
    """A framework adapter was imported without the framework installed."""


class RouterServerError(SkillRouterError):
    """The ``skill-router serve`` URL an adapter was given did not answer, or answered with an error."""


def require(adapter: str, modules: Sequence[str], extra: str) -> None:
    """Import ``modules`` or raise :class:`MissingExtraError` naming the extra that installs them."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtraError(f"{adapter} needs the '{extra}' extra ({exc}): "
                                    f"pip install 'skill-router[{extra}]'") from None


@dataclass(frozen=True)
class Turn:
    """What the router chose for one turn.

    ``request`` is the text routed ('' when the turn had none: then ``active`` is False and nothing changes),
    ``shown`` the skills shown (best first, pinned ones last), ``context`` the text added to the instructions.
    """

    request: str
    shown: tuple[Skill, ...] = ()
    context: str = ""
    abstained: bool = False
    routed: bool = True
    active: bool = True
    names: frozenset[str] = field(default=frozenset(), repr=False)  # names and ids of the shown skills

    @property
    def shown_names(self) -> list[str]:
        return [s.name for s in self.shown]


_IDLE = Turn(request="", routed=False, active=False)


class Shortlist:
    """Routes a conversation's turns and decides which tools a model sees (see the module docstring).

    Parameters
    ----------
    router:
        A :class:`router.Router`, or the base URL of ``skill-router serve`` (``http://127.0.0.1:8765``).
    k:
        Skills routed per turn (default: the router's ``k``).
    pin:
        Skill names (or ids) always shown, after the routed ones.
    tools:
        Tool name -> skill name or id, for skill tools whose name is not their skill's name.
    token:
        The bearer token of a server started with ``--token-file``.
    timeout:
        Seconds to wait for the server.
    """

    def __init__(self, router: Any, *, k: int | None = None, pin: Iterable[str] = (),
                 tools: Mapping[str, str] | None = None, token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        if isinstance(k, bool) or (k is not None and (not isinstance(k, int) or k < 1)):
            raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
        if isinstance(pin, str):
            raise ConfigError(f"pin is a list of skill names, got the string {pin!r}: write pin=[{pin!r}]")
        self.k = k
        self.pin = tuple(pin)
        self.tool_skills = dict(tools or {})
        if isinstance(router, str):
            self._source: _Source = _Server(router, token, timeout)
        elif hasattr(router, "route") and hasattr(router, "profile"):
            self._source = _Local(router)
        else:
            raise ConfigError(f"an adapter takes a router.Router or the URL of 'skill-router serve', got "
                              f"{type(router).__name__}")
        self._lock = threading.Lock()
        self._last: tuple[tuple[str, ...], Turn] | None = None
        if self.pin:
            self._source.check_pins(self.pin)

    # -- routing ------------------------------------------------------------------------------------------------
    def route(self, messages: Sequence[Mapping[str, Any]]) -> Turn:
        """The :class:`Turn` for a conversation of ``{"role", "content"}`` messages (see the module docstring)."""
        user = [m for m in messages if m.get("role") == "user"]
        try:
            conversation_text(user)
        except ConfigError:
            return _IDLE
        key = tuple(json.dumps(m.get("content"), sort_keys=True, default=str) for m in user)
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
        turn = self._source.route(user, self.k, self.pin)
        with self._lock:
            self._last = (key, turn)
        return turn

    def route_text(self, text: str) -> Turn:
        """The :class:`Turn` for one request."""
        return self.route([{"role": "user", "content": text}])

    def skill(self, name: str) -> Skill:
        """The skill called ``name`` (or with that id), body included; :class:`router.errors.SkillNotFoundError`
        when there is none."""
        return self._source.skill(name)

    # -- tools --------------------------------------------------------------------------------------------------
    def skill_of(self, tool_name: str) -> str | None:
        """The skill name or id a tool stands for, or None for a tool that is not a skill."""
        if tool_name in self.tool_skills:
            return self.tool_skills[tool_name]
        return tool_name if self._source.is_skill(tool_name) else None

    def keeps(self, tool_name: str, turn: Turn) -> bool:
        """Whether the model sees this tool this turn: every tool when the turn is idle, every tool that is not a
        skill, and a skill tool only when its skill is shown."""
        if not turn.active:
            return True
        skill = self.skill_of(tool_name)
        return skill is None or skill in turn.names

    def filter(self, tools: Sequence[Any], turn: Turn, name: Any = None) -> list[Any]:
        """The tools of ``tools`` the model sees this turn, in their order (``name(tool)`` reads a tool's name;
        default its ``name`` attribute or key)."""
        read = name or tool_name
        return [t for t in tools if self.keeps(read(t), turn)]

    @staticmethod
    def instructions(base: str | None, turn: Turn) -> str | None:
        """``base`` with the turn's context after a blank line (``base`` unchanged when there is none)."""
        if not turn.context:
            return base
        return f"{base}\n\n{turn.context}" if base else turn.context


def tool_name(tool: Any) -> str:
    """A tool's name: its ``name`` attribute, or the ``name`` (or OpenAI ``function.name``) of a tool dict."""
    if isinstance(tool, Mapping):
        if isinstance(tool.get("name"), str):
            return tool["name"]
        function = tool.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return function["name"]
        return ""
    name = getattr(tool, "name", "")
    return name if isinstance(name, str) else ""


# -- where the routing happens ------------------------------------------------------------------------------------
class Adapter:
    """What every framework adapter holds: its :class:`Shortlist` (built from the same arguments) and the
    :class:`Turn` it routed last (``last_turn``, None before the first)."""

    def __init__(self, router: Any, *, k: int | None = None, pin: Iterable[str] = (),
                 tools: Mapping[str, str] | None = None, token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.shortlist = Shortlist(router, k=k, pin=pin, tools=tools, token=token, timeout=timeout)
        self.last_turn: Turn | None = None

    def route_turn(self, messages: Sequence[Mapping[str, Any]]) -> Turn:
        """:meth:`Shortlist.route`, remembered as ``last_turn``."""
        self.last_turn = self.shortlist.route(messages)
        return self.last_turn


class _Source:
    def route(self, user: list[Mapping[str, Any]], k: int | None, pin: Sequence[str]) -> Turn:
        raise NotImplementedError

    def is_skill(self, name: str) -> bool:
        raise NotImplementedError

    def check_pins(self, pin: Sequence[str]) -> None:
        raise NotImplementedError

    def skill(self, name: str) -> Skill:
        raise NotImplementedError


def _best_first(shown: Sequence[Skill], rank: Mapping[str, int]) -> list[Skill]:
    """Ranked skills by rank, then the unranked (pinned) ones in library order."""
    return sorted(shown, key=lambda s: rank.get(s.id, len(rank) + 1))


def _turn(request: str, shown: Sequence[Skill], context: str, abstained: bool, routed: bool) -> Turn:
    names = frozenset(s.name for s in shown) | frozenset(s.id for s in shown)
    return Turn(request=request, shown=tuple(shown), context=context, abstained=abstained, routed=routed,
                names=names)


class _Local(_Source):
    def __init__(self, router: Any) -> None:
        self.router = router
        self._names = frozenset(s.name for s in router.skills) | frozenset(s.id for s in router.skills)

    def _find(self, name: str) -> Skill | None:
        return self.router.registry.lookup(name)

    def check_pins(self, pin: Sequence[str]) -> None:
        for name in pin:
            if self._find(name) is None:
                raise ConfigError(f"pinned skill '{name}' is not in the library; run 'skill-router list'")

    def is_skill(self, name: str) -> bool:
        return name in self._names

    def skill(self, name: str) -> Skill:
        found = self._find(name)
        if found is None:
            raise SkillNotFoundError(f"no skill '{name}' in the library; run 'skill-router list'")
        return found

    def route(self, user: list[Mapping[str, Any]], k: int | None, pin: Sequence[str]) -> Turn:
        routing = self.router.route(list(user), k)
        chosen = {s.id for s in routing.shown} | {s.id for s in map(self._find, pin) if s is not None}
        shown = [s for s in self.router.skills if s.id in chosen]  # library order, as the server renders it
        context = self.router.profile.render(shown) if shown else ""
        rank = {m.id: m.rank for m in routing.matches}
        return _turn(conversation_text(user).request, _best_first(shown, rank), context, bool(routing.abstained),
                     bool(routing.routed))


class _Server(_Source):
    """``skill-router serve`` over HTTP with the standard library (``POST /v1/route``, ``GET /v1/skills``)."""

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"the server URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._skills: dict[str, Skill] | None = None

    def _call(self, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a local server: never a proxy
        try:
            with opener.open(request, timeout=self.timeout) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read())["error"]["message"]
            except Exception:
                message = exc.reason
            raise RouterServerError(f"{self.url}{path} answered {exc.code}: {message}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RouterServerError(f"no skill-router server answers at {self.url} ({reason}): start "
                                    "'skill-router serve' or pass a router.Router") from None

    def _table(self, refresh: bool = False) -> dict[str, Skill]:
        if self._skills is None or refresh:
            rows = self._call("/v1/skills")["skills"]
            table: dict[str, Skill] = {}
            for row in rows:
                skill = Skill(name=row["name"], description=row["description"], path=row.get("path") or "",
                              id=row["id"])
                table.setdefault(skill.name, skill)
                table.setdefault(skill.id, skill)
            self._skills = table
        return self._skills

    def check_pins(self, pin: Sequence[str]) -> None:
        pass  # the server names an unknown pinned skill on the first turn (422)

    def is_skill(self, name: str) -> bool:
        return name in self._table()

    def skill(self, name: str) -> Skill:
        try:
            row = self._call("/v1/skills/" + urllib.parse.quote(name, safe="") + "?body=true")
        except RouterServerError as exc:
            if " answered 404:" in str(exc):
                raise SkillNotFoundError(f"no skill '{name}' on {self.url}; GET /v1/skills lists them") from None
            raise
        return Skill(name=row["name"], description=row["description"], path=row.get("path") or "", id=row["id"],
                     body=row.get("body", ""), metadata=row.get("metadata") or {})

    def route(self, user: list[Mapping[str, Any]], k: int | None, pin: Sequence[str]) -> Turn:
        messages = [{"role": "user", "content": _clipped(m.get("content"))} for m in user][-MAX_MESSAGES:]
        body: dict[str, Any] = {"messages": messages, "pin": list(pin)}
        if k is not None:
            body["k"] = k
        answer = self._call("/v1/route", body)
        table = self._table()
        if any(name not in table for name in answer["shown"]):  # the server reloaded a changed library
            table = self._table(refresh=True)
        shown = [table[name] for name in answer["shown"] if name in table]
        rank = {m["id"]: m["rank"] for m in answer["matches"]}
        return _turn(conversation_text(user).request, _best_first(shown, rank), answer["catalogue"] if shown else "",
                     bool(answer["abstained"]), bool(answer["routed"]))


def _clipped(content: Any) -> Any:
    if isinstance(content, str):
        return content[:MAX_TEXT_CHARS]
    if isinstance(content, list):
        return [{"type": "text", "text": p["text"][:MAX_TEXT_CHARS]} for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str) and p.get("type", "text") == "text"]
    return ""
