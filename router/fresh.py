"""Whether a library's skill folders changed since they were last read: a stat per file, not a parse.

A prompt hook without its warm server routes in-process, and reading ~700 SKILL.md files (YAML frontmatter,
the harness's naming rules) took longer than the whole prompt's budget on a busy machine. So once a library has
been read, :func:`save` keeps beside its index (``library.saved`` in the index folder):

- the stamp (size, mtime_ns, ctime_ns, inode) of every folder under the library's skill folders (every folder
  the harness reads for a harness library, missing ones included), of every ``*.md`` file and
  ``routing-examples.txt`` in them, and of the other files the profile reads (Codex's ``config.toml``);
- the library as it was read (:class:`router.library.Library`: the discovered skills, the registry's skills with
  their sidecar examples, errors, warnings and notes), in plain JSON.

The file is one line of JSON (the identity, the stamps, the library without the skills' bodies and the length in
UTF-8 bytes of each body), a line end, then the bodies' UTF-8 bytes one after the other. The bodies are most of
the bytes, and they are decoded only once the stamps showed the library unchanged, with no JSON escapes to undo
(on ~700 skills, 6.5 MB: parsing it all as JSON cost more than the rest of the read).

:func:`read` walks the same folders and compares the stamps: when every one is the same, and no file or folder
came or went, the saved library is returned without opening a single SKILL.md; otherwise None, and the caller
reads the skills as always (correctness first). A folder's stamp changes when an entry is added, removed or
renamed in it, a file's when it is written or replaced, so any edit the discovery would see is noticed. Stamps
newer than :data:`RACY_S` when saved are not trusted (a write in the same clock tick could go unseen): nothing
is saved then, and the next reader reads the skills. A library whose parse does not survive JSON (a frontmatter
value JSON cannot hold) is never saved, nor is one under more than :data:`MAX_ENTRIES` files and folders.

When something changed, reading the skills again need not parse every frontmatter: :func:`load` (what
:meth:`router.index.LibrarySource.read` calls) keeps the profile's frontmatter parses beside the index
(``frontmatter.saved``: frontmatter text -> its parse, :func:`router.profiles.base.front_parse`) and gives them to
the next process, which reads every SKILL.md as always but parses only a frontmatter it has not seen. Kept by
text, a parse can never be stale: an edited, replaced or renamed file is read, and its new text parsed.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from router.library import Library
    from router.skill import Skill
    from router.spec import LibrarySpec

FORMAT = 2
#: Not library.json, which the format-1 reader of earlier versions reads and rewrites: both can share an index folder.
FILE = "library.saved"
#: Stamps younger than this when saved are not trusted (file systems with coarse timestamps).
RACY_S = 2.0
#: A library under more files and folders than this is read every time (the walk would cost what it saves).
MAX_ENTRIES = 50_000
EXAMPLES_FILE = "routing-examples.txt"


def watched(spec: LibrarySpec) -> tuple[list[str], list[str]]:
    """(folders, files) the library ``spec`` describes is read from: its roots, or every folder the harness reads
    (missing ones included, so that a new one is noticed), and the profile's other inputs."""
    profile = spec.profile
    files: list[str] = []
    if spec.roots is not None:
        folders = [os.path.abspath(r) for r in spec.roots]
    else:
        sources = getattr(profile, "harness_sources", None)  # claude-code: skills and commands folders
        folders = [s.path for s in sources()] if callable(sources) else list(profile.harness_paths()) or \
            [os.path.abspath(r) for r in spec.folders]
        codex_home = getattr(profile, "_codex_home", None)  # codex: [[skills.config]] rules in config.toml
        if callable(codex_home):
            files.append(os.path.join(codex_home(), "config.toml"))
    return list(dict.fromkeys(folders)), files


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def stamps(folders: list[str], files: list[str]) -> dict[str, list[int] | None] | None:
    """The stamp of each folder under ``folders`` (symbolic links followed), of each ``*.md`` and sidecar file in
    them, and of ``files``; None (missing) for a path that does not exist. None when there are more than
    :data:`MAX_ENTRIES`."""
    found: dict[str, list[int] | None] = {}
    for path in files:
        found[path] = _stamp(path)
    for root in folders:
        found[root] = _stamp(root)
        if found[root] is None:
            continue
        for folder, dirs, names in os.walk(root, followlinks=True):
            dirs.sort()
            if folder != root:
                found[folder] = _stamp(folder)
            for name in names:
                if name.endswith(".md") or name == EXAMPLES_FILE:
                    path = os.path.join(folder, name)
                    found[path] = _stamp(path)
            if len(found) > MAX_ENTRIES:
                return None
    return found


def _identity(spec: LibrarySpec, confine: bool) -> dict[str, Any]:
    from router.version import package_version

    folders, files = watched(spec)
    return {"format": FORMAT, "package": package_version(), "key": spec.key, "profile": spec.profile.name,
            "confine": bool(confine), "folders": folders, "files": files}


#: Marks a value JSON has no type for (YAML's dates, a tuple, a mapping whose keys are not all text): a key no
#: frontmatter of text starts with.
TAG = "\0"


def _plain(value: Any) -> Any:
    """A frontmatter value as JSON holds it: a date, a time, a tuple or a mapping with other keys marked by
    :data:`TAG` (:func:`_value` reads it back); TypeError for anything else JSON cannot hold."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is list:
        return [_plain(v) for v in value]
    if kind is dict:
        if all(type(k) is str and not k.startswith(TAG) for k in value):
            return {k: _plain(v) for k, v in value.items()}
        return {f"{TAG}dict": [[_plain(k), _plain(v)] for k, v in value.items()]}
    if kind is tuple:
        return {f"{TAG}tuple": [_plain(v) for v in value]}
    if kind is datetime.date or kind is datetime.datetime:
        return {f"{TAG}{kind.__name__}": value.isoformat()}
    raise TypeError(f"{kind.__name__} is not kept")


def _value(data: Any) -> Any:
    if type(data) is list:
        return [_value(v) for v in data]
    if type(data) is not dict:
        return data
    if len(data) == 1:
        (key, inner), = data.items()
        if key == f"{TAG}dict":
            return {_value(k): _value(v) for k, v in inner}
        if key == f"{TAG}tuple":
            return tuple(_value(v) for v in inner)
        if key == f"{TAG}date":
            return datetime.date.fromisoformat(inner)
        if key == f"{TAG}datetime":
            return datetime.datetime.fromisoformat(inner)
    return {k: _value(v) for k, v in data.items()}


def _skill_json(skill: Skill) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "path": skill.path, "id": skill.id,
            "body": skill.body, "metadata": _plain(dict(skill.metadata)), "index_description": skill.index_description,
            "examples": list(skill.examples), "os_path": skill.os_path}


def _skill_of(data: dict[str, Any]) -> Skill:
    from router.skill import Skill

    return Skill(name=data["name"], description=data["description"], path=data["path"], id=data["id"],
                 body=data["body"], metadata=_value(data["metadata"]), index_description=data["index_description"],
                 examples=tuple(data["examples"]), os_path=data["os_path"])


def _same(a: Skill, b: Skill) -> bool:
    return a == b and dict(a.metadata) == dict(b.metadata) and a.os_path == b.os_path


def _library_json(loaded: Library) -> dict[str, Any] | None:
    """``loaded`` as JSON, or None when it would not come back the same."""
    discovery = loaded.registry.discovery
    if discovery is None:
        return None
    found = list(discovery.skills)
    position = {skill.path: n for n, skill in enumerate(found)}
    if len(position) != len(found) or any(s.path not in position for s in loaded.registry):
        return None
    try:
        skills = [_skill_json(s) for s in found]
        data = {"discovered": skills, "errors": list(discovery.errors), "warnings": list(discovery.warnings),
                "notes": list(loaded.notes),
                "registry": [[position[s.path], list(s.examples)] for s in loaded.registry]}
        text = json.dumps(data)
    except (TypeError, ValueError):
        return None
    back = json.loads(text)
    if skills != back["discovered"] or any(_value(b["metadata"]) != dict(s.metadata)
                                           for s, b in zip(found, back["discovered"])):
        return None  # not what was parsed (a value that only looks like a marked one...)
    return back


def _library_of(data: dict[str, Any], spec: LibrarySpec) -> Library:
    import dataclasses

    from router.library import Library
    from router.profiles import Discovery
    from router.registry import SkillRegistry

    found = [_skill_of(s) for s in data["discovered"]]
    discovery = Discovery(skills=tuple(found), errors=tuple(data["errors"]), warnings=tuple(data["warnings"]))
    registry = [dataclasses.replace(found[n], examples=tuple(examples)) if tuple(examples) != found[n].examples
                else found[n] for n, examples in data["registry"]]
    return Library(SkillRegistry(registry, discovery=discovery), spec.profile, tuple(data["notes"]))


def path(spec: LibrarySpec) -> str:
    return os.path.join(spec.index_folder, FILE)


def save(spec: LibrarySpec, loaded: Library, *, confine: bool = False, now: float | None = None) -> bool:
    """Keep ``loaded`` (what ``spec.load(confine=confine)`` just returned) with the stamps of what it was read
    from; False when it cannot be kept (see the module docstring). Never raises for a folder it cannot write."""
    if spec.catalog is not None:
        return False
    identity = _identity(spec, confine)
    before = stamps(identity["folders"], identity["files"])
    library = _library_json(loaded)
    if before is None or library is None:
        return False
    limit = int(((time.time() if now is None else now) - RACY_S) * 1e9)
    if any(s is not None and max(s[1], s[2]) > limit for s in before.values()):
        return False  # written a moment ago: a change in the same clock tick would keep these stamps
    try:
        bodies = [skill.pop("body").encode("utf-8") for skill in library["discovered"]]
    except UnicodeEncodeError:  # a body that is not text (made safe as skills are made: not expected)
        return False
    head = json.dumps({**identity, "stamps": before, "library": library, "bodies": [len(b) for b in bodies]})
    # one line of ASCII: JSON escapes every line end, every other character and a surrogate of a folder's name
    return _write_whole(spec.index_folder, path(spec), [head.encode("utf-8") + b"\n", *bodies])


def _write_whole(folder: str, target: str, chunks: list[bytes]) -> bool:
    """Write ``chunks`` to ``target`` in ``folder`` through a temporary file and one rename, so a reader sees the
    old file or the whole new one; False (the temporary file removed) when the folder cannot be written."""
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(temporary, "wb") as handle:
            handle.writelines(chunks)
        os.replace(temporary, target)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
    return True


def read(spec: LibrarySpec, *, confine: bool = False) -> Library | None:
    """The library saved for ``spec`` when nothing it was read from changed since; None otherwise (or when
    nothing was saved, or the file cannot be used)."""
    if spec.catalog is not None:
        return None
    from router.files import read_bytes

    try:
        data = read_bytes(path(spec), 1 << 30)
        end = data.find(b"\n")
        saved = json.loads(data[:end]) if end >= 0 else None
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict):
        return None
    identity = _identity(spec, confine)
    if any(saved.get(k) != v for k, v in identity.items()):
        return None
    now = stamps(identity["folders"], identity["files"])
    if now is None or now != saved.get("stamps"):
        return None
    try:
        library = saved["library"]
        lengths = saved["bodies"]
        if len(lengths) != len(library["discovered"]) or sum(lengths) != len(data) - end - 1 \
                or not all(type(n) is int and n >= 0 for n in lengths):
            return None  # cut, or not what was written
        start = end + 1
        for skill, length in zip(library["discovered"], lengths):
            skill["body"] = data[start:start + length].decode("utf-8")
            start += length
        return _library_of(library, spec)
    except (KeyError, TypeError, ValueError, IndexError):  # UnicodeDecodeError is a ValueError
        return None


# -- the frontmatter parses, kept beside the index for the next process --------------------------------------------
#: Beside ``library.saved``: the frontmatter parses of the library's profile (:func:`router.profiles.base.front_parse`),
#: so that a new process after one edit parses one frontmatter, not every one (on 10,000 skills the YAML was about
#: half of reading them).
FRONTS_FILE = "frontmatter.saved"
FRONTS_FORMAT = 1
#: What this process read or wrote of each index folder's parses: (kind, how many parses the kind had gained then).
_FRONTS_SEEN: dict[str, tuple[str, int]] = {}


def _fronts_identity(kind: str) -> dict[str, Any]:
    import yaml

    from router.version import package_version

    return {"format": FRONTS_FORMAT, "package": package_version(), "kind": kind, "yaml": yaml.__version__,
            "libyaml": bool(getattr(yaml, "__with_libyaml__", False))}


#: A kept library larger than this is not read back by :func:`load`, which keeps one whole (:func:`save`) only while
#: its bodies are at most a quarter as many characters: reading and writing a larger one cost what parsing its skills
#: costs (91 MB at 10,000 skills of the corpora's bodies).
KEPT_BYTES = 32 << 20


def load(spec: LibrarySpec, *, confine: bool = False) -> tuple[Library, Callable[[], bool] | None]:
    """``spec.load(confine=confine)``: the library kept beside its index when nothing it is read from changed
    (:func:`read`, for a library of at most :data:`KEPT_BYTES` of bodies), else read with the frontmatter parses an
    earlier process kept (only a frontmatter they do not hold is parsed); and what to keep once the index is kept
    (None: nothing), which writes only what changed and never raises for a folder it cannot write."""
    from router.profiles.base import _FRONTS_ADDED, parse_kind, remember_fronts

    again = path(spec) in _DISCOVERED  # this process read it before: its discovery remembers the unchanged files
    if spec.catalog is None and not again and _size(path(spec)) <= KEPT_BYTES:
        kept = read(spec, confine=confine)
        if kept is not None:
            return kept, None
    kind = parse_kind(spec.profile)
    target = os.path.join(spec.index_folder, FRONTS_FILE)
    if target not in _FRONTS_SEEN and spec.catalog is None:
        from router.files import read_bytes

        seen = -1  # no kept parses read here: this folder's file is written, whatever this process parsed before
        try:
            saved = json.loads(read_bytes(target, 1 << 30))
            if isinstance(saved, dict) and all(saved.get(k) == v for k, v in _fronts_identity(kind).items()) \
                    and isinstance(saved.get("parses"), dict):
                remember_fronts(kind, saved["parses"])
                seen = _FRONTS_ADDED.get(kind, 0)
        except (OSError, ValueError):
            pass  # none yet, or not this version's: every frontmatter is parsed
        _FRONTS_SEEN[target] = (kind, seen)
    loaded = spec.load(confine=confine)
    _DISCOVERED.add(path(spec))

    def keep() -> bool:
        # at most KEPT_BYTES // 4 characters of bodies: at most KEPT_BYTES of UTF-8
        whole = spec.catalog is None and not again and sum(len(s.body) for s in loaded.registry) <= KEPT_BYTES // 4
        kept = whole and save(spec, loaded, confine=confine)
        return _keep_fronts(spec, kind, target) or kept

    return loaded, keep


#: The kept libraries whose skills this process read (a server reloading one after an edit reads it again from its
#: files, each unchanged one remembered, and does not write it whole on every reload).
_DISCOVERED: set[str] = set()


def _size(file: str) -> int:
    try:
        return os.stat(file).st_size
    except OSError:
        return 0


def _keep_fronts(spec: LibrarySpec, kind: str, target: str) -> bool:
    from router.profiles.base import _FRONTS_ADDED, fronts

    added = _FRONTS_ADDED.get(kind, 0)
    if spec.catalog is not None or _FRONTS_SEEN.get(target) == (kind, added):
        return False  # nothing parsed since the file was read or written
    parses = fronts(kind)
    if not parses:
        return False
    # dumps, not dump: dump writes chunk by chunk
    if not _write_whole(spec.index_folder, target, [json.dumps({**_fronts_identity(kind), "parses": parses})
                                                    .encode("ascii")]):
        return False
    _FRONTS_SEEN[target] = (kind, added)
    return True
