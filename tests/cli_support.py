"""Running the command line in-process for the tests: ``router.cli.main`` with the output it printed."""

from __future__ import annotations

import pytest

from router.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``skill-router ARGV...`` in this process: (exit status, stdout, stderr)."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err
