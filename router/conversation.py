"""The one rule for turning a conversation into the text a router routes.

A conversation is a list of OpenAI- or Anthropic-style messages (``{"role", "content"}``). Its text is:

- each user message's text: ``content`` when it is a string; when it is a list of parts, the ``text`` of every
  part that is a mapping with a string ``text`` and a ``type`` of ``"text"`` (or no ``type``), joined by a newline;
- the **request** is the last user message whose text is not blank (a trailing user turn that holds only an image
  or whitespace does not hide the question asked just before it);
- the **context** is the non-blank user texts before it, joined by a newline (assistant and system turns are what
  the model said or was told, not what the user asked, and are left out).

The live router and the evaluation both call :func:`conversation_text`, so a labelled conversation is scored on
exactly the text the router would route.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from router.errors import ConfigError


@dataclass(frozen=True)
class Conversation:
    """The text to route (``request``) and the user turns before it (``context``, '' when none)."""

    request: str
    context: str = ""


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one message, by the rule in the module docstring ('' when it has none)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                         and part.get("type", "text") == "text")
    return ""


def conversation_text(messages: Sequence[Mapping[str, Any]]) -> Conversation:
    """The request and context of a conversation; raises :class:`ConfigError` when no user turn has text."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ConfigError(f"a conversation is a list of messages, got {type(messages).__name__}")
    turns = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise ConfigError(f"every message must be an object with 'role' and 'content', got {_short(message)}")
        if message.get("role") == "user":
            text = message_text(message).strip()
            if text:
                turns.append(text)
    if not turns:
        raise ConfigError("the conversation has no user turn with text: nothing to route")
    return Conversation(turns[-1], "\n".join(turns[:-1]))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
