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

MARKER = "skills-instructions"

Message = Mapping[str, Any]


def block_part(block: str) -> dict[str, Any]:
    """The marked text part that carries a catalogue block."""
    return {"type": "text", "text": block, "metadata": {MARKER: True}}


def is_block_part(part: Any) -> bool:
    return isinstance(part, Mapping) and bool((part.get("metadata") or {}).get(MARKER))


def inject(messages: Sequence[Message], block: str) -> list[dict[str, Any]]:
    """Return a copy of ``messages`` holding exactly one catalogue ``block`` (none when ``block`` is '')."""
    out = [copy.deepcopy(dict(m)) for m in messages]
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
    out = [copy.deepcopy(dict(m)) for m in messages]
    for message in out:
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = [{k: v for k, v in p.items() if k != "metadata"} if is_block_part(p) else p
                                  for p in content]
    return out
