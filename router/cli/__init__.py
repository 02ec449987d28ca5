"""The ``skill-router`` command.

Every command takes the library as ``--skills DIR`` (repeatable; default ``skills``) with ``--profile``, or as
``--catalog FILE`` (a JSONL catalogue). Errors are one line on stderr and exit status 2; ``lint`` and the CI gates
(``eval --fail-under``, ``overlap --fail-above``) exit 1 when they find problems.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Sequence

from router.errors import SkillRouterError


def build_parser() -> argparse.ArgumentParser:
    from router.cli import evaluate, library, serve
    from router.profiles import DEFAULT_PROFILE, profile_names

    common = argparse.ArgumentParser(add_help=False)
    source = common.add_argument_group("library")
    source.add_argument("--skills", action="append", metavar="DIR",
                        help="a folder of skill folders (repeatable; default: skills)")
    source.add_argument("--catalog", metavar="FILE", help='a JSONL catalogue of {"id","name","description"} rows, '
                                                          "used in place of --skills")
    source.add_argument("--profile", default=DEFAULT_PROFILE, choices=profile_names(),
                        help=f"the harness whose rules apply (default: {DEFAULT_PROFILE})")
    source.add_argument("--config", metavar="FILE", help="router parameters written by 'skill-router tune' "
                                                         "(default: skill-router.json here, if present)")
    source.add_argument("--model", metavar="NAME_OR_PATH",
                        help="a sentence-transformers model folder or name (default: the bundled all-MiniLM-L6-v2)")
    source.add_argument("--index-dir", metavar="DIR", help="where the persistent index lives (default: beside "
                                                           "the library)")

    parser = argparse.ArgumentParser(
        prog="skill-router",
        description="Route a request to the few agent skills that matter, rendered exactly as the harness does.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and where it is installed")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what discovery skips")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    library.register(commands, common)
    evaluate.register(commands, common)
    serve.register(commands, common)
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
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s: %(message)s")
    try:
        return int(args.run(args) or 0)
    except SkillRouterError as exc:
        print(f"skill-router {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
