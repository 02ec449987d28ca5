"""Commands that measure a library: eval, overlap, tune."""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from typing import Any, Callable, Mapping, Sequence

from router.cli.common import (add_library_options, add_router_options, config_from, index_store, k_help, positive_int,
                               print_json, report_notes, skilled_library, skilled_router)
from router.config import DEFAULT_CONFIG_FILE, check_writable
from router.errors import ConfigError
from router.evaluation.retrievers import RETRIEVERS, retrievers_for
from router.signals import names as signal_names

LATENCY_SAMPLE = 100


def _score(text: str) -> float:
    """An argparse type: a finite number."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _seed(text: str) -> int:
    import argparse

    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the seed must be a whole number, got {text!r}") from None


def _folds(text: str) -> int:
    import argparse

    value = positive_int("folds")(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"folds must be a whole number >= 2 (cross-validation), got {text!r}")
    return value


def register(commands: Any) -> None:
    p = commands.add_parser("eval", help="score retrievers on labelled requests")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("--queries", action="append", metavar="FILE",
                   help='labelled requests, JSONL or YAML rows {"id","query","gold":[...]} (repeatable)')
    p.add_argument("--from-log", metavar="LOG", help="in place of --queries: how often the skill an agent loaded "
                                                     "was among those 'skill-router serve' had shown (decision log)")
    p.add_argument("--examples", metavar="FILE", help="labelled requests whose queries become examples of their "
                                                      "skills (e.g. a dev split); adds default-no-examples")
    p.add_argument("--retrievers", default="bm25,dense,rrf,default",
                   help=f"comma-separated, from {', '.join(RETRIEVERS)}")
    p.add_argument("-k", type=positive_int("k"),
                   help=k_help("skills a routed catalogue shows (tokens, per-skill recall)"))
    p.add_argument("--compare", action="append", metavar="A:B",
                   help="paired test of B against A (repeatable; default: every retriever against default)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON (schema skill-router.eval/1); '-' for "
                                                  "stdout")
    p.add_argument("--markdown", metavar="FILE", help="write the report as Markdown; '-' for stdout")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with plots")
    p.add_argument("--fail-under", action="append", metavar="METRIC=VALUE",
                   help="exit 1 when a metric is below VALUE, e.g. recall@5=0.8 or dense.mrr=0.6 (repeatable)")
    p.add_argument("--seed", type=_seed, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(run=cmd_eval)

    p = commands.add_parser("overlap", help="find skills whose descriptions are too alike")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("--top", type=positive_int("top"), default=20, help="pairs to report (default 20)")
    p.add_argument("--queries", metavar="FILE", help="labelled requests: also report pairs that steal each "
                                                     "other's requests")
    p.add_argument("--json", metavar="FILE", help="write JSON (schema skill-router.overlap/1); '-' for stdout")
    p.add_argument("--markdown", metavar="FILE", help="write Markdown")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with a heatmap")
    p.add_argument("--fail-above", type=_score, metavar="SCORE", help="exit 1 when a pair scores above SCORE")
    p.set_defaults(run=cmd_overlap)

    p = commands.add_parser("tune", help="fit fusion weights and the abstention threshold")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("--queries", action="append", required=True, metavar="FILE",
                   help="labelled dev requests (rows with gold [] tune the abstention threshold; repeatable)")
    p.add_argument("--held-out", action="append", metavar="FILE", help="labelled requests to report on, never "
                                                                        "tuned on (repeatable)")
    p.add_argument("--examples-from-queries", action="store_true",
                   help="use the dev requests as examples of their skills (cross-validated)")
    p.add_argument("--folds", type=_folds, default=5, help="cross-validation folds (default 5)")
    p.add_argument("--seed", type=_seed, default=0, help="fold assignment seed (default 0)")
    p.add_argument("--objective", default="mrr", choices=("mrr", "hit@1", "recall@5"),
                   help="the dev metric the weights and threshold maximise (default mrr)")
    p.add_argument("--output", "-o", default=DEFAULT_CONFIG_FILE, metavar="FILE",
                   help=f"config file to write (default {DEFAULT_CONFIG_FILE})")
    p.add_argument("--force", action="store_true",
                   help="write the tuned config even when it scores lower than the config in force on the held-out "
                        "requests (or folds); a threshold that abstains on most of them is dropped all the same")
    p.set_defaults(run=cmd_tune)


# -- eval ---------------------------------------------------------------------------------------------------------
def _requests(router: Any, paths: Sequence[str]):
    from router.evaluation import load_requests

    known = {s.id for s in router.skills}
    requests = []
    for path in paths:
        requests.extend(load_requests(path, known_ids=known))
    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids):
        raise ConfigError("request ids repeat across the --queries files: give each file its own ids")
    return requests


def _with_examples(router: Any, path: str) -> tuple[Any, int]:
    """``router`` with the gold requests of ``path`` as examples of their skills, and how many were new."""
    from router.evaluation import load_requests

    examples: dict[str, list[str]] = {}
    for request in load_requests(path, known_ids={s.id for s in router.skills}):
        for gold in request.gold or ():
            examples.setdefault(gold, []).append(request.query)
    before = sum(len(s.examples) for s in router.skills)
    router = router.with_examples(examples)
    return router, sum(len(s.examples) for s in router.skills) - before


def _latencies(router: Any, requests: Sequence[Any], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Warm single-request latency (ms) of the real code path each retriever stands for, on a sample."""
    sample = [r.query for r in requests[:LATENCY_SAMPLE]]
    signals = router.signals
    router.rank(sample[0])  # warm up
    def alone(name: str) -> Callable[[str], Any]:  # one signal's own scoring of one request
        return lambda q: signals.score([q], router.encode_requests([q]))[name]

    paths: dict[str, Callable[[str], Any]] = {
        **{name: alone(name) for name in signal_names()},
        "rrf": router.rank, "default": router.rank, "default-no-examples": router.rank,
    }
    if hasattr(signals, "bm25") and hasattr(signals, "dense"):  # in process: each index's own scoring call
        paths["bm25"] = signals.bm25.scores
        paths["dense"] = lambda q: signals.dense.scores(router.encode_requests([q])[0])
    from router import progress

    out = {}
    for name in progress.track(names, f"measuring latency on {len(sample)} requests"):
        times = []
        for query in sample:
            start = time.perf_counter()
            paths[name](query)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        out[name] = {"p50": round(statistics.median(times), 3), "p95": round(times[int(0.95 * (len(times) - 1))], 3),
                     "mean": round(statistics.fmean(times), 3)}
    return out


def cmd_eval(args: Any) -> int:
    from router.evaluation import check_gates, evaluate
    from router.evaluation.report import print_table, to_html, to_markdown

    if args.from_log:
        return _eval_log(args)
    if not args.queries:
        raise ConfigError("give --queries FILE (labelled requests) or --from-log LOG (a decision log)")
    names = [n.strip() for n in args.retrievers.split(",") if n.strip()]
    unknown = [n for n in names if n not in RETRIEVERS]
    if unknown or not names:
        raise ConfigError(f"unknown retriever(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(RETRIEVERS)}")
    _check_eval_options(args, names)
    router = skilled_router(args, route_above=0)
    requests = _requests(router, args.queries)
    overlap = learned_overlap(requests, router.learned)
    if overlap:
        print(f"warning: {overlap} of {len(requests)} requests are also learned examples of their skills (skill-router "
              f"learn, in {router.learned_folder}): the scores overstate how new requests route; evaluate on requests "
              "that were not learned", file=sys.stderr)
    if args.examples:
        if router.config.index_url:  # the other router would be built in process, not read from the database
            raise ConfigError("--examples cannot be used with --index-url: the index in the database holds the "
                              "library's own examples only; drop --index-url to evaluate with the file store, or "
                              "add the requests to the skills' routing-examples.txt and run 'skill-router index'")
        router, added = _with_examples(router, args.examples)
        print(f"using {added} example requests from {args.examples}", file=sys.stderr)
        if "default" in names and "default-no-examples" not in names:
            names.insert(names.index("default"), "default-no-examples")
    k = args.k or router.config.k
    start = time.perf_counter()
    retrievers = retrievers_for(router, requests, names, depth=max(10, k), progress=sys.stderr.isatty())
    skills = {s.id: s for s in router.skills}
    thresholds = {"default": router.config.threshold} if router.config.threshold is not None else {}
    compare = [tuple(c.split(":", 1)) for c in args.compare or ()]
    if not compare and "default" in names:  # the question a report answers first: is the router better?
        compare = [(other, "default") for other in names if other != "default"]
    result = evaluate(requests, retrievers, render=lambda ids: router.profile.render(
        [s for s in router.skills if s.id in set(ids)]), catalogue=list(skills), route_k=k,
        thresholds={n: v for n, v in thresholds.items() if n in names}, compare=compare,
        progress=sys.stderr.isatty(), seed=args.seed)
    latency = _latencies(router, requests, names)
    result = dataclasses.replace(result, retrievers=tuple(
        dataclasses.replace(r, latency_ms=latency[r.name]) for r in result.retrievers))
    report_notes(router.notes)
    # With a report written to stdout ('-'), the table goes to stderr so that stdout stays parseable.
    print_table(result, console=_stderr_console() if "-" in (args.json, args.markdown, args.html) else None)
    print(f"{len(requests)} requests, {len(router.skills)} skills, {time.perf_counter() - start:.1f} s; latency is "
          f"warm single-request time on {min(LATENCY_SAMPLE, len(requests))} requests", file=sys.stderr)
    _write(args.json, lambda: _json_text(result.to_json() | {"learned_overlap": overlap}))
    _write(args.markdown, lambda: to_markdown(result))
    _write(args.html, lambda: to_html(result))
    try:
        failures = check_gates(result, args.fail_under or [])
    except ValueError as exc:  # a malformed gate is a usage error, not a failed gate
        raise ConfigError(f"--fail-under {exc}") from None
    for line in failures:
        print(f"FAIL {line}", file=sys.stderr)
    return 1 if failures else 0


def learned_overlap(requests: Sequence[Any], learned: Mapping[str, Sequence[str]]) -> int:
    """How many of ``requests`` are, up to case and spacing, learned examples of the router (any skill's)."""
    def key(text: str) -> str:
        return " ".join(text.split()).casefold()

    known = {key(q) for queries in learned.values() for q in queries}
    return sum(1 for r in requests if key(r.query) in known)


def _check_eval_options(args: Any, names: Sequence[str]) -> None:
    """Refuse malformed --compare pairs and --fail-under gates before any work starts."""
    evaluated = list(names)
    if args.examples and "default" in evaluated and "default-no-examples" not in evaluated:
        evaluated.append("default-no-examples")
    for pair in args.compare or ():
        a, sep, b = pair.partition(":")
        if not sep or not a or not b:
            raise ConfigError(f"--compare {pair!r} must read A:B with two retriever names, e.g. bm25:default")
        missing = [n for n in (a, b) if n not in evaluated]
        if missing:
            raise ConfigError(f"--compare {pair!r}: {', '.join(missing)} is not evaluated; compare two of "
                              f"{', '.join(evaluated)} (see --retrievers)")
        if a == b:
            raise ConfigError(f"--compare {pair!r} compares a retriever with itself: name two different ones")
    for gate in args.fail_under or ():
        left, sep, raw = gate.partition("=")
        if not sep or not left.strip() or not raw.strip():
            raise ConfigError(f"--fail-under gate {gate!r} must read METRIC=VALUE or RETRIEVER.METRIC=VALUE, e.g. "
                              "recall@5=0.8")
        retriever, dot, _ = left.strip().rpartition(".")
        if dot and retriever not in evaluated:
            raise ConfigError(f"--fail-under gate {gate!r}: unknown retriever {retriever!r}; evaluated: "
                              f"{', '.join(evaluated)}")
        try:
            bar = float(raw)
        except ValueError:
            raise ConfigError(f"--fail-under gate {gate!r}: {raw.strip()!r} is not a number; write a fraction such "
                              "as 0.8") from None
        if not 0.0 <= bar <= 1.0:
            raise ConfigError(f"--fail-under gate {gate!r}: metrics are fractions in [0, 1], got {raw.strip()} "
                              "(write 0.8, not 80)")


def _eval_log(args: Any) -> int:
    from router.serve.log import evaluate_log, format_log_report

    if args.queries:
        raise ConfigError("give --queries or --from-log, not both")
    report = evaluate_log(args.from_log)
    if args.json != "-":  # with the JSON on stdout, stdout stays parseable
        sys.stdout.write(format_log_report(report))
    _write(args.json, lambda: _json_text(report))
    return 0


def _stderr_console() -> Any:
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else Console(stderr=True, width=150)


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _write(path: str | None, text: Callable[[], str]) -> None:
    if not path:
        return
    if path == "-":
        sys.stdout.write(text())
        return
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text())
    except OSError as exc:
        raise ConfigError(f"cannot write '{path}': {exc.strerror or exc}") from None
    print(f"wrote {path}", file=sys.stderr)


# -- overlap ------------------------------------------------------------------------------------------------------
def cmd_overlap(args: Any) -> int:
    from router.overlap import analyse_overlap, fails_above

    from router.index import LibraryIndex
    from router.routing import Router

    library: Any = skilled_library(args, route_above=0)  # the overlap of descriptions needs no index
    confusions: list[tuple[str, str, int]] = []
    if args.queries:  # where requests route: the router's index
        from collections import Counter

        router = library = Router(LibraryIndex.create(library, store=index_store(args, library.config)))
        requests = [r for r in _requests(router, [args.queries]) if r.gold]
        retrieve = retrievers_for(router, requests, ["default"], depth=1)["default"]
        counts = Counter((r.gold[0], retrieve(r)[0][0]) for r in requests if len(r.gold) == 1)
        confusions = [(g, p, n) for (g, p), n in sorted(counts.items()) if g != p]
    else:
        library = library.chosen()
    skills = [dataclasses.replace(s, index_description=s.index_description or _lenient(s)) for s in library.skills]
    report = analyse_overlap(skills, encoder=library.encoder, top=args.top,
                             threshold=args.fail_above if args.fail_above is not None else None,
                             confusions=confusions)
    if args.json == "-":
        print_json(report.to_json())
    else:
        sys.stdout.write(report.to_markdown())
    if args.json != "-":
        _write(args.json, lambda: _json_text(report.to_json()))
    _write(args.markdown, report.to_markdown)
    _write(args.html, report.to_html)
    if args.fail_above is not None:
        failing = fails_above(report, args.fail_above)
        for pair in failing:
            print(f"FAIL overlap {pair.a} ~ {pair.b}: {pair.score:.3f} > {args.fail_above}", file=sys.stderr)
        return 1 if failing else 0
    return 0


def _lenient(skill: Any) -> str:
    from router.texts import lenient_description

    return lenient_description(skill)


# -- tune ---------------------------------------------------------------------------------------------------------
def cmd_tune(args: Any) -> int:
    from router.tune import tune

    check_writable(args.output)  # before the run, not after it
    in_force = _in_force(args)  # named before the tuned config may replace it
    router = skilled_router(args, route_above=0)
    requests = _requests(router, args.queries)
    held_out = _requests(router, args.held_out) if args.held_out else []
    result = tune(router, requests, folds=args.folds, seed=args.seed,
                  examples_from_requests=args.examples_from_queries, held_out=held_out, objective=args.objective)
    # Routing every request is how tuning measures; the written config keeps the library-size rule it started with.
    result = dataclasses.replace(result, config=result.config.with_(route_above=config_from(args).route_above))
    for note in result.notes:
        print(f"tune: {note}", file=sys.stderr)
    check = result.check
    if check is not None and result.loses and not args.force:
        print_json(result.to_json() | {"written": None})
        print(f"tune: not writing {args.output}: the tuned config scores {check['metric']} {check['tuned']:.3f} on "
              f"the {check['on']}, the config in force ({in_force}) {check['in_force']:.3f}; keep it, or "
              "pass --force to write the tuned one anyway", file=sys.stderr)
        return 1
    result.save(args.output)
    print_json(result.to_json() | {"written": args.output})
    if check is not None:
        print(f"tune: wrote {args.output}{' although it scores lower (--force)' if result.loses else ''}: "
              f"{check['metric']} {check['tuned']:.3f} on the {check['on']}, the config in force ({in_force}) "
              f"{check['in_force']:.3f}", file=sys.stderr)
    return 0


def _in_force(args: Any) -> str:
    """Where the config in force came from, for a message."""
    import os

    if args.config:
        return args.config
    return f"./{DEFAULT_CONFIG_FILE}" if os.path.isfile(DEFAULT_CONFIG_FILE) else "the defaults"
