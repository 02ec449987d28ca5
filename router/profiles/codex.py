"""The codex profile: the OpenAI Codex CLI 0.171.0 (:data:`CODEX_VERSION`), checked against that binary.

``tests/test_oracle_codex.py`` installs ``@openai/codex@0.171.0`` and compares this profile with it byte for
byte; the case that shows a rule is named in brackets. Rules observed on 0.171.0:

- Roots in scan order: the working folder's ``.codex/skills`` (Repo; an ancestor's ``.codex`` is not read for a
  project that is not trusted) [sub-folder-project], ``$CODEX_HOME/skills`` and ``~/.agents/skills`` (User),
  ``$CODEX_HOME/skills/.system`` (System, left out with ``skills.bundled.enabled = false``), ``/etc/codex/skills``
  (Admin), plugin roots (User, names ``plugin:skill``), then ``<dir>/.agents/skills`` (Repo) for each folder from
  the project root (nearest ancestor holding ``.git``, else the working folder) down to the working folder
  [all-roots]. Roots given by the caller are extra User roots.
- Each root (canonical) is scanned breadth first, at most 6 levels and 2,000 folders, then
  ``skills scan truncated after 2000 directories (root: <root>)``. Names starting with ``.`` are skipped
  [hidden-and-nested]; symlinked folders are followed (not under System), a symlinked ``SKILL.md`` is not
  [symlinked-file]. A skill is a file named exactly ``SKILL.md``; the scan goes on below it. A skill's path is
  canonical (what ``skills/list``, ``[[skills.config]]`` and ``$name`` injection use); the listing shows the path
  as found, through the link [symlinked-folder]. A repeated canonical path keeps the first. Same names are all
  kept [duplicate-names]. Discovery order: Repo, User, System, Admin, then name, then path.
- Frontmatter: the first line trimmed is ``---`` and ends at the next line trimming to ``---``; empty, unclosed
  or after a BOM is ``missing YAML frontmatter delimited by ---`` [bom]. ``name``, ``description`` and
  ``metadata.short-description`` are read as serde_yaml reads them into optional strings; YAML that does not
  parse is read again with plain values quoted (:func:`quote_plain_values`: ``description: Use when: ...``
  parses [unquoted-colon]); values are whitespace-collapsed; no name gives the folder name; an empty description
  is ``missing field `description```; a name over 64 characters is ``invalid name: exceeds maximum length of 64
  characters``; a longer description is kept (the listing cuts it) [long-description]. Errors are reported per
  canonical path as ``<path>: <message>`` in libyaml's and Rust's wording (none under System).
- Catalogue: :mod:`router.profiles.codex_listing` (roots table, budget, the model's usage section).
- Not listed: a skill whose ``agents/openai.yaml`` sets ``policy.allow_implicit_invocation: false``, and one that
  the user config's ``[[skills.config]]`` rules (``path`` or ``name``, ``enabled = false``, later rules winning,
  both selectors ignored) disable [config-*]; those rules are read from ``$CODEX_HOME/config.toml``.
- No skill tool: a ``$name`` or ``[$name](path)`` mention injects the file as user text (:func:`inject`)
  [test_mention_injection_matches_codex]. A ``UserPromptSubmit`` hook's ``additionalContext`` reaches the model
  verbatim as a developer message after the prompt, once the hook's hash is trusted in the config
  (``[hooks.state."<key>"] trusted_hash``); ``codex exec`` skips an untrusted hook silently.
"""

from __future__ import annotations

import copy
import dataclasses
import decimal
import json
import os
import re
import sys
import tomllib
import unicodedata
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from router.errors import SkillToolError
from router.files import MAX_SKILL_FILE_BYTES, read_bytes, read_text
from router.frontmatter import check_depth, compose, safe_load
from router.profiles.base import (SHORTLIST_HEADER, SHORTLIST_MAX_CHARS, SHORTLIST_MAX_SKILLS, SKILL_FILE, Discovery,
                                  ParsedFiles, Profile, SkillLookup, ToolSpec, front_parse, parse_kind, sorted_entries,
                                  tool_arguments)
from router.profiles.codex_listing import (CODEX_VERSION, DEFAULT_MODEL, LOAD_RANK, Budget, Listing, Scope,
                                           build_listing, entry_line, listable, listed_path, prompt_order, scope_of,
                                           usage_instructions)
from router.skill import Skill

__all__ = ["CODEX_VERSION", "DEFAULT_MODEL", "PROFILE", "Budget", "CodexProfile", "Listing", "Root", "Scope",
           "build_listing", "extract_mentions",
           "inject", "mentioned", "prompt_order"]

MAX_SCAN_DEPTH = 6
MAX_DIRS_PER_ROOT = 2000
MAX_NAME_LEN = 64
ADMIN_ROOT = "/etc/codex/skills"
PROJECT_ROOT_MARKERS = (".git",)

# Rust's char::is_whitespace (the Unicode White_Space property): what str::trim and split_whitespace use.
_RUST_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
              "\u2028\u2029\u202f\u205f\u3000"
_RUST_SPACE_RUN = re.compile(f"[{_RUST_SPACE}]+")
_MENTION_CHAR = re.compile(rb"[A-Za-z0-9_:-]")
COMMON_ENV_NAMES = frozenset({"PATH", "HOME", "USER", "SHELL", "PWD", "TMPDIR", "TEMP", "TMP", "LANG", "TERM",
                              "XDG_CONFIG_HOME"})


@dataclass(frozen=True)
class Root:
    """One skills root: its folder, scope and (for a plugin) the namespace its skills are named under."""

    path: str
    scope: Scope
    plugin: str | None = None


# --- frontmatter ----------------------------------------------------------------------------------------------


def rust_trim(text: str) -> str:
    return text.strip(_RUST_SPACE)


def collapse(text: str) -> str:
    """``split_whitespace().join(" ")``: block scalars and padded values become one line."""
    return " ".join(part for part in _RUST_SPACE_RUN.split(text) if part)


def rust_lines(text: str) -> list[str]:
    """``str::lines``: split at LF, drop one CR before it, no empty last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def extract_frontmatter(text: str) -> str | None:
    """The lines between the opening and closing fences, or None (empty or unclosed frontmatter)."""
    lines = rust_lines(text)
    if not lines or rust_trim(lines[0]) != "---":
        return None
    inner: list[str] = []
    for line in lines[1:]:
        if rust_trim(line) == "---":
            return "\n".join(inner) if inner else None
        inner.append(line)
    return None


# libyaml's wording for the problems PyYAML words differently (serde_yaml reports libyaml's).
_LIBYAML_PROBLEMS = (
    ("mapping values are not allowed here", "mapping values are not allowed in this context"),
    ("expected <block end>, but found", "did not find expected key"),
    ("found character", "found character that cannot start any token"),
    ("found undefined alias", "unknown anchor"),
    ("sequence entries are not allowed here", "block sequence entries are not allowed in this context"),
    ("mapping keys are not allowed here", "mapping keys are not allowed in this context"),
    ("expected chomping or indentation indicators", "did not find expected comment or line break"),
    ("expected the node content", "did not find expected node content"),
    ("expected alphabetic or numeric character", "did not find expected alphabetic or numeric character"),
    # libyaml 0.2.6 (PyYAML's binding) misspells what the 0.2.5 that serde_yaml ports spells right
    ("did not find expected hexdecimal number", "did not find expected hexadecimal number"),
)


def _mark(mark: Any) -> str:
    return f"line {mark.line + 1} column {mark.column + 1}"


def _at(mark: Any) -> str:
    """`` at line L column C``, or nothing at the document's very start (serde_yaml prints no position there)
    [root-type-error-no-position]."""
    return "" if (mark.line, mark.column) == (0, 0) else f" at {_mark(mark)}"


def serde_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    """serde_yaml's text for a libyaml error: ``<problem> at line L column C[, <context> at line L column C]``.

    The problem wording is libyaml's for the common cases (an unquoted colon in a value above all); other
    problems keep PyYAML's wording, with the same positions.
    """
    problem = exc.problem or "invalid YAML"
    for pyyaml, libyaml in _LIBYAML_PROBLEMS:
        if problem.startswith(pyyaml):
            problem = libyaml
            break
    text = problem + (f" at {_mark(exc.problem_mark)}" if exc.problem_mark is not None else "")
    if exc.context:
        text += f", {exc.context}"
        same = exc.context_mark is not None and exc.problem_mark is not None and \
            (exc.context_mark.line, exc.context_mark.column) == (exc.problem_mark.line, exc.problem_mark.column)
        at_start = exc.context_mark is not None and (exc.context_mark.line, exc.context_mark.column) == (0, 0)
        if exc.context_mark is not None and not same and not at_start:
            text += f" at {_mark(exc.context_mark)}"
    return text


def _kind(node: yaml.Node) -> str:
    """serde's ``Unexpected`` for a node as serde_yaml resolves it: a plain scalar may be null, a YAML 1.2
    boolean, an integer or a float [metadata-null-is-unit]."""
    if isinstance(node, yaml.SequenceNode):
        return "sequence"
    if isinstance(node, yaml.MappingNode):
        return "map"
    if node.style is None and node.tag != "tag:yaml.org,2002:str":  # ``!t ~`` is still null, ``!!str 1`` a string
        return _plain_unexpected(node.value)
    return f"string {rust_debug(node.value)}"


_NULLS = ("", "~", "null", "Null", "NULL")
_NULL_TAG = "tag:yaml.org,2002:null"
_INT_PREFIXES = (("0x", 16), ("0o", 8), ("0b", 2))


def _plain_unexpected(value: str) -> str:
    """``visit_untagged_scalar``'s reading of a plain scalar, worded as serde's ``Unexpected``."""
    if value in _NULLS:
        return "unit value"
    if value in ("true", "True", "TRUE", "false", "False", "FALSE"):
        return f"boolean `{value.lower()}`"
    number = _rust_int(value)
    if number is not None:
        return _integer(number)
    real = None if _leading_zero(value) else _rust_float(value)
    if real is not None:
        return f"floating point `{real}`"
    return f"string {rust_debug(value)}"


def _rust_int(value: str) -> int | None:
    """serde_yaml's ``parse_unsigned_int`` / ``parse_negative_int`` (128 bits at most)."""
    sign, digits = (-1, value[1:]) if value.startswith("-") else (1, value.removeprefix("+"))
    for prefix, base in _INT_PREFIXES:
        if digits.startswith(prefix):
            rest = digits[len(prefix):]
            if re.fullmatch(r"[0-9a-fA-F]+", rest) and all(int(c, 16) < base for c in rest):
                return _in_range(sign * int(rest, base))
            if sign < 0:
                return None
    if not re.fullmatch(r"[0-9]+", digits) or _leading_zero(value):
        return None
    return _in_range(sign * int(digits))


def _leading_zero(value: str) -> bool:
    """serde_yaml's ``digits_but_not_number``: ``01`` is a string, as YAML 1.2 says (not a number of any kind)."""
    digits = value[1:] if value[:1] in ("+", "-") else value
    return len(digits) > 1 and digits.startswith("0") and digits.isascii() and digits.isdigit()


def _in_range(number: int) -> int | None:
    return number if -(2 ** 127) <= number < 2 ** 128 else None


def _integer(number: int) -> str:
    """serde's ``Unexpected`` for an integer: 64-bit ones plain, wider ones ``as u128`` / ``as i128``."""
    if -(2 ** 63) <= number < 2 ** 64:
        return f"integer `{number}`"
    return f"integer `{number}` as {'u128' if number >= 0 else 'i128'}"


def _rust_float(value: str) -> str | None:
    """serde_yaml's ``parse_f64`` and Rust's display of the result (serde adds ``.0`` to a whole number)."""
    body = value.removeprefix("+")
    if value.startswith("+") and body[:1] in ("+", "-"):
        return None
    if body in (".inf", ".Inf", ".INF"):
        return "inf"
    if value in ("-.inf", "-.Inf", "-.INF"):
        return "-inf"
    if value in (".nan", ".NaN", ".NAN"):
        return "NaN"
    if not re.fullmatch(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", body):
        return None
    real = float(body)
    if real in (float("inf"), float("-inf")):
        return None
    text = format(decimal.Decimal(repr(real)), "f")
    return text if "." in text else text + ".0"


_DEBUG_ESCAPES = {"\t": "\\t", "\r": "\\r", "\n": "\\n", '"': '\\"', "\\": "\\\\", "\0": "\\0"}


def rust_debug(text: str) -> str:
    """``{:?}`` of a Rust string: quoted, ``\\t \\r \\n \\" \\\\ \\0`` escaped, other unprintable characters
    as ``\\u{hex}``, everything else (``é`` included) as it is [rust-debug-string]."""
    out = []
    for char in text:
        if char in _DEBUG_ESCAPES:
            out.append(_DEBUG_ESCAPES[char])
        elif unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or \
                (unicodedata.category(char) == "Zs" and char != " "):
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _optional_string(node: yaml.Node, key: str) -> str | None:
    """serde_yaml's ``Option<String>``: a plain null is None, any other scalar its text, else a type error."""
    if isinstance(node, yaml.ScalarNode):
        if node.tag == _NULL_TAG:  # [explicit-tags]
            if node.value in _NULLS[1:]:
                return None
            raise ValueError(f"invalid value: string {rust_debug(node.value)}, expected null")
        if node.style is None and not node.tag and node.value in _NULLS:
            return None
        return node.value  # any other tag (``!!str ~``) makes a string
    raise ValueError(f"{key}: invalid type: {_kind(node)}, expected a string{_at(node.start_mark)}")


def read_fields(front: str) -> dict[str, str | None]:
    """``name``, ``description`` and ``metadata.short-description`` as Codex's serde_yaml struct reads them.

    Frontmatter that does not read (a syntax error, or a type error too) is read once more with its plain values
    quoted (:func:`quote_plain_values`), as Codex 0.171.0 does [unquoted-colon, invalid-yaml-bracket,
    type-error-read-again]; when that fails too, the first error stands.
    Raises ValueError with the text after ``invalid YAML: ``.
    """
    if _LIBYAML is None:  # libyaml reads these tabs itself; PyYAML needs them as spaces
        front = _inline_tabs_as_spaces(front)
    try:
        return _fields(_compose(front))
    except ValueError as first:  # a type error too [type-error-read-again]
        repaired = quote_plain_values(front)
        if repaired == front:
            raise
        try:
            return _fields(_compose(repaired))
        except ValueError:
            raise first from None


def _inline_tabs_as_spaces(front: str) -> str:
    """libyaml takes a tab after a line's first non-blank character as a blank, PyYAML not always; every value
    read here is whitespace-collapsed, so such tabs become spaces (columns unchanged). Indentation is kept."""
    lines = []
    for line in front.split("\n"):
        body = line.lstrip(" \t")
        lines.append(line[:len(line) - len(body)] + body.replace("\t", " "))
    return "\n".join(lines)


_KEY_LINE = re.compile(r"^([ \t]*)([^\s#][^:]*?):[ \t]+(.*)$")
_BLOCK_HEADER = re.compile(r"^[|>][-+0-9]*$")
_NEEDS_QUOTES = re.compile(r":[ \t]")
_QUOTE_FIRST = "@`"


def quote_plain_values(front: str) -> str:
    """Codex's second reading of frontmatter that is not YAML: each ``key: value`` line whose value (comment
    removed, trimmed) holds ``:`` and a blank, starts with ``@`` or a backtick, or starts with ``[`` or ``{`` and
    is no YAML on its own (``[a`` and ``[a] b``, not ``[a]``) [flow-value-quoted-only-when-broken] becomes
    ``key: 'value'``; quoted values, block scalars and the lines inside them are left as they are."""
    out: list[str] = []
    block_indent: int | None = None
    for line in front.split("\n"):
        indent = len(line) - len(line.lstrip(" \t"))
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                out.append(line)
                continue
            block_indent = None
        match = _KEY_LINE.match(line)
        if match is None:
            out.append(line)
            continue
        lead, key, value = match.groups()
        hashes = [i for i, char in enumerate(value) if char == "#" and (i == 0 or value[i - 1] in _RUST_SPACE)]
        kept = value[:hashes[0]] if hashes else value  # a comment starts after any Unicode blank [comment-kept]
        rest = value[len(kept.rstrip(_RUST_SPACE)):]  # what follows the value stays, for libyaml to read again
        value = rust_trim(kept)
        if _BLOCK_HEADER.match(value):
            block_indent = indent
        if value and value[0] not in "'\"|>" and (_NEEDS_QUOTES.search(value) or value[0] in _QUOTE_FIRST
                                                 or value[0] in "[{" and _events(value)[1] is not None):
            line = f"{lead}{key}: '" + value.replace("'", "''") + "'" + rest
        out.append(line)
    return "\n".join(out)


_LIBYAML = getattr(yaml, "CSafeLoader", None)


def _compose(front: str) -> yaml.Node | None:
    """The document's node tree, or ValueError with serde_yaml's text for the first error it reports.

    serde_yaml reads the events up to libyaml's first syntax error and deserializes them before it looks at
    the error, so a type error in ``name``, ``description`` or ``metadata`` seen before that point is the one
    reported [unclosed-flow-type-error-first]. Syntax errors are libyaml's own when PyYAML has its binding
    (wording, columns, and a tab right after a block scalar's indentation refused) [libyaml-tag-errors].
    """
    try:
        check_depth(front)
        events, error = _events(front)
        documents = sum(isinstance(event, yaml.DocumentStartEvent) for event in events)
        if error is not None or documents > 1:
            _fields(_partial_tree(events))  # raises the type error serde_yaml meets before the syntax error
            if documents > 1 or any(isinstance(event, yaml.DocumentEndEvent) for event in events):
                # the first document read well: serde_yaml refuses a next one before reading it [second-document]
                raise ValueError("deserializing from YAML containing more than one document is not supported")
            raise error or yaml.YAMLError("invalid YAML")
        compose(front)  # PyYAML's composer errors and its nesting guard
        return _partial_tree(events)  # the same nodes, with the tags written in the file
    except yaml.MarkedYAMLError as exc:
        raise ValueError(serde_yaml_error(exc)) from None
    except yaml.reader.ReaderError as exc:
        raise ValueError(_reader_error(front, exc)) from None
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def _reader_error(front: str, exc: yaml.reader.ReaderError) -> str:
    """libyaml's reader error as serde_yaml words it: ``control characters are not allowed at position N``, N
    the UTF-8 byte offset (PyYAML's own reader counts characters and words it otherwise) [control-characters]."""
    if exc.reason == "special characters are not allowed":
        return f"control characters are not allowed at position {len(front[:exc.position].encode('utf-8'))}"
    return f"{exc.reason} at position {exc.position}"


def _events(front: str) -> tuple[list[yaml.Event], yaml.YAMLError | None]:
    """The parse events before the first syntax or reader error, and that error (libyaml's parser when
    available)."""
    events: list[yaml.Event] = []
    anchors: set[str] = set()
    try:
        for event in yaml.parse(front, Loader=_LIBYAML or yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) and event.anchor not in anchors:  # [unknown-anchor-first]
                return events, yaml.MarkedYAMLError(problem="unknown anchor", problem_mark=event.start_mark)
            if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)) and event.anchor:
                anchors.add(event.anchor)
            events.append(event)
    except (yaml.MarkedYAMLError, yaml.reader.ReaderError) as exc:
        return events, exc
    return events, None


def _partial_tree(events: Sequence[yaml.Event]) -> yaml.Node | None:
    """The nodes the events describe, collections cut short where the events stop (iterative, no recursion).
    A scalar's tag is the one written in the file ('' for none), as serde_yaml sees it."""
    root: yaml.Node | None = None
    stack: list[tuple[yaml.Node, list[yaml.Node]]] = []  # open collections and, for a map, the pending key
    anchors: dict[str, yaml.Node] = {}

    def add(node: yaml.Node) -> None:
        nonlocal root
        if not stack:
            root = node if root is None else root
            return
        parent, pending = stack[-1]
        if isinstance(parent, yaml.SequenceNode):
            parent.value.append(node)
        elif pending:
            parent.value.append((pending.pop(), node))
        else:
            pending.append(node)

    for event in events:
        if isinstance(event, yaml.AliasEvent):
            add(anchors[event.anchor])
        elif isinstance(event, yaml.ScalarEvent):
            style = event.style or None
            node: yaml.Node = yaml.ScalarNode(event.tag or "", event.value, event.start_mark, event.end_mark,
                                              style=style)
            add(node)
            if event.anchor:
                anchors[event.anchor] = node
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
            node = kind("", [], event.start_mark, event.end_mark)
            add(node)
            stack.append((node, []))
            if event.anchor:
                anchors[event.anchor] = node
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            stack.pop()
        elif isinstance(event, yaml.DocumentEndEvent):
            break
    if stack and isinstance(stack[-1][0], yaml.MappingNode) and stack[-1][1]:  # a key whose value never came:
        key = stack[-1][1][0]  # serde has seen it, a duplicate `name` is reported [duplicate-before-syntax-error]
        stack[-1][0].value.append((key, yaml.ScalarNode("", "", key.end_mark, key.end_mark)))
    return root


def _fields(root: yaml.Node | None) -> dict[str, str | None]:
    fields: dict[str, str | None] = {}
    if root is None:
        return fields
    if not isinstance(root, yaml.MappingNode):
        raise ValueError(f"invalid type: {_kind(root)}, expected struct SkillFrontmatter{_at(root.start_mark)}")
    seen: set[str] = set()
    for key_node, value_node in root.value:
        if not isinstance(key_node, yaml.ScalarNode):  # serde wants a field name [collection-key]
            raise ValueError(f"invalid type: {_kind(key_node)}, expected field identifier{_at(key_node.start_mark)}")
        key = key_node.value
        if key in seen and key in ("name", "description", "metadata"):
            raise ValueError(f"duplicate field `{key}`")
        seen.add(key)
        if key in ("name", "description"):
            fields[key] = _optional_string(value_node, key)
        elif key == "metadata":
            if isinstance(value_node, yaml.MappingNode):
                for inner_key, inner_value in value_node.value:
                    if not isinstance(inner_key, yaml.ScalarNode):
                        raise ValueError(f"metadata: invalid type: {_kind(inner_key)}, expected field identifier"
                                         f"{_at(inner_key.start_mark)}")
                    if inner_key.value == "short-description":
                        fields["short-description"] = _optional_string(inner_value,
                                                                       "metadata.short-description")
            elif not (isinstance(value_node, yaml.ScalarNode) and value_node.style is None
                      and value_node.value == ""):  # an empty plain scalar reads as an empty map
                raise ValueError(f"metadata: invalid type: {_kind(value_node)}, expected struct "
                                 f"SkillFrontmatterMetadata{_at(value_node.start_mark)}")
    return fields


def _check_length(value: str, limit: int, field_name: str) -> None:
    if not value:
        raise ValueError(f"missing field `{field_name}`")
    if len(value) > limit:
        raise ValueError(f"invalid {field_name}: exceeds maximum length of {limit} characters")


# --- mentions -------------------------------------------------------------------------------------------------


def _is_env_name(name: bytes) -> bool:
    return name.decode("utf-8").upper() in COMMON_ENV_NAMES


def extract_mentions(text: str) -> tuple[set[str], set[str]]:
    """The ``$name`` names and the ``[$name](path)`` paths in a user message (common env names excluded)."""
    data = text.encode("utf-8", "surrogatepass")
    names: set[str] = set()
    paths: set[str] = set()
    index = 0
    while index < len(data):
        if data[index:index + 2] == b"[$":
            linked = _linked_mention(data, index)
            if linked is not None:
                name, path, end = linked
                if not _is_env_name(name):
                    paths.add(path.decode("utf-8"))
                index = end
                continue
        if data[index:index + 1] != b"$" or not _MENTION_CHAR.match(data, index + 1):
            index += 1
            continue
        end = index + 1
        while end < len(data) and _MENTION_CHAR.match(data, end):
            end += 1
        if not _is_env_name(data[index + 1:end]):
            names.add(data[index + 1:end].decode("utf-8"))
        index = end
    return names, paths


def _linked_mention(data: bytes, start: int) -> tuple[bytes, bytes, int] | None:
    name_start = start + 2
    if not _MENTION_CHAR.match(data, name_start):
        return None
    name_end = name_start + 1
    while name_end < len(data) and _MENTION_CHAR.match(data, name_end):
        name_end += 1
    if data[name_end:name_end + 1] != b"]":
        return None
    path_start = name_end + 1
    while data[path_start:path_start + 1] in (b" ", b"\t", b"\n", b"\r", b"\x0c"):
        path_start += 1
    if data[path_start:path_start + 1] != b"(":
        return None
    path_end = data.find(b")", path_start + 1)
    if path_end < 0:
        return None
    path = data[path_start + 1:path_end].strip(b" \t\n\r\x0c")
    if not path:
        return None
    return data[name_start:name_end], path, path_end + 1


def mentioned(text: str, skills: Sequence[Skill]) -> list[Skill]:
    """The skills a user message names, in ``skills`` order: linked paths first, then ``$name`` mentions of a
    name that exactly one enabled skill has (``collect_explicit_skill_mentions``)."""
    names, paths = extract_mentions(text)
    paths = {p.removeprefix("skill://") for p in paths}
    skills = [s for s in skills if s.metadata.get("enabled", True)]  # a disabled skill cannot be mentioned
    counts: dict[str, int] = {}
    for skill in skills:
        counts[skill.name] = counts.get(skill.name, 0) + 1
    chosen: list[Skill] = []
    seen_paths: set[str] = set()
    seen_names: set[str] = set()
    for skill in skills:
        if skill.path in paths and skill.path not in seen_paths:
            seen_paths.add(skill.path)
            seen_names.add(skill.name)
            chosen.append(skill)
    for skill in skills:
        if skill.path in seen_paths or skill.name not in names or counts[skill.name] != 1:
            continue
        if skill.name not in seen_names:
            seen_names.add(skill.name)
            seen_paths.add(skill.path)
            chosen.append(skill)
    return chosen


def injection(skill: Skill, contents: str) -> str:
    """The user text a mention injects."""
    return f"<skill>\n<name>{skill.name}</name>\n<path>{skill.path}</path>\n{contents}\n</skill>"


def inject(text: str, skills: Sequence[Skill]) -> tuple[list[str], list[str]]:
    """(injected user texts, warnings) for the skills ``text`` mentions, read from disk now."""
    items, warnings = [], []
    for skill in mentioned(text, skills):
        try:
            items.append(injection(skill, _read_text(skill.fs_path)))
        except (OSError, ValueError) as exc:
            warnings.append(f"Failed to load skill {skill.name} at {skill.path}: {_io_reason(exc)}")
    return items, warnings


def _utf8_error(exc: UnicodeDecodeError) -> str:
    """Rust's ``Utf8Error`` text for this decoding error."""
    if exc.reason == "unexpected end of data":
        return f"incomplete utf-8 byte sequence from index {exc.start}"
    return f"invalid utf-8 sequence of {exc.end - exc.start} bytes from index {exc.start}"


def _read_config(path: str) -> dict[str, Any]:
    """The user config as a table ({} when missing or not TOML: discovery reports that)."""
    try:
        return tomllib.loads(read_bytes(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _read_text(path: str) -> str:
    raw = read_bytes(path, MAX_SKILL_FILE_BYTES)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("stream did not contain valid UTF-8") from None


def _io_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} (os error {exc.errno})"
    return str(exc)


# --- the profile ----------------------------------------------------------------------------------------------


class CodexProfile(Profile):
    """The OpenAI Codex CLI.

    Parameters (all optional; the defaults are what Codex itself uses, read when ``discover`` runs)
    ----------
    cwd:
        The working folder (default: the current one).
    codex_home:
        ``$CODEX_HOME`` (default: the environment variable, else ``~/.codex``).
    home:
        The user's home, for ``~/.agents/skills`` (default: ``~``).
    admin_root:
        The Admin root (default ``/etc/codex/skills``).
    plugins:
        ``(plugin name, skills folder)`` pairs: User roots whose skills are named ``plugin:skill``.
    model:
        The model Codex runs (``--harness-model``; default: ``model`` in ``$CODEX_HOME/config.toml``, else
        :data:`DEFAULT_MODEL`). It sets the context window and whether ``### How to use skills`` is listed.
    context_window:
        Codex's ``model_context_window``: replaces the model's window (default: the config's, else the model's).
    max_context_tokens:
        Codex's ``skills.max_context_tokens``: the listing budget itself (default: the config's, else 2% of the
        window).
    bundled:
        Codex's ``skills.bundled.enabled``: False leaves the System root (``$CODEX_HOME/skills/.system``) out
        (default: the config's, else True).
    """

    name = "codex"
    #: The Codex release this profile reproduces (its rules were observed on this binary).
    harness_version = CODEX_VERSION
    tool_errors_fail = True
    default_roots = ()

    def __init__(self, *, cwd: str | os.PathLike[str] | None = None, codex_home: str | os.PathLike[str] | None = None,
                 home: str | os.PathLike[str] | None = None, admin_root: str | os.PathLike[str] | None = ADMIN_ROOT,
                 plugins: Sequence[tuple[str, str | os.PathLike[str]]] = (),
                 project_root_markers: Sequence[str] = PROJECT_ROOT_MARKERS,
                 model: str | None = None, context_window: int | None = None,
                 max_context_tokens: int | None = None, bundled: bool | None = None) -> None:
        self.cwd = cwd
        self.codex_home = codex_home
        self.home = home
        self.admin_root = admin_root
        self.plugins = tuple(plugins)
        self.project_root_markers = tuple(project_root_markers)
        self.model = model
        self.context_window = context_window
        self.max_context_tokens = max_context_tokens
        self.bundled = bundled

    def _setting(self, given: Any, *keys: str) -> Any:
        """A constructor value, else the user config's (``$CODEX_HOME/config.toml``), else None."""
        if given is not None:
            return given
        value: Any = _read_config(os.path.join(self._codex_home(), "config.toml"))
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    @property
    def harness_model(self) -> str:
        """The model whose rules apply: the one given, the config's ``model``, else Codex's default."""
        model = self._setting(self.model, "model")
        return model if isinstance(model, str) and model else DEFAULT_MODEL

    @property
    def budget(self) -> Budget:
        """The listing budget for :attr:`harness_model` (``model_context_window`` and
        ``skills.max_context_tokens`` applied)."""
        window = self._setting(self.context_window, "model_context_window")
        tokens = self._setting(self.max_context_tokens, "skills", "max_context_tokens")
        return Budget.for_model(self.harness_model, window if isinstance(window, int) else None,
                                tokens if isinstance(tokens, int) else None)

    def with_model(self, model: str) -> "CodexProfile":
        """This profile for another model (``--harness-model``): its window, budget and usage section."""
        other = copy.copy(self)
        other.model = model
        return other

    def _bundled(self) -> bool:
        return self._setting(self.bundled, "skills", "bundled", "enabled") is not False

    # discovery

    def harness_roots(self) -> list[Root]:
        """The roots Codex scans, in its order (missing ones included; the scan skips them)."""
        cwd = os.path.abspath(os.fspath(self.cwd) if self.cwd is not None else os.getcwd())
        home = self._home()
        codex_home = self._codex_home()
        project = self.project_root(cwd)
        between = _dirs_between(project, cwd)
        # The project config layer: the working folder's .codex (an ancestor's is not read for a project that is
        # not trusted) [sub-folder-project]; the user's own ~/.codex is the User layer, never a project one.
        dot_codex = os.path.join(cwd, ".codex")
        roots = [Root(os.path.join(dot_codex, "skills"), Scope.REPO)] \
            if os.path.isdir(dot_codex) and dot_codex != codex_home else []
        roots += [Root(os.path.join(codex_home, "skills"), Scope.USER),
                  Root(os.path.join(home, ".agents", "skills"), Scope.USER)]
        if self._bundled():
            roots.append(Root(os.path.join(codex_home, "skills", ".system"), Scope.SYSTEM))
        if self.admin_root is not None:
            roots.append(Root(os.path.abspath(os.fspath(self.admin_root)), Scope.ADMIN))
        roots += [Root(os.path.abspath(os.fspath(path)), Scope.USER, plugin) for plugin, path in self.plugins]
        roots += [Root(os.path.join(d, ".agents", "skills"), Scope.REPO) for d in between
                  if os.path.isdir(os.path.join(d, ".agents", "skills"))]
        return roots

    def _home(self) -> str:
        return os.path.abspath(os.path.expanduser(os.fspath(self.home) if self.home is not None else "~"))

    def _codex_home(self) -> str:
        codex_home = self.codex_home if self.codex_home is not None else os.environ.get("CODEX_HOME")
        return os.path.abspath(os.fspath(codex_home)) if codex_home else os.path.join(self._home(), ".codex")

    def harness_paths(self) -> list[str]:
        """The folders of :meth:`harness_roots`."""
        return [root.path for root in self.harness_roots()]

    def in_folder(self, cwd: str | os.PathLike[str]) -> CodexProfile:
        """This profile run in the working folder ``cwd``."""
        other = copy.copy(self)
        other.cwd = cwd
        return other

    def project_root(self, cwd: str) -> str:
        """The nearest ancestor of ``cwd`` holding a project-root marker (``.git``), else ``cwd``."""
        if not self.project_root_markers:
            return cwd
        folder = cwd
        while True:
            if any(os.path.exists(os.path.join(folder, marker)) for marker in self.project_root_markers):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                return cwd
            folder = parent

    def discover(self, roots: Sequence[str | os.PathLike[str]] | None = None) -> Discovery:
        """Codex's own roots, with the user config's ``[[skills.config]]`` rules applied (``roots=None``), or the
        given folders as extra User roots (no config read)."""
        if roots is not None:
            return self.discover_roots([Root(os.path.abspath(os.fspath(r)), Scope.USER) for r in roots])
        found = self.discover_roots(self.harness_roots())
        rules, warnings = read_config_rules(os.path.join(self._codex_home(), "config.toml"))
        disabled = disabled_paths(found.skills, rules)
        skills = tuple(dataclasses.replace(s, metadata={**s.metadata, "enabled": False}) if s.path in disabled else s
                       for s in found.skills)
        return Discovery(skills=skills, errors=found.errors, warnings=found.warnings + tuple(warnings))

    def discover_roots(self, roots: Sequence[Root]) -> Discovery:
        """Scan these roots in order (``load_skills_from_roots``)."""
        skills: list[Skill] = []
        errors: list[str] = []
        warnings: list[str] = []
        seen_roots: set[str] = set()
        parsed = ParsedFiles(parse_kind(self))  # a file unchanged since the last discovery is not parsed again
        for index, root in enumerate(roots):
            if root.path in seen_roots:
                continue
            seen_roots.add(root.path)
            self._scan(root, index, skills, errors, warnings, parsed)
        parsed.close()
        unique: dict[str, Skill] = {}
        for skill in skills:
            unique.setdefault(skill.path, skill)
        ordered = sorted(unique.values(), key=lambda s: (LOAD_RANK[scope_of(s)],
                                                         s.name.encode("utf-8", "surrogateescape"),
                                                         os.fsencode(s.path)))
        return Discovery(skills=tuple(_distinct_ids(ordered)), errors=tuple(errors), warnings=tuple(warnings))

    def _scan(self, root: Root, index: int, skills: list[Skill], errors: list[str], warnings: list[str],
              parsed: ParsedFiles) -> None:
        top = os.path.realpath(root.path)
        if not os.path.isdir(top):
            return
        follow = root.scope is not Scope.SYSTEM
        visited = {top}
        # (the folder as found, through symlinked folders; its depth): the listing shows paths as found
        queue: deque[tuple[str, int]] = deque([(top, 0)])
        truncated = False

        def enqueue(folder: str, depth: int) -> None:
            nonlocal truncated
            if depth > MAX_SCAN_DEPTH:
                return
            if len(visited) >= MAX_DIRS_PER_ROOT:
                truncated = True
                return
            canonical = os.path.realpath(folder)
            if canonical not in visited:
                visited.add(canonical)
                queue.append((folder, depth))

        while queue:
            folder, depth = queue.popleft()
            try:
                entries = sorted_entries(folder)
            except OSError:
                continue
            for entry in entries:
                if entry.startswith("."):
                    continue
                path = os.path.join(folder, entry)
                if os.path.islink(path):
                    if follow and os.path.isdir(path):
                        enqueue(path, depth + 1)
                    continue
                if os.path.isdir(path):
                    enqueue(path, depth + 1)
                elif entry == SKILL_FILE and os.path.isfile(path):
                    try:
                        skills.append(self._load(path, root, top, index, parsed))
                    except (OSError, ValueError) as exc:
                        if root.scope is not Scope.SYSTEM:
                            errors.append(f"{os.path.realpath(path)}: {exc}")
        if truncated:
            warnings.append(f"skills scan truncated after {MAX_DIRS_PER_ROOT} directories (root: {top})")

    def _load(self, path: str, root: Root, top: str, index: int, parsed: ParsedFiles) -> Skill:
        try:  # regular files only, capped like every profile's
            skill = parsed.parse(path, self.parse, os.path.basename(os.path.dirname(path)))
        except OSError as exc:
            raise ValueError(f"failed to read file: {_io_reason(exc)}") from None
        name = f"{root.plugin}:{skill.name}" if root.plugin else skill.name
        _check_length(name, MAX_NAME_LEN, "name")  # the plugin namespace counts toward the limit
        metadata = dict(skill.metadata, scope=root.scope.value, root=top, root_index=index, found_path=path)
        metadata.update(_openai_yaml_policy(os.path.dirname(path)))
        return Skill(name=name, description=skill.description, path=os.path.realpath(path), body=skill.body,
                     metadata=metadata)

    def parse(self, path: str, raw: bytes, folder_name: str) -> Skill:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"failed to read file: {_utf8_error(exc)}") from None
        front = extract_frontmatter(text)
        if front is None:
            raise ValueError("missing YAML frontmatter delimited by ---")
        try:
            fields = front_parse(parse_kind(self), front, read_fields)
        except ValueError as exc:
            raise ValueError(f"invalid YAML: {exc}") from None
        name = collapse(fields.get("name") or "") or collapse(folder_name) or "skill"
        description = collapse(fields.get("description") or "")
        short = collapse(fields.get("short-description") or "")
        _check_length(name, MAX_NAME_LEN, "name")
        _check_length(description, sys.maxsize, "description")  # a longer one is cut when listed
        metadata = {"short_description": short} if short else {}
        return Skill(name=name, description=description, path=path, body=_after_fence(text), metadata=metadata)

    # catalogue

    def listing(self, skills: Sequence[Skill], budget: Budget | None = None) -> Listing:
        """The listing and the warning Codex shows the user (budget: this profile's unless given)."""
        return build_listing(skills, budget or self.budget, usage_instructions(self.harness_model))

    def render(self, skills: Sequence[Skill]) -> str:
        return self.listing(skills).text

    def tool(self, skills: Sequence[Skill]) -> ToolSpec | None:
        return None  # Codex has no skill tool: the model opens SKILL.md with its file tools

    def call_tool(self, registry: SkillLookup, arguments: Mapping[str, Any] | str | None,
                  call_name: str | None = None) -> str:
        """What a ``$name`` mention of ``arguments["name"]`` injects (Codex's only way to load a skill for the
        model). An unknown or ambiguous name injects nothing, which is an error here."""
        try:
            args = tool_arguments(arguments)
        except ValueError as exc:
            raise SkillToolError(f"invalid arguments: {exc}") from None
        name = str(args.get("name", ""))
        items, warnings = inject(f"${name}", list(registry))
        if warnings:
            raise SkillToolError(warnings[0])
        if not items:
            raise SkillToolError(f"${name} names no single listed skill: Codex injects nothing")
        return items[0]

    # what the router adds

    def hook_context(self, skills: Sequence[Skill]) -> str:
        """The routed shortlist as ``UserPromptSubmit`` additional context, in Codex's own line format: at most 5
        skills, best first, full descriptions, canonical paths, none that Codex would not invoke implicitly
        (``allow_implicit_invocation: false``) or that the user config disables, at most 2,000 characters in all
        (later skills are dropped to fit); '' for none."""
        lines = [entry_line(s.name, s.description, listed_path(s.path)) for s in skills if listable(s)]
        lines = lines[:SHORTLIST_MAX_SKILLS]
        while lines and len("\n".join([SHORTLIST_HEADER, *lines])) > SHORTLIST_MAX_CHARS:
            lines.pop()
        return "\n".join([SHORTLIST_HEADER, *lines]) if lines else ""

    def restrict_config(self, skills: Sequence[Skill], keep: Sequence[Skill]) -> str:
        """``[[skills.config]]`` entries that disable every skill in ``skills`` but the ones in ``keep``.

        Entries select by path (names can repeat in Codex). Codex reads these rules from the user config
        (``$CODEX_HOME/config.toml``) and session flags only.
        """
        kept = {s.path for s in keep}
        blocks = [f"[[skills.config]]\npath = {_toml_string(s.path)}\nenabled = false\n"
                  for s in skills if s.path not in kept]
        header = (f"# skill-router: {len(kept)} routed skills stay enabled, {len(blocks)} disabled "
                  "(add to $CODEX_HOME/config.toml)\n")
        return header + "\n".join(blocks)


def read_config_rules(path: str) -> tuple[list[tuple[str, str, bool]], list[str]]:
    """The ``[[skills.config]]`` rules of a Codex config file as (selector kind, value, enabled), in file order,
    a later rule for the same selector replacing an earlier one; plus the warnings Codex logs. A missing file has
    no rules."""
    try:
        config = tomllib.loads(read_bytes(path).decode("utf-8"))
    except UnicodeDecodeError as exc:
        return [], [f"invalid skills config: {exc}"]
    except FileNotFoundError:
        return [], []
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [], [f"invalid skills config: {exc}"]
    entries = config.get("skills", {}).get("config", []) if isinstance(config.get("skills"), dict) else []
    rules: list[tuple[str, str, bool]] = []
    warnings: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        path_value, name_value = entry.get("path"), entry.get("name")
        if path_value is not None and name_value is not None:
            warnings.append("ignoring skills.config entry with both path and name selectors")
            continue
        if path_value is None and name_value is None:
            warnings.append("ignoring skills.config entry without a path or name selector")
            continue
        if path_value is not None:
            selector = ("path", os.path.realpath(str(path_value)))
        else:
            name = str(name_value).strip()
            if not name:
                warnings.append("ignoring empty skills.config name override")
                continue
            selector = ("name", name)
        rules = [rule for rule in rules if rule[:2] != selector]
        rules.append((*selector, entry.get("enabled", True) is not False))
    return rules, warnings


def disabled_paths(skills: Sequence[Skill], rules: Sequence[tuple[str, str, bool]]) -> set[str]:
    """The skill paths the rules leave disabled, applied in order (``resolve_disabled_skill_paths``)."""
    disabled: set[str] = set()
    for kind, value, enabled in rules:
        paths = [value] if kind == "path" else [s.path for s in skills if s.name == value]
        for path in paths:
            if enabled:
                disabled.discard(path)
            else:
                disabled.add(path)
    return disabled


def _distinct_ids(skills: Sequence[Skill]) -> list[Skill]:
    """Codex lists every skill of a repeated name; rankings and the registry tell them apart by id: the first in
    discovery order keeps the name, the next ones are ``name#2``, ``name#3``, ..."""
    seen: dict[str, int] = {}
    out = []
    for skill in skills:
        count = seen[skill.name] = seen.get(skill.name, 0) + 1
        out.append(skill if count == 1 else dataclasses.replace(skill, id=f"{skill.name}#{count}"))
    return out


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string for every character JSON escapes.
    return json.dumps(value, ensure_ascii=False)


def _dirs_between(project: str, cwd: str) -> list[str]:
    """Folders from ``project`` down to ``cwd``, both included."""
    dirs = [cwd]
    folder = cwd
    while folder != project:
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
        dirs.append(folder)
    return list(reversed(dirs))


def _openai_yaml_policy(folder: str) -> dict[str, Any]:
    """``agents/openai.yaml`` ``policy.allow_implicit_invocation`` (a bad file is ignored, as Codex does)."""
    path = os.path.join(folder, "agents", "openai.yaml")
    if not os.path.isfile(path):
        return {}
    try:
        data = safe_load(read_text(path, MAX_SKILL_FILE_BYTES))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    policy = data.get("policy") if isinstance(data, dict) else None
    allowed = policy.get("allow_implicit_invocation") if isinstance(policy, dict) else None
    return {"allow_implicit_invocation": allowed} if isinstance(allowed, bool) else {}


def _after_fence(text: str) -> str:
    lines = text.split("\n")
    for index, line in enumerate(lines[1:], start=1):
        if rust_trim(line.removesuffix("\r")) == "---":
            return "\n".join(lines[index + 1:])
    return ""


PROFILE = CodexProfile()
