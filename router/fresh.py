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

When something changed, a new process need not read every SKILL.md either: :func:`load` keeps beside the index
(``parses.saved``, :data:`PARSES_FILE`) what the discovery's :class:`router.profiles.base.ParsedFiles` holds, each
file's parse by its stamp (mode, size, mtime_ns, ctime_ns, inode, device), without the bodies, with each skill's
signal texts (:func:`router.index.kept_texts`). The profile's discovery runs as always (its folders, its order, its
rules, its warnings), but a file whose stamp is the one kept is neither opened nor parsed: its skill is a
:class:`SavedSkill`, equal to the skill the file parses to, whose body is read from the file (by the same parse)
the first time something asks for it, so past :data:`router.passages.MAX_SKILLS` skills (where no signal indexes a
whole body) a refresh after one edit reads one file. Each kept row of texts comes with its texts' digests
(:func:`indexes.bm25.text_digest`), so that BM25's term counts and the saved index's skill hashes find an unchanged
skill without hashing its texts again. The file is one JSON line of identity, then one line ``[key, stamp,
parse]`` per file, each led by the CRC-32 of the rest of it (a line damaged anywhere, even inside a text, is not
used); a refresh appends the lines of the files it parsed, and the file is written whole
again once it holds :data:`COMPACT_RATIO` lines per entry. A line that does not parse costs the read of its file,
a file of another version or kind is not used (each with a note in the router's notes). An edit, a touched file, a
rename, an added or removed skill: each changes a stamp or the folder listing, so each is read.

Otherwise, reading the skills again need not parse every frontmatter: :func:`load` (what
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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from router.skill import Skill

if TYPE_CHECKING:
    from router.library import Library
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


def load(spec: LibrarySpec, *, confine: bool = False) -> tuple[Library, Callable[[Collection[str]], bool] | None]:
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
    from router.profiles.base import parsed_files

    kind = parse_kind(spec.profile)
    target = os.path.join(spec.index_folder, FRONTS_FILE)
    parses = os.path.join(spec.index_folder, PARSES_FILE)
    if spec.catalog is None and not again and parses not in _PARSES_SEEN:
        with collection_paused():
            _load_parses(spec, kind, parses)  # each unchanged SKILL.md's parse: the file is not read
    # Where every body is read anyway (the passage index's size, router.passages.MAX_SKILLS), the frontmatter
    # parses kept by text still spare the YAML of the bodies read; past it they are not read.
    by_stamp = parses in _PARSES_SEEN and len(_PARSES_SEEN[parses].lines) > _ALL_BODIES_READ
    if target not in _FRONTS_SEEN and spec.catalog is None and not by_stamp:
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
    with collection_paused():
        loaded = spec.load(confine=confine)
    _DISCOVERED.add(path(spec))
    found = parsed_files(kind) if spec.catalog is None else {}

    def keep(computed: Collection[str] = frozenset()) -> bool:
        # at most KEPT_BYTES // 4 characters of bodies: at most KEPT_BYTES of UTF-8 (a body not read yet is counted
        # by its file's size, which is larger)
        whole = spec.catalog is None and not again and _body_chars(loaded) <= KEPT_BYTES // 4
        kept = whole and save(spec, loaded, confine=confine)
        kept = (spec.catalog is None and _keep_parses(spec, kind, parses, found, computed)) or kept
        if by_stamp:  # the frontmatter parses are not needed while the parses by stamp are used
            return kept
        return _keep_fronts(spec, kind, target) or kept

    return loaded, keep


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a library is read or its index built: 10,000 skills make hundreds of
    thousands of objects that all stay, and the collector walked them again and again (about a sixth of a new
    process's refresh after one edit). What is left is collected afterwards as usual.

    Afterwards what the block made counts as old at once: frozen and unfrozen again, which puts every tracked
    object in the oldest generation without walking it, so the young collections that follow do not walk those
    objects once a generation (at 10,000 skills they took a tenth of a new process's refresh after one edit); a
    full collection still sees them, so no cycle is kept from it. Not when something else froze objects (a
    server freezes what its first load made, :mod:`router.serve.service`): unfreezing would hand them back."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


#: The kept libraries whose skills this process read (a server reloading one after an edit reads it again from its
#: files, each unchanged one remembered, and does not write it whole on every reload).
_DISCOVERED: set[str] = set()


def _body_chars(loaded: Library) -> int:
    total = 0
    for skill in loaded.registry:
        if isinstance(skill, SavedSkill) and skill.__dict__.get("body") is None:
            total += _size(skill.fs_path)
            if total > KEPT_BYTES // 4:
                break
        else:
            total += len(skill.body)
    return total


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


# -- each SKILL.md's parse, kept by its stamp beside the index for the next process -------------------------------
#: Beside ``library.saved``: the last discovery's parse of each SKILL.md with the file's stamp
#: (:class:`router.profiles.base.ParsedFiles`), without the bodies, and each skill's signal texts
#: (:func:`router.index.kept_texts`). A new process after one edit then reads and parses only the files whose stamp
#: changed; an unchanged skill's body is read from its file only when something asks for it (:class:`SavedSkill`).
PARSES_FILE = "parses.saved"
PARSES_FORMAT = 3
#: The index folders whose kept parses this process read or wrote: (kind, the entries as they were then).
_PARSES_SEEN: dict[str, _ParsesFile] = {}


class _LazyBody:
    """:attr:`SavedSkill.body`: read from the skill's file the first time it is asked for."""

    def __get__(self, skill: Any, owner: type | None = None) -> str:
        if skill is None:
            return ""
        known = skill.__dict__
        body = known.get("body")
        if body is None:
            body = known["body"] = skill._read_body()
        return body

    def __set__(self, skill: Any, value: str) -> None:
        skill.__dict__["body"] = value


def _compared(skill: Skill) -> tuple[Any, ...]:
    return (skill.name, skill.description, skill.path, skill.id, skill.body, skill.index_description, skill.examples)


@dataclass(frozen=True, eq=False)
class SavedSkill(Skill):
    """A skill whose parse an earlier process kept (:data:`PARSES_FILE`), its file unchanged since: equal to the
    skill the file parses to, its body read from the file (by the same parse) the first time it is asked for,
    so a library of 10,000 skills after one edit reads one body. Made by :func:`_decode_parse` only (a copy made
    by ``dataclasses.replace`` is a skill of other fields, whose texts are its own: it keeps none)."""

    body: str = _LazyBody()  # type: ignore[assignment]  # a descriptor: read when first asked for
    #: The signal texts kept with the parse, by the key of :func:`router.index.texts_key`, one text per signal.
    saved_texts: Mapping[str, Sequence[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def _read_body(self) -> str:
        reparse = self.__dict__.get("_reparse")
        if reparse is None:
            return ""
        try:
            value = reparse()
        except (OSError, ValueError):  # gone or unparsable since its stamp was checked: no body to show
            return ""
        for found in _skills_in(value):
            if found.path == self.path:
                return found.body
        return ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Skill):
            return NotImplemented
        return _compared(self) == _compared(other)

    __hash__ = Skill.__hash__

    def __reduce__(self) -> tuple[Any, ...]:  # a copy or a pickle is a plain skill, its body read
        return (Skill, (self.name, self.description, self.path, self.id, self.body, dict(self.metadata),
                        self.index_description, self.examples, self.os_path))


def _skills_in(value: Any) -> list[Skill]:
    if isinstance(value, Skill):
        return [value]
    if isinstance(value, (tuple, list)):
        return [s for v in value for s in _skills_in(v)]
    return []


_SKILL_TAG = f"{TAG}skill"


#: A kept row of signal texts is one string: the texts joined by :data:`_SEP`, a text that is the description kept
#: as :data:`_SAME`, one that ends with it as :data:`_ENDS` and what comes before (a row holding one of these
#: characters is kept as a list of its texts).
_SEP, _SAME, _ENDS = "\x1f", "\x1e", "\x1d"


def _kept_row(row: Sequence[str], description: str) -> str | list[str]:
    if any(_SEP in t or _SAME in t or _ENDS in t for t in row):
        return list(row)
    return _SEP.join(_SAME if t == description else _ENDS + t[:len(t) - len(description)]
                     if description and t.endswith(description) else t for t in row)


def _kept_digests(row: Sequence[str]) -> str:
    """The :func:`indexes.bm25.text_digest` of each text of ``row``, one after the other, in base64: kept with the
    row so that a new process hashes none of an unchanged skill's texts (BM25's term counts and the saved index's
    skill hashes are found by these digests)."""
    import base64

    from indexes.bm25 import known_digests

    return base64.b64encode(b"".join(known_digests(row))).decode("ascii")


def _row_and_digests(kept: Any, description: str) -> list[str]:
    """A kept row's texts (:func:`_row_of`), its digests (:func:`_kept_digests`) given to BM25's memo
    (:func:`indexes.bm25.remember_digests`); TypeError or ValueError for a row not written so."""
    import base64

    from indexes.bm25 import DIGEST_BYTES, remember_digests

    if type(kept) is not list or len(kept) != 2 or type(kept[1]) is not str:
        raise TypeError("not a row of texts with their digests")
    row = _row_of(kept[0], description)
    digests = base64.b64decode(kept[1], validate=True)  # binascii.Error is a ValueError
    if len(digests) != DIGEST_BYTES * len(row):
        raise ValueError("not one digest a text")
    remember_digests(row, [digests[i:i + DIGEST_BYTES] for i in range(0, len(digests), DIGEST_BYTES)])
    return row


def _row_of(kept: Any, description: str) -> list[str]:
    if type(kept) is list:
        if any(type(t) is not str for t in kept):
            raise TypeError("not a row of texts")
        return kept
    if type(kept) is not str:
        raise TypeError("not a row of texts")
    return [description if t == _SAME else t[1:] + description if t[:1] == _ENDS else t
            for t in kept.split(_SEP)]


def _encode_parse(value: Any) -> Any:
    """A parse as JSON holds it: :func:`_plain`, with each skill's fields but its body (a list, in a fixed order),
    and its signal texts (:func:`router.index.kept_texts`, each row one string, :func:`_kept_row`, with its texts'
    digests, :func:`_kept_digests`). TypeError for
    a value that cannot be kept."""
    from router.index import kept_texts

    if isinstance(value, Skill):
        if type(value) is not Skill and type(value) is not SavedSkill:
            raise TypeError(f"{type(value).__name__} is not kept")
        description = value.description
        texts = {key: [_kept_row(row, description), _kept_digests(row)] for key, row in kept_texts(value).items()}
        return {_SKILL_TAG: [value.name, description, value.path, value.id, _plain(dict(value.metadata)),
                             value.index_description, list(value.examples), value.os_path, texts]}
    if type(value) is tuple:
        return {f"{TAG}tuple": [_encode_parse(v) for v in value]}
    if type(value) is list:
        return [_encode_parse(v) for v in value]
    return _plain(value)


def _decode_parse(data: Any, reparse: Callable[[], Any]) -> Any:
    if type(data) is str or data is None:
        return data
    if type(data) is list:
        return [_decode_parse(v, reparse) for v in data]
    if type(data) is dict and len(data) == 1:
        (key, inner), = data.items()
        if key == _SKILL_TAG:
            name, description, where, ident, metadata, index_description, examples, os_path, texts = inner
            if {type(t) for t in (name, description, where, ident, index_description, os_path)} != {str} \
                    or type(texts) is not dict or type(examples) is not list:
                raise TypeError("not a kept skill")
            if type(metadata) is not dict or {type(v) for v in metadata.values()} - {str}:
                metadata = _value(metadata)  # not only text values: tagged ones read back
            skill = object.__new__(SavedSkill)  # its fields as they were made safe when kept: no check again
            skill.__dict__.update(name=name, description=description, path=where, id=ident, metadata=metadata,
                                  index_description=index_description, examples=tuple(examples), os_path=os_path,
                                  saved_texts={key: _row_and_digests(row, description)
                                               for key, row in texts.items()},
                                  _reparse=reparse)
            return skill
        if key == f"{TAG}tuple":
            return tuple(_decode_parse(v, reparse) for v in inner)
    return _value(data)


class _KeptParse:
    """A parse read back from :data:`PARSES_FILE`, made when the discovery meets its file with the same stamp
    (:meth:`router.profiles.base.ParsedFiles.parse` calls :meth:`resolve_parse`)."""

    __slots__ = ("data", "value")

    def __init__(self, data: Any) -> None:
        self.data = data
        self.value: Any = None

    def resolve_parse(self, reparse: Callable[[], Any]) -> Any:
        if self.data is None:  # met again in the same discovery (a root given twice): the same parse
            return self.value
        try:
            self.value = _decode_parse(self.data, reparse)
        except (KeyError, TypeError, ValueError):  # not what was written: the file is read and parsed
            NOTES.append(f"a damaged entry in the kept parses ({PARSES_FILE}): its SKILL.md is read")
            self.value = reparse()
        self.data = None  # made once: a server does not hold the text of every parse twice
        return self.value


class _ParsesFile:
    """What this process knows of one index folder's :data:`PARSES_FILE`: its kind, the line of each entry (the
    last one wins), the entries as read back, and how many lines the file holds."""

    def __init__(self, kind: str, lines: dict[str, tuple[tuple[int, ...], bytes]], kept: dict[str, _KeptParse],
                 count: int) -> None:
        self.kind, self.lines, self.kept, self.count = kind, lines, kept, count


def _parses_identity(kind: str) -> dict[str, Any]:
    from router.version import package_version

    return {"format": PARSES_FORMAT, "package": package_version(), "kind": kind}


def _load_parses(spec: LibrarySpec, kind: str, target: str) -> bool:
    """Give the next discovery of ``kind`` the parses kept in ``target`` (one JSON line of identity, then one line
    ``[key, stamp, parse]`` per file, a later line for a key replacing an earlier one); False when there are none
    to use (with a note on what was wrong, for a file that exists but cannot be used)."""
    from router.files import read_bytes
    from router.profiles.base import remember_parsed

    try:
        raw = read_bytes(target, 1 << 30)
    except OSError:
        return False  # none yet
    head, _, rest = raw.partition(b"\n")
    try:
        identity = json.loads(head)
        if not isinstance(identity, dict) or any(identity.get(k) != v for k, v in _parses_identity(kind).items()):
            raise ValueError("written by another version")
    except ValueError as exc:
        NOTES.append(f"the kept parses in {target} are not usable ({_first_words(exc)}); every SKILL.md is read "
                     "and they are written again")
        return False
    lines: dict[str, tuple[tuple[int, ...], bytes]] = {}
    kept: dict[str, _KeptParse] = {}
    stamps: dict[str, tuple[tuple[int, ...], Any]] = {}
    # each line's checksum (:func:`_line`) first: a line damaged anywhere, inside a text or a digest too, is not used
    found = [line for line in rest.split(b"\n") if line]
    whole = [line for line in found if _checked(line)]
    bad = len(found) - len(whole)
    count = bad
    try:  # one parse for the whole file; line by line only when a line is damaged
        rows = json.loads(b"[" + b",".join(line[_CRC_BYTES:] for line in whole) + b"]")
        if len(rows) != len(whole):
            raise ValueError("not one entry a line")
    except ValueError:
        rows = None
    for n, line in enumerate(whole):
        count += 1
        try:
            key, stamp, data = rows[n] if rows is not None else json.loads(line[_CRC_BYTES:])
            if type(key) is not str or type(stamp) is not list or {type(n) for n in stamp} != {int}:
                raise TypeError
        except (TypeError, ValueError):
            bad += 1
            continue
        lines[key] = (tuple(stamp), line)
        kept[key] = _KeptParse(data)
        stamps[key] = (tuple(stamp), kept[key])
    if bad:
        NOTES.append(f"{bad} damaged line{'s' if bad > 1 else ''} in the kept parses in {target}: those SKILL.md "
                     "files are read")
    remember_parsed(kind, stamps)
    _PARSES_SEEN[target] = _ParsesFile(kind, lines, kept, count + bad)
    return True


def _first_words(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:80] if str(exc).strip() else type(exc).__name__


#: Libraries of up to this many skills have every body read (router.passages.MAX_SKILLS).
_ALL_BODIES_READ = 1000
#: What reading kept files found wrong since the last :func:`take_notes` (a note for the user, not an error).
NOTES: list[str] = []


def take_notes() -> list[str]:
    """The notes on kept files that could not be used since the last call."""
    taken = list(NOTES)
    NOTES.clear()
    return taken


def _unchanged(kept: _KeptParse | None, stamp: tuple[int, ...], value: Any,
               line: tuple[tuple[int, ...], bytes] | None, computed: Collection[str]) -> bool:
    """Whether ``value`` (with ``stamp``) is what ``kept`` was read back as, with no new signal text (``computed``:
    the skills whose texts a build computed since, :attr:`router.index.BuildTexts.computed`)."""
    if kept is None or line is None or kept.value is not value or line[0] != stamp:
        return False
    # a skill read back whose texts were computed now (another config's) is kept with them
    return not computed or not any(skill.id in computed for skill in _skills_in(value))


#: A kept line starts with the CRC-32 of the rest of the line, in 8 hexadecimal digits, and a space.
_CRC_BYTES = 9


def _line(key: str, stamp: list[int], value: Any) -> bytes:
    import zlib

    text = json.dumps([key, stamp, _encode_parse(value)], ensure_ascii=False).encode("utf-8", "surrogatepass")
    return b"%08x " % zlib.crc32(text) + text


def _checked(line: bytes) -> bool:
    """Whether ``line`` is whole: its checksum (:func:`_line`) is the one of what follows it."""
    import zlib

    try:
        return line[8:9] == b" " and int(line[:8], 16) == zlib.crc32(line[_CRC_BYTES:])
    except ValueError:
        return False


#: The kept parses are written whole again when the file holds more lines than this many per entry (lines of
#: replaced or removed entries pile up as edits are appended).
COMPACT_RATIO = 1.5


def _keep_parses(spec: LibrarySpec, kind: str, target: str, entries: dict[str, tuple[tuple[int, ...], Any]],
                 computed: Collection[str] = frozenset()) -> bool:
    """Keep ``entries`` (the discovery's parses) in ``target``: the lines of the entries that changed (or whose
    skills' texts were ``computed`` anew) appended to it, or the file written whole (when there is none of this
    kind yet, or too many old lines)."""
    seen = _PARSES_SEEN.get(target)
    if seen is not None and seen.kind != kind:
        seen = None
    fresh_lines: dict[str, tuple[tuple[int, ...], bytes]] = {}
    try:
        for key, (stamp, value) in entries.items():
            if isinstance(value, _KeptParse):
                continue  # kept by an earlier process, and not met by this discovery
            old = seen.lines.get(key) if seen is not None else None
            if seen is not None and _unchanged(seen.kept.get(key), stamp, value, old, computed):
                continue
            line = _line(key, list(stamp), value)
            if old is None or old[1] != line:
                fresh_lines[key] = (stamp, line)
    except TypeError:  # a parse JSON cannot hold: kept none, so every file is read (and parsed by text)
        return False
    if seen is not None and not fresh_lines:
        return False
    live = {key for key, (_, value) in entries.items() if not isinstance(value, _KeptParse)}
    if seen is not None and seen.count + len(fresh_lines) <= COMPACT_RATIO * len(live) + 64:
        try:
            with open(target, "ab") as handle:  # one write: appended lines never interleave with another's
                handle.write(b"".join(line + b"\n" for _, line in fresh_lines.values()))
        except OSError:
            return False
        seen.lines.update(fresh_lines)
        seen.count += len(fresh_lines)
        return True
    lines = {key: (seen.lines[key] if seen is not None and key not in fresh_lines else fresh_lines[key])
             for key in live if key in fresh_lines or (seen is not None and key in seen.lines)}
    head = json.dumps(_parses_identity(kind)).encode("ascii")
    if not _write_whole(spec.index_folder, target, [head + b"\n", *(line + b"\n" for _, line in lines.values())]):
        return False
    kept = seen.kept if seen is not None else {}
    _PARSES_SEEN[target] = _ParsesFile(kind, lines, kept, len(lines))
    return True
