"""The value object every part of skill-router passes around."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Skill:
    """One skill: what the harness shows (name, description) and where it lives (path).

    Parameters
    ----------
    name:
        The name the harness uses for the skill (the folder name or the frontmatter name, as the profile says).
    description:
        The description exactly as the profile parses it; this is what the catalogue shows.
    path:
        Absolute path of the SKILL.md as discovered (not canonicalised). Empty for catalogue rows.
    id:
        The id rankings report. Equal to ``name`` for skills from folders; a JSONL catalogue row's ``id``.
    body:
        The Markdown after the frontmatter (empty for catalogue rows).
    metadata:
        Every other frontmatter key (or catalogue field), as parsed leniently.
    index_description:
        Text the router indexes in addition to ``description`` when the profile's own parse is degenerate
        (``|``, empty, or the placeholder): a lenient YAML parse of the same file. Never rendered.
    examples:
        Example requests that should reach this skill (sidecar file, catalogue field or learned labels).
    """

    name: str
    description: str
    path: str = ""
    id: str = ""
    body: str = field(default="", repr=False)
    metadata: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)
    index_description: str = field(default="", repr=False)
    examples: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", self.name)

    @property
    def directory(self) -> str:
        """The skill directory: the parent of SKILL.md, against which relative paths resolve."""
        return os.path.dirname(self.path)
