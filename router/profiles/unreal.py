"""The unreal profile: the Unreal Agent Harness.

Rules (harness-profiles.md, "unreal"):

- Root ``<workspace>/.harness/skills`` (other roots accepted, same per-root rules). Matches of the glob
  ``<root>/*/SKILL.md`` sorted: one level, symlinked folders followed, hidden folders included.
- Each match is read, parsed by a line parser (not YAML), trimmed and validated; errors never stop discovery and
  are reported as ``read skill "<path>": ...``, ``parse skill "<path>": ...``, ``validate skill "<path>": ...``
  and ``skill "<path>": duplicate name "<name>"`` (the first in sorted order wins).
- Line parser: the first line trimmed must be ``---``; then each line that trims to ``---`` ends the
  frontmatter; other lines split at the first ``:`` and only the exact keys ``name`` and ``description`` are
  kept (value trimmed, last occurrence wins). Quotes stay, ``description: |`` gives ``|``, a next-line value
  gives ``""``, an unquoted colon inside a value is fine.
- Catalogue: the preamble trimmed + a blank line + compact ``<available_skills>`` XML in registration order,
  escaped like Go's encoding/xml. Nothing, and no tool, for an empty library.
- Tool ``SkillUse``: errors are returned as the result text, never raised.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from router.gotext import go_os_error, go_quote, go_trim_space
from router.profiles.base import (SKILL_FILE, Discovery, Profile, SkillLookup, ToolSpec, decode_lossy,
                                  read_skill_file, sorted_entries)
from router.skill import Skill

PREAMBLE = (
    "The following skills provide specialized instructions for specific tasks.\n"
    "Use SkillUse to load a skill's file when the task matches its description.\n"
    "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / "
    "dirname of the path) and use that absolute path in tool calls."
)
TOOL_NAME = "SkillUse"
LOADING = "Skill is loading."

_XML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;",
                "\t": "&#x9;", "\n": "&#xA;", "\r": "&#xD;"}


def _xml_char_ok(code: int) -> bool:
    # XML 1.0 Char production, as Go's encoding/xml checks it before writing a rune.
    return (code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD
            or 0x10000 <= code <= 0x10FFFF)


def go_xml_escape(text: str) -> str:
    """``xml.EscapeText`` from Go: the five entities as numeric refs for quotes, TAB/LF/CR escaped,
    characters outside the XML range replaced by U+FFFD."""
    out = []
    for ch in text:
        if ch in _XML_ESCAPES:
            out.append(_XML_ESCAPES[ch])
        elif _xml_char_ok(ord(ch)):
            out.append(ch)
        else:
            out.append("\ufffd")
    return "".join(out)


def parse_frontmatter(text: str) -> dict[str, str]:
    """The harness's line parser; raises ValueError with its message."""
    lines = text.split("\n")
    if go_trim_space(lines[0].removesuffix("\r")) != "---":
        raise ValueError("missing opening YAML frontmatter delimiter")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        line = line.removesuffix("\r")
        if go_trim_space(line) == "---":
            return fields
        key, sep, value = line.partition(":")
        if sep and key in ("name", "description"):
            fields[key] = go_trim_space(value)
    raise ValueError("missing closing YAML frontmatter delimiter")


def validate(skill: Skill) -> None:
    if not skill.path:
        raise ValueError("skill path must be set")
    if not skill.name:
        raise ValueError("skill name must be set")
    if not skill.description:
        raise ValueError("skill description must be set")


class UnrealProfile(Profile):
    """The Unreal Agent Harness."""

    name = "unreal"
    tool_errors_fail = False
    default_roots = (os.path.join(".", ".harness", "skills"),)

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        skills: list[Skill] = []
        errors: list[str] = []
        names: set[str] = set()
        for root in (roots if roots is not None else self.default_roots):
            for path in self._glob(os.path.abspath(os.fspath(root))):
                try:
                    raw = read_skill_file(path)
                except OSError as exc:
                    errors.append(f"read skill {go_quote(path)}: {go_os_error('open', path, exc)}")
                    continue
                try:
                    skill = self.parse(path, raw, os.path.basename(os.path.dirname(path)))
                except ValueError as exc:
                    errors.append(f"parse skill {go_quote(path)}: {exc}")
                    continue
                try:
                    validate(skill)
                except ValueError as exc:
                    errors.append(f"validate skill {go_quote(path)}: {exc}")
                    continue
                if skill.name in names:
                    errors.append(f"skill {go_quote(path)}: duplicate name {go_quote(skill.name)}")
                    continue
                names.add(skill.name)
                skills.append(skill)
        return Discovery(skills=tuple(skills), errors=tuple(errors))

    @staticmethod
    def _glob(root: str) -> list[str]:
        """``filepath.Glob(root + "/*/SKILL.md")``: sorted, dot folders and symlinked folders included."""
        matches: list[str] = []
        try:
            entries = sorted_entries(root)
        except OSError:
            return matches
        for entry in entries:
            folder = os.path.join(root, entry)
            if not os.path.isdir(folder):  # follows symlinks, as Glob's os.Open does
                continue
            try:
                inner = os.listdir(folder)
            except OSError:
                continue
            if SKILL_FILE in inner:
                matches.append(os.path.join(folder, SKILL_FILE))
        return matches

    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        text = decode_lossy(raw)
        fields = parse_frontmatter(text)
        return Skill(name=fields.get("name", ""), description=fields.get("description", ""), path=path,
                     body=_body_after_fence(text))

    def render(self, skills: Sequence[Skill]) -> str:
        if not skills:
            return ""
        xml = "".join(
            f"<skill><name>{go_xml_escape(s.name)}</name><description>{go_xml_escape(s.description)}"
            f"</description><location>{go_xml_escape(s.path)}</location></skill>"
            for s in skills
        )
        return PREAMBLE.strip() + "\n\n" + "<available_skills>" + xml + "</available_skills>"

    def tool(self, skills: Sequence[Skill]) -> ToolSpec | None:
        if not skills:
            return None
        return ToolSpec(
            name=TOOL_NAME,
            description="Load the instructions for a registered skill.",
            parameters={
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The exact name of the skill to load."}},
                "required": ["name"],
            },
        )

    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        if call_name and call_name != TOOL_NAME:  # the harness checks only a non-empty call name
            return f"skill-use call name {go_quote(call_name)} does not match static tool {go_quote(TOOL_NAME)}"
        if isinstance(arguments, str) or arguments is None:
            raw_args = arguments or ""
            if not go_trim_space(raw_args):
                raw_args = "{}"
            try:
                decoded = json.loads(raw_args)
            except json.JSONDecodeError as exc:
                return f"decode skill-use arguments: {go_json_error(raw_args, exc)}"
        else:
            decoded = dict(arguments) if isinstance(arguments, Mapping) else arguments
        if not isinstance(decoded, dict):
            return f"decode skill-use arguments: json: cannot unmarshal {_json_kind(decoded)} into Go value of " \
                   f"type skilluse.Args"
        name = decoded.get("name", "")
        if name is None:
            name = ""
        if not isinstance(name, str):
            return f"decode skill-use arguments: json: cannot unmarshal {_json_kind(name)} into Go struct field " \
                   f"Args.name of type string"
        if not go_trim_space(name):
            return 'skill-use argument "name" must be set'
        skill = registry.find(name)
        if skill is None:
            return f"skill {go_quote(name)} is not registered"
        try:
            return decode_lossy(read_skill_file(skill.fs_path))
        except OSError as exc:
            return f"read skill {go_quote(skill.path)}: {go_os_error('open', skill.path, exc)}"


def _body_after_fence(text: str) -> str:
    lines = text.split("\n")
    for index, line in enumerate(lines[1:], start=1):
        if go_trim_space(line.removesuffix("\r")) == "---":
            return "\n".join(lines[index + 1:])
    return ""


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def go_json_error(raw: str, exc: json.JSONDecodeError) -> str:
    """Go's encoding/json syntax-error text for the common cases (truncated input, a stray character)."""
    if exc.pos >= len(raw.rstrip()):
        return "unexpected end of JSON input"
    char = raw[exc.pos]
    if exc.msg.startswith("Expecting value"):
        context = "looking for beginning of value"
    elif exc.msg.startswith("Expecting property name"):
        context = "looking for beginning of object key string"
    elif exc.msg.startswith("Expecting ':'"):
        context = "after object key"
    elif exc.msg.startswith("Expecting ',' delimiter"):
        context = "after object key:value pair" if raw.lstrip().startswith("{") else "after array element"
    elif exc.msg.startswith("Extra data"):
        context = "after top-level value"
    else:
        context = "in string literal"
    shown = "'\\''" if char == "'" else f"'{char}'"
    return f"invalid character {shown} {context}"


PROFILE = UnrealProfile()
