"""What the commands share: their options, building the library or router from them, and printing.

Options come in two groups, and each command takes only the groups it uses:

- library options (:func:`add_library_options`): ``--skills``, ``--catalog``, ``--profile``, ``--confine``:
  which skills, read by which harness's rules;
- router options (:func:`add_router_options`): ``--config``, ``--model``, ``--index-dir`` — how requests are
  routed; only the commands that route, index or measure take them.

Defaults live in one place each: :data:`router.profiles.DEFAULT_PROFILE`, :data:`router.config.DEFAULT_CONFIG_FILE`,
:data:`DEFAULT_ROOT` and ``RouterConfig``'s fields.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from typing import TYPE_CHECKING, Any

from router.config import DEFAULT_CONFIG_FILE, RouterConfig, config_changes, find_config
from router.errors import ConfigError, EmptyLibraryError

if TYPE_CHECKING:
    from router.profiles import Profile
    from router.spec import LibrarySpec

#: The skills folder used when no --skills is given.
DEFAULT_ROOT = "skills"
#: Longest error line the command prints (a message quoting a huge value is cut, never printed whole).
MAX_ERROR_LINE = 2000

# Bidirectional controls reorder what a terminal shows (CVE-2021-42574); C0/C1 controls move the cursor or clear
# the screen; lone surrogates (undecodable file names) cannot be encoded at all.
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def terminal_text(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` safe to print on a terminal: control characters, bidirectional controls and lone surrogates are
    shown escaped (``\\x1b``, ``\\u202e``, ``\\udce9``). Only terminal output goes through this; the harness
    renderings (``prompt``, ``use``) stay byte-exact."""
    out = []
    for ch in text:
        if keep_newlines and ch in "\n\t":
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs") or ch in _BIDI:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def error_line(text: str) -> str:
    """An error message as exactly one printable line of bounded length."""
    line = terminal_text(" ".join(part.strip() for part in text.splitlines() if part.strip()))
    return line if len(line) <= MAX_ERROR_LINE else line[:MAX_ERROR_LINE - 3] + "..."


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit status 2, like every other error."""

    def error(self, message: str) -> Any:  # argparse's own prints the usage block first
        self.exit(2, f"{self.prog}: error: {error_line(message)}; see '{self.prog} --help'\n")


def positive_int(what: str):
    """An argparse type: a whole number >= 1, the message naming the option's meaning."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number >= 1, got {text!r}")
        return value
    parse.__name__ = what  # argparse names the type in some messages
    return parse


def add_library_options(parser: argparse.ArgumentParser, *, catalog: bool = True, confine: bool = True,
                        profile_help: str = "the harness whose rules apply") -> None:
    """``--skills`` and ``--profile`` (and, unless told otherwise, ``--catalog`` and ``--confine``)."""
    from router.profiles import DEFAULT_PROFILE, profile_choices

    group = parser.add_argument_group("library")
    group.add_argument("--skills", action="append", metavar="DIR",
                       help=f"a folder of skill folders (repeatable; default: {DEFAULT_ROOT}, or where the harness "
                            "looks for profiles without one: codex, claude-code)")
    if catalog:
        group.add_argument("--catalog", metavar="FILE", help='a JSONL catalogue of {"id","name","description"} '
                                                             "rows, used in place of --skills")
    group.add_argument("--profile", default=DEFAULT_PROFILE, choices=profile_choices(),
                       help=f"{profile_help} (default: {DEFAULT_PROFILE})")
    group.add_argument("--harness-model", metavar="MODEL",
                       help="the model the harness runs, which sets its listing budget (codex: default the model in "
                            "$CODEX_HOME/config.toml, else Codex's default model; claude-code: claude-opus-5-5)")
    if confine:
        group.add_argument("--confine", action="store_true",
                           help="refuse skills whose SKILL.md is a symlink leading outside every skills folder "
                                "(for libraries you do not trust; also the config key 'confine')")


def add_router_options(parser: argparse.ArgumentParser) -> None:
    """``--config``, ``--model`` and ``--index-dir``: what the commands that route, index or measure read."""
    from router.config import DEFAULT_CONFIG_FILE

    group = parser.add_argument_group("router")
    group.add_argument("--config", metavar="FILE", help="router parameters written by 'skill-router tune' "
                                                        f"(default: {DEFAULT_CONFIG_FILE} here, if present)")
    group.add_argument("--model", metavar="NAME_OR_PATH",
                       help="a local sentence-transformers model folder (default: the bundled all-MiniLM-L6-v2)")
    group.add_argument("--index-dir", metavar="DIR", help="where the persistent index lives (default: beside "
                                                          "the library; in the user cache folder for a harness's "
                                                          "own folders or a library inside a git work tree)")
    group.add_argument("--index-url", metavar="URL", help="keep the index in PostgreSQL + pgvector instead of files: "
                                                          "postgresql://user:password@host/database (also the config "
                                                          "key 'index_url'; needs the postgres extra)")


def k_help(what: str) -> str:
    """Help for a -k option whose default comes from the config."""
    return f"{what} (default: k from the config, {RouterConfig().k} without one)"


def config_from(args: Any, **overrides: Any) -> RouterConfig:
    """The config the options name, else ``./skill-router.json``, else the defaults. A config picked up from the
    working folder without being named is announced on stderr, once per command (``args.announce_config``
    False: never, as in a hook): a file that ``tune`` wrote would silently change every later command otherwise."""
    explicit = getattr(args, "config", None)
    config = find_config(explicit)
    if not explicit and getattr(args, "announce_config", True) and os.path.isfile(DEFAULT_CONFIG_FILE):
        print(f"using ./{DEFAULT_CONFIG_FILE}: {config_changes(config)}", file=sys.stderr)
        args.announce_config = False
    return config.with_(**overrides)


def roots(args: Any) -> list[str] | None:
    """The --skills folders; without any, ``skills``, or None (the harness's own discovery from the working
    folder and the home folder) for a profile with no default roots (codex, claude-code)."""
    if args.skills:
        return args.skills
    from router.profiles import get_profile

    return [DEFAULT_ROOT] if get_profile(args.profile).default_roots else None


def spec_from(args: Any) -> LibrarySpec:
    """The library the options describe (:class:`router.spec.LibrarySpec`): ``--skills`` / ``--catalog`` (neither:
    ``skills``, or the harness's own folders for codex and claude-code), ``--profile`` with ``--harness-model``,
    ``--confine``, ``--pin`` / ``--exclude`` and ``--index-dir``. The only place that reads these options."""
    from router.spec import LibrarySpec

    catalog = getattr(args, "catalog", None)
    if catalog and args.skills:
        raise ConfigError("give either --skills or --catalog, not both")
    return LibrarySpec.create(None if catalog else roots(args), catalog=catalog or None, profile=args.profile,
                              harness_model=getattr(args, "harness_model", None),
                              confine=bool(getattr(args, "confine", False)),
                              pinned=getattr(args, "pin", None) or (), excluded=getattr(args, "exclude", None) or (),
                              index_dir=getattr(args, "index_dir", None))


def skilled_router(args: Any, *, progress: bool = False, **overrides: Any):
    """:func:`make_router` for a command that needs skills: an empty library is refused (:func:`require_skills`)
    before anything is built."""
    from router.index import LibraryIndex
    from router.routing import Router

    source = skilled_library(args, **overrides)
    return Router(LibraryIndex.create(source, store=index_store(args, source.config), progress=progress))


def skilled_library(args: Any, **overrides: Any):
    """The library the options describe, read but not indexed (:class:`router.index.LibrarySource`: its skills
    with their learned examples, the profile, the config), for a command that needs skills but no index; an empty
    library is refused (:func:`require_skills`)."""
    source = library_source(args, **overrides)
    require_skills(source.spec, source.skills)
    return source


def harness_profile(args: Any) -> Profile:
    """The ``--profile``, for the ``--harness-model`` when one is given."""
    return spec_from(args).profile


def router_config(args: Any, spec: LibrarySpec, **overrides: Any) -> RouterConfig:
    """The router parameters the options give (``--config`` and the overrides, ``--confine``, ``--index-url``)."""
    config = config_from(args, **{"model": getattr(args, "model", None), **overrides})
    if spec.confine:
        config = config.with_(confine=True)
    if getattr(args, "index_url", None):
        config = config.with_(index_url=args.index_url)
    return config


def index_store(args: Any, config: RouterConfig):
    """Where the index comes from (:class:`router.index.IndexStore`): the database of ``index_url``
    (:class:`router.pgstore.PgStore`), else None (the index folder)."""
    if not config.index_url:
        return None
    from router import pgstore

    return pgstore.PgStore(config.index_url, getattr(args, "database", None))


def library_source(args: Any, *, spec: LibrarySpec | None = None, encoder: Any = None, **overrides: Any):
    """The library the options describe, read once and not indexed (:class:`router.index.LibrarySource`)."""
    from router.index import LibrarySource

    spec = spec if spec is not None else spec_from(args)
    return LibrarySource.read(spec, router_config(args, spec, **overrides), encoder=encoder)


def make_router(args: Any, encoder: Any = None, *, spec: LibrarySpec | None = None, progress: bool = False,
                **overrides: Any):
    """The router the options describe, its index built now (or loaded from the index folder, or read from the
    database of ``--index-url``), over ``spec`` when the caller already has it. ``encoder`` shares an already
    loaded embedding model (a server rebuilding its router)."""
    from router.index import LibraryIndex
    from router.routing import Router

    source = library_source(args, spec=spec, encoder=encoder, **overrides)
    return Router(LibraryIndex.create(source, store=index_store(args, source.config), progress=progress))


def require_skills(spec: LibrarySpec | Any, skills: Any) -> None:
    """Raise :class:`EmptyLibraryError` when ``skills`` is empty, naming the folders the library was read from
    (``spec``: a :class:`~router.spec.LibrarySpec`, or the options): the commands that rank, index, measure or
    emit a harness config have nothing to work on."""
    from router.spec import LibrarySpec

    if len(skills):
        return
    if not isinstance(spec, LibrarySpec):
        spec = spec_from(spec)
    if spec.catalog is not None:
        where = f"catalogue '{spec.catalog}'"
    else:
        folders = [os.path.abspath(f) for f in spec.folders]
        if not folders:
            profile = spec.profile
            paths = list(dict.fromkeys(profile.harness_paths()))
            raise EmptyLibraryError(f"no skills found in {', '.join(paths) or 'the folders ' + str(profile.name)} "
                                    f"(none of the skills folders {profile.name} reads exists here): pass --skills "
                                    "with the folder that holds the skills")
        where = ", ".join(folders)
    raise EmptyLibraryError(f"no skills found in {where}: each skill is a sub-folder holding a SKILL.md; pass "
                            "--skills with the folder that holds them")


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """JSON for stdout: non-ASCII kept readable, lone surrogates (undecodable file names) as JSON escapes."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def print_json(value: Any) -> None:
    sys.stdout.write(json_text(value) + "\n")


def write_exact(text: str) -> None:
    """Write a harness rendering to stdout as the harness would: undecodable file-name bytes come back as the
    bytes they were (surrogate escapes), so the output is byte-exact."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name produced (e.g. from a JSON catalogue's "\ud83d")
        data = text.encode("utf-8", "backslashreplace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def report_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"note: {terminal_text(note)}", file=sys.stderr)


def read_query(query: str | None) -> str:
    """The request from the argument, or from stdin when the argument is '-'."""
    if query == "-":
        query = sys.stdin.read()
    if query is None or not query.strip():
        raise ConfigError("the request is empty: give the text to route, e.g. skill-router route \"review my Go "
                          "code\"")
    return query
