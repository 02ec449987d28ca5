"""The value object every part of skill-router passes around."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from router.safetext import is_safe, safe_name, safe_text, safe_value


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
    os_path:
        The SKILL.md's path as the operating system names it, kept only where that is not valid text (a folder
        name that is not UTF-8); ``path`` is then its escaped form. Files are opened at :attr:`fs_path`.

    Every text field is made safe as the skill is made (:mod:`router.safetext`: ``name``, ``id`` and ``path`` by
    ``safe_name``, the rest by ``safe_text``): a lone surrogate from a YAML escape or an undecodable byte of a folder
    name never reaches an encoder, a terminal or a JSON answer.
    """

    name: str
    description: str
    path: str = ""
    id: str = ""
    body: str = field(default="", repr=False)
    metadata: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)
    index_description: str = field(default="", repr=False)
    examples: tuple[str, ...] = field(default=(), repr=False)
    os_path: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        texts = (self.path, self.name, self.id, self.description, self.body, self.index_description, *self.examples)
        # One check for the usual skill; a surrogate in any field fails the encoding of the whole.
        if not (all(type(t) is str for t in texts) and is_safe("".join(texts))):
            self._make_texts_safe()
        if self.metadata:
            object.__setattr__(self, "metadata", safe_value(self.metadata))
        if not self.id:
            object.__setattr__(self, "id", self.name)

    def _make_texts_safe(self) -> None:
        if not is_safe(self.path):
            if not self.os_path:
                object.__setattr__(self, "os_path", self.path)
            object.__setattr__(self, "path", safe_name(self.path))
        for name, clean in (("name", safe_name), ("id", safe_name), ("description", safe_text), ("body", safe_text),
                            ("index_description", safe_text)):
            value = getattr(self, name)
            if not is_safe(value):
                object.__setattr__(self, name, clean(value))
        if not all(is_safe(e) for e in self.examples):
            object.__setattr__(self, "examples", tuple(safe_text(e) for e in self.examples))

    @property
    def directory(self) -> str:
        """The skill directory: the parent of SKILL.md, against which relative paths resolve."""
        return os.path.dirname(self.path)

    @property
    def fs_path(self) -> str:
        """The path to open the SKILL.md at (the operating system's own name for it)."""
        return self.os_path or self.path

    @property
    def fs_directory(self) -> str:
        """The skill directory as the operating system names it: where its files are opened."""
        return os.path.dirname(self.fs_path)
