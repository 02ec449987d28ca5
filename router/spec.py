"""One description of a library: which skills, read by which harness's rules, and where its index lives.

A :class:`LibrarySpec` is a frozen value built once, by one function per kind of input:

- :meth:`LibrarySpec.create` from Python values (``Router.from_skills`` / ``Router.from_catalog`` call it);
- ``router.cli.common.spec_from`` from the command line (the only code that knows argparse);
- the prompt hook's in-process fallback from the hook's working folder (``router.serve.hooks``).

Everything downstream (the router, ``serve``, the hook) takes the spec, so they cannot disagree about the folders
a library is read from or about where its index is kept. The spec holds:

- the source: skill folders (``roots``), a JSONL catalogue (``catalog``), or neither: the folders the harness
  itself reads from the working folder ``cwd`` (codex and claude-code: from ``repo/pkg/sub`` codex reads
  ``repo/.codex/skills`` when ``sub`` holds ``.codex``, ``$CODEX_HOME/skills``, ``~/.agents/skills`` and every
  ``.agents/skills`` from the repository root down; claude-code ``~/.claude/skills`` and every ``.claude/skills``
  from ``sub`` up to the repository root);
- the profile, resolved once (its harness model applied, its working folder set);
- ``confine`` (refuse skills whose SKILL.md leads outside every folder), ``pinned`` and ``excluded`` skills;
- where the index lives (:attr:`LibrarySpec.index_folder`): ``index_dir`` when given; otherwise beside the library
  (``<parent>/.skill-router-index/...``, ``<catalog>.index/...``), except for a harness's own folders and for a
  library inside a git work tree, whose index goes to the user cache folder
  (``$XDG_CACHE_HOME/skill-router/indexes/...``, default ``~/.cache``): an index folder inside a repository shows
  up as an untracked folder (Claude Code lists it to the model) and would be committed by ``git add .``.

:meth:`LibrarySpec.load` is the one loader: it discovers the skills once, adds the sidecar example requests and
applies confinement, and returns a :class:`router.library.Library`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from router.errors import ConfigError
from router.profiles import Capability, Profile, either, get_profile, with_capability
from router.store import default_index_folder, default_learned_folder, library_key

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class LibrarySpec:
    """A library to route over (see the module docstring); build it with :meth:`create`.

    ``roots`` are the skill folders as given (None: the harness's own folders for ``cwd``, or a catalogue);
    ``catalog`` a JSONL catalogue; ``cwd`` the absolute working folder the harness discovery starts from;
    ``index_dir`` an explicit index folder (None: the default place, :attr:`index_folder`).
    """

    profile: Profile
    roots: tuple[str, ...] | None = None
    catalog: str | None = None
    cwd: str = ""
    confine: bool = False
    pinned: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    index_dir: str | None = None

    @classmethod
    def create(cls, roots: Sequence[PathLike] | PathLike | None = None, *, catalog: PathLike | None = None,
               profile: str | Profile = "agentskills", cwd: PathLike | None = None, harness_model: str | None = None,
               confine: bool = False, pinned: Iterable[str] = (), excluded: Iterable[str] = (),
               index_dir: PathLike | None = None) -> LibrarySpec:
        """The spec of a library: ``roots`` (one folder or several), or ``catalog``, or neither (the folders the
        profile's harness reads from ``cwd``, default the current folder; a profile without harness discovery
        reads its default roots). ``harness_model`` sets the harness's model (codex, claude-code). Raises
        :class:`ConfigError` for both roots and a catalogue, or a harness model the profile has no use for."""
        if catalog is not None and roots is not None:
            raise ConfigError("give either skill folders (--skills) or a catalogue (--catalog), not both")
        folder = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
        resolved = get_profile(profile).in_folder(folder)
        if harness_model:
            if not resolved.provides(Capability.HARNESS_MODEL):
                raise ConfigError(f"--harness-model needs a harness whose budget depends on its model (--profile "
                                  f"{either(with_capability(Capability.HARNESS_MODEL))}), not {resolved.name}")
            resolved = resolved.with_model(harness_model)
        if isinstance(roots, (str, os.PathLike)):
            roots = [roots]
        given = tuple(os.fspath(r) for r in roots) if roots is not None else None
        return cls(resolved, given, os.fspath(catalog) if catalog is not None else None, folder, bool(confine),
                   tuple(pinned), tuple(excluded), os.fspath(index_dir) if index_dir is not None else None)

    # -- what the library is read from --------------------------------------------------------------------------
    @property
    def harness(self) -> bool:
        """True when the library is the folders the profile's harness reads by itself (no roots, no catalogue)."""
        return self.roots is None and self.catalog is None

    @cached_property
    def folders(self) -> tuple[str, ...]:
        """The skill folders the library is read from: the roots as given, or the harness's folders for
        :attr:`cwd` that exist, in the harness's order (a profile without harness discovery: its default roots;
        none for a catalogue)."""
        if self.catalog is not None:
            return ()
        if self.roots is not None:
            return self.roots
        from router.library import skill_folders

        return tuple(skill_folders(None, self.profile))

    @cached_property
    def key(self) -> str:
        """What identifies the library (its absolute folders or catalogue, and the profile): an index folder
        built for another key is rebuilt, and its learned examples are not read."""
        return library_key(list(self.folders), self.catalog, self.profile.name)

    # -- where its index lives ------------------------------------------------------------------------------------
    @cached_property
    def in_user_cache(self) -> bool:
        """Whether the default index folder is in the user cache folder: for the harness's own folders, and for a
        library (a folder or a catalogue) inside a git work tree."""
        if self.harness:
            return True
        sources = [self.catalog] if self.catalog is not None else list(self.folders)
        return any(in_git_work_tree(os.path.abspath(s)) for s in sources)

    @cached_property
    def index_folder(self) -> str:
        """Where the index lives: ``index_dir``, else one folder per library (see the module docstring)."""
        if self.index_dir is not None:
            return self.index_dir
        return default_index_folder(list(self.folders), self.catalog, self.profile.name,
                                    in_cache=self.in_user_cache)

    @cached_property
    def learned_folder(self) -> str:
        """Where ``skill-router learn`` keeps the library's examples: ``index_dir``, else one folder per library
        whatever the profile, placed as the index folder is."""
        if self.index_dir is not None:
            return self.index_dir
        return default_learned_folder(list(self.folders), self.catalog, in_cache=self.in_user_cache)

    # -- loading --------------------------------------------------------------------------------------------------
    def load(self, *, confine: bool = False):
        """The library: the profile's discovery (or the catalogue's rows) with the sidecar example requests, and,
        with ``confine`` or :attr:`confine`, without the skills whose SKILL.md leads outside every folder.
        Raises :class:`router.errors.SkillsFolderError` for a root that is not an existing folder."""
        from router import library

        if self.catalog is not None:
            return library.from_catalog(self.catalog, self.profile)
        loaded = library.from_folders(self.roots, self.profile)
        if confine or self.confine:
            from router.confine import confine_library

            loaded = confine_library(loaded, list(self.folders))
        return loaded

    def with_choices(self, pinned: Iterable[str] = (), excluded: Iterable[str] = ()) -> LibrarySpec:
        """This spec with other pinned and excluded skills."""
        return dataclasses.replace(self, pinned=tuple(pinned), excluded=tuple(excluded))


def in_git_work_tree(path: str) -> bool:
    """Whether ``path`` or one of its parents holds ``.git`` (a folder, or the file of a linked work tree)."""
    folder = os.path.abspath(path)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
