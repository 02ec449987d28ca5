"""The agentskills profile: the Agent Skills specification and its client implementation guide.

Rules (harness-profiles.md, "agentskills"):

- Configured roots in order (earlier scope wins a name, with a warning). Folders holding a file named exactly
  SKILL.md are searched depth-first in byte order to a bounded depth (6 levels below a root, at most 2,000
  folders per root), skipping ``.git`` and ``node_modules``; symlinked folders are followed once (a cycle is
  cut where a folder's real path repeats). A skill folder's own subfolders are searched too, so nested skills
  are found.
- Lenient loading: a byte-order mark, CRLF line ends and invalid UTF-8 are tolerated with a warning; a
  name/folder mismatch or an over-long name is a warning and the skill still loads; a missing or empty
  description, or frontmatter that is not YAML even after the guide's retry (values with an unquoted colon
  quoted), skips the skill with a warning. The name is the frontmatter ``name`` (the folder name, with a
  warning, when it is missing).
- Catalogue: the instruction text, a blank line, then the indented ``<available_skills>`` XML (``&``, ``<`` and
  ``>`` escaped). Nothing for an empty library.
- Tool ``activate_skill`` (optional in the specification): the body without frontmatter wrapped in
  ``<skill_content name="...">`` with the skill directory; errors fail the call.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from router.errors import SkillToolError
from router.frontmatter import FrontmatterError, load_frontmatter, split_frontmatter
from router.profiles.base import (SKILL_FILE, Discovery, ParsedFiles, Profile, SkillLookup, ToolSpec, decode_lossy,
                                  front_parse, parse_kind, read_skill_file, sorted_entries, tool_arguments)
from router.skill import Skill

MAX_DEPTH = 6
MAX_FOLDERS = 2000
SKIPPED_FOLDERS = frozenset({".git", "node_modules"})
MAX_NAME_LENGTH = 64

INSTRUCTIONS = (
    "The following skills provide specialized instructions for specific tasks.\n"
    "When a task matches a skill's description, use your file-read tool to load\n"
    "the SKILL.md at the listed location before proceeding.\n"
    "When a skill references relative paths, resolve them against the skill's\n"
    "directory (the parent of SKILL.md) and use absolute paths in tool calls."
)
TOOL_NAME = "activate_skill"

def escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML entities (what ``xml.sax.saxutils.escape`` does, without importing it: it imports
    ``urllib.request`` and ``http.client``, a tenth of a one-shot route's imports)."""
    return text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def quoteattr(text: str) -> str:
    """``text`` as a quoted XML attribute value, as ``xml.sax.saxutils.quoteattr`` quotes it."""
    text = escape(text).replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    if '"' not in text:
        return f'"{text}"'
    if "'" not in text:
        return f"'{text}'"
    return '"{}"'.format(text.replace('"', "&quot;"))


def _frontmatter(front: str) -> list[Any]:
    """:func:`load_frontmatter` as JSON holds it (kept by :func:`front_parse`)."""
    return list(load_frontmatter(front))


class AgentSkillsProfile(Profile):
    """The Agent Skills specification's client behaviour."""

    name = "agentskills"
    tool_errors_fail = True
    default_roots = (os.path.join(".agents", "skills"), os.path.join("~", ".agents", "skills"))

    def __init__(self, max_depth: int = MAX_DEPTH, max_folders: int = MAX_FOLDERS) -> None:
        self.max_depth = max_depth
        self.max_folders = max_folders

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        skills: list[Skill] = []
        warnings: list[str] = []
        seen: dict[str, str] = {}
        parsed = ParsedFiles(type(self).__name__)  # a file unchanged since the last discovery is not parsed again
        for root in (roots if roots is not None else self.default_roots):
            root = os.path.abspath(os.path.expanduser(os.fspath(root)))
            if not os.path.isdir(root):
                warnings.append(f"skipping skills root {root}: not a folder")
                continue
            for path in self._walk(root, warnings):
                try:
                    skill, notes = parsed.parse(path, self.parse_with_notes, os.path.basename(os.path.dirname(path)))
                except OSError as exc:
                    warnings.append(f"skipping {path}: {exc.strerror or exc}")
                    continue
                except FrontmatterError as exc:
                    warnings.append(f"skipping {path}: {exc}")
                    continue
                warnings.extend(f"{path}: {note}" for note in notes)
                if skill.name in seen:
                    warnings.append(f"skipping {path}: skill name '{skill.name}' is already used by {seen[skill.name]}")
                    continue
                seen[skill.name] = path
                skills.append(skill)
        parsed.close()
        return Discovery(skills=tuple(skills), warnings=tuple(warnings))

    def _walk(self, root: str, warnings: list[str]) -> list[str]:
        found: list[str] = []
        visited: set[str] = set()
        budget = [self.max_folders]
        cut = [False]

        def visit(folder: str, depth: int) -> None:
            real = os.path.realpath(folder)
            if real in visited:
                return
            if budget[0] <= 0:
                cut[0] = True
                return
            visited.add(real)
            budget[0] -= 1
            try:
                entries = sorted_entries(folder)
            except OSError:
                return
            # Not isfile(): a FIFO or a device named SKILL.md is found and then skipped as unreadable, with a
            # warning, instead of vanishing silently (a dangling link is no file at all).
            candidate = os.path.join(folder, SKILL_FILE)
            if depth > 0 and SKILL_FILE in entries and os.path.exists(candidate) and not os.path.isdir(candidate):
                found.append(os.path.join(folder, SKILL_FILE))
            if depth >= self.max_depth:
                return
            for entry in entries:
                child = os.path.join(folder, entry)
                if entry not in SKIPPED_FOLDERS and os.path.isdir(child):
                    visit(child, depth + 1)

        visit(root, 0)
        if cut[0]:
            warnings.append(f"stopped searching {root} after {self.max_folders} folders")
        return found

    def _load(self, path: str) -> tuple[Skill, list[str]]:
        return self.parse_with_notes(path, read_skill_file(path), os.path.basename(os.path.dirname(path)))

    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        return self.parse_with_notes(path, raw, folder_name)[0]

    def parse_with_notes(self, path: str, raw: bytes, folder_name: str) -> tuple[Skill, list[str]]:
        """Parse leniently; returns the skill and the warnings loading it produced."""
        notes: list[str] = []
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = decode_lossy(raw)
            notes.append("file is not valid UTF-8; invalid bytes were replaced with U+FFFD")
        if text.startswith("\ufeff"):
            text = text[1:]
            notes.append("file starts with a byte-order mark")
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
            notes.append("file has CRLF line endings")
        front, body = split_frontmatter(text)
        data, retried = front_parse(parse_kind(self), front, _frontmatter)
        if retried:
            notes.append("frontmatter is not valid YAML (unquoted colon in a value); loaded with the value quoted")
        description = data.get("description")
        if not isinstance(description, str) or not description.strip():
            raise FrontmatterError("Missing required field in frontmatter: description"
                                   if "description" not in data else "Field 'description' must be a non-empty string")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            notes.append(f"frontmatter has no name; using the folder name '{folder_name}'")
            name = folder_name
        name = name.strip()
        if name != folder_name:
            notes.append(f"Directory name '{folder_name}' must match skill name '{name}'")
        if len(name) > MAX_NAME_LENGTH:
            notes.append(f"Skill name '{name}' exceeds {MAX_NAME_LENGTH} character limit ({len(name)} chars)")
        extra = {k: v for k, v in data.items() if k not in ("name", "description")}
        return Skill(name=name, description=description.strip(), path=path, body=body, metadata=extra), notes

    def render(self, skills: Sequence[Skill], *, activate_tool: bool = False) -> str:
        if not skills:
            return ""
        entries = "".join(
            "  <skill>\n"
            f"    <name>{escape(s.name)}</name>\n"
            f"    <description>{escape(s.description)}</description>\n"
            f"    <location>{escape(s.path)}</location>\n"
            "  </skill>\n"
            for s in skills
        )
        return self.instructions(activate_tool) + "\n\n<available_skills>\n" + entries + "</available_skills>"

    @staticmethod
    def instructions(activate_tool: bool = False) -> str:
        if not activate_tool:
            return INSTRUCTIONS
        return INSTRUCTIONS.replace(
            "use your file-read tool to load\nthe SKILL.md at the listed location before proceeding.",
            f"call the {TOOL_NAME} tool with the skill's name to load its\nfull instructions.",
        )

    def tool(self, skills: Sequence[Skill]) -> ToolSpec | None:
        if not skills:
            return None
        return ToolSpec(
            name=TOOL_NAME,
            description="Load a skill's full instructions by name.",
            parameters={
                "type": "object",
                "properties": {"name": {"type": "string", "enum": [s.name for s in skills],
                                        "description": "The name of the skill to activate."}},
                "required": ["name"],
            },
        )

    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        try:
            args = tool_arguments(arguments)
        except ValueError as exc:
            raise SkillToolError(f"invalid {TOOL_NAME} arguments: {exc}") from None
        name = args.get("name")
        if not isinstance(name, str) or not name:
            raise SkillToolError(f'{TOOL_NAME}: argument "name" must be a non-empty string')
        skill = registry.find(name)
        if skill is None:
            known = ", ".join(s.name for s in registry) or "(none)"
            raise SkillToolError(f"{TOOL_NAME}: unknown skill '{name}'; known skills: {known}")
        try:
            raw = read_skill_file(skill.fs_path)
        except OSError as exc:
            raise SkillToolError(f"{TOOL_NAME}: cannot read {skill.path}: {exc.strerror or exc}") from None
        text = decode_lossy(raw).removeprefix("\ufeff").replace("\r\n", "\n")
        try:
            _, body = split_frontmatter(text)
        except FrontmatterError:
            body = text.strip()
        return (f"<skill_content name={quoteattr(skill.name)}>\n{body}\n\n"
                f"Skill directory: {skill.directory}\n"
                "Relative paths in this skill are relative to the skill directory.\n"
                "</skill_content>")


PROFILE = AgentSkillsProfile()
