"""What Codex puts in the model's context for skills: the ``<skills_instructions>`` message under its budget.

Rules observed on Codex 0.171.0 (``tests/test_oracle_codex.py`` asks the binary; the case that shows each rule is
named in brackets):

- One developer message: ``<skills_instructions>``, the intro, ``### Skill roots`` with one ``- `rN` = `root```
  line per root that holds a listed skill (in scan order), ``### Available skills`` with one line per skill,
  ``- name: description (file: rN/relative/path)``; the roots table and ``rN/`` paths are always used, even for one
  skill [names-vs-folders]. The relative path goes through symlinked folders as found [symlinked-folder].
  ``### How to use skills`` follows only when the model's metadata asks for it (``gpt-5.5`` yes, the default
  ``gpt-6.2-sol`` and unknown models no) [model-gpt-5.5, model-unknown]. Ordered System, Admin, Repo, User, then
  name, then path. Nothing listable, no message [empty-library].
- A description over 1,024 characters is listed as its first 1,021 and ``...`` [long-description].
- Budget: 2% of the model's context window in approximate tokens (bytes / 4, rounded up), for every model; an
  unknown model has the fallback window of 272,000 (5,440 tokens) [budget-unknown-model];
  ``model_context_window`` replaces the window up to the model's largest (272,000 for ``gpt-5.5`` and unknown
  models, 872,000 for the default) [budget-window-above-max], ``skills.max_context_tokens`` replaces the budget,
  up to 10,000 tokens [budget-max-tokens, budget-max-tokens-cap]. Only
  the skill lines are charged, each with its newline; the roots table is free [budget-window-4000]. All full lines
  fit: kept. Else, when the bare lines fit, the slack is dealt one description character at a time, round-robin
  in listing order, each description cut to its share with no ellipsis. Else bare lines in order, each kept while
  it still fits. When not one fits, the message has an empty list, no roots table and another intro
  [budget-window-1].
- What the user sees: ``Exceeded skills context budget. All skill descriptions were removed and N additional
  skills were not included in the model-visible skills list.`` when skills are left out, nothing when descriptions
  are only shortened [budget-shortened-only].
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from router.skill import Skill

#: The Codex release these rules were observed on.
CODEX_VERSION = "0.171.0"
CONTEXT_WINDOW_PERCENT = 2
#: The context window Codex assumes for a model missing from its catalogue.
FALLBACK_CONTEXT_WINDOW = 272_000
#: The model Codex uses when none is configured.
DEFAULT_MODEL = "gpt-6.2-sol"
#: Codex 0.171.0's bundled model catalogue (``codex debug models``): context window, the most a configured
#: ``model_context_window`` may raise it to, and whether the model's metadata asks for the ``### How to use
#: skills`` section (``include_skills_usage_instructions``).
MODELS: dict[str, tuple[int, int, bool]] = {
    "gpt-6.2-sol": (500_000, 872_000, False),
    "gpt-6.2-astra": (272_000, 872_000, False),
    "gpt-6-astra": (272_000, 872_000, False),
    "gpt-6.1-sol": (500_000, 872_000, False),
    "gpt-6.1-terra": (500_000, 872_000, False),
    "gpt-6-sol": (272_000, 872_000, False),
    "gpt-6-luna": (272_000, 872_000, False),
    "gpt-5.6-sol": (272_000, 872_000, False),
    "gpt-5.6-terra": (272_000, 872_000, False),
    "gpt-5.6-luna": (272_000, 872_000, False),
    "gpt-daybreak-blue-latest": (272_000, 872_000, False),
    "gpt-daybreak-red-latest": (372_000, 372_000, False),
    "gpt-5.5": (272_000, 272_000, True),
    "codex-auto-review": (272_000, 872_000, False),
}
#: A model missing from the catalogue: the fallback window, no higher, and no usage section.
UNKNOWN_MODEL = (FALLBACK_CONTEXT_WINDOW, FALLBACK_CONTEXT_WINDOW, False)
#: ``skills.max_context_tokens`` is honoured up to this many tokens [budget-max-tokens-cap].
MAX_CONTEXT_TOKENS_CAP = 10_000
MAX_LISTED_DESCRIPTION = 1024
LISTED_ELLIPSIS = "..."

INTRO = (
    "A skill is a set of local instructions to follow that is stored in a `SKILL.md` file. Below is the list of "
    "skills that can be used. Each entry includes a name, description, and a short path that can be expanded into "
    "an absolute path using the skill roots table."
)
HOW_TO_USE = (
    "- Discovery: The list above is the skills available in this session (name + description + short path). Skill "
    "bodies live on disk at the listed paths after expanding the matching alias from `### Skill roots`.\n"
    "- Trigger rules: If the user names a skill (with `$SkillName` or plain text) OR the task clearly matches a "
    "skill's description shown above, you must use that skill for that turn. Multiple mentions mean use them all. "
    "Do not carry skills across turns unless re-mentioned.\n"
    "- Missing/blocked: If a named skill isn't in the list or the path can't be read, say so briefly and continue "
    "with the best fallback.\n"
    "- How to use a skill (progressive disclosure):\n"
    "  1) After deciding to use a skill, the main agent must expand the listed short `path` with the matching alias "
    "from `### Skill roots`, then open and read its `SKILL.md` completely before taking task actions. If a read is "
    "truncated or paginated, continue until EOF.\n"
    "  2) When `SKILL.md` references relative paths (e.g., `scripts/foo.py`), resolve them relative to the "
    "directory containing that expanded `SKILL.md` first, and only consider other paths if needed.\n"
    "  3) If `SKILL.md` points to extra folders such as `references/`, use its routing instructions to identify the "
    "files required for the task. The main agent must read each required instruction or reference file itself "
    "before acting on it. Do not delegate reading, summarizing, or interpreting skill instructions to a subagent. "
    "Subagents may still perform task work when the selected skill allows it.\n"
    "  4) If `scripts/` exist, prefer running or patching them instead of retyping large code blocks.\n"
    "  5) If `assets/` or templates exist, reuse them instead of recreating from scratch.\n"
    "- Coordination and sequencing:\n"
    "  - If multiple skills apply, choose the minimal set that covers the request and state the order you'll use "
    "them.\n"
    "  - Announce which skill(s) you're using and why (one short line). If you skip an obvious skill, say why.\n"
    "- Context hygiene:\n"
    "  - Progressive disclosure applies to selecting relevant files, not partially reading a selected instruction "
    "file. Do not load unrelated references, scripts, or assets.\n"
    "  - Avoid deep reference-chasing: prefer opening only files directly linked from `SKILL.md` unless you're "
    "blocked.\n"
    "  - When variants exist (frameworks, providers, domains), pick only the relevant reference file(s) and note "
    "that choice.\n"
    "- Safety and fallback: If a skill can't be applied cleanly (missing files, unclear instructions), state the "
    "issue, pick the next-best approach, and continue."
)
#: The intro and usage text when no skill line fits at all (no roots table then).
INTRO_NO_ROOTS = (
    "A skill is a set of instructions provided through a `SKILL.md` source. Below is the list of skills "
    "that can be used. Each entry includes a name, description, and source locator. `file` locators are "
    "on the host filesystem, `executor package` locators are owned by their execution environment, "
    "`cloud package` locators are opaque package identifiers, and `custom resource` locators use their "
    "provider's access mechanism."
)
HOW_TO_USE_NO_ROOTS = (
    "- Discovery: The list above is the skills available in this session (name + description + source "
    "locator). `file` entries live on the host filesystem, `executor package` and `cloud package` "
    "entries are accessed directly through `skills.read`, and `custom resource` entries use their "
    "provider's access mechanism.\n"
    "- Trigger rules: If the user names a skill (with `$SkillName` or plain text) OR the task clearly "
    "matches a skill's description shown above, you must use that skill for that turn. Multiple mentions "
    "mean use them all. Do not carry skills across turns unless re-mentioned.\n"
    "- Missing/blocked: If a named skill isn't in the list or its source can't be read, say so briefly "
    "and continue with the best fallback.\n"
    "- How to use a skill (progressive disclosure):\n"
    "  1) After deciding to use a skill, the main agent must read its `SKILL.md` completely before "
    "taking task actions. For a `file` entry, open the listed path. For an `executor package` or `cloud "
    "package`, pass the listed locator directly to `skills.read` as `package`; root aliases are resolved "
    "automatically. Omit `resource` to read `SKILL.md` directly without calling `skills.list`. If a read "
    "is paginated, follow `next_cursor` until EOF.\n"
    "  2) When `SKILL.md` references another resource, use the same access mechanism. For executor and "
    "cloud skills, pass the complete package-contained resource identifier with the same package to "
    "`skills.read`; do not treat `skill://` identifiers as filesystem paths.\n"
    "  3) If `SKILL.md` points to extra folders such as `references/`, use its routing instructions to "
    "identify the resources required for the task. The main agent must read each required instruction or "
    "reference file itself before acting on it. Do not delegate reading, summarizing, or interpreting "
    "skill instructions to a subagent. Subagents may still perform task work when the selected skill "
    "allows it.\n"
    "  4) For filesystem-backed skills, prefer running or patching provided scripts instead of retyping "
    "large code blocks. For executor and cloud skills, use `skills.read` and the available tools; do not "
    "invent a local path.\n"
    "  5) Reuse provided assets or templates through the same source access mechanism instead of "
    "recreating them.\n"
    "- Coordination and sequencing:\n"
    "  - If multiple skills apply, choose the minimal set that covers the request and state the order "
    "you'll use them.\n"
    "  - Announce which skill(s) you're using and why (one short line). If you skip an obvious skill, "
    "say why.\n"
    "- Context hygiene:\n"
    "  - Progressive disclosure applies to selecting relevant files, not partially reading a selected "
    "instruction file. Do not load unrelated references, scripts, or assets.\n"
    "  - Avoid deep reference-chasing: prefer opening only files directly linked from `SKILL.md` unless "
    "you're blocked.\n"
    "  - When variants exist (frameworks, providers, domains), pick only the relevant reference file(s) "
    "and note that choice.\n"
    "- Safety and fallback: If a skill can't be applied cleanly (missing files, unclear instructions), "
    "state the issue, pick the next-best approach, and continue."
)
DESCRIPTIONS_REMOVED = "Exceeded skills context budget. All skill descriptions were removed and"


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
    """Codex's skills budget in approximate tokens (UTF-8 bytes / 4, rounded up)."""

    limit: int

    @classmethod
    def for_context(cls, context_window: int | None) -> "Budget":
        """2% of the context window (the fallback window when None), at least 1 token."""
        window = FALLBACK_CONTEXT_WINDOW if context_window is None else context_window
        return cls(max(window * CONTEXT_WINDOW_PERCENT // 100, 1))

    @classmethod
    def for_model(cls, model: str | None = None, context_window: int | None = None,
                  max_tokens: int | None = None) -> "Budget":
        """The budget Codex gives ``model`` (default :data:`DEFAULT_MODEL`): ``max_tokens`` when set
        (``skills.max_context_tokens``, at most 10,000 whatever the window), else 2% of ``context_window``
        (``model_context_window``, at most the model's largest window) or of the model's own window."""
        if max_tokens is not None:
            return cls(max(min(max_tokens, MAX_CONTEXT_TOKENS_CAP), 1))
        window, most, _ = model_info(model)
        return cls.for_context(window if context_window is None else min(context_window, most))

    def cost(self, text: str) -> int:
        return self.from_size(len(text.encode("utf-8")))

    @staticmethod
    def from_size(size: int) -> int:
        return (size + 3) // 4


def model_info(model: str | None) -> tuple[int, int, bool]:
    """The catalogue entry Codex uses for ``model``: its own, else the longest slug it starts with
    (``gpt-5.5-codex`` is ``gpt-5.5``) [model-prefix], else the fallback; slugs are case-sensitive."""
    model = model or DEFAULT_MODEL
    if model in MODELS:
        return MODELS[model]
    prefixes = [slug for slug in MODELS if model.startswith(slug)]
    return MODELS[max(prefixes, key=len)] if prefixes else UNKNOWN_MODEL


def model_context_window(model: str | None) -> int:
    """The context window Codex's catalogue gives ``model`` (the fallback for an unknown one)."""
    return model_info(model)[0]


def usage_instructions(model: str | None) -> bool:
    """Whether Codex adds ``### How to use skills`` for ``model`` (no for a model not in its catalogue)."""
    return model_info(model)[2]


@dataclass(frozen=True)
class Listing:
    """A rendered listing: the message text, the user-facing warning, and what the budget did."""

    text: str
    warning: str | None = None
    included: tuple[str, ...] = ()
    omitted: int = 0
    truncated_chars: int = 0
    truncated_count: int = 0


def entry_line(name: str, description: str, path: str) -> str:
    """One entry: ``- name: description (file: path)``, or ``- name: (file: path)`` without a description."""
    return f"- {name}: {description} (file: {path})" if description else f"- {name}: (file: {path})"


def listed_description(description: str) -> str:
    """The description as listed: over 1,024 characters, its first 1,021 and ``...``."""
    if len(description) <= MAX_LISTED_DESCRIPTION:
        return description
    return description[:MAX_LISTED_DESCRIPTION - len(LISTED_ELLIPSIS)] + LISTED_ELLIPSIS


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


def _deal_descriptions(lines: Sequence[_Line], slack: int) -> list[int]:
    """Deal the slack one description character at a time, round-robin over the lines in order."""
    extra: list[list[int]] = []
    for line in lines:
        size = len(line.render(0).encode("utf-8")) + 1
        minimum = Budget.from_size(size)
        costs = [0]
        prefix_bytes = 0
        for ch in line.description:
            prefix_bytes += len(ch.encode("utf-8"))
            costs.append(Budget.from_size(size + prefix_bytes + 1) - minimum)  # +1: the space before it
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
        allocated = _deal_descriptions(lines, budget.limit - minimum)
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


def _body(root_lines: Sequence[str], skill_lines: Sequence[str], how_to_use: bool) -> str:
    if root_lines:
        parts = ["## Skills", INTRO, "### Skill roots", *root_lines, "### Available skills", *skill_lines]
    else:
        parts = ["## Skills", INTRO_NO_ROOTS, "### Available skills", *skill_lines]
    if how_to_use:
        parts += ["### How to use skills", HOW_TO_USE if root_lines else HOW_TO_USE_NO_ROOTS]
    return "\n" + "\n".join(parts) + "\n"


def _warning(fitted: _Lines) -> str | None:
    if not fitted.omitted:
        return None  # shortened descriptions alone are not reported
    noun = "skill was" if fitted.omitted == 1 else "skills were"
    return f"{DESCRIPTIONS_REMOVED} {fitted.omitted} additional {noun} not included in the model-visible skills list."


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


def _root_and_relative(skill: Skill) -> tuple[str, str]:
    """The skill's root and its path below it as found (through symlinked folders). A skill with no known root
    (a catalogue row) has its folder's parent as its root."""
    found = skill.metadata.get("found_path") or skill.path
    root = skill.metadata.get("root")
    if root:
        prefix = root.rstrip(os.sep) + os.sep
        if found.startswith(prefix):
            return root, found[len(prefix):]
    head, _, name = found.rpartition(os.sep)
    top, sep, folder = head.rpartition(os.sep)
    if not sep:
        return "", found
    return top or os.sep, f"{folder}{os.sep}{name}"


def build_listing(skills: Sequence[Skill], budget: Budget, how_to_use: bool = False) -> Listing:
    """The ``<skills_instructions>`` message for these skills under ``budget``, as Codex renders it.

    Skills marked ``allow_implicit_invocation: false`` or disabled by ``[[skills.config]]`` are left out; the
    roots table lists the roots of the others in scan order; ``how_to_use`` adds the usage section.
    """
    shown = prompt_order(s for s in skills if listable(s))
    if not shown:
        return Listing("")
    placed = [_root_and_relative(s) for s in shown]
    order = {root: index for index, root in enumerate(dict.fromkeys(
        root for _, (root, _) in sorted(zip(shown, placed), key=lambda pair: pair[0].metadata.get("root_index", 0))))}
    lines = [_Line(s.name, listed_description(s.description), f"r{order[root]}/" + listed_path(relative))
             for s, (root, relative) in zip(shown, placed)]
    fitted = _fit(lines, budget)
    # when not one line fits, the message has no roots table (and the intro for unaliased locators)
    root_lines = [f"- `r{index}` = `{listed_path(root)}`" for root, index in order.items()] if fitted.lines else []
    text = "<skills_instructions>" + _body(root_lines, fitted.lines, how_to_use) + "</skills_instructions>"
    return Listing(text, _warning(fitted), tuple(fitted.names), fitted.omitted, fitted.truncated_chars,
                   fitted.truncated_count)
