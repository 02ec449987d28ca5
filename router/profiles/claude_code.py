"""The claude-code profile: Claude Code (Anthropic's coding agent CLI).

Rules (harness-profiles.md, "claude-code"; [docs] official documentation, [CL] changelog, [source] public code,
[inferred] observed behaviour with no public source):

- Skills folders, in precedence order [docs]: managed, personal ``~/.claude/skills``, project ``.claude/skills``
  in the start folder and each parent up to the repository root, ``--add-dir`` folders; then plugins
  (``<plugin>/skills/<name>/SKILL.md``, named ``plugin:name``). A skill is ``<folder>/<name>/SKILL.md``, one
  level below a skills folder; hidden folders are skipped and symlinked folders followed [inferred]. Commands
  (``.claude/commands/*.md``) are listed too; on a clash the earlier scope wins and a skill beats a command.
  Nested ``.claude/skills`` below the start folder load only once Claude touches a file there; when asked for,
  they are named ``<dir>:<name>`` on a clash [CL 2.1.178] (``<dir>`` = the folder holding ``.claude``
  [inferred]). Folders given by the caller are skills folders in precedence order.
- Frontmatter [docs]: ``name`` (default: the folder name), ``description`` (default: the body's first
  paragraph), ``when_to_use`` (appended to the description as `` - when_to_use`` [inferred]),
  ``disable-model-invocation`` (never listed, not loadable by the model). Bad YAML loads the body with empty
  metadata [CL 2.1.186]. No length limits (those belong to the skill-creator lint).
- Listing [inferred]: a user-side ``<system-reminder>`` naming the Skill tool, one ``- name: description``
  line each in discovery order; each description cut at 1,536 characters; over the budget (1% of the context
  window, at 4 characters a token [inferred]) the names stay and the least-used skills lose their
  descriptions (with no usage known, the last listed first [inferred]). ``skillOverrides`` [docs]: ``on``,
  ``name-only`` (listed without a description), ``user-invocable-only`` (not listed), ``off`` (not loaded).
- Tool ``Skill`` with input ``{"skill": name}`` [source]; the result is the skill's base directory and body
  [inferred].
"""

from __future__ import annotations

import enum
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from router.errors import ConfigError, SkillToolError
from router.files import MAX_SKILL_FILE_BYTES, read_text
from router.frontmatter import safe_load
from router.profiles.base import (SKILL_FILE, Discovery, Profile, SkillLookup, ToolSpec, decode_lossy,
                                  read_skill_file, sorted_entries, tool_arguments)
from router.skill import Skill

MAX_DESCRIPTION_CHARS = 1536
BUDGET_FRACTION = 0.01
DEFAULT_CONTEXT_WINDOW = 200_000
CHARS_PER_TOKEN = 4
BUDGET_ENV = "SLASH_COMMAND_TOOL_CHAR_BUDGET"
TOOL_NAME = "Skill"
LISTING_HEADER = "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
LISTING_FOOTER = "\n</system-reminder>"
SHORTLIST_HEADER = "Skills most relevant to this request (skill-router):"
SHORTLIST_MAX_SKILLS = 5
SHORTLIST_MAX_DESCRIPTION = 250
SHORTLIST_MAX_CHARS = 2000

_FENCE = re.compile(r"\A---[ \t]*\n(.*?)\n?---[ \t]*(?:\n|\Z)", re.S)


class Override(str, enum.Enum):
    """A ``skillOverrides`` value [docs]: listed normally, listed by name only, hidden from the model (the user can
    still type ``/name``), or turned off."""

    ON = "on"
    NAME_ONLY = "name-only"
    USER_INVOCABLE_ONLY = "user-invocable-only"
    OFF = "off"


class Scope(str, enum.Enum):
    """Where a skill came from, in precedence order."""

    MANAGED = "managed"
    PERSONAL = "personal"
    PROJECT = "project"
    ADDED = "add-dir"
    ROOT = "root"
    PLUGIN = "plugin"
    NESTED = "nested"


@dataclass(frozen=True)
class Source:
    """A skills folder (``<folder>/<name>/SKILL.md``) or a commands folder (``<folder>/<name>.md``)."""

    path: str
    scope: Scope
    commands: bool = False
    plugin: str | None = None
    owner: str | None = None  # the folder holding .claude, for nested skills


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter or None, body); a byte-order mark and CRLF line ends are accepted [inferred]."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    match = _FENCE.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end():]


def first_paragraph(body: str) -> str:
    """The first paragraph of the body that is not a heading, its lines joined by spaces [inferred]."""
    paragraph: list[str] = []
    for line in body.split("\n"):
        stripped = line.strip()
        if not stripped:
            if paragraph:
                break
            continue
        if not paragraph and stripped.startswith("#"):
            continue
        paragraph.append(stripped)
    return " ".join(paragraph)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.strip() if isinstance(value, str) else str(value).strip()


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def listed_description(skill: Skill) -> str:
    """``description`` with ``when_to_use`` appended, cut at 1,536 characters."""
    return skill.description[:MAX_DESCRIPTION_CHARS]


class ClaudeCodeProfile(Profile):
    """Claude Code.

    Parameters (all optional; the defaults are what Claude Code itself uses, read when ``discover`` runs)
    ----------
    cwd:
        The start folder (default: the current one).
    home:
        The user's home (default ``~``): personal skills are ``<home>/.claude/skills``.
    managed:
        A managed (enterprise) skills folder, first in precedence. None: none.
    add_dirs:
        ``--add-dir`` folders; their ``.claude/skills`` are read.
    plugins:
        Plugin folders; ``<plugin>/skills/<name>/SKILL.md`` is listed as ``<plugin name>:<name>`` (the name from
        ``.claude-plugin/plugin.json``, else the folder name).
    include_nested:
        Also list the ``.claude/skills`` folders below the start folder (Claude Code loads them only once it
        touches a file there).
    context_window, char_budget:
        The listing budget: ``char_budget`` characters when given (else ``$SLASH_COMMAND_TOOL_CHAR_BUDGET``),
        otherwise 1% of ``context_window`` tokens at 4 characters a token.
    usage:
        Times each skill was used; the least used lose their descriptions first.
    overrides:
        The ``skillOverrides`` setting: skill name to ``on``, ``name-only``, ``user-invocable-only`` or ``off``.
    """

    name = "claude-code"
    tool_errors_fail = True
    default_roots = ()

    def __init__(self, *, cwd: str | os.PathLike[str] | None = None, home: str | os.PathLike[str] | None = None,
                 managed: str | os.PathLike[str] | None = None, add_dirs: Sequence[str | os.PathLike[str]] = (),
                 plugins: Sequence[str | os.PathLike[str]] = (), include_nested: bool = False,
                 context_window: int = DEFAULT_CONTEXT_WINDOW, char_budget: int | None = None,
                 usage: Mapping[str, int] | None = None, overrides: Mapping[str, str] | None = None) -> None:
        self.cwd = cwd
        self.home = home
        self.managed = managed
        self.add_dirs = tuple(add_dirs)
        self.plugins = tuple(plugins)
        self.include_nested = include_nested
        self.context_window = context_window
        self.char_budget = char_budget
        self.usage = dict(usage or {})
        try:
            self.overrides = {name: Override(value) for name, value in (overrides or {}).items()}
        except ValueError as exc:
            raise ConfigError(f"skillOverrides: {exc}; use one of on, name-only, user-invocable-only, off") \
                from None

    # discovery

    def harness_sources(self) -> list[Source]:
        """Every skills and commands folder Claude Code reads, in precedence order (missing ones included)."""
        cwd = os.path.abspath(os.fspath(self.cwd) if self.cwd is not None else os.getcwd())
        home = os.path.abspath(os.path.expanduser(os.fspath(self.home) if self.home is not None else "~"))
        sources: list[Source] = []
        if self.managed is not None:
            sources.append(Source(os.path.abspath(os.fspath(self.managed)), Scope.MANAGED))
        sources.append(Source(os.path.join(home, ".claude", "skills"), Scope.PERSONAL))
        project_dirs = [d for d in _up_to_repo_root(cwd) if os.path.join(d, ".claude") !=
                        os.path.join(home, ".claude")]
        sources += [Source(os.path.join(d, ".claude", "skills"), Scope.PROJECT) for d in project_dirs]
        sources += [Source(os.path.join(os.path.abspath(os.fspath(d)), ".claude", "skills"), Scope.ADDED)
                    for d in self.add_dirs]
        for plugin in self.plugins:
            folder = os.path.abspath(os.fspath(plugin))
            sources.append(Source(os.path.join(folder, "skills"), Scope.PLUGIN, plugin=_plugin_name(folder)))
        if self.include_nested:
            sources += [Source(os.path.join(owner, ".claude", "skills"), Scope.NESTED, owner=owner)
                        for owner in _nested_owners(cwd)]
        sources.append(Source(os.path.join(home, ".claude", "commands"), Scope.PERSONAL, commands=True))
        sources += [Source(os.path.join(d, ".claude", "commands"), Scope.PROJECT, commands=True)
                    for d in project_dirs]
        return sources

    def harness_folders(self) -> list[str]:
        """The skills folders Claude Code would read that exist (what ``lint`` checks when none is given)."""
        return [s.path for s in self.harness_sources() if not s.commands and os.path.isdir(s.path)]

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        if roots is None:
            sources = self.harness_sources()
        else:
            sources = [Source(os.path.abspath(os.fspath(r)), Scope.ROOT) for r in roots]
        return self.discover_sources(sources)

    def discover_sources(self, sources: Sequence[Source]) -> Discovery:
        """Read these folders in precedence order; a later skill with a taken name is shadowed (reported as a
        warning), except nested skills, which take the name ``<dir>:<name>`` instead."""
        skills: dict[str, Skill] = {}
        warnings: list[str] = []
        for source in sources:
            for path in _skill_files(source):
                try:
                    raw = read_skill_file(path)
                except OSError as exc:
                    warnings.append(f"skipping {path}: {exc.strerror or exc}")
                    continue
                folder = os.path.splitext(os.path.basename(path))[0] if source.commands else \
                    os.path.basename(os.path.dirname(path))
                skill = self.parse(path, raw, folder)
                name = f"{source.plugin}:{skill.name}" if source.plugin else skill.name
                if source.scope is Scope.NESTED and name in skills:
                    name = f"{os.path.basename(source.owner or '')}:{name}"
                if name in skills:
                    warnings.append(f"skipping {path}: '{name}' is already defined by {skills[name].path}")
                    continue
                if skill.metadata.get("invalid_frontmatter"):
                    warnings.append(f"{path}: frontmatter is not YAML, so Claude Code loads the body with empty "
                                    f"metadata ({skill.metadata['invalid_frontmatter']})")
                metadata = dict(skill.metadata, scope=source.scope.value,
                                kind="command" if source.commands else "skill")
                skills[name] = Skill(name=name, description=skill.description, path=path, body=skill.body,
                                     metadata=metadata)
        kept = tuple(s for s in skills.values() if self.overrides.get(s.name) is not Override.OFF)
        return Discovery(skills=kept, warnings=tuple(warnings))

    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        front, body = split_frontmatter(decode_lossy(raw))
        data: dict[str, Any] = {}
        invalid = ""
        if front is not None:
            try:
                loaded = safe_load(front)  # yaml.safe_load, refusing nesting deep enough to exhaust recursion
            except yaml.YAMLError as exc:
                loaded = {}  # bad YAML: the body with empty metadata
                invalid = _yaml_problem(exc)
            if isinstance(loaded, dict):
                data = {str(k): v for k, v in loaded.items()}
        name = _text(data.get("name")) or folder_name
        description = _text(data.get("description")) or first_paragraph(body)
        when = _text(data.get("when_to_use"))
        if when:
            description = f"{description} - {when}" if description else when
        extra = {k: v for k, v in data.items() if k not in ("name", "description")}
        extra["disable_model_invocation"] = _flag(data.get("disable-model-invocation"))
        if invalid:
            extra["invalid_frontmatter"] = invalid
        return Skill(name=name, description=description, path=path, body=body, metadata=extra)

    # catalogue

    def budget_chars(self) -> int:
        """The listing budget in characters."""
        if self.char_budget is not None:
            return self.char_budget
        env = os.environ.get(BUDGET_ENV, "").strip()
        if env.isdigit():
            return int(env)
        return int(self.context_window * BUDGET_FRACTION * CHARS_PER_TOKEN)

    def listed(self, skills: Sequence[Skill]) -> list[Skill]:
        """The skills the model is told about: every one but ``disable-model-invocation`` and those overridden
        ``user-invocable-only`` or ``off``."""
        return [s for s in skills if self.model_invocable(s)]

    def model_invocable(self, skill: Skill) -> bool:
        hidden = (Override.USER_INVOCABLE_ONLY, Override.OFF)
        return not skill.metadata.get("disable_model_invocation") and self.overrides.get(skill.name) not in hidden

    def entries(self, skills: Sequence[Skill], budget: int | None = None) -> list[tuple[str, str]]:
        """(name, description shown) per listed skill: descriptions cut at 1,536 characters, then removed from
        the least used skills (the last listed first among equals) until the lines fit ``budget``."""
        budget = self.budget_chars() if budget is None else budget
        rows = [(s.name, "" if self.overrides.get(s.name) is Override.NAME_ONLY else listed_description(s))
                for s in self.listed(skills)]
        total = sum(len(_line(n, d)) + 1 for n, d in rows)
        order = sorted(range(len(rows)), key=lambda i: (self.usage.get(rows[i][0], 0), -i))
        for index in order:
            if total <= budget:
                break
            name, description = rows[index]
            if description:
                total -= len(description) + 2
                rows[index] = (name, "")
        return rows

    def render(self, skills: Sequence[Skill]) -> str:
        rows = self.entries(skills)
        if not rows:
            return ""
        return LISTING_HEADER + "\n".join(_line(n, d) for n, d in rows) + LISTING_FOOTER

    def tool(self, skills: Sequence[Skill]) -> ToolSpec:
        return ToolSpec(
            name=TOOL_NAME,
            description="Execute a skill within the main conversation",
            parameters={
                "type": "object",
                "properties": {"skill": {"type": "string",
                                         "description": 'The skill name. E.g., "pdf" or "xlsx"'}},
                "required": ["skill"],
            },
        )

    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        try:
            args = tool_arguments(arguments)
        except ValueError as exc:
            raise SkillToolError(f"invalid {TOOL_NAME} input: {exc}") from None
        name = args.get("skill")
        if not isinstance(name, str) or not name.strip():
            raise SkillToolError(f'{TOOL_NAME}: input "skill" must be a non-empty string')
        name = name.strip().removeprefix("/")
        skill = registry.find(name)
        if skill is None:
            raise SkillToolError(f"Unknown skill: {name}")
        if not self.model_invocable(skill):
            raise SkillToolError(f"Skill {name} cannot be used with {TOOL_NAME} tool due to "
                                 "disable-model-invocation")
        try:
            raw = read_skill_file(skill.fs_path)
        except OSError as exc:
            raise SkillToolError(f"cannot read {skill.path}: {exc.strerror or exc}") from None
        _, body = split_frontmatter(decode_lossy(raw))
        return f"Base directory for this skill: {skill.directory}\n\n{body.strip()}"

    # what the router adds

    def hook_context(self, skills: Sequence[Skill]) -> str:
        """The ``additionalContext`` for a routed shortlist (best first): at most 5 skills, names as listed,
        descriptions cut at 250 characters, no ``disable-model-invocation`` skill, at most 2,000 characters in
        all (later skills are dropped to fit); '' when nothing is left."""
        lines = [_line(s.name, s.description[:SHORTLIST_MAX_DESCRIPTION]) for s in self.listed(skills)]
        lines = lines[:SHORTLIST_MAX_SKILLS]
        while lines and len("\n".join([SHORTLIST_HEADER, *lines])) > SHORTLIST_MAX_CHARS:
            lines.pop()
        return "\n".join([SHORTLIST_HEADER, *lines]) if lines else ""

    def restrict_config(self, skills: Sequence[Skill], keep: Sequence[Skill]) -> str:
        """The Claude Agent SDK option that lists only ``keep`` of ``skills`` (``ClaudeAgentOptions.skills``,
        sent in ``initialize``; unlisted skills are hidden from the listing)."""
        names = ", ".join(json.dumps(s.name, ensure_ascii=False) for s in keep)
        return ("# skill-router: Claude Agent SDK option listing only the routed skills\n"
                f"ClaudeAgentOptions(skills=[{names}])\n")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


def _line(name: str, description: str) -> str:
    return f"- {name}: {description}" if description else f"- {name}"


def _up_to_repo_root(cwd: str) -> list[str]:
    """The start folder and each parent up to the repository root (the nearest ancestor holding ``.git``);
    the start folder alone outside a repository [inferred]."""
    chain = [cwd]
    folder = cwd
    while not os.path.lexists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return [cwd]
        folder = parent
        chain.append(folder)
    return chain


def _nested_owners(cwd: str) -> list[str]:
    """Folders below ``cwd`` holding ``.claude/skills`` (hidden folders and node_modules not searched)."""
    owners = []
    for folder, dirs, _ in os.walk(cwd):
        dirs[:] = sorted((d for d in dirs if not d.startswith(".") and d != "node_modules"), key=os.fsencode)
        if folder != cwd and os.path.isdir(os.path.join(folder, ".claude", "skills")):
            owners.append(folder)
    return owners


def _plugin_name(folder: str) -> str:
    try:
        name = json.loads(read_text(os.path.join(folder, ".claude-plugin", "plugin.json"),
                                    MAX_SKILL_FILE_BYTES)).get("name")
    except (OSError, ValueError, AttributeError):
        name = None
    return name if isinstance(name, str) and name else os.path.basename(folder)


def _skill_files(source: Source) -> list[str]:
    try:
        entries = sorted_entries(source.path)
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.startswith("."):
            continue
        path = os.path.join(source.path, entry)
        if source.commands:
            if entry.endswith(".md") and os.path.isfile(path):
                found.append(path)
        elif os.path.isfile(os.path.join(path, SKILL_FILE)):
            found.append(os.path.join(path, SKILL_FILE))
    return found


PROFILE = ClaudeCodeProfile()
