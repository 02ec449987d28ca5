"""``skill-router lint``: the reference validator's errors plus warnings for what real libraries get wrong.

Errors follow the Agent Skills reference validator (skills-ref) message for message. Warnings name the
problems found in real public libraries that make the harnesses disagree about a skill (see the corpora notes):
block-scalar and quoted descriptions (the unreal line parser shows ``|`` or keeps the quotes), unquoted colons
(YAML fails, so genkit shows its placeholder), values on the next line, byte-order marks, CRLF line ends,
nested, hidden and symlinked skill folders (genkit and unreal find only some of them), repeated names, very long
files, links to files the skill folder does not hold, and symlinks whose target lies outside every skills folder
(every harness follows them).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Literal, Sequence

import yaml

from router.confine import escaping_links, real_roots
from router.frontmatter import FrontmatterError, safe_load, split_frontmatter, yaml_error_text
from router.profiles.agentskills import AgentSkillsProfile
from router.profiles.base import read_skill_file

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_LINES = 500
ALLOWED_FIELDS = ("allowed-tools", "compatibility", "description", "license", "metadata", "name")

_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


@dataclass(frozen=True)
class Finding:
    path: str
    level: Literal["error", "warning"]
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.level}: {self.message}"


@dataclass(frozen=True)
class LintReport:
    findings: tuple[Finding, ...]
    files: int

    @property
    def errors(self) -> int:
        return sum(f.level == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.level == "warning" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"schema": "skill-router.lint/1", "files": self.files, "errors": self.errors,
                "warnings": self.warnings, "findings": [asdict(f) for f in self.findings],
                "by_rule": [{"level": level, "rule": rule, "count": n} for level, rule, n in self.by_rule()]}

    def summary(self) -> str:
        return (f"{self.files} SKILL.md checked: {_count(self.errors, 'error')}, "
                f"{_count(self.warnings, 'warning')}")

    def by_rule(self) -> list[tuple[str, str, int]]:
        """(level, rule, how many findings) for each rule that found something, errors first, then most found."""
        counts = Counter((f.level, rule_of(f.message)) for f in self.findings)
        return sorted(((level, rule, n) for (level, rule), n in counts.items()),
                      key=lambda row: (row[0] != "error", -row[2], row[1]))

    def rule_summary(self) -> str:
        """One line per rule, ``  148 warnings  description is quoted``, under a heading; '' with no findings."""
        rows = self.by_rule()
        if not rows:
            return ""
        width = max(len(str(n)) for _, _, n in rows)
        lines = ["by rule:"] + [f"  {n:>{width}} {(level if n == 1 else level + 's'):<8}  {rule}"
                                for level, rule, n in rows]
        return "\n".join(lines)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_PATHISH = re.compile(r"[^\s:;,]*/[^\s:;,]*")
_NUMBER = re.compile(r"\d+")


def rule_of(message: str) -> str:
    """The rule a finding's message states, without the values it quotes: the text before its first colon (the
    problem; what follows names files or the fix), with quoted values as <value>, paths as <path> and numbers as
    N."""
    text = _QUOTED.sub("<value>", message)
    text = _PATHISH.sub("<path>", text)
    head = text.split(": ", 1)[0].rstrip(".")
    return _NUMBER.sub("N", head)


def validate_metadata(data: dict[str, Any], folder: str) -> list[str]:
    """The reference validator's checks on parsed frontmatter, in its order and with its messages."""
    errors = []
    extra = sorted(set(data) - set(ALLOWED_FIELDS))
    if extra:
        errors.append(f"Unexpected fields in frontmatter: {', '.join(extra)}. Only {sorted(ALLOWED_FIELDS)} are "
                      "allowed.")
    if "name" not in data:
        errors.append("Missing required field in frontmatter: name")
    else:
        errors.extend(_name_errors(data["name"], folder))
    if "description" not in data:
        errors.append("Missing required field in frontmatter: description")
    else:
        description = data["description"]
        if not isinstance(description, str) or not description.strip():
            errors.append("Field 'description' must be a non-empty string")
        elif len(description) > MAX_DESCRIPTION:
            errors.append(f"Description exceeds {MAX_DESCRIPTION} character limit ({len(description)} chars)")
    if "compatibility" in data:
        value = data["compatibility"]
        if not isinstance(value, str):
            errors.append("Field 'compatibility' must be a string")
        elif len(value) > MAX_COMPATIBILITY:
            errors.append(f"Compatibility exceeds {MAX_COMPATIBILITY} character limit ({len(value)} chars)")
    if "allowed-tools" in data:
        value = data["allowed-tools"]
        if isinstance(value, list):
            if not all(isinstance(item, str) for item in value):
                errors.append("Field 'allowed-tools' list items must all be strings")
        elif not isinstance(value, str):
            errors.append("Field 'allowed-tools' must be either a string or a list of strings")
    return errors


def _name_errors(name: Any, folder: str) -> list[str]:
    if not isinstance(name, str) or not name.strip():
        return ["Field 'name' must be a non-empty string"]
    name = unicodedata.normalize("NFKC", name.strip())
    errors = []
    if len(name) > MAX_NAME:
        errors.append(f"Skill name '{name}' exceeds {MAX_NAME} character limit ({len(name)} chars)")
    if name != name.lower():
        errors.append(f"Skill name '{name}' must be lowercase")
    if name.startswith("-") or name.endswith("-"):
        errors.append("Skill name cannot start or end with a hyphen")
    if "--" in name:
        errors.append("Skill name cannot contain consecutive hyphens")
    if not all(c.isalnum() or c == "-" for c in name):
        errors.append(f"Skill name '{name}' contains invalid characters. Only letters, digits, and hyphens are "
                      "allowed.")
    if unicodedata.normalize("NFKC", folder) != name:
        errors.append(f"Directory name '{folder}' must match skill name '{name}'")
    return errors


def _raw_line_warnings(text: str) -> list[str]:
    """Warnings read off the raw frontmatter lines, where the harnesses' parsers part ways."""
    warnings = []
    lines = text.replace("\r\n", "\n").lstrip("\ufeff").split("\n")
    for _, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if not sep or key != "description":
            continue
        value = value.strip()
        if value in ("|", ">", "|-", ">-", "|+", ">+"):
            warnings.append(f"description is a YAML block scalar ('{value}'): the unreal harness shows '{value}' as "
                            "the description; write it on one line")
        elif not value:
            warnings.append("description starts on the next line: the unreal harness reads an empty description "
                            "and rejects the skill; write it on the same line")
        elif value[0] in "\"'":
            warnings.append("description is quoted: the unreal harness keeps the quotes in its catalogue")
        elif ": " in value:
            warnings.append("description holds an unquoted ': ': YAML parsers fail on it and genkit shows 'No "
                            "description provided.'; quote the value or rephrase")
    return warnings


def lint_file(path: str, root: str) -> list[Finding]:
    """Every finding for one SKILL.md."""
    found: list[Finding] = []

    def add(level: Literal["error", "warning"], message: str) -> None:
        found.append(Finding(path, level, message))

    folder = os.path.dirname(path)
    try:
        raw = read_skill_file(path)
    except OSError as exc:
        add("error", f"cannot read SKILL.md: {exc.strerror or exc}")
        return found
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        add("error", f"SKILL.md is not valid UTF-8 (byte {exc.start}); save it as UTF-8")
        text = raw.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        add("warning", "file starts with a byte-order mark: the unreal harness then finds no frontmatter")
    if "\r\n" in text:
        add("warning", "file has CRLF line endings")
    normalised = text.replace("\r\n", "\n")
    try:
        front, body = split_frontmatter(normalised)
    except FrontmatterError as exc:
        add("error", str(exc))
        return found
    for message in _raw_line_warnings(text):
        add("warning", message)
    try:
        data = safe_load(front)
    except yaml.YAMLError as exc:
        add("error", f"Invalid YAML in frontmatter: {yaml_error_text(exc)}")
        return found
    if not isinstance(data, dict):
        add("error", "SKILL.md frontmatter must be a YAML mapping")
        return found
    # YAML keys can be numbers, booleans or null (`1: one`); the validator names fields as text.
    data = {str(key): value for key, value in data.items()}
    for message in validate_metadata(data, os.path.basename(folder)):
        add("error", message)
    depth = os.path.relpath(folder, root).count(os.sep)
    if depth > 0:
        add("warning", "nested skill: genkit and unreal only find skills one folder below a root")
    parts = os.path.relpath(folder, root).split(os.sep)
    if any(p.startswith(".") for p in parts):
        add("warning", "hidden folder: genkit skips folders whose name starts with '.'")
    if os.path.islink(folder):
        add("warning", "symlinked folder: genkit skips symlinks to folders")
    lines = normalised.count("\n") + 1
    if lines > MAX_LINES:
        add("warning", f"SKILL.md has {lines} lines: keep it under {MAX_LINES} and move detail to references/")
    missing = sorted({t for t in _LINK.findall(body) if _is_local(t) and
                      not os.path.exists(os.path.join(folder, t))})
    if missing:
        add("warning", f"links to files the skill folder does not hold: {', '.join(missing[:5])}"
                       + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""))
    return found


def _is_local(target: str) -> bool:
    return "://" not in target and not target.startswith(("mailto:", "/", "~", "{"))


def lint(roots: Sequence[str]) -> LintReport:
    """Lint every SKILL.md under ``roots`` (searched as the agentskills profile searches, nested included)."""
    walker = AgentSkillsProfile(max_depth=16, max_folders=100_000)
    findings: list[Finding] = []
    names: dict[str, list[str]] = defaultdict(list)
    files = 0
    confined_to = real_roots(roots)
    reported: set[str] = set()
    for root in roots:
        root = os.path.abspath(root)
        for path in walker._walk(root, []):
            files += 1
            findings.extend(lint_file(path, root))
            for link, target in escaping_links(os.path.dirname(path), confined_to):
                if link not in reported:
                    reported.add(link)
                    findings.append(Finding(path, "warning", f"symlink {link} leads to {target}, outside every "
                                                             "skills folder: the harnesses follow it; --confine "
                                                             "refuses such skills"))
            try:
                skill, _ = walker.parse_with_notes(path, read_skill_file(path), os.path.basename(os.path.dirname(path)))
                names[skill.name].append(path)
            except (OSError, FrontmatterError):
                pass
    for name, paths in names.items():
        for path in paths[1:]:
            findings.append(Finding(path, "warning", f"skill name '{name}' is also used by {paths[0]}: harnesses keep "
                                                     "only one of them"))
    findings.sort(key=lambda f: (f.path, f.level != "error"))
    return LintReport(tuple(findings), files)
