"""The claude-code profile: Claude Code (Anthropic's coding agent CLI), version :data:`HARNESS_VERSION`.

Every rule below was observed on the real Claude Code 2.1.332 (npm ``@anthropic-ai/claude-code``), run offline
against a loopback fake Messages API (``tests/test_oracle_claude_code.py`` compares this profile with that binary
byte for byte on every run; brackets name the edge-case folder or the oracle test case that shows the rule). Where the
documentation says otherwise, the binary is what is reproduced. Rules marked [docs] were not checked against it.

- Skills folders, in precedence order: managed, personal ``~/.claude/skills``, project ``.claude/skills`` in the
  start folder (and each parent up to the repository root [docs]), ``--add-dir`` folders [docs]; then plugins
  [docs]; then commands (``.claude/commands/**/*.md``, ``sub/x.md`` named ``sub:x``) [cmd, sub:deep]. A skill is
  ``<folder>/<dir>/SKILL.md`` one level below a skills folder (deeper ones are not read [inner]); hidden folders are
  read [.hidden-skill] and symlinked folders followed [linked]. Folders given by the caller are skills folders in
  precedence order.
- A skill is identified by its **folder** [folder-x]: the Skill tool takes the folder or the ``name``; the listing
  shows ``folder (name)`` when they differ (case-sensitively [gamma-Upper]). Of the skills and commands of one name
  (a skills folder's folder, a command's file) the first the model may use is listed and loaded, skills before
  commands and each in precedence order; the others are skipped [alpha, zeta, same-name-*]. When the model may use
  none of them the first stays (and answers the tool) [same-name-both-dmi]. A skill with ``paths`` is not there
  when a session starts (Claude Code adds it once a file they match is touched) [paths, skill-keys]. A ``name``
  already taken by an earlier skill or a built-in one is dropped
  [dup-b, n-builtin], so is the name of a built-in command [command-names]; a command ignores its ``name``
  [command-name]; a ``name`` with whitespace or ``/`` is ignored [spaced, n-slash]. Within each skills folder
  skills are listed in case-insensitive (ICU root collation) order of their folders [edge listing]; the commands of
  all folders follow the skills, together in that order [commands-merged].
- Frontmatter: between a first line ``---`` and the next ``---`` line (trailing blanks allowed, a byte-order mark
  skipped, CRLF accepted). YAML 1.2 (``yes`` is a string, ``1.0`` reads as ``1``, ``1e3`` as ``1000``); when it
  fails, values holding ``: `` or a YAML indicator are quoted and it is read again [colon, unclosed] (not in a CRLF
  file [crlf-unclosed]); when that fails too, the metadata is ignored [bad-yaml]. A tag glued to a non-ASCII
  character ends there [d-tag]; tabs ending block-scalar lines are dropped where the line break is kept, one kept
  where ``>`` folds [literal-tab]. A ``description`` that is a list or a mapping is ignored
  [list-desc]; numbers and booleans are shown as JavaScript prints them [d-float].
- Description: ``description`` (default: the body's first non-blank line, leading ``#`` removed [nodesc-h2], else
  ``Skill`` [empty-body]), then `` - `` and ``when_to_use`` [when]; each run of line breaks and each tab become one
  space [literal, tabbed]; ``<`` and ``>`` are escaped as ``&lt;`` / ``&gt;`` [angle]; over 1,536 UTF-16 units it is
  cut to the first 1,535 plus ``…`` [len1537, emoji-cut]. ``disable-model-invocation`` (``true``, ``"true"``,
  ``yes``) hides the skill [dmi]; ``user-invocable: false`` does not [not-user].
- Listing: a paragraph of a ``system``-role message: ``The following skills are available for use with the Skill
  tool:``, a blank line, one ``- label: description`` line per skill, then the 13 built-in ones
  (:mod:`router.profiles.claude_code_builtins`) [builtin skills]; a skill in a folder of a built-in's name replaces
  it [anthropic-skills corpus: claude-api]. The 4.x models (``claude-*-4-5``) get the same listing as a
  ``<system-reminder>`` block of the user's message instead [budget-sonnet-4-5]. A hook's ``additionalContext``
  follows in the same message as ``UserPromptSubmit hook additional context: <context>`` (a reminder block of its
  own for the 4.x models) [hook context].
- Budget: ``$SLASH_COMMAND_TOOL_CHAR_BUDGET``, else by model: 8,000 characters for the 200,000-token models
  (``claude-*-4-5``), 40,000 for ``[1m]`` ones, 30,000 for the others, the default ``claude-opus-5-5`` included
  [budget-*]. The listing costs its UTF-16 length, line breaks inside a built-in's description not counted, nor the
  half of a character cut in two [emoji-cut]. Over budget, every line but the 11 built-in skills' starts name-only
  and full lines come back greedily, most used first (then in listing order), each one that still fits [budget-*,
  usage].
- Tool ``Skill`` ``{"skill": string, "args"?: string}``, ``additionalProperties: false`` [tool-schema]. Result:
  ``Launching skill: NAME`` (as asked, a leading ``/`` removed) and a separate text block ``Base directory for this
  skill: <dir>``, a blank line and the body exactly as in the file (CRLF and trailing newline kept) [tool-*];
  commands get the body alone [tool-cmd]. ``disable-model-invocation`` skills answer an error [tool-dmi], those a
  ``skillOverrides`` entry hides ``Skill NAME is disabled for model invocation in skillOverrides settings``
  [overrides]. A skill with ``allowed-tools``, ``disallowed-tools`` or ``hooks`` (a string not blank, a list or
  mapping not empty) asks the user first: in ``-p`` the model gets
  ``Execute skill: NAME. The user can add the allow rule Skill(NAME) ...`` as the failed call's result, outside
  ``<tool_use_error>`` (:class:`PermissionRequired`); ``context: fork`` runs it in a subagent, answered
  ``Skill "NAME" completed (forked execution).`` and the subagent's answer [skill-keys]. The exact name of a
  built-in command or bundled skill (or an alias) answers as Claude Code does for it
  (``claude_code_builtins.BUILTIN_ANSWERS``: ``X is a UI command, not a skill. ...``, ``X is a built-in CLI
  command ...``, the ``disable-model-invocation`` error, a permission request, or ``Launching skill: X`` with
  Claude Code's own instructions, which are not reproduced); a user's skill of that name the model may not use
  gives way to a built-in one it may [builtin-answers, same-name-dmi-builtins]. An
  unknown name answers ``Unknown skill: NAME``, plus ``. Did you mean X?`` for the first name within two edits
  (optimal string alignment, case-sensitive, lengths within two) among the skills' frontmatter names (the folder
  without one) in listing order, then the bundled skills and built-in commands with their aliases, in the binary's
  order (``claude_code_builtins.SUGGESTED_NAMES``, all 111 names of 2.1.332; a folder of a command's name takes it
  and its aliases away) [unknown-names-*, shadowed-commands, suggestion-order].
- ``ClaudeAgentOptions(skills=[...])`` names skills by folder, and its listing leaves the built-in skills out
  [emit-config].
"""

from __future__ import annotations

import copy
import enum
import itertools
import json
import os
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import yaml

from router.errors import ConfigError, SkillToolError
from router.files import MAX_SKILL_FILE_BYTES, read_text
from router.frontmatter import YAMLNestingError, check_aliases, compose
from router.profiles.base import (SHORTLIST_HEADER, SHORTLIST_MAX_CHARS, SHORTLIST_MAX_SKILLS, SKILL_FILE, Discovery,
                                  ParsedFiles, Profile, SkillLookup, ToolSpec, decode_lossy, front_parse, parse_kind,
                                  read_skill_file, sorted_entries, tool_arguments)
from router.profiles.claude_code_builtins import (BUILTIN_ANSWERS, BUILTIN_SKILLS, SKILL_TOOL_DESCRIPTION,
                                                  SKILL_TOOL_SCHEMA, SUGGESTED_ALIASES, SUGGESTED_NAMES, Answer)
from router.skill import Skill

#: The Claude Code release these rules were checked against (the test oracle installs exactly this one).
HARNESS_VERSION = "2.1.332"
#: The model Claude Code uses when none is chosen (``--model``), which sets the listing budget.
DEFAULT_MODEL = "claude-opus-5-5"
MAX_DESCRIPTION_UNITS = 1536
BUDGET_ENV = "SLASH_COMMAND_TOOL_CHAR_BUDGET"
#: Listing budget in characters: 200,000-token models, 1,000,000-token (``[1m]``) ones, and every other model.
BUDGET_200K = 8_000
BUDGET_1M = 40_000
BUDGET_DEFAULT = 30_000
TOOL_NAME = "Skill"
LISTING_HEADER = "The following skills are available for use with the Skill tool:\n\n"
HOOK_CONTEXT_PREFIX = "UserPromptSubmit hook additional context: "
SHORTLIST_MAX_DESCRIPTION = 250
DEFAULT_DESCRIPTION = "Skill"

_OPEN_FENCE = re.compile(r"---[ \t]*\r?\n")
_CLOSE_FENCE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.M)
_LINE_BREAKS = re.compile(r"[\r\n]+|\t")
_HEADING = re.compile(r"^#+\s*")
_QUOTE_LINE = re.compile(r"^([A-Za-z0-9_-]+):[ \t]+(.+?)[ \t]*$")
_NEEDS_QUOTES = re.compile(r": |[{}\[\]*&#!|>%@`]")
_200K_MODEL = re.compile(r"(?:^|-)(?:opus|sonnet|haiku)-4(?:-[0-9]+)?(?:-|$)|claude-(?:opus|sonnet|haiku)-4-5")
_GLUED_COMMENT = re.compile(r"^[A-Za-z0-9_-]+:[ \t]+[|>][-+0-9]*#", re.M)
# a tag (``!`` and at least one ASCII tag character, no second ``!``) glued to a non-ASCII character: Claude
# Code's parser ends the tag there and keeps the rest as the value [d-tag]
_GLUED_TAG = re.compile(r"^([A-Za-z0-9_-]+:[ \t]+)![0-9A-Za-z#;/?:@&=+$_.~*'()%-]+(?=[^\x00-\x7f])", re.M)
_BLOCK_SCALAR = re.compile(r"^[A-Za-z0-9_-]+:[ \t]+([|>])[-+0-9]*[ \t]*(?:#.*)?$")
_NAME_REJECTED = re.compile(r"[\s/]")
# YAML 1.2 core schema (what Claude Code's YAML parser resolves plain scalars as)
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|"
                    r"^\.(?:nan|NaN|NAN)$")
# built-in answers of skills the model may use: they win over a user's skill of that name it may not use
_MODEL_INVOCABLE_ANSWERS = (Answer.ASKS, Answer.LOADS, Answer.FORKS)
# frontmatter keys that make Claude Code ask the user before it loads the skill (tools granted or taken, hooks)
_ASKING_KEYS = ("allowed-tools", "disallowed-tools", "hooks")
# a skill name an allow rule ``Skill(name)`` can hold
_RULE_NAME = re.compile(r"^(?!skill:|args:)[\w.-]+(?::[\w.-]+)*$", re.ASCII)
# ICU root collation order of ASCII punctuation and symbols (all before digits and letters)
_PUNCTUATION = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


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
    """A skills folder (``<folder>/<name>/SKILL.md``) or a commands folder (``<folder>/**/<name>.md``)."""

    path: str
    scope: Scope
    commands: bool = False
    plugin: str | None = None
    owner: str | None = None  # the folder holding .claude, for nested skills


class PermissionRequired(SkillToolError):
    """A ``Skill`` call Claude Code asks the user about before it loads the skill. Where nobody can answer (``-p``
    without a permission prompt tool) the call fails and the model gets this text as is, not inside
    ``<tool_use_error>`` as the other errors (:func:`tool_error_content`)."""


def tool_error_content(error: SkillToolError) -> str:
    """The ``tool_result`` content (``is_error: true``) Claude Code sends the model for a failed ``Skill`` call."""
    return str(error) if isinstance(error, PermissionRequired) else f"<tool_use_error>{error}</tool_use_error>"


def model_disabled_message(name: str) -> str:
    """The ``Skill`` tool's error for a skill with ``disable-model-invocation``."""
    return (f"Skill {name} cannot be used with {TOOL_NAME} tool due to disable-model-invocation. Ask the user to run "
            f"/{name} themselves — it cannot be invoked via the {TOOL_NAME} tool. Do not replicate this skill's "
            "workflow by other means — it is reserved for explicit user invocation.")


def permission_message(name: str, rule: str) -> str:
    """What the model gets when Claude Code would ask the user before loading skill ``name`` (``-p``: nobody to ask);
    ``rule`` is the name the allow rule it offers uses (none offered for a name the rule syntax cannot hold)."""
    offer = f". The user can add the allow rule {TOOL_NAME}({rule}) to .claude/settings.local.json to let it run " \
        "without asking." if _RULE_NAME.match(rule) else ""
    return f"Execute skill: {name}{offer}"


def _given(value: Any) -> bool:
    """A frontmatter value Claude Code takes as set: a string not blank, a list or mapping not empty."""
    return bool(value.strip()) if isinstance(value, str) else isinstance(value, (list, dict)) and bool(value)


def builtin_answer(name: str) -> Answer | None:
    """How the ``Skill`` tool answers a built-in command's or bundled skill's name (None: not one)."""
    return BUILTIN_ANSWERS.get(SUGGESTED_ALIASES.get(name, name))


@dataclass(frozen=True)
class ToolResult:
    """What the ``Skill`` tool answers: the ``tool_result`` content and the text block sent beside it."""

    content: str
    text: str


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter or None, body exactly as in the file): the first line must be ``---``; a byte-order mark is
    skipped and CRLF accepted, and the body keeps its own line ends."""
    text = text.removeprefix("\ufeff")
    opening = _OPEN_FENCE.match(text)
    if opening is None:
        return None, text
    closing = _CLOSE_FENCE.search(text, opening.end())
    if closing is None:
        return None, text
    return text[opening.end():closing.start()].replace("\r\n", "\n"), text[closing.end():]


def first_line(body: str) -> str:
    """The body's first non-blank line, trimmed, a Markdown heading's ``#`` removed."""
    for line in body.splitlines():
        if line.strip():
            return _HEADING.sub("", line.strip()).strip()
    return ""


def js_string(value: Any) -> str:
    """``String(value)`` in JavaScript, for what YAML can produce."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _js_number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa.removesuffix('.0')}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


class _Loader(yaml.SafeLoader):
    """PyYAML's loader with YAML 1.2 anchor and alias names: any characters but blanks and flow indicators
    (PyYAML allows only letters, digits, ``-`` and ``_``)."""

    def scan_anchor(self, TokenClass: Any) -> Any:  # noqa: N803 - PyYAML's signature
        start_mark = self.get_mark()
        self.forward()
        length = 0
        while self.peek(length) not in "\0 \t\r\n\x85\u2028\u2029,[]{}\ufeff":
            length += 1
        if not length:
            raise yaml.scanner.ScannerError("while scanning an anchor", start_mark, "expected a name",
                                            self.get_mark())
        value = self.prefix(length)
        self.forward(length)
        return TokenClass(value, start_mark, self.get_mark())


def load_yaml(text: str) -> Any:
    """Parse YAML 1.2 (core schema) as Claude Code's parser does; raises ``yaml.YAMLError``."""
    comment = _GLUED_COMMENT.search(text)
    if comment:  # YAML 1.2 wants a blank before a comment; PyYAML takes '>#...' as an empty block [d-glued]
        raise yaml.YAMLError(f"a comment needs a blank before it (line {text.count(chr(10), 0, comment.start()) + 1})")
    text = _GLUED_TAG.sub(r"\1", text)  # PyYAML wants a blank after a tag and refuses these
    if "\t" in text:
        text = drop_kept_line_tabs(text)
    try:
        node = compose(text)
    except YAMLNestingError:
        raise
    except yaml.YAMLError:
        if "&" not in text and "*" not in text:
            raise
        loader = _Loader(text)  # a YAML 1.2 anchor name PyYAML refuses [d-anchor]
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    if "*" in text:  # no alias without one: a "billion laughs" is refused as parsed, not when encoded
        check_aliases(node)
    return None if node is None else _construct(node, {})


def _construct(node: yaml.Node, seen: dict[int, Any]) -> Any:
    if id(node) in seen:
        return seen[id(node)]
    if isinstance(node, yaml.ScalarNode):
        value = node.value
        if node.style is not None or node.tag not in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:null",
                                                     "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                                                     "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"):
            return value
        if _NULL.match(value):
            return None
        if _BOOL.match(value):
            return value.lower() == "true"
        if _INT.match(value):
            return int(value, 16) if value.startswith("0x") else int(value, 8) if value.startswith("0o") \
                else int(value)
        if _FLOAT.match(value):
            lowered = value.lower()
            return float(lowered.replace(".inf", "inf").replace(".nan", "nan"))
        return value
    if isinstance(node, yaml.SequenceNode):
        items: list[Any] = []
        seen[id(node)] = items
        items.extend(_construct(child, seen) for child in node.value)
        return items
    mapping: dict[str, Any] = {}
    seen[id(node)] = mapping
    for key, value in node.value:
        mapping[js_string(_construct(key, seen))] = _construct(value, seen)
    return mapping


def drop_kept_line_tabs(text: str) -> str:
    """Tabs ending a line of a top-level block scalar, as Claude Code's parser reads them (PyYAML keeps them all):
    dropped where the line break is kept (every line of ``|``; in ``>`` a line before a blank or more-indented
    one) and on a line of blanks, one kept where ``>`` folds the line [literal-tab]."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        header = _BLOCK_SCALAR.match(lines[i])
        i += 1
        if not header:
            continue
        start = i
        while i < len(lines) and (not lines[i].strip(" \t") or lines[i].startswith((" ", "\t"))):
            i += 1
        block = lines[start:i]
        indent = next((len(line) - len(line.lstrip(" ")) for line in block if line.strip(" \t")), 0)
        for j, line in enumerate(block):
            following = block[j + 1] if j + 1 < len(block) else ""
            kept = header.group(1) == "|" or not following.strip(" \t") or \
                len(following) - len(following.lstrip(" ")) > indent or following[indent:indent + 1] == "\t"
            if not line.strip(" \t"):
                lines[start + j] = line.rstrip("\t")  # a line of blanks is a blank line
            elif line.endswith("\t"):
                lines[start + j] = line.rstrip("\t") + ("" if kept else "\t")  # a folded line keeps one
    return "\n".join(lines)


def quote_problem_values(front: str) -> str:
    """The retry after a YAML error: each top-level ``key: value`` whose value holds ``: `` or a YAML indicator is
    double-quoted (already quoted values are left alone)."""
    lines = []
    for line in front.split("\n"):
        match = _QUOTE_LINE.match(line)
        if match:
            key, value = match.groups()
            quoted = (value[0] == value[-1] and value[0] in "\"'" and len(value) > 1)
            if not quoted and _NEEDS_QUOTES.search(value):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                line = f'{key}: "{escaped}"'
        lines.append(line)
    return "\n".join(lines)


def listed_text(description: str) -> str:
    """A description as the listing shows it: ``<`` and ``>`` escaped, then cut to 1,535 UTF-16 units + ``…``."""
    text = description.replace("<", "&lt;").replace(">", "&gt;")
    return cut_utf16(text, MAX_DESCRIPTION_UNITS)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def cut_utf16(text: str, limit: int) -> str:
    """``text`` when it is at most ``limit`` UTF-16 units, else its first ``limit - 1`` units and ``…`` (a
    character outside the BMP may be cut in half, as JavaScript cuts it: the half left is sent as U+FFFD)."""
    if utf16_len(text) <= limit:
        return text
    data = text.encode("utf-16-le", "surrogatepass")[:2 * (limit - 1)]
    return data.decode("utf-16-le", "replace") + "…"


def collation_key(text: str) -> tuple[Any, ...]:
    """A sort key ordering as ICU's root collation (JavaScript ``localeCompare``) does for skill folder names:
    punctuation first (``_`` before ``-`` before ``.``), then digits, then letters without regard to case or
    accents; accents and then case (lower first) break ties."""
    primary: list[tuple[int, int]] = []
    secondary: list[str] = []
    tertiary: list[int] = []
    for ch in text:
        decomposed = unicodedata.normalize("NFD", ch)
        base, accents = decomposed[0], decomposed[1:]
        lower = base.lower()
        if base.isspace():
            weight = (0, ord(base))
        elif lower in _PUNCTUATION:
            weight = (1, _PUNCTUATION.index(lower))
        elif lower.isdigit():
            weight = (3, unicodedata.digit(lower, 0))
        elif lower.isalpha():
            weight = (4, ord(lower))
        else:
            weight = (2, ord(base))
        primary.append(weight)
        secondary.append(accents)
        tertiary.append(0 if base == lower else 1)
    return (primary, secondary, tertiary)


def label(skill: Skill) -> str:
    """How the listing names a skill: its folder, with the frontmatter ``name`` in brackets when that differs."""
    declared = skill.metadata.get("declared_name")
    return f"{skill.name} ({declared})" if declared and declared != skill.name else skill.name


#: Most edits (Damerau: transpositions count one) an unknown ``Skill`` name may be from the name it suggests.
SUGGESTION_DISTANCE = 2


def edit_distance(a: str, b: str, limit: int = SUGGESTION_DISTANCE) -> int:
    """Optimal-string-alignment distance of ``a`` and ``b`` (case-sensitive), ``limit + 1`` when above ``limit``."""
    if a == b:
        return 0
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return min(row[len(b)], limit + 1)


def suggestion(name: str, candidates: Sequence[str], limit: int = SUGGESTION_DISTANCE) -> str | None:
    """The ``Did you mean X?`` of Claude Code's ``Skill`` tool: the first candidate nearest ``name``, within
    ``limit`` edits; candidates whose length differs by more than ``limit`` are skipped."""
    best, best_distance = None, limit + 1
    for candidate in candidates:
        if abs(len(candidate) - len(name)) > limit:
            continue
        distance = edit_distance(name, candidate, limit)
        if distance < best_distance:
            best, best_distance = candidate, distance
    return best


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes"))


def model_budget(model: str) -> int:
    """The listing budget Claude Code gives ``model`` (no ``$SLASH_COMMAND_TOOL_CHAR_BUDGET``)."""
    if model.endswith("[1m]"):
        return BUDGET_1M
    return BUDGET_200K if _200K_MODEL.search(model) else BUDGET_DEFAULT


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
    model:
        The model Claude Code runs (``--model``), which sets the listing budget (default ``claude-opus-5-5``).
    char_budget:
        The listing budget in characters, in place of ``$SLASH_COMMAND_TOOL_CHAR_BUDGET`` and the model's.
    usage:
        Times each skill (by folder) was used; over budget the most used get their descriptions back first.
    overrides:
        The ``skillOverrides`` setting: skill name to ``on``, ``name-only``, ``user-invocable-only`` or ``off``.
    """

    name = "claude-code"
    tool_errors_fail = True
    default_roots = ()
    harness_version = HARNESS_VERSION

    def __init__(self, *, cwd: str | os.PathLike[str] | None = None, home: str | os.PathLike[str] | None = None,
                 managed: str | os.PathLike[str] | None = None, add_dirs: Sequence[str | os.PathLike[str]] = (),
                 plugins: Sequence[str | os.PathLike[str]] = (), include_nested: bool = False,
                 model: str | None = None, char_budget: int | None = None,
                 usage: Mapping[str, int] | None = None, overrides: Mapping[str, str] | None = None) -> None:
        self.cwd = cwd
        self.home = home
        self.managed = managed
        self.add_dirs = tuple(add_dirs)
        self.plugins = tuple(plugins)
        self.include_nested = include_nested
        self.model = model or DEFAULT_MODEL
        self.char_budget = char_budget
        self.usage = dict(usage or {})
        try:
            self.overrides = {name: Override(value) for name, value in (overrides or {}).items()}
        except ValueError as exc:
            raise ConfigError(f"skillOverrides: {exc}; use one of on, name-only, user-invocable-only, off") \
                from None

    @property
    def harness_model(self) -> str:
        """The model Claude Code runs (``--harness-model``), which sets the listing budget and layout."""
        return self.model

    def with_model(self, model: str | None) -> ClaudeCodeProfile:
        """The same profile for another model (``--harness-model``)."""
        other = copy.copy(self)
        other.model = model or DEFAULT_MODEL
        return other

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

    def harness_paths(self) -> list[str]:
        """The skills folders (not the commands folders) of :meth:`harness_sources`."""
        return [s.path for s in self.harness_sources() if not s.commands]

    def in_folder(self, cwd: str | os.PathLike[str]) -> ClaudeCodeProfile:
        """This profile started in ``cwd``."""
        other = copy.copy(self)
        other.cwd = cwd
        return other

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        if roots is None:
            sources = self.harness_sources()
        else:
            sources = [Source(os.path.abspath(os.fspath(r)), Scope.ROOT) for r in roots]
        return self.discover_sources(sources)

    def discover_sources(self, sources: Sequence[Source]) -> Discovery:
        """Read these folders in precedence order. A skill is named by its folder (``plugin:folder`` in a plugin,
        ``dir:folder`` for a nested clash, ``sub:name`` for a command in a subfolder); a later skill with a taken
        folder is shadowed (a warning); a frontmatter ``name`` that is another skill's folder, a built-in skill's
        name or an earlier skill's ``name`` is dropped [c-upper]. Each folder's skills are listed
        in case-insensitive order, then the commands of all folders together in that order."""
        skills: dict[str, Skill] = {}
        # the built-in skills' and commands' names are taken first [n-builtin, command-names]
        declared = {name for name, _, _ in BUILTIN_SKILLS} | (set(SUGGESTED_NAMES) - set(SUGGESTED_ALIASES))
        warnings: list[str] = []
        counter = itertools.count()
        ordered = [s for s in sources if not s.commands] + [s for s in sources if s.commands]
        parsed = ParsedFiles(parse_kind(self))  # a file unchanged since the last discovery is not parsed again
        for source in ordered:
            for ident, path in _skill_files(source):
                try:
                    skill = parsed.parse(path, self.parse, ident)
                except OSError as exc:
                    warnings.append(f"skipping {path}: {exc.strerror or exc}")
                    continue
                if source.commands and "declared_name" in skill.metadata:  # a command is its file's name [r1007]
                    skill = replace(skill, metadata={k: v for k, v in skill.metadata.items() if k != "declared_name"})
                name = f"{source.plugin}:{skill.name}" if source.plugin else skill.name  # the folder, made safe
                if _given(skill.metadata.get("paths")):  # a conditional skill: not there when the session starts
                    warnings.append(f"skipping {path}: it has paths, so Claude Code loads it only once a file they "
                                    "match is touched")
                    continue
                if source.scope is Scope.NESTED and name in skills:
                    name = f"{os.path.basename(source.owner or '')}:{name}"
                if name in skills:
                    earlier = skills[name]
                    if not earlier.metadata.get("disable_model_invocation") or \
                            skill.metadata.get("disable_model_invocation"):
                        warnings.append(f"skipping {path}: '{name}' is already defined by {earlier.path}")
                        continue
                    # the first of a name the model may use is the one listed and loaded [same-name-*]
                    warnings.append(f"skipping {earlier.path} for the model: it is disable-model-invocation, so "
                                    f"Claude Code lists and loads {path} as '{name}'")
                    del skills[name]
                if skill.metadata.get("invalid_frontmatter"):
                    warnings.append(f"{path}: frontmatter is not YAML, so Claude Code ignores its metadata "
                                    f"({skill.metadata['invalid_frontmatter']})")
                metadata = dict(skill.metadata, scope=source.scope.value, position=next(counter),
                                kind="command" if source.commands else "skill")
                skills[name] = Skill(name=name, description=skill.description, path=path, body=skill.body,
                                     metadata=metadata)
        for name, skill in list(skills.items()):  # a name another skill's folder has (anywhere) is not kept
            own = skill.metadata.get("declared_name")
            if own is None:
                continue
            if own in declared or (own != name and own in skills):
                skills[name] = replace(skill, metadata={**{k: v for k, v in skill.metadata.items()
                                                           if k != "declared_name"}, "frontmatter_name": own})
            else:
                declared.add(own)
        # the commands of every folder are listed together, in case-insensitive order of their names [commands-merged]
        commands = sorted((s for s in skills.values() if s.metadata.get("kind") == "command"),
                          key=lambda s: collation_key(s.name))
        others = sorted((s for s in skills.values() if s.metadata.get("kind") != "command"),
                        key=lambda s: s.metadata["position"])
        ordered_skills = [replace(s, metadata={**s.metadata, "position": index})
                          for index, s in enumerate(others + commands)]
        parsed.close()
        # an ``off`` skill stays: hidden from the model like ``user-invocable-only``, it still answers the tool
        # with the overrides error and is still suggested for a near name [overrides]
        return Discovery(skills=tuple(ordered_skills), warnings=tuple(warnings))

    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        front, body = split_frontmatter(decode_lossy(raw))
        data: dict[str, Any] = {}
        invalid = ""
        if front is not None:
            loaded: Any = {}
            try:
                loaded = front_parse(parse_kind(self), front, load_yaml)
            except yaml.YAMLError as first:
                try:
                    if decode_lossy(raw).removeprefix("\ufeff").split("\n", 1)[0].endswith("\r"):
                        raise first  # CRLF lines: Claude Code's retry quotes none of them [r1003]
                    loaded = load_yaml(quote_problem_values(front))
                except yaml.YAMLError as exc:
                    invalid = _yaml_problem(exc)
            if isinstance(loaded, dict):
                data = loaded
        extra: dict[str, Any] = {k: v for k, v in data.items() if k not in ("name", "description")}
        own = data.get("name")
        own_name = js_string(own).strip() if own is not None and not isinstance(own, (list, dict)) else ""
        if own_name and not _NAME_REJECTED.search(own_name):
            extra["declared_name"] = own_name
        value = data.get("description")
        description = js_string(value).strip() if value is not None and not isinstance(value, (list, dict)) \
            else ""
        description = description or first_line(body) or DEFAULT_DESCRIPTION
        when = data.get("when_to_use")
        if when is not None:
            description = f"{description} - {js_string(when)}"
        description = _LINE_BREAKS.sub(" ", description)
        extra["disable_model_invocation"] = _flag(data.get("disable-model-invocation"))
        if invalid:
            extra["invalid_frontmatter"] = invalid
        return Skill(name=folder_name, description=description, path=path, body=body, metadata=extra)

    # catalogue

    def budget_chars(self) -> int:
        """The listing budget in characters."""
        if self.char_budget is not None:
            return self.char_budget
        env = os.environ.get(BUDGET_ENV, "").strip()
        if env.isdigit():
            return int(env)
        return model_budget(self.model)

    def listed(self, skills: Sequence[Skill]) -> list[Skill]:
        """The skills the model is told about, in Claude Code's order: every one but ``disable-model-invocation``
        and those overridden ``user-invocable-only`` or ``off``."""
        shown = [s for s in skills if self.model_invocable(s)]
        return sorted(shown, key=lambda s: s.metadata.get("position", len(skills)))

    def model_invocable(self, skill: Skill) -> bool:
        hidden = (Override.USER_INVOCABLE_ONLY, Override.OFF)
        return not skill.metadata.get("disable_model_invocation") and self.overrides.get(skill.name) not in hidden

    def builtins(self, skills: Sequence[Skill]) -> list[tuple[str, str, bool]]:
        """The built-in skills listed after ``skills`` (those a skill of the same name replaces left out)."""
        taken = {s.name for s in skills}
        return [entry for entry in BUILTIN_SKILLS if entry[0] not in taken]

    def entries(self, skills: Sequence[Skill], budget: int | None = None) -> list[tuple[str, str]]:
        """(label, description shown) per listed line, the built-in ones last: every line full when the listing
        fits ``budget``; otherwise all but the built-in skills start name-only and get their descriptions back,
        most used first, each one that still fits."""
        budget = self.budget_chars() if budget is None else budget
        listed = self.listed(skills)
        rows: list[tuple[str, str]] = []
        movable: list[int] = []
        for skill in listed:
            name_only = self.overrides.get(skill.name) is Override.NAME_ONLY
            rows.append((label(skill), "" if name_only else listed_text(skill.description)))
            if not name_only:
                movable.append(len(rows) - 1)
        uses = [self.usage.get(s.name, 0) for s in listed]
        for name, description, fixed in self.builtins(listed):
            rows.append((name, description))
            uses.append(0)
            if not fixed:
                movable.append(len(rows) - 1)
        full = list(rows)
        if listing_cost(rows) <= budget:
            return rows
        for index in movable:
            rows[index] = (rows[index][0], "")
        total = listing_cost(rows)
        for index in sorted(movable, key=lambda i: -uses[i]):
            extra = _line_cost(*full[index]) - _line_cost(rows[index][0], "")
            if total + extra <= budget:
                rows[index] = full[index]
                total += extra
        return rows

    def reminder_style(self) -> bool:
        """True when Claude Code sends its context to this model as ``<system-reminder>`` blocks of the user's
        message (the 4.x models), False when as paragraphs of a ``system``-role message (the others)."""
        return bool(_200K_MODEL.search(self.model))

    def render(self, skills: Sequence[Skill]) -> str:
        """The listing: the paragraph of the ``system``-role message, or, for the 4.x models, the whole
        ``<system-reminder>`` block of the user's message."""
        text = LISTING_HEADER + "\n".join(_line(n, d) for n, d in self.entries(skills))
        return f"<system-reminder>\n{text}\n</system-reminder>" if self.reminder_style() else text

    def hook_block(self, context: str) -> str:
        """How a hook's ``additionalContext`` reaches the model: the paragraph after the listing, or for the 4.x
        models a ``<system-reminder>`` block of its own."""
        text = f"{HOOK_CONTEXT_PREFIX}{context}"
        return f"<system-reminder>\n{text}\n</system-reminder>" if self.reminder_style() else text

    def budget_report(self, skills: Sequence[Skill]) -> dict[str, Any]:
        """How the listing fits the budget: its cost in full, the budget, and how many lines keep a
        description (the built-in ones counted)."""
        rows = self.entries(skills)
        listed = self.listed(skills)
        full_rows = [(label(s), listed_text(s.description)) for s in listed] + \
            [(n, d) for n, d, _ in self.builtins(listed)]
        return {"model": self.model, "budget": self.budget_chars(), "chars": listing_cost(full_rows),
                "lines": len(rows), "full": sum(1 for _, d in rows if d),
                "builtin": len(rows) - len(listed), "user_full": sum(1 for _, d in rows[:len(listed)] if d)}

    def tool(self, skills: Sequence[Skill]) -> ToolSpec:
        return ToolSpec(name=TOOL_NAME, description=SKILL_TOOL_DESCRIPTION,
                        parameters=json.loads(json.dumps(SKILL_TOOL_SCHEMA)))

    def find(self, registry: SkillLookup, name: str) -> Skill | None:
        """The skill the Skill tool loads for ``name``: by folder, else by frontmatter ``name``."""
        found = registry.find(name)
        if found is not None:
            return found
        return next((s for s in registry if s.metadata.get("declared_name") == name), None)

    def suggested_names(self, registry: SkillLookup) -> list[str]:
        """What an unknown name is compared with, in order: each skill by its frontmatter ``name`` (its folder
        without one; also when the listing shows only the folder), in listing order, then Claude Code's own skills
        and commands."""
        skills = sorted(registry, key=lambda s: s.metadata.get("position", 0))
        taken = {s.name for s in skills}  # a folder of a command's name replaces it [shadowed-commands]
        return [s.metadata.get("declared_name") or s.metadata.get("frontmatter_name") or s.name
                for s in skills] + [n for n in SUGGESTED_NAMES if SUGGESTED_ALIASES.get(n, n) not in taken]

    def tool_result(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """The ``Skill`` tool's answer: ``Launching skill: NAME`` and the text block sent with it."""
        try:
            args = tool_arguments(arguments)
        except ValueError as exc:
            raise SkillToolError(f"invalid {TOOL_NAME} input: {exc}") from None
        name = args.get("skill")
        if not isinstance(name, str) or not name.strip():
            raise SkillToolError(f'{TOOL_NAME}: input "skill" must be a non-empty string')
        name = name.strip().removeprefix("/")
        skill = self.find(registry, name)
        if skill is not None and self.overrides.get(skill.name) in (Override.USER_INVOCABLE_ONLY, Override.OFF):
            raise SkillToolError(f"Skill {name} is disabled for model invocation in skillOverrides settings")
        builtin = builtin_answer(name)
        if builtin is not None and (skill is None or (skill.metadata.get("disable_model_invocation")
                                                      and builtin in _MODEL_INVOCABLE_ANSWERS)):
            return self._builtin_result(name, builtin)  # a built-in the model may use wins over one it may not
        if skill is None:
            guess = suggestion(name, self.suggested_names(registry))
            raise SkillToolError(f"Unknown skill: {name}. Did you mean {guess}?" if guess else f"Unknown skill: {name}")
        if not self.model_invocable(skill):
            raise SkillToolError(model_disabled_message(name))
        if any(_given(skill.metadata.get(key)) for key in _ASKING_KEYS):  # needs the user's yes [skill-keys]
            raise PermissionRequired(permission_message(name, skill.name))
        if skill.metadata.get("context") == "fork":  # runs in a subagent, whose answer is the result [skill-keys]
            return ToolResult(content=f'Skill "{name}" completed (forked execution).', text="")
        try:
            raw = read_skill_file(skill.fs_path)
        except OSError as exc:
            raise SkillToolError(f"cannot read {skill.path}: {exc.strerror or exc}") from None
        _, body = split_frontmatter(decode_lossy(raw))
        text = body if skill.metadata.get("kind") == "command" else \
            f"Base directory for this skill: {skill.directory}\n\n{body}"
        return ToolResult(content=f"Launching skill: {name}", text=text)

    @staticmethod
    def _builtin_result(name: str, answer: Answer) -> ToolResult:
        """What the ``Skill`` tool answers for a built-in command or bundled skill called by its exact name (or an
        alias): an error for the commands and the skills the model may not use, a permission request for those
        that need one; Claude Code's own instructions (or a subagent's answer) are not reproduced [builtin-answers]."""
        command = SUGGESTED_ALIASES.get(name, name)
        if answer is Answer.UI or answer is Answer.CLI:
            kind = "UI" if answer is Answer.UI else "built-in CLI"
            raise SkillToolError(f"{name} is a {kind} command, not a skill. Ask the user to run /{name} themselves "
                                 f"— it cannot be invoked via the {TOOL_NAME} tool.")
        if answer is Answer.MODEL_DISABLED:
            raise SkillToolError(model_disabled_message(name))
        if answer is Answer.ASKS:
            raise PermissionRequired(permission_message(name, command))
        if answer is Answer.FORKS:
            return ToolResult(content=f'Skill "{name}" completed (forked execution).', text="")
        return ToolResult(content=f"Launching skill: {name}", text="")

    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        """The tool result and its text block, separated by a blank line (see :meth:`tool_result`)."""
        result = self.tool_result(registry, arguments)
        return f"{result.content}\n\n{result.text}" if result.text else result.content

    # what the router adds

    def hook_context(self, skills: Sequence[Skill]) -> str:
        """The ``additionalContext`` for a routed shortlist (best first): at most 5 skills, names as listed,
        descriptions cut at 250 characters, no ``disable-model-invocation`` skill, at most 2,000 characters in
        all (later skills are dropped to fit); '' when nothing is left."""
        lines = [_line(label(s), s.description[:SHORTLIST_MAX_DESCRIPTION]) for s in skills
                 if self.model_invocable(s) and not _raw_invocation_off(s)]
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


def _raw_invocation_off(skill: Skill) -> bool:
    """``disable-model-invocation: true`` still as the raw key: a library read by another profile, whose shortlist
    a Claude Code hook shows."""
    flag = (skill.metadata or {}).get("disable-model-invocation")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


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


def _line(name: str, description: str) -> str:
    return f"- {name}: {description}" if description else f"- {name}"


def _line_cost(name: str, description: str) -> int:
    line = _line(name, description)
    cost = utf16_len(line) - line.count("\n")
    if description.endswith("\ufffd…") and utf16_len(description) == MAX_DESCRIPTION_UNITS:
        cost -= 1  # a character outside the BMP cut in half: the half left is not charged [emoji-cut]
    return cost


def listing_cost(rows: Sequence[tuple[str, str]]) -> int:
    """What Claude Code charges a listing against its budget: the UTF-16 length of its lines joined by line
    breaks, line breaks inside a description not counted."""
    return sum(_line_cost(n, d) for n, d in rows) + max(len(rows) - 1, 0)


def _skill_files(source: Source) -> list[tuple[str, str]]:
    """(name, path) of each skill or command in a folder, in Claude Code's order."""
    if source.commands:
        found = []
        for folder, dirs, files in os.walk(source.path, followlinks=True):
            dirs.sort(key=os.fsencode)
            relative = os.path.relpath(folder, source.path)
            prefix = "" if relative == "." else relative.replace(os.sep, ":") + ":"
            for entry in files:
                path = os.path.join(folder, entry)
                if entry.endswith(".md") and os.path.isfile(path):
                    found.append((prefix + entry[:-3], path))
        return sorted(found, key=lambda item: collation_key(item[0]))
    try:
        entries = sorted_entries(source.path)
    except OSError:
        return []
    skills = [(entry, os.path.join(source.path, entry, SKILL_FILE)) for entry in entries
              if os.path.isfile(os.path.join(source.path, entry, SKILL_FILE))]
    return sorted(skills, key=lambda item: collation_key(item[0]))


PROFILE = ClaudeCodeProfile()
