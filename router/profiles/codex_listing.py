"""What Codex puts in the model's context for skills: the ``<skills_instructions>`` message under its budget.

Rules (harness-profiles.md, "codex", "Catalog"; ``codex-rs/core-skills/src/render.rs`` at 0899b7c4):

- One developer message: ``<skills_instructions>``, the intro, ``### Available skills`` with one line per skill,
  ``- name: description (file: path)`` (``- name: (file: path)`` without a description; the path canonical with
  ``\\`` written ``/``; no escaping), then the how-to text. Ordered System, Admin, Repo, User, then name, then path.
  Nothing listable, no message.
- Budget: 2% of the context window in approximate tokens (bytes / 4, rounded up), else 8,000 characters; a line
  costs itself plus its newline. All full lines fit: kept. Else, when the bare lines fit, the slack is dealt one
  description character at a time, round-robin in listing order, each description cut to its share with no
  ellipsis (the first character costs one more: it brings a space). Else bare lines in order, each kept if it still
  fits. Once cutting starts, a form with paths written against a ``### Skill roots`` alias table is tried and kept
  when it lists more skills, cuts fewer characters, or costs less.
- What the user sees: ``Exceeded skills context budget[ of 2%]. All skill descriptions were removed and N
  additional skills were not included in the model-visible skills list.`` when skills are left out; when
  descriptions were cut by more than 100 characters on average, the "shortened" notice.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from router.skill import Skill

DEFAULT_CHAR_BUDGET = 8000
CONTEXT_WINDOW_PERCENT = 2
TRUNCATION_WARNING_THRESHOLD = 100

INTRO_ABSOLUTE = (
    "A skill is a set of local instructions to follow that is stored in a `SKILL.md` file. Below is the list of "
    "skills that can be used. Each entry includes a name, description, and file path so you can open the source "
    "for full instructions when using a specific skill."
)
INTRO_ALIASES = (
    "A skill is a set of local instructions to follow that is stored in a `SKILL.md` file. Below is the list of "
    "skills that can be used. Each entry includes a name, description, and a short path that can be expanded into "
    "an absolute path using the skill roots table."
)
_HOW_TO_USE_COMMON = (
    "- Trigger rules: If the user names a skill (with `$SkillName` or plain text) OR the task clearly matches a "
    "skill's description shown above, you must use that skill for that turn. Multiple mentions mean use them all. "
    "Do not carry skills across turns unless re-mentioned.\n"
    "- Missing/blocked: If a named skill isn't in the list or the path can't be read, say so briefly and continue "
    "with the best fallback.\n"
    "- How to use a skill (progressive disclosure):\n"
)
_HOW_TO_USE_TAIL = (
    "  3) If `SKILL.md` points to extra folders such as `references/`, load only the specific files needed for the "
    "request; don't bulk-load everything.\n"
    "  4) If `scripts/` exist, prefer running or patching them instead of retyping large code blocks.\n"
    "  5) If `assets/` or templates exist, reuse them instead of recreating from scratch.\n"
    "- Coordination and sequencing:\n"
    "  - If multiple skills apply, choose the minimal set that covers the request and state the order you'll use "
    "them.\n"
    "  - Announce which skill(s) you're using and why (one short line). If you skip an obvious skill, say why.\n"
    "- Context hygiene:\n"
    "  - Keep context small: summarize long sections instead of pasting them; only load extra files when needed.\n"
    "  - Avoid deep reference-chasing: prefer opening only files directly linked from `SKILL.md` unless you're "
    "blocked.\n"
    "  - When variants exist (frameworks, providers, domains), pick only the relevant reference file(s) and note "
    "that choice.\n"
    "- Safety and fallback: If a skill can't be applied cleanly (missing files, unclear instructions), state the "
    "issue, pick the next-best approach, and continue."
)
HOW_TO_USE_ABSOLUTE = (
    "- Discovery: The list above is the skills available in this session (name + description + file path). Skill "
    "bodies live on disk at the listed paths.\n"
    + _HOW_TO_USE_COMMON
    + "  1) After deciding to use a skill, open its `SKILL.md`. Read only enough to follow the workflow.\n"
    "  2) When `SKILL.md` references relative paths (e.g., `scripts/foo.py`), resolve them relative to the skill "
    "directory listed above first, and only consider other paths if needed.\n"
    + _HOW_TO_USE_TAIL
)
HOW_TO_USE_ALIASES = (
    "- Discovery: The list above is the skills available in this session (name + description + short path). Skill "
    "bodies live on disk at the listed paths after expanding the matching alias from `### Skill roots`.\n"
    + _HOW_TO_USE_COMMON
    + "  1) After deciding to use a skill, expand the listed short `path` with the matching alias from "
    "`### Skill roots`, then open its `SKILL.md`. Read only enough to follow the workflow.\n"
    "  2) When `SKILL.md` references relative paths (e.g., `scripts/foo.py`), resolve them relative to the "
    "directory containing that expanded `SKILL.md` first, and only consider other paths if needed.\n"
    + _HOW_TO_USE_TAIL
)
DESCRIPTIONS_REMOVED = "Exceeded skills context budget. All skill descriptions were removed and"
DESCRIPTIONS_SHORTENED = (
    "Skill descriptions were shortened to fit the skills context budget. Codex can still see every skill, but some "
    "descriptions are shorter. Disable unused skills or plugins to leave more room for the rest."
)
DESCRIPTIONS_SHORTENED_PERCENT = DESCRIPTIONS_SHORTENED.replace("the skills context budget",
                                                                "the 2% skills context budget")


class Scope(str, enum.Enum):
    """Where a root sits; decides discovery order, listing order and whether symlinks are followed."""

    REPO = "repo"
    USER = "user"
    SYSTEM = "system"
    ADMIN = "admin"


LOAD_RANK = {Scope.REPO: 0, Scope.USER: 1, Scope.SYSTEM: 2, Scope.ADMIN: 3}
_PROMPT_RANK = {Scope.SYSTEM: 0, Scope.ADMIN: 1, Scope.REPO: 2, Scope.USER: 3}


@dataclass(frozen=True)
class Budget:
    """Codex's skills budget: a number of approximate tokens (bytes/4, rounded up) or of characters."""

    limit: int
    tokens: bool = False

    @classmethod
    def for_context(cls, context_window: int | None) -> "Budget":
        """2% of a positive context window in tokens, else 8,000 characters (``default_skill_metadata_budget``)."""
        if context_window is not None and context_window > 0:
            return cls(max(context_window * CONTEXT_WINDOW_PERCENT // 100, 1), tokens=True)
        return cls(DEFAULT_CHAR_BUDGET)

    def cost(self, text: str) -> int:
        return self.from_counts(len(text), len(text.encode("utf-8")))

    def from_counts(self, chars: int, size: int) -> int:
        return (size + 3) // 4 if self.tokens else chars

    def with_limit(self, limit: int) -> "Budget":
        return Budget(limit, self.tokens)


@dataclass(frozen=True)
class Listing:
    """A rendered listing: the message text, the user-facing warning, and what the budget did."""

    text: str
    warning: str | None = None
    included: tuple[str, ...] = ()
    omitted: int = 0
    truncated_chars: int = 0
    truncated_count: int = 0
    aliased: bool = False


def entry_line(name: str, description: str, path: str) -> str:
    """One entry: ``- name: description (file: path)``, or ``- name: (file: path)`` without a description."""
    return f"- {name}: {description} (file: {path})" if description else f"- {name}: (file: {path})"


@dataclass
class _Line:
    name: str
    description: str
    path: str

    def render(self, chars: int | None = None) -> str:
        return entry_line(self.name, self.description if chars is None else self.description[:chars], self.path)

    def cost(self, budget: Budget, chars: int | None = None) -> int:
        return budget.cost(self.render(chars) + "\n")


@dataclass
class _Lines:
    lines: list[str]
    names: list[str]
    omitted: int = 0
    truncated_chars: int = 0
    truncated_count: int = 0
    root_lines: list[str] = field(default_factory=list)


def _deal_descriptions(budget: Budget, lines: Sequence[_Line], slack: int) -> list[int]:
    """Deal the slack one description character at a time, round-robin over the lines in order."""
    bare = [line.render(0) for line in lines]
    base = [(len(b) + 1, len(b.encode("utf-8")) + 1) for b in bare]
    extra: list[list[int]] = []
    for line, (chars, size) in zip(lines, base):
        minimum = budget.from_counts(chars, size)
        costs = [0]
        prefix_bytes = 0
        for count, ch in enumerate(line.description, start=1):
            prefix_bytes += len(ch.encode("utf-8"))
            costs.append(budget.from_counts(chars + count + 1, size + prefix_bytes + 1) - minimum)
        extra.append(costs)
    allocated = [0] * len(lines)
    remaining = slack
    changed = True
    while changed:
        changed = False
        for index, line in enumerate(lines):
            if allocated[index] >= len(line.description):
                continue
            delta = extra[index][allocated[index] + 1] - extra[index][allocated[index]]
            if delta <= remaining:
                allocated[index] += 1
                remaining -= delta
                changed = True
    return allocated


def _fit(lines: Sequence[_Line], budget: Budget) -> _Lines:
    """Codex's three stages: every full line; else bare lines plus dealt description characters; else bare
    lines in order, each kept while it still fits."""
    if sum(line.cost(budget) for line in lines) <= budget.limit:
        return _Lines([line.render() for line in lines], [line.name for line in lines])
    minimum = sum(line.cost(budget, 0) for line in lines)
    if minimum <= budget.limit:
        allocated = _deal_descriptions(budget, lines, budget.limit - minimum)
        cut = [len(line.description) - chars for line, chars in zip(lines, allocated)]
        return _Lines([line.render(chars) for line, chars in zip(lines, allocated)], [line.name for line in lines],
                      truncated_chars=sum(cut), truncated_count=sum(1 for c in cut if c))
    kept: list[str] = []
    names: list[str] = []
    used = omitted = truncated = truncated_count = 0
    for line in lines:
        cost = line.cost(budget, 0)
        if used + cost <= budget.limit:
            used += cost
            kept.append(line.render(0))
            names.append(line.name)
        else:
            omitted += 1
        truncated += len(line.description)
        truncated_count += 1 if line.description else 0
    return _Lines(kept, names, omitted, truncated, truncated_count)


def _body(root_lines: Sequence[str], skill_lines: Sequence[str]) -> str:
    parts = ["## Skills"]
    if root_lines:
        parts += [INTRO_ALIASES, "### Skill roots", *root_lines]
    else:
        parts.append(INTRO_ABSOLUTE)
    parts += ["### Available skills", *skill_lines, "### How to use skills",
              HOW_TO_USE_ALIASES if root_lines else HOW_TO_USE_ABSOLUTE]
    return "\n" + "\n".join(parts) + "\n"


def _warning(fitted: _Lines, total: int, budget: Budget) -> str | None:
    if fitted.omitted:
        prefix = DESCRIPTIONS_REMOVED.replace("budget.", "budget of 2%.", 1) if budget.tokens else DESCRIPTIONS_REMOVED
        noun = "skill was" if fitted.omitted == 1 else "skills were"
        return f"{prefix} {fitted.omitted} additional {noun} not included in the model-visible skills list."
    if fitted.truncated_chars and (fitted.truncated_chars + total - 1) // total > TRUNCATION_WARNING_THRESHOLD:
        return DESCRIPTIONS_SHORTENED_PERCENT if budget.tokens else DESCRIPTIONS_SHORTENED
    return None


def listable(skill: Skill) -> bool:
    """Codex lists a skill unless its ``agents/openai.yaml`` forbids implicit invocation or the user config
    disables it."""
    return skill.metadata.get("allow_implicit_invocation", True) and skill.metadata.get("enabled", True)


def prompt_order(skills: Iterable[Skill]) -> list[Skill]:
    """The listing order: System, Admin, Repo, User, then name, then path (byte order)."""
    return sorted(skills, key=lambda s: (_PROMPT_RANK[scope_of(s)], s.name.encode("utf-8", "surrogateescape"),
                                         os.fsencode(s.path)))


def scope_of(skill: Skill) -> Scope:
    return Scope(skill.metadata.get("scope", Scope.USER.value))


def listed_path(path: str) -> str:
    return path.replace("\\", "/")


def build_listing(skills: Sequence[Skill], budget: Budget) -> Listing:
    """The ``<skills_instructions>`` message for these skills under ``budget``, as Codex renders it.

    Skills marked ``allow_implicit_invocation: false`` or disabled by ``[[skills.config]]`` are left out. When
    lines are cut, a form with the paths written against a ``### Skill roots`` alias table is tried and kept when
    it fits more skills, cuts fewer description characters, or costs less.
    """
    shown = prompt_order(s for s in skills if listable(s))
    if not shown:
        return Listing("")
    absolute = _fit([_Line(s.name, s.description, listed_path(s.path)) for s in shown], budget)
    chosen = absolute
    if absolute.omitted or absolute.truncated_chars:
        aliased = _aliased(shown, budget)
        if aliased is not None and _better(aliased, absolute, budget):
            chosen = aliased
    text = "<skills_instructions>" + _body(chosen.root_lines, chosen.lines) + "</skills_instructions>"
    return Listing(text, _warning(chosen, len(shown), budget), tuple(chosen.names), chosen.omitted,
                   chosen.truncated_chars, chosen.truncated_count, bool(chosen.root_lines))


def _table_cost(budget: Budget, root_lines: Sequence[str]) -> int:
    return budget.cost(_body(root_lines, [])) - budget.cost(_body([], []))


def _aliased(shown: Sequence[Skill], budget: Budget) -> _Lines | None:
    roots: list[str] = []
    for skill in sorted(shown, key=lambda s: s.metadata.get("root_index", 0)):
        root = skill.metadata.get("root")
        if root and root not in roots:
            roots.append(root)
    if not roots:
        return None
    root_lines = [f"- `r{index}` = `{listed_path(root)}`" for index, root in enumerate(roots)]
    table = _table_cost(budget, root_lines)
    if table >= budget.limit:
        return None
    lines = []
    for skill in shown:
        root = skill.metadata.get("root")
        path = listed_path(skill.path)
        if root and skill.path.startswith(root.rstrip(os.sep) + os.sep):
            path = f"r{roots.index(root)}/" + listed_path(os.path.relpath(skill.path, root))
        lines.append(_Line(skill.name, skill.description, path))
    fitted = _fit(lines, budget.with_limit(budget.limit - table))
    fitted.root_lines = root_lines
    return fitted


def _better(aliased: _Lines, absolute: _Lines, budget: Budget) -> bool:
    if len(aliased.names) != len(absolute.names):
        return len(aliased.names) > len(absolute.names)
    if aliased.truncated_chars != absolute.truncated_chars:
        return aliased.truncated_chars < absolute.truncated_chars
    aliased_cost = _table_cost(budget, aliased.root_lines) + sum(budget.cost(text + "\n") for text in aliased.lines)
    return aliased_cost < sum(budget.cost(text + "\n") for text in absolute.lines)
