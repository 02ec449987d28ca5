"""The ``skill-router`` command.

Every command takes the library as ``--skills DIR`` (repeatable; default ``skills``) with ``--profile``, or as
``--catalog FILE`` (a JSONL catalogue); the commands that route, index or measure also take ``--config``,
``--model`` and ``--index-dir`` (:mod:`router.cli.common`). Errors, usage errors included, are one line on stderr
and exit status 2 (a library with no skills too, for the commands that need some); ``lint`` and the CI gates
(``eval --fail-under``, ``overlap --fail-above``) exit 1 when they find problems, and ``tune`` when the tuned
config scores lower than the one in force on held-out requests (it then writes nothing; ``--force`` writes it).
A ``skill-router.json`` read from the working folder without ``--config`` is announced on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence


def build_parser() -> argparse.ArgumentParser:
    from router.cli import doctor, evaluate, library, serve, setup
    from router.cli.common import OneLineParser

    parser = OneLineParser(
        prog="skill-router",
        description="Route a request to the few agent skills that matter, rendered exactly as the harness does.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and where it is installed")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what discovery skips")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    library.register(commands)
    evaluate.register(commands)
    serve.register(commands)
    setup.register(commands)
    doctor.register(commands)
    parser.set_defaults(commands=commands.choices)
    return parser


class _Version(argparse.Action):
    """``--version`` printed as one line: argparse's own action wraps it at the terminal width."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    """The version and where the ``router`` and ``indexes`` packages were imported from: both are generic names, so
    another installed distribution could shadow them."""
    import indexes
    import router

    return (f"skill-router {router.__version__} (router: {os.path.dirname(os.path.abspath(router.__file__ or ''))}, "
            f"indexes: {os.path.dirname(os.path.abspath(indexes.__file__ or ''))})")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["hook"]:  # a hook runs on every prompt: skip building the whole command line
        from router.serve.hooks import main as hook

        return hook(argv[1:])
    import logging

    from router.cli.common import error_line
    from router.errors import SkillRouterError

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the command's own parser, so the message says which command refused them
        args.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s: %(message)s")
    from router.progress import on_terminal

    try:
        with on_terminal():  # long steps show progress on stderr when it is a terminal; stdout is never touched
            return int(args.run(args) or 0)
    except SkillRouterError as exc:
        print(f"skill-router {args.command}: error: {error_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
