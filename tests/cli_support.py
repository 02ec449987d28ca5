"""Running the command line in-process for the tests: ``router.cli.main`` with the output it printed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from router.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``skill-router ARGV...`` in this process: (exit status, stdout, stderr)."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def as_routed_cosines(texts: Sequence[str]) -> np.ndarray:
    """Each text's cosine as a request with itself as a library text, embedded as the command line embeds them
    (requests by the export's int8 graph where it has one, library texts by the float graph): 1 without the int8
    graph, a little less with it."""
    from router.encoders import choose

    encoder = choose(None, [])
    embed_request = getattr(encoder, "encode_requests", encoder.encode)
    return np.asarray((embed_request(list(texts)) * encoder.encode(list(texts))).sum(axis=1), dtype=np.float64)
