"""The genkit profile: the Genkit Go Skills middleware.

Rules (harness-profiles.md, "genkit"):

- Roots in order (default ``skills``), each made absolute; a missing or unreadable root is skipped, with a
  warning when configured and a debug line when it is the default.
- Exactly one level: the direct children of each root, byte-sorted; entries that are not directories, whose
  name starts with ``.``, or that are symlinks to directories (lstat) are skipped, and so is a folder whose
  SKILL.md cannot be read. The skill name is the folder name; a later root replaces an earlier one.
- Frontmatter: one leading U+FEFF stripped; the text must start with ``---`` + LF or CRLF, and ends at the first
  ``\\n---``. The YAML between is decoded like goccy/go-yaml into ``{name, description string}``: any error
  (syntax, a non-mapping, a non-scalar field, a repeated key) gives zero values. The description is trimmed and
  becomes ``No description provided.`` when empty.
- Catalogue: the ``<skills>`` block, entries sorted by name, no escaping, no trailing newline; nothing at all
  for an empty library. Injected idempotently (see :mod:`router.inject`).
- Tool ``use_skill``: returns the raw SKILL.md; errors fail the call.
"""

from __future__ import annotations

import logging
import os
import stat
from typing import Any, Mapping, Sequence

import yaml

from router.errors import SkillToolError
from router.files import FileTooLargeError, NotRegularFileError
from router.frontmatter import compose, yaml_error_text
from router.gotext import go_os_error, go_quote, go_trim_space
from router.profiles.base import (SKILL_FILE, Discovery, ParsedFiles, Profile, SkillLookup, ToolSpec, decode_lossy,
                                  front_parse, read_skill_file, sorted_entries, tool_arguments)
from router.skill import Skill

log = logging.getLogger("router.profiles.genkit")

PLACEHOLDER = "No description provided."

HEADER = (
    "<skills>\n"
    "You have access to a library of skills that serve as specialized instructions/personas.\n"
    "Strongly prefer to use them when working on anything related to them.\n"
    "Only use them once to load the context.\n"
    "Here are the available skills:\n"
)
FOOTER = "</skills>"


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Return (frontmatter YAML or None, body) by the middleware's fence rules."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith(("---\n", "---\r\n")):
        return None, text
    # The search starts right after "---", at the newline, so "---\n---" closes at once (empty frontmatter).
    # Offsets into ``text`` rather than a copy of its rest: a 10,000-skill library copied 87 MB for nothing.
    end = text.find("\n---", 3)
    if end < 0:
        return None, text
    return text[3:end], text[end + 4:]


def decode_fields(front: str) -> dict[str, str]:
    """Decode ``name`` and ``description`` as the middleware's Go YAML decoder fills its string fields.

    Scalars keep their source text (``true`` stays ``true``, ``0x1F`` stays ``0x1F``) and null is ``""``;
    a sequence or mapping where a string is expected, a repeated key, or any syntax error gives zero values.
    """
    return decode_fields_with_reason(front)[0]


def decode_fields_with_reason(front: str) -> tuple[dict[str, str], str]:
    """:func:`decode_fields`, and why the decoder gave zero values ('' when it did not)."""
    fields, reason = front_parse(KIND, front, _decoded)
    return dict(fields), reason


#: What :func:`front_parse` keeps the decodings under: the profile's parse kind.
KIND = "GenkitProfile"


def _decoded(front: str) -> list[Any]:
    """The decoding as JSON holds it, kept by frontmatter text (:func:`front_parse`): a process that loads the
    library again (``serve``'s live reload, a refresh, a new process after one edit) parses only the frontmatter
    that changed."""
    fields, reason = _decode(front)
    return [[[k, v] for k, v in fields.items()], reason]


def _decode(front: str) -> tuple[dict[str, str], str]:
    try:
        root = compose(front)
    except yaml.YAMLError as exc:
        return {}, f"frontmatter is not valid YAML ({yaml_error_text(exc)})"
    if root is None:
        return {}, ""
    if not isinstance(root, yaml.MappingNode):
        return {}, "frontmatter is not a YAML mapping"
    seen: set[str] = set()
    fields: dict[str, str] = {}
    for key_node, value_node in root.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        key = key_node.value
        if key in seen:
            return {}, f"frontmatter repeats the key {go_quote(key)}"
        seen.add(key)
        if key not in ("name", "description"):
            continue
        if not isinstance(value_node, yaml.ScalarNode):
            return {}, f"frontmatter {key} is not a string"
        null = value_node.tag == "tag:yaml.org,2002:null" and value_node.style is None
        fields[key] = "" if null else value_node.value
    return fields, ""


class GenkitProfile(Profile):
    """The Genkit Go Skills middleware."""

    name = "genkit"
    tool_errors_fail = True

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        configured = roots is not None
        warnings: list[str] = []
        found: dict[str, Skill] = {}
        parsed = ParsedFiles(type(self).__name__)  # a file unchanged since the last discovery is not parsed again
        for root in (roots if roots is not None else self.default_roots):
            root = os.path.abspath(os.fspath(root))
            try:
                names = sorted_entries(root)
            except OSError as exc:
                message = f"skipping skills root {root}: {go_os_error('open', root, exc)}"
                if configured:
                    log.warning(message)
                    warnings.append(message)
                else:
                    log.debug(message)
                continue
            for entry in names:
                if entry.startswith("."):
                    continue
                folder = os.path.join(root, entry)
                try:
                    mode = os.lstat(folder).st_mode
                except OSError:
                    continue
                if not stat.S_ISDIR(mode):
                    continue  # files, and symlinks (to folders or not): lstat never calls them directories
                path = os.path.join(folder, SKILL_FILE)
                try:
                    skill, reason = parsed.parse(path, self._parse, entry)
                except (NotRegularFileError, FileTooLargeError) as exc:
                    # The middleware skips the folder like any unreadable one; say why, since nothing else will.
                    warnings.append(f"skipping {path}: {exc.strerror}")
                    continue
                except OSError:
                    continue
                if reason:
                    # The middleware decodes to zero values without a word; a user should hear why the skill
                    # shows the placeholder.
                    warnings.append(f"{path}: {reason}; genkit reads no name or description from it")
                found[skill.name] = skill  # the safe name: a folder `a\xff` and the folder named a<0xff> are one
        skills = tuple(found[name] for name in sorted(found, key=os.fsencode))
        parsed.close()
        return Discovery(skills=skills, warnings=tuple(warnings))

    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        return self._parse(path, raw, folder_name)[0]

    def _parse(self, path: str, raw: bytes, folder_name: str) -> tuple[Skill, str]:
        # The middleware's YAML library (goccy/go-yaml) scans the text as runes, so invalid UTF-8 becomes U+FFFD
        # rather than a parse error.
        front, body = split_frontmatter(decode_lossy(raw))
        fields, reason = decode_fields_with_reason(front) if front is not None else ({}, "")
        description = go_trim_space(fields.get("description", ""))
        skill = Skill(
            name=folder_name,
            description=description or PLACEHOLDER,
            path=path,
            body=body,
            metadata={"frontmatter_name": fields.get("name", "")},
        )
        return skill, reason

    def render(self, skills: Sequence[Skill]) -> str:
        if not skills:
            return ""
        lines = []
        for skill in sorted(skills, key=lambda s: s.name.encode("utf-8", "surrogateescape")):
            if not skill.description or skill.description == PLACEHOLDER:
                lines.append(f" - {skill.name}\n")
            else:
                lines.append(f" - {skill.name} - {skill.description}\n")
        return HEADER + "".join(lines) + FOOTER

    def tool(self, skills: Sequence[Skill]) -> ToolSpec:
        return ToolSpec(
            name="use_skill",
            description="Use a skill by its name.",
            parameters={
                "type": "object",
                "properties": {"skillName": {"type": "string", "description": "The name of the skill to use."}},
                "required": ["skillName"],
            },
        )

    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        try:
            args = tool_arguments(arguments)
        except ValueError as exc:
            raise SkillToolError(f"invalid use_skill arguments: {exc}") from None
        name = args.get("skillName", "")
        # Go's encoding/json leaves a string field at its zero value "" for a JSON null.
        name = "" if name is None else name if isinstance(name, str) else str(name)
        skill = registry.find(name)
        if skill is None:
            raise SkillToolError(f"skill {go_quote(name)} not found")
        try:
            return decode_lossy(read_skill_file(skill.fs_path))
        except OSError as exc:
            raise SkillToolError(f"failed to read skill {go_quote(name)}: {go_os_error('open', skill.path, exc)}") \
                from None


PROFILE = GenkitProfile()
