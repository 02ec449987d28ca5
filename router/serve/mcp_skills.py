"""The library as the MCP Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``) addresses it: skill paths,
manifests with digests, and the files themselves, confined to the skill folders. The methods that serve them are
in :mod:`router.serve.mcp_extension`.

Skill paths. A skill's path is its frontmatter ``name`` (the last URI segment must equal it): its files are
``skill://<skill-path>/<file-path>``. A second skill of the same name gets its parent folder's name as a prefix
(``skill://team-b/pdf/SKILL.md``), then a number. A skill whose SKILL.md has no valid frontmatter name (a-z, 0-9,
single hyphens, at most 64) and description (at most 1,024 characters) is not a skill to the extension
(``skills/get`` says why); its files are still resources, under its name in the library.

What is served of a folder: regular files up to :data:`MAX_FILE_BYTES`, symlinks only when they resolve inside
the skill folder, nothing whose name starts with ``.`` (``.git``, ``.env``), no ``__pycache__``. A skill with more
than :data:`MAX_SKILL_FILES` files or :data:`MAX_SKILL_BYTES` bytes (the spec's per-skill limits) is not served
as a skill. Digests are computed from the files as they are on disk when asked, and kept (across reloads too)
while a file's size, modification time and inode stay the same; so is each SKILL.md's frontmatter.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import mimetypes
import os
import re
import secrets
import stat
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Mapping
from urllib.parse import quote, unquote

from router.files import FileTooLargeError, NotRegularFileError, read_bytes
from router.skill import Skill

EXTENSION = "io.modelcontextprotocol/skills"
#: Freshness hint of every listing, entry and read: the server reloads a changed library within a second or two,
#: and digests let a host see a change anyway; a minute spares a host re-listing on every turn.
TTL_MS = 60_000
CACHE_SCOPE: Literal["public", "private"] = "public"  # the same answer for every client: there is no per-user content
SCHEME = "skill://"
SKILL_FILE = "SKILL.md"
DIRECTORY_MIME = "inode/directory"
MAX_FILE_BYTES = 1 << 20
MAX_SKILL_FILES = 512
MAX_SKILL_BYTES = 16 * 1024 * 1024
INVALID_PARAMS = -32602
_SKIPPED_DIRS = frozenset({"__pycache__"})
_NAME_CHARS = re.compile(r"[^a-z0-9-]+")
_VALID_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: The Agent Skills specification's longest description, in characters.
MAX_DESCRIPTION_CHARS = 1024


class SkillsError(Exception):
    """A JSON-RPC error of the extension: ``code`` and a message naming the problem and the fix."""

    def __init__(self, message: str, code: int = INVALID_PARAMS, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


@dataclass(frozen=True)
class SkillFile:
    """One served file of a skill: where it is, how the extension names it, and its bytes' digest."""

    relative: str  # "/"-separated, inside the skill folder
    fs_path: str
    size: int
    digest: str
    uri: str
    mime_type: str


@dataclass(frozen=True)
class Entry:
    """A skill folder as the extension addresses it. ``problem`` is why it is no skill to the extension ("" when
    it is one); ``frontmatter`` is its SKILL.md's YAML as JSON (None when that cannot be read)."""

    skill: Skill
    path: str  # the skill path: URI-encoded segments joined by "/"
    name: str
    frontmatter: Mapping[str, Any] | None
    problem: str

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.path}/{SKILL_FILE}"

    @property
    def root(self) -> str:
        return f"{SCHEME}{self.path}"


def valid_name(name: object) -> bool:
    """The Agent Skills naming rule: 1-64 of a-z, 0-9 and hyphens, no hyphen first, last or twice."""
    return isinstance(name, str) and len(name) <= 64 and _VALID_NAME.fullmatch(name) is not None


def mime_type(relative: str) -> str:
    if relative.lower().endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(relative, strict=False)
    return guessed or "application/octet-stream"


def _jsonable(value: Any, where: str) -> Any:
    """A YAML value as JSON holds it: dates as ISO text, keys as text; anything else JSON cannot hold fails."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{where} is {value}, which JSON cannot hold")
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise ValueError(f"{where} is a {type(value).__name__}, which JSON cannot hold")


def read_frontmatter(skill: Skill) -> tuple[dict[str, Any] | None, str]:
    """(the SKILL.md's frontmatter as JSON, "") or (None or the partial frontmatter, why it is no skill)."""
    import yaml

    from router.files import MAX_SKILL_FILE_BYTES
    from router.frontmatter import FrontmatterError, safe_load, split_frontmatter, yaml_error_text

    try:
        text = read_bytes(skill.fs_path, MAX_SKILL_FILE_BYTES).decode("utf-8")
        data = safe_load(split_frontmatter(text)[0])
    except UnicodeDecodeError:
        return None, "its SKILL.md is not UTF-8 text"
    except (OSError, FrontmatterError) as exc:
        return None, f"its SKILL.md cannot be read ({exc.strerror if isinstance(exc, OSError) else exc})"
    except yaml.YAMLError as exc:
        return None, f"its SKILL.md frontmatter is not valid YAML ({yaml_error_text(exc)})"
    if not isinstance(data, dict):
        return None, "its SKILL.md frontmatter is not a YAML mapping"
    try:
        front = {str(k): _jsonable(v, f"frontmatter field '{k}'") for k, v in data.items()}
    except ValueError as exc:
        return None, f"its SKILL.md {exc}"
    if not valid_name(front.get("name")):
        return front, (f"its frontmatter name {front.get('name')!r} is not a valid skill name (1-64 of a-z, 0-9 "
                       "and single hyphens, as the Agent Skills specification requires)")
    if not isinstance(front.get("description"), str) or not front["description"].strip():
        return front, "its frontmatter has no description"
    if len(front["description"]) > MAX_DESCRIPTION_CHARS:
        return front, (f"its frontmatter description is {len(front['description'])} characters long, more than the "
                       f"{MAX_DESCRIPTION_CHARS} the Agent Skills specification allows")
    return front, ""


class FileCache:
    """What was read of each file, kept while its size, modification time and inode stay the same: the digests,
    and the frontmatter of each SKILL.md (shared by the spaces of successive reloads, so that a reload re-reads
    only the files that changed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: dict[str, tuple[tuple[int, int, int], str, int]] = {}
        self._fronts: dict[str, tuple[tuple[int, int, int], tuple[dict[str, Any] | None, str]]] = {}

    @staticmethod
    def _key(path: str) -> tuple[int, int, int] | None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_size, info.st_mtime_ns, info.st_ino

    def digest(self, path: str) -> tuple[str, int] | None:
        """(``sha256:<hex>``, size) of the file's bytes, or None when it cannot be read."""
        key = self._key(path)
        cached = self._digests.get(path)
        if key is None:
            return None
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        try:
            data = read_bytes(path, MAX_FILE_BYTES)
        except OSError:
            return None
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        with self._lock:
            self._digests[path] = (key, digest, len(data))
        return digest, len(data)

    def frontmatter(self, skill: Skill) -> tuple[dict[str, Any] | None, str]:
        key = self._key(skill.fs_path)
        cached = self._fronts.get(skill.fs_path)
        if key is not None and cached is not None and cached[0] == key:
            return cached[1]
        found = read_frontmatter(skill)
        if key is not None:
            with self._lock:
                self._fronts[skill.fs_path] = (key, found)
        return found


def _segment(text: str) -> str:
    return quote(text, safe="")


class SkillSpace:
    """The extension's view of one router's library: skill paths, manifests, files. Built once per router (a
    reload builds a new one); digests are cached by file size and modification time."""

    def __init__(self, skills: tuple[Skill, ...], cache: FileCache | None = None) -> None:
        self.token = secrets.token_hex(4)  # cursors of an older library are refused by name
        self._cache = cache if cache is not None else FileCache()
        taken: set[str] = set()
        entries: list[Entry] = []
        folders = [s for s in skills if s.path]
        read = [(s, *self._cache.frontmatter(s)) for s in folders]
        # Skills first, in library order, so that a skill keeps its name as its path whatever else is there.
        for skill, front, problem in sorted(read, key=lambda item: bool(item[2])):
            name = front["name"] if front is not None and not problem else _NAME_CHARS.sub("-", skill.name.lower())
            path = self._claim(skill, _segment(name.strip("-") or "skill"), taken)
            entries.append(Entry(skill, path, name, front, problem))
        order = {s.id: i for i, s in enumerate(folders)}
        self.entries = tuple(sorted(entries, key=lambda e: order[e.skill.id]))
        self.skills = tuple(e for e in self.entries if not e.problem)
        self._by_path = {e.path: e for e in self.entries}
        self._by_id = {e.skill.id: e for e in self.entries}
        self.names = {e.name: e for e in reversed(self.skills)}  # the first skill of each name

    @staticmethod
    def _claim(skill: Skill, name: str, taken: set[str]) -> str:
        parent = os.path.basename(os.path.dirname(skill.directory.rstrip("/")))
        prefix = _segment(_NAME_CHARS.sub("-", parent.lower()).strip("-") or "skills")
        candidates = [name, f"{prefix}/{name}", *(f"{prefix}-{n}/{name}" for n in range(2, 10_000))]
        path = next(c for c in candidates if c not in taken)
        taken.add(path)
        return path

    # -- addressing ---------------------------------------------------------------------------------------------
    def entry_of(self, skill: Skill) -> Entry | None:
        return self._by_id.get(skill.id)

    def uri_of(self, skill: Skill) -> str:
        entry = self._by_id.get(skill.id)
        return entry.uri if entry is not None else f"{SCHEME}{_segment(skill.name)}/{SKILL_FILE}"

    def locate(self, uri: object) -> tuple[Entry, list[str]]:
        """The skill folder a ``skill://`` URI is in, and the decoded path segments inside it."""
        if not isinstance(uri, str) or not uri:
            raise SkillsError(f"uri must be a skill:// URI (text), got {json.dumps(uri)[:80]}")
        if not uri.startswith(SCHEME):
            raise SkillsError(f"{uri[:200]} is not a skill:// URI: this server serves skill files as "
                              "skill://<skill-path>/<file-path> (see resources/list or skills/list)")
        raw = uri[len(SCHEME):].rstrip("/") if uri != SCHEME else ""
        parts = raw.split("/")
        for cut in range(len(parts), 0, -1):  # the longest skill path that prefixes the URI
            entry = self._by_path.get("/".join(parts[:cut]))
            if entry is None:
                entry = self._by_path.get("/".join(parts[:cut]).lower())  # the authority is case-insensitive
            if entry is not None:
                inside = [unquote(p) for p in parts[cut:]]
                for segment in inside:
                    if segment in ("", ".", ".."):
                        raise SkillsError(f"{uri[:200]} holds an empty, '.' or '..' segment: address a skill's "
                                          "files by their path inside the skill folder")
                    if "\x00" in segment or "/" in segment or "\\" in segment:
                        raise SkillsError(f"{uri[:200]} holds a NUL, an encoded '/' or a '\\' in a segment")
                return entry, inside
        raise SkillsError(f"No skill is served at {uri[:200]}: {self._hint(parts)}")

    def _hint(self, parts: list[str]) -> str:
        import difflib

        if parts and parts[-1] == SKILL_FILE:
            parts = parts[:-1]
        wanted = unquote("/".join(parts)) if parts else ""
        close = difflib.get_close_matches(wanted, [e.path for e in self.skills], n=3) if wanted else []
        if close:
            return "did you mean " + " or ".join(f"{SCHEME}{c}/{SKILL_FILE}" for c in close) + "?"
        return "call skills/list (or resources/list) for the URIs this server serves"

    def skill_at(self, uri: object) -> Entry:
        """The skill whose SKILL.md is at ``uri`` (skills/get)."""
        if isinstance(uri, str) and uri.startswith(SCHEME) and not uri.endswith("/" + SKILL_FILE):
            raise SkillsError(f"skills/get takes the URI of a skill's SKILL.md (skill://<skill-path>/SKILL.md), "
                              f"got {uri[:200]}")
        entry, inside = self.locate(uri)
        if inside != [SKILL_FILE]:
            hint = self._hint(str(uri)[len(SCHEME):].split("/"))
            raise SkillsError(f"No skill is served at {str(uri)[:200]}: {hint}")
        if entry.problem:
            raise SkillsError(f"No skill is served at {uri}: the folder of '{entry.skill.name}' is not served as a "
                              f"skill because {entry.problem}; fix its SKILL.md and the server reloads it")
        return entry

    def skill_named(self, name: object) -> Entry:
        """The first skill whose frontmatter name is ``name`` (``skills/get`` with ``params.name``; a name is a
        label, and two skills may share one: their URIs tell them apart)."""
        if not isinstance(name, str) or not name:
            raise SkillsError(f"name must be a skill's name (text), got {json.dumps(name)[:80]}")
        entry = self.names.get(name)
        if entry is None:
            import difflib

            close = difflib.get_close_matches(name, list(self.names), n=3)
            hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else \
                "call skills/list for the skills this server serves"
            raise SkillsError(f"No skill named {name[:100]!r} is served: {hint}")
        return entry

    # -- files --------------------------------------------------------------------------------------------------
    def files(self, entry: Entry) -> list[SkillFile]:
        """The skill's served files, SKILL.md first, then by path; each with its digest."""
        root = entry.skill.fs_directory
        real_root = os.path.realpath(root)
        found: list[SkillFile] = []
        for relative, fs_path, _ in self._walk(root, real_root, ""):
            digest = self._digest(fs_path)
            if digest is None:
                continue
            found.append(SkillFile(relative, fs_path, digest[1], digest[0],
                                   f"{entry.root}/{'/'.join(_segment(p) for p in relative.split('/'))}",
                                   mime_type(relative)))
        found.sort(key=lambda f: (f.relative != SKILL_FILE, f.relative))
        return found

    def _walk(self, folder: str, real_root: str, prefix: str) -> Iterator[tuple[str, str, int]]:
        try:
            with os.scandir(folder) as listing:
                children = sorted(listing, key=lambda d: d.name)
        except OSError:
            return
        for child in children:
            if not self._served_name(child.name):
                continue
            relative = f"{prefix}{child.name}"
            try:
                if child.is_symlink():
                    real = os.path.realpath(child.path)
                    if os.path.commonpath([real_root, real]) != real_root or not os.path.isfile(real):
                        continue  # a link out of the folder, or to a folder: never followed
                    info = os.stat(real)
                elif child.is_dir(follow_symlinks=False):
                    if child.name not in _SKIPPED_DIRS:
                        yield from self._walk(child.path, real_root, relative + "/")
                    continue
                else:
                    info = child.stat(follow_symlinks=False)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
                yield relative, child.path, info.st_size

    @staticmethod
    def _served_name(name: str) -> bool:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8 cannot be a URI segment
            return False
        return not name.startswith(".")

    def _digest(self, fs_path: str) -> tuple[str, int] | None:
        return self._cache.digest(fs_path)

    def skill_json(self, entry: Entry) -> dict[str, Any]:
        """The ``Skill`` entry: uri, frontmatter, and the complete manifest of its files."""
        files = self.files(entry)
        if len(files) > MAX_SKILL_FILES or sum(f.size for f in files) > MAX_SKILL_BYTES:
            raise SkillsError(f"skill {entry.uri} is not served: it has {len(files)} files of "
                              f"{sum(f.size for f in files)} bytes, beyond the extension's limits of "
                              f"{MAX_SKILL_FILES} files and {MAX_SKILL_BYTES} bytes per skill")
        if not files or files[0].relative != SKILL_FILE:
            raise SkillsError(f"skill {entry.uri} is not served: its SKILL.md cannot be read")
        return {"uri": entry.uri, "frontmatter": dict(entry.frontmatter or {}),
                "resources": [{"uri": f.uri, "digest": f.digest, "size": f.size} for f in files]}

    def resource_json(self, entry: Entry, file: SkillFile) -> dict[str, Any]:
        """The ``Resource`` for one file: SKILL.md named and described by its frontmatter."""
        out: dict[str, Any] = {"uri": file.uri, "name": file.relative.rsplit("/", 1)[-1],
                               "title": f"{entry.name}/{file.relative}", "mimeType": file.mime_type,
                               "size": file.size}
        if file.relative == SKILL_FILE:
            out["name"] = entry.name
            description = (entry.frontmatter or {}).get("description")
            out["description"] = description if isinstance(description, str) else entry.skill.description
        return out

    def read(self, uri: object) -> tuple[bytes, str]:
        """(bytes, MIME type) of the file at ``uri``; a URI that names no served file is refused by name."""
        entry, inside = self.locate(uri)
        if not inside:
            raise SkillsError(f"{uri} is a directory resource (a skill folder): read its SKILL.md at "
                              f"{entry.uri}, or list it with resources/directory/read")
        relative = "/".join(inside)
        hidden = next((p for p in inside if not self._served_name(p) or p in _SKIPPED_DIRS), None)
        if hidden is not None:
            raise SkillsError(f"{uri} is not served: files and folders named like '{hidden}' (a leading '.', or "
                              "__pycache__) are kept out of skill resources")
        path = self._confined(entry, relative, str(uri))
        try:
            data = read_bytes(path, MAX_FILE_BYTES)
        except IsADirectoryError:
            raise SkillsError(f"{uri} is a folder of skill '{entry.name}': list it with "
                              "resources/directory/read") from None
        except FileNotFoundError:
            raise SkillsError(f"skill '{entry.name}' has no file '{relative}' ({uri}): see its entry in "
                              "skills/get for the files it has") from None
        except FileTooLargeError:
            raise SkillsError(f"{uri} is larger than {MAX_FILE_BYTES} bytes, the largest file this server "
                              "serves") from None
        except NotRegularFileError:
            raise SkillsError(f"{uri} is not a regular file (a FIFO, a device or a socket)") from None
        except OSError as exc:
            raise SkillsError(f"cannot read {uri}: {exc.strerror or type(exc).__name__}", -32603) from None
        return data, mime_type(relative)

    def _confined(self, entry: Entry, relative: str, uri: str) -> str:
        from router.errors import PathEscapeError
        from router.paths import resolve_skill_path

        try:
            return resolve_skill_path(entry.skill, relative, strict=True)
        except PathEscapeError:
            raise SkillsError(f"{uri} leaves the folder of skill '{entry.name}' (a symlink out of it): only "
                              "files inside a skill folder are served") from None

    def directory(self, uri: object) -> list[dict[str, Any]]:
        """The direct children of a skill folder or one of its folders, as resources."""
        entry, inside = self.locate(uri)
        relative = "/".join(inside)
        if inside and any(not self._served_name(p) or p in _SKIPPED_DIRS for p in inside):
            raise SkillsError(f"{uri} is not served: folders named with a leading '.' or __pycache__ are kept out")
        path = self._confined(entry, relative, str(uri)) if inside else entry.skill.fs_directory
        if not os.path.isdir(path):
            if os.path.exists(path):
                raise SkillsError(f"{uri} is not a directory resource: read it with resources/read")
            raise SkillsError(f"skill '{entry.name}' has no folder '{relative}' ({uri})")
        real_root = os.path.realpath(entry.skill.fs_directory)
        base = f"{entry.root}/" + "".join(f"{_segment(p)}/" for p in inside)
        out: list[dict[str, Any]] = []
        try:
            with os.scandir(path) as listing:
                children = sorted(listing, key=lambda d: d.name)
        except OSError as exc:
            raise SkillsError(f"cannot list {uri}: {exc.strerror or type(exc).__name__}", -32603) from None
        for child in children:
            if not self._served_name(child.name):
                continue
            child_uri = base + _segment(child.name)
            if child.is_dir(follow_symlinks=False):
                if child.name not in _SKIPPED_DIRS:
                    out.append({"uri": child_uri, "name": child.name, "mimeType": DIRECTORY_MIME})
                continue
            served = list(self._walk_one(child, real_root))
            if served:
                rel = f"{relative}/{child.name}" if relative else child.name
                out.append({"uri": child_uri, "name": child.name, "mimeType": mime_type(rel), "size": int(served[0])})
        return out

    @staticmethod
    def _walk_one(child: os.DirEntry[str], real_root: str) -> Iterator[int]:
        try:
            if child.is_symlink():
                real = os.path.realpath(child.path)
                if os.path.commonpath([real_root, real]) != real_root:
                    return
                info = os.stat(real)
            else:
                info = child.stat(follow_symlinks=False)
        except (OSError, ValueError):
            return
        if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
            yield info.st_size
