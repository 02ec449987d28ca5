"""Errors raised by skill-router.

Every error a user can cause is a :class:`SkillRouterError`; its message names the offending value and the fix.
The command-line tool prints the message as one line (control characters escaped) and exits with status 2. A
persisted index that is corrupt, stale or built for another model is not an error: the skills are the source of
truth, so it is rebuilt from them and the reason is reported (``Router.notes``).

    SkillRouterError
    ├── ConfigError           bad option: unknown profile, k < 1, empty query, unknown metric
    ├── SkillsFolderError     a --skills folder that does not exist or is not a folder
    │   └── EmptyLibraryError a library with no skills at all, asked to rank, index or measure
    ├── CatalogError          a JSONL catalogue or labelled-requests file that cannot be read or parsed
    ├── SkillNotFoundError    a name no registered skill has
    ├── RegistryError         a registration the registry refuses (repeated path or name)
    ├── SkillToolError        a skill-tool call the harness fails (the profile decides which errors fail)
    ├── PathEscapeError       a strict path resolution that leaves the skill folder
    ├── MessageError          chat messages that are not in the OpenAI or Anthropic shape
    ├── ModelError            an embedding model that cannot be loaded offline
    └── IndexSaveError        ``skill-router index`` could not write the index folder (routing carries on from
                              memory elsewhere, with a note)

Messages quote user values through :func:`brief`, so that a value built to be huge (YAML aliases nested seven
deep expand to hundreds of megabytes when printed) never makes a huge message.
"""

from __future__ import annotations

import reprlib

#: Characters of a user value an error message shows.
MAX_SHOWN = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 10
_REPR.maxstring = _REPR.maxother = MAX_SHOWN


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` cut to at most ``limit`` characters, marked with '...' when cut."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def brief(value: object, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` for an error message: bounded in time and in length (at most ``limit`` characters)."""
    return clip(_REPR.repr(value), limit)


class SkillRouterError(Exception):
    """Base class of every error skill-router raises on purpose."""


class ConfigError(SkillRouterError, ValueError):
    """An option or argument has a value skill-router cannot use."""


class SkillsFolderError(SkillRouterError, FileNotFoundError):
    """A configured skills folder does not exist or is not a folder."""


class EmptyLibraryError(SkillsFolderError):
    """The library holds no skills, and the call needs some (ranking, indexing, measuring, a harness config)."""


class CatalogError(SkillRouterError, ValueError):
    """A JSONL catalogue or labelled-requests file cannot be read or parsed."""


class SkillNotFoundError(SkillRouterError, KeyError):
    """No registered skill has the requested name."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class RegistryError(SkillRouterError, ValueError):
    """The registry refuses a registration (repeated path or name)."""


class SkillToolError(SkillRouterError):
    """A skill-tool call that the harness fails rather than answering with an error text."""


class PathEscapeError(SkillRouterError, PermissionError):
    """A strict resolution of a relative path leaves the skill's folder."""


class MessageError(SkillRouterError, ValueError):
    """Chat messages that are not OpenAI- or Anthropic-style mappings (a role and a string or list content)."""


class ModelError(SkillRouterError):
    """The embedding model cannot be loaded (offline, missing files, wrong name)."""


class IndexSaveError(SkillRouterError, OSError):
    """The index folder cannot be written (not a folder, read-only, or locked for too long)."""
