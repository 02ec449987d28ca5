"""Put a catalogue block into a list of chat messages, idempotently (the genkit middleware's rule).

Messages are OpenAI- or Anthropic-style mappings: a ``role`` and a ``content`` that is a string or a list of
parts (``{"type": "text", "text": ...}``). The block is one text part marked ``{"skills-instructions": true}``
in its ``metadata``. If a marked part exists anywhere it is replaced in place (left alone when equal);
otherwise the part is appended to the first system message, or a new system message is put first. Replaying a
conversation any number of times therefore leaves exactly one block. An empty block (no skills) injects
nothing and removes a stale marked part. Inputs are never mutated.

The marker is not part of the OpenAI or Anthropic APIs: :func:`strip_markers` removes it before sending.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

from router.errors import MessageError, brief

MARKER = "skills-instructions"

Message = Mapping[str, Any]


def block_part(block: str) -> dict[str, Any]:
    """The marked text part that carries a catalogue block."""
    return {"type": "text", "text": block, "metadata": {MARKER: True}}


def is_block_part(part: Any) -> bool:
    """True for a part carrying the marker; raises :class:`MessageError` for a ``metadata`` that is not an object
    (the Go middleware cannot decode such a part either)."""
    if not isinstance(part, Mapping):
        return False
    metadata = part.get("metadata")
    if metadata is None:
        return False
    if not isinstance(metadata, Mapping):
        raise MessageError(f"a message part's 'metadata' must be an object, got {brief(metadata)}")
    return bool(metadata.get(MARKER))


def _copy(messages: Sequence[Message]) -> list[dict[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise MessageError(f"messages must be a list of {{'role', 'content'}} objects, got {brief(messages)}")
    out = []
    for number, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise MessageError(f"message {number} must be an object with 'role' and 'content', got "
                               f"{brief(message)}")
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise MessageError(f"message {number}: 'content' must be a string or a list of parts, got "
                               f"{brief(content)}")
        out.append(copy.deepcopy(dict(message)))
    return out


def inject(messages: Sequence[Message], block: str) -> list[dict[str, Any]]:
    """Return a copy of ``messages`` holding exactly one catalogue ``block`` (none when ``block`` is '').

    Raises :class:`MessageError` for messages that are not objects, a ``content`` that is neither a string nor a
    list, and a part whose ``metadata`` is not an object.
    """
    if not isinstance(block, str):
        raise MessageError(f"the catalogue block must be a string, got {brief(block)}")
    out = _copy(messages)
    found = False
    for message in out:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        kept = []
        for part in content:
            if is_block_part(part):
                if found or not block:
                    continue  # a second marked part (or a stale one) would break "exactly one"
                found = True
                if part.get("text") != block:
                    part = block_part(block)
            kept.append(part)
        message["content"] = kept
    if found or not block:
        return out
    for message in out:
        if message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, str):
                message["content"] = ([{"type": "text", "text": content}] if content else []) + [block_part(block)]
            else:
                message["content"] = list(content or []) + [block_part(block)]
            return out
    return [{"role": "system", "content": [block_part(block)]}] + out


def strip_markers(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with the marker metadata removed, ready for an API that rejects unknown fields."""
    out = _copy(messages)
    for message in out:
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = [{k: v for k, v in p.items() if k != "metadata"} if is_block_part(p) else p
                                  for p in content]
    return out
