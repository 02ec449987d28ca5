"""The MCP Skills extension's methods (SEP-2640; stable spec: modelcontextprotocol/ext-skills
``specification/stable/skills.mdx``), on the library view of :mod:`router.serve.mcp_skills`:

- ``skills/list`` pages through the skills, each entry a complete manifest: ``uri`` (its SKILL.md), the
  frontmatter as the SKILL.md's YAML reads (verbatim, as JSON), and ``resources``: every file with its
  ``sha256:`` digest and size in bytes, SKILL.md first;
- ``skills/get`` answers the same entry for one SKILL.md URI (``-32602`` for a URI that is no skill here); with
  ``params.name`` instead of ``params.uri`` (ours, not the spec's), for the first skill of that frontmatter name;
- ``resources/directory/read`` lists a skill folder's direct children (``inode/directory`` for folders);
- ``resources/list`` (wired in :mod:`router.serve.mcp`) pages through every file of every skill folder.

The extension is advertised, and its methods answered, at protocol 2026-07-28 only (the revision the spec is
written against; the 2025-11-25 ``ServerCapabilities`` has no ``extensions`` field, so older clients cannot see
it). Older clients keep the tools, ``resources/list``, ``resources/read`` and the prompt.

Ranking: ``skills/list`` with ``params._meta["skill-router/query"]`` set to the user's request lists only the
skills the router shows for it, best first (``"skill-router/k"``: how many, 1-50, default the router's k); the
result's ``_meta`` says whether the router abstained (``"skill-router/abstained"``) and names the decision-log
record (``"skill-router/request_id"``). Without the key the listing holds every skill, in library order.

Cursors are opaque: they name the listing, the library (a reload makes them stale, refused by name) and, for a
ranked listing, the request.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
import weakref
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

from router.serve.mcp_skills import CACHE_SCOPE, EXTENSION, TTL_MS, Entry, FileCache, SkillSpace, SkillsError

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.extension import Extension
    from mcp.shared.exceptions import MCPError

    from router.ranking import Routing
    from router.routing import Router
    from router.serve.service import Service

#: A JSON object as this module builds it for the wire.
JSONObject = dict[str, object]

#: The ``_meta`` keys of ``skills/list`` params that rank the listing for a request.
QUERY_META = "skill-router/query"
K_META = "skill-router/k"
#: The ``_meta`` keys of a ranked ``skills/list`` result.
ABSTAINED_META = "skill-router/abstained"
REQUEST_ID_META = "skill-router/request_id"
#: Entries per page of each paginated method (tests shrink them).
PAGE_SIZES = {"skills/list": 100, "resources/list": 200, "resources/directory/read": 200}
METHOD_NOT_FOUND = -32601


# -- cursors ------------------------------------------------------------------------------------------------------
def make_cursor(method: str, token: str, position: list[int], query: str | None = None) -> str:
    """An opaque cursor: which listing, of which library, from where (and for which request, when ranked)."""
    body: JSONObject = {"m": method, "t": token, "p": position}
    if query is not None:
        body["q"] = _query_hash(query)
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")


def read_cursor(cursor: object, method: str, token: str, size: int, query: str | None = None) -> list[int]:
    """The position a cursor of ``method`` points at; a cursor this server did not issue for that listing, or
    issued before the library was reloaded, is refused with the way to start over."""
    restart = f"call {method} without a cursor to start from the first page"
    if not isinstance(cursor, str):
        raise SkillsError(f"cursor must be the text of a nextCursor this server returned, got "
                          f"{json.dumps(cursor)[:80]}: {restart}")
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        known = isinstance(body, dict) and body.get("m") in PAGE_SIZES and isinstance(body.get("t"), str)
    except (ValueError, TypeError, binascii.Error):
        known = False
    if not known:
        raise SkillsError(f"cursor {cursor[:80]!r} is not one this server issued for {method}: {restart}")
    if body["m"] != method:
        raise SkillsError(f"cursor {cursor[:80]!r} was issued by {body['m']}, not {method}: {restart}")
    if body["t"] != token:
        raise SkillsError(f"cursor {cursor[:80]!r} belongs to a listing from before the library was reloaded: "
                          f"{restart}")
    position = body.get("p")
    if not (isinstance(position, list) and len(position) == size and all(type(n) is int and n >= 0
                                                                          for n in position)):
        raise SkillsError(f"cursor {cursor[:80]!r} is not one this server issued for {method}: {restart}")
    if body.get("q") != (None if query is None else _query_hash(query)):
        raise SkillsError(f"cursor {cursor[:80]!r} was issued for a listing ranked for another request (or for "
                          f"none): pass the same _meta['{QUERY_META}'] as the first page, or {restart}")
    return list(position)


def _query_hash(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# -- pages ---------------------------------------------------------------------------------------------------------
class Spaces:
    """The :class:`SkillSpace` of the service's current router, rebuilt when a reload swaps the router."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # a weak reference: a reload frees the old router, not this cache
        self._router: weakref.ref[Router] | None = None
        self._space: SkillSpace | None = None
        self._files = FileCache()

    def of(self, router: Router) -> SkillSpace:
        with self._lock:
            if self._router is not None and self._router() is router and self._space is not None:
                return self._space
        space = SkillSpace(tuple(router.skills), self._files)
        with self._lock:
            self._router, self._space = weakref.ref(router), space
        return space


def skills_page(space: SkillSpace, cursor: object, order: list[Entry] | None = None,
                query: str | None = None) -> JSONObject:
    """One page of ``skills/list``: every skill (``order`` None) or the ranked ones, whole entries only."""
    entries = list(space.skills) if order is None else order
    start = 0 if cursor is None else read_cursor(cursor, "skills/list", space.token, 1, query)[0]
    size = PAGE_SIZES["skills/list"]
    skills = []
    for entry in entries[start:start + size]:
        try:
            skills.append(space.skill_json(entry))
        except SkillsError:
            continue  # beyond the per-skill limits, or its SKILL.md went away: not served (skills/get says why)
    out: JSONObject = {"skills": skills, "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}
    if start + size < len(entries):
        out["nextCursor"] = make_cursor("skills/list", space.token, [start + size], query)
    return out


def resources_page(space: SkillSpace, cursor: object) -> tuple[list[JSONObject], str | None]:
    """One page of ``resources/list``: the files of every skill folder, folder by folder."""
    index, offset = [0, 0] if cursor is None else read_cursor(cursor, "resources/list", space.token, 2)
    size = PAGE_SIZES["resources/list"]
    out: list[JSONObject] = []
    while index < len(space.entries) and len(out) < size:
        entry = space.entries[index]
        files = space.files(entry)
        taken = files[offset:offset + size - len(out)]
        out.extend(space.resource_json(entry, f) for f in taken)
        offset += len(taken)
        if offset >= len(files):
            index, offset = index + 1, 0
    more = index < len(space.entries)
    return out, make_cursor("resources/list", space.token, [index, offset]) if more else None


def directory_page(space: SkillSpace, uri: object, cursor: object) -> JSONObject:
    """One page of ``resources/directory/read``."""
    children = space.directory(uri)
    start = 0 if cursor is None else read_cursor(cursor, "resources/directory/read", space.token, 1, str(uri))[0]
    size = PAGE_SIZES["resources/directory/read"]
    out: JSONObject = {"resources": children[start:start + size]}
    if start + size < len(children):
        out["nextCursor"] = make_cursor("resources/directory/read", space.token, [start + size], str(uri))
    return out


def ranking_of(meta: Mapping[str, Any] | None, max_k: int, max_chars: int) -> tuple[str | None, int | None]:
    """(request, k) from ``skills/list`` params ``_meta``; (None, None) when the listing is not ranked."""
    meta = meta or {}
    query, k = meta.get(QUERY_META), meta.get(K_META)
    if query is None:
        if k is not None:
            raise SkillsError(f"_meta['{K_META}'] ranks a listing only with _meta['{QUERY_META}'] (the user's "
                              "request): add the request, or drop the k")
        return None, None
    if not isinstance(query, str) or not query.strip():
        raise SkillsError(f"_meta['{QUERY_META}'] must be the user's request as non-empty text, got "
                          f"{json.dumps(query)[:80]}")
    if len(query) > max_chars:
        raise SkillsError(f"_meta['{QUERY_META}'] is {len(query)} characters long, more than {max_chars}: send "
                          "the request itself, not the whole conversation")
    if k is not None and (type(k) is not int or not 1 <= k <= max_k):
        raise SkillsError(f"_meta['{K_META}'] must be a whole number from 1 to {max_k}, got {json.dumps(k)[:80]}")
    return query, k


def ranked_entries(space: SkillSpace, routing: Routing) -> list[Entry]:
    """The skills a routing shows, best first (pinned ones after the ranked), that are skills to the extension."""
    shown = {s.id: s for s in routing.shown}
    ordered = [shown[m.id] for m in routing.matches if m.id in shown] if routing.routed else []
    ordered += [s for s in routing.shown if s not in ordered]
    entries = (space.entry_of(s) for s in ordered)
    return [e for e in entries if e is not None and not e.problem]


# -- the extension ---------------------------------------------------------------------------------------------------
def session_label(ctx: ServerRequestContext) -> str | None:
    try:
        return f"mcp-{id(ctx.session)}"
    except Exception:  # outside a request
        return None


def as_mcp_error(exc: SkillsError) -> MCPError:
    from mcp.shared.exceptions import MCPError

    return MCPError(code=exc.code, message=str(exc), data=exc.data)


def require_modern(ctx: ServerRequestContext, method: str) -> None:
    """The extension's methods answer at the protocol versions that can advertise it."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise SkillsError(f"{method} is a method of the MCP Skills extension ({EXTENSION}), which this server "
                          f"serves at protocol {', '.join(MODERN_PROTOCOL_VERSIONS)}; this session uses "
                          f"{ctx.protocol_version}: connect at {MODERN_PROTOCOL_VERSIONS[-1]} for it, or read the "
                          "skills' files with resources/list and resources/read", METHOD_NOT_FOUND,
                          {"method": method})


def skills_extension(service: Service, spaces: Spaces) -> Extension:
    """The ``Extension`` serving ``skills/list``, ``skills/get`` and ``resources/directory/read``."""
    from mcp.server.extension import Extension, MethodBinding
    from mcp_types import RequestParams
    from pydantic import ConfigDict

    from router.serve.log import new_request_id
    from router.serve.payload import DeadlineExceeded
    from router.serve.schemas import MAX_K, MAX_TEXT_CHARS
    from router.serve.service import Busy, NotReady

    # Every field is read here, not by the SDK's validation, so that each bad value gets its own message.
    class ListParams(RequestParams):
        model_config = ConfigDict(extra="allow")
        cursor: Any = None

    class GetParams(RequestParams):
        model_config = ConfigDict(extra="allow")
        uri: Any = None
        name: Any = None  # ours: the first skill of this frontmatter name

    class DirectoryParams(RequestParams):
        model_config = ConfigDict(extra="allow")
        uri: Any = None
        cursor: Any = None

    async def answer(ctx: ServerRequestContext, method: str, work: Callable[[], Awaitable[JSONObject]]) -> JSONObject:
        try:
            require_modern(ctx, method)
            try:
                return await work()
            except (NotReady, DeadlineExceeded, Busy) as exc:
                raise SkillsError(f"{method}: {exc}; try again shortly", -32603) from None
        except SkillsError as exc:
            raise as_mcp_error(exc) from None

    def space_now() -> SkillSpace:
        return spaces.of(service.router)

    async def list_skills(ctx: ServerRequestContext, params: ListParams) -> JSONObject:
        async def work() -> JSONObject:
            query, k = ranking_of(params.meta, MAX_K, MAX_TEXT_CHARS)
            if query is None:
                router = service.router
                return await service.bounded(service.run(lambda: skills_page(spaces.of(router), params.cursor)))
            try:
                router, routing, _ = await service.bounded(service.route(query, k))
            except Exception as exc:
                from router.errors import SkillRouterError

                if isinstance(exc, SkillRouterError):
                    raise SkillsError(f"skills/list cannot rank for this request: {exc}") from None
                raise
            request_id = new_request_id()

            def build() -> JSONObject:
                space = spaces.of(router)
                page = skills_page(space, params.cursor, ranked_entries(space, routing), query)
                if service.decision_log is not None and params.cursor is None:
                    service.decision_log.routed(request_id, "mcp", query, routing, k=k, session=session_label(ctx))
                page["_meta"] = {ABSTAINED_META: bool(routing.abstained), REQUEST_ID_META: request_id}
                return page

            return await service.bounded(service.run(build))

        return await answer(ctx, "skills/list", work)

    async def get_skill(ctx: ServerRequestContext, params: GetParams) -> JSONObject:
        async def work() -> JSONObject:
            name = params.name
            if params.uri is None and name is None:
                raise SkillsError("skills/get needs params.uri, the URI of a skill's SKILL.md "
                                  "(skill://<skill-path>/SKILL.md, as skills/list gives it)")

            def build() -> JSONObject:
                space = space_now()
                entry = space.skill_at(params.uri) if params.uri is not None else space.skill_named(name)
                return {"skill": space.skill_json(entry), "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}

            return await service.bounded(service.run(build))

        return await answer(ctx, "skills/get", work)

    async def read_directory(ctx: ServerRequestContext, params: DirectoryParams) -> JSONObject:
        async def work() -> JSONObject:
            if params.uri is None:
                raise SkillsError("resources/directory/read needs params.uri, a skill folder (skill://<skill-path>) "
                                  "or one of its folders")
            return await service.bounded(service.run(lambda: directory_page(space_now(), params.uri,
                                                                            params.cursor)))

        return await answer(ctx, "resources/directory/read", work)

    class Skills(Extension):
        identifier = EXTENSION

        def settings(self) -> JSONObject:
            return {"directoryRead": True}

        def methods(self) -> list[MethodBinding]:
            return [MethodBinding("skills/list", ListParams, list_skills),
                    MethodBinding("skills/get", GetParams, get_skill),
                    MethodBinding("resources/directory/read", DirectoryParams, read_directory)]

    return Skills()
