"""Commands over one library: list, prompt, use, lint, index, route, learn."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from router.cli.common import (add_library_options, add_router_options, index_store, json_text, k_help,
                               positive_int, print_json, read_query, report_notes, require_skills, skilled_library,
                               skilled_router, spec_from, terminal_text, write_exact)
from router.errors import CatalogError, ConfigError, IndexSaveError, SkillToolError

#: Skills per request that ``route --queries`` writes when no -k is given.
QUERIES_K = 10


def register(commands: Any) -> None:
    p = commands.add_parser("list", help="list the skills the profile finds")
    add_library_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_list)

    p = commands.add_parser("prompt", help="print the catalogue block the harness would see")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("query", nargs="?", help="route this request first ('-' reads stdin); omit for the whole library")
    p.add_argument("-k", type=positive_int("k"), help=k_help("skills to show"))
    p.add_argument("--pin", action="append", metavar="NAME", help="always show this skill (repeatable)")
    p.add_argument("--exclude", action="append", metavar="NAME", help="never show this skill (repeatable)")
    p.add_argument("--json", action="store_true", help="print the block, the skills shown and the tool as JSON")
    p.add_argument("--emit-config", action="store_true",
                   help="print the harness's own setting that lists only the skills shown (codex: [[skills.config]] "
                        "entries; claude-code: the Agent SDK skills option)")
    p.set_defaults(run=cmd_prompt)

    p = commands.add_parser("use", help="print what the skill tool returns for NAME")
    add_library_options(p)
    p.add_argument("name", help="the skill name, exactly as registered")
    p.set_defaults(run=cmd_use)

    p = commands.add_parser("lint", help="check SKILL.md files against the specification and every harness; exit "
                                         "1 on errors")
    add_library_options(p, catalog=False, confine=False,
                        profile_help="where to look when no --skills is given: the folders this harness reads")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_lint)

    p = commands.add_parser("index", help="build or refresh the persistent index")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_index)

    p = commands.add_parser("route", help="rank the skills for a request")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("query", nargs="?", help="the request ('-' reads stdin)")
    p.add_argument("-k", type=positive_int("k"),
                   help=k_help("how many skills") + f"; {QUERIES_K} per request with --queries")
    p.add_argument("--queries", metavar="FILE", help='route a JSONL of {"id","query"} rows; one JSON line each')
    p.add_argument("--pin", action="append", metavar="NAME",
                   help="always return this skill, after the k routed ones (repeatable)")
    p.add_argument("--exclude", action="append", metavar="NAME", help="never return this skill (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--daemon", action="store_true", help="ask the library's warm server (started when none runs), "
                                                         "as the prompt hook does")
    p.set_defaults(run=cmd_route)

    p = commands.add_parser("learn", help="add labelled requests as examples of their skills")
    add_library_options(p)
    add_router_options(p)
    p.add_argument("--queries", metavar="FILE", help='JSONL of {"id","query","gold":[...]} rows')
    p.add_argument("--from-log", metavar="LOG", help="a decision log of 'skill-router serve --log-requests text': "
                                                     "each request becomes an example of the skill loaded after it")
    p.set_defaults(run=cmd_learn)


def _library(args: Any):
    """The registry alone (no indexing): what list, use and an unrouted prompt need."""
    loaded = spec_from(args).load()
    found = loaded.registry.discovery
    if found is not None:
        for line in list(found.errors) + list(found.warnings):
            print(f"{loaded.profile.name}: {terminal_text(line)}", file=sys.stderr)
    return loaded.registry, loaded.profile


def cmd_list(args: Any) -> int:
    registry, _ = _library(args)
    rows = [{"id": s.id, "name": s.name, "description": s.description, "path": s.path} for s in registry]
    if args.json:
        print_json(rows)
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # Skill text is data, not rich markup: '[/x]' in a description must print as written, not raise.
    console = Console()
    names = [escape(terminal_text(row["name"])) for row in rows]
    longest = max((len(terminal_text(row["name"])) for row in rows), default=4)
    # The name column keeps its longest name whole while the description can wrap into at least 20 columns.
    whole = longest + 20 + 7 <= console.width
    table = Table(title=f"{len(rows)} skills", show_lines=False)
    table.add_column("name", style="bold", no_wrap=whole, min_width=longest if whole else None, overflow="fold")
    table.add_column("description", overflow="fold")
    for name, row in zip(names, rows):
        # Control characters would act on the terminal (clear it, move the cursor): show them escaped.
        table.add_row(name, escape(terminal_text(row["description"], keep_newlines=True)))
    console.print(table)
    return 0


def cmd_prompt(args: Any) -> int:
    query = read_query(args.query) if args.query is not None else None
    routing = None
    if query is None and not args.pin and not args.exclude:
        registry, profile = _library(args)
        require_skills(args, registry)
        library = shown = list(registry)
        block = profile.render(shown)
    elif query is None:  # only pins and excludes: the whole library less the excluded, nothing to index
        from router.routing import named_ids

        source = skilled_library(args)
        named_ids(source.registry, source.spec.pinned, "pinned")
        excluded = named_ids(source.registry, source.spec.excluded, "excluded")
        library = list(source.skills)
        shown = [s for s in library if s.id not in excluded]
        profile = source.profile
        block = profile.render(shown)
        report_notes(source.notes)
    else:
        router = skilled_router(args)
        routing = router.route(query, args.k)
        library = list(router.skills)
        shown = list(routing.shown)
        block = router.profile.render(shown)
        report_notes(router.notes)
        profile = router.profile
    if args.emit_config:
        from router.profiles import Capability, either, with_capability

        if not profile.provides(Capability.CONFIG_RESTRICTION):
            names = either(with_capability(Capability.CONFIG_RESTRICTION), flag="--profile ")
            raise ConfigError(f"--emit-config needs a harness with its own switch: use {names}, not {profile.name}")
        if not shown:  # pasted, such a config would hide every skill of the library from the agent
            why = ("the router abstained" if routing is not None and routing.abstained else
                   "every skill is excluded" if not routing else "no skill was chosen")
            raise ConfigError(f"refusing to emit a {profile.name} config that hides all {len(library)} skills: "
                              f"{why}; route a request that fits a skill, or drop --exclude")
        sys.stdout.write(profile.restrict_config(library, shown))
        return 0
    if args.json:
        tool = profile.tool(shown)
        out = {"block": block, "shown": [s.name for s in shown], "tool": tool.openai() if tool else None}
        if profile.harness_version:  # the harness release the profile reproduces, and its model
            out["harness"] = {"version": profile.harness_version, "model": profile.harness_model}
        budget = profile.budget_report(shown)
        if budget is not None:  # the harness's own budget, its built-in skills counted
            out["budget"] = budget
        print_json(out)
    else:
        write_exact(block)
    return 0


def cmd_use(args: Any) -> int:
    registry, profile = _library(args)
    arguments, call_name = profile.skill_call(args.name, list(registry))
    try:
        result = profile.call_tool(registry, arguments, call_name)
    except SkillToolError as exc:
        print(terminal_text(str(exc)), file=sys.stderr)
        return 1
    write_exact(result)
    return 0


def cmd_lint(args: Any) -> int:
    from router.lint import lint
    from router.library import check_roots

    folders = list(spec_from(args).folders)  # with no --skills: the harness's own (codex, claude-code)
    check_roots(folders)
    report = lint(folders)
    if args.json:
        print_json(report.to_json())
    else:
        for finding in report.findings:
            print(terminal_text(str(finding)))
        if report.findings:
            print(terminal_text(report.rule_summary(), keep_newlines=True))
        print(report.summary())
    return 1 if report.errors else 0


def cmd_index(args: Any) -> int:
    from router.index import LibraryIndex
    from router.routing import Router

    source = skilled_library(args)
    store = index_store(args, source.config)
    if store is not None:
        from router.pgstore import cmd_index_database

        return cmd_index_database(source.chosen(), store, json_output=args.json)
    start = time.perf_counter()
    router = Router(LibraryIndex.create(source, progress=sys.stderr.isatty()))
    elapsed = time.perf_counter() - start
    report_notes(router.notes)
    if router.saved is False:
        raise IndexSaveError(f"the index could not be saved to {router.index_folder}: choose a writable folder "
                             "with --index-dir")
    summary = {"skills": len(router.skills), "embedded": router.embedded_count, "index": router.index_folder,
               "model": router.encoder.model_id, "seconds": round(elapsed, 3)}
    if args.json:
        print_json(summary)
    else:
        print(f"indexed {summary['skills']} skills in {elapsed:.2f} s ({summary['embedded']} texts embedded, the "
              f"rest reused) -> {summary['index']}")
    return 0


def cmd_route(args: Any) -> int:
    matches = _route_by_server(args) if getattr(args, "daemon", False) and not args.queries else None
    if matches is not None:
        query = read_query(args.query)
    else:
        router = skilled_router(args, route_above=0)
        if args.queries:
            if args.query:
                raise ConfigError("give a request or --queries FILE, not both")
            return _route_file(router, args)
        query = read_query(args.query)
        matches = router.rank(query, args.k)
        report_notes(router.notes)
    if args.json:
        print_json([{"rank": m.rank, "id": m.id, "name": m.name, "score": round(m.score, 6),
                     "scores": {k: round(v, 6) for k, v in m.scores.items()}, "ranks": dict(m.ranks),
                     "reason": m.reason} for m in matches])
        return 0
    from rich.console import Console
    from rich.markup import escape

    from router.tables import Column, fitted_table

    signals = list(matches[0].scores) if matches else []
    # Signal columns go first when the terminal is narrow (the last signals first); the skill name never is cut.
    columns = [Column("rank"), Column("skill", justify="left", name=True, style="bold"), Column("fused", drop=1),
               *[Column(name, drop=2 + i) for i, name in enumerate(signals)]]
    rows = [[str(m.rank), escape(terminal_text(m.name + (" (named)" if m.reason == "named" else ""))),
             f"{m.score:.3f}", *[f"{m.scores[n]:.3f} ({m.ranks[n]})" for n in signals]] for m in matches]
    console = Console()

    def fit(caption: str | None) -> Any:
        return fitted_table(columns, rows, console.width, caption=caption,
                            title=escape(terminal_text(f"top {len(matches)} for: {query.strip()[:80]}")),
                            left_out_note="left out to fit the width: {} (see --json)")

    fitted = fit(None)
    if set(signals) - set(fitted.left_out):  # the caption explains the signal columns that are shown
        fitted = fit("signal columns: score (rank)")
    console.print(fitted.table)
    return 0


def _route_by_server(args: Any) -> list[Any] | None:
    """The matches the library's warm server gives (None for a library it shows whole, which is ranked here)."""
    from types import SimpleNamespace

    from router import daemon

    query = read_query(args.query)
    args.query = query  # read once: stdin cannot be read twice
    if args.pin or args.exclude:
        raise ConfigError("--daemon takes no --pin or --exclude: the warm server routes as the hook does")
    library = daemon.Library.of(args.profile, os.getcwd(), skills=args.skills, catalog=args.catalog,
                                config=args.config, model=args.model, index_dir=args.index_dir)
    body: dict[str, Any] = {"query": query}
    if args.k:
        body["k"] = args.k
    answer = daemon.ask(library, "/v1/route", body)
    if not answer.get("routed"):
        return None
    return [SimpleNamespace(**m) for m in answer["matches"]]


def _route_file(router: Any, args: Any) -> int:
    rows = _read_rows(args.queries)
    k = args.k if args.k is not None else QUERIES_K
    ranked = router.rank_many([row["query"] for row in rows], k)
    for row, matches in zip(rows, ranked):
        line = {"id": row["id"], "ranking": [{"id": m.id, "score": round(m.score, 6)} for m in matches]}
        sys.stdout.write(json_text(line, indent=None) + "\n")
    report_notes(router.notes)
    return 0


def _read_rows(path: str) -> list[dict[str, Any]]:
    from router.catalog import parse_jsonl

    from router.files import read_user_text

    text = read_user_text(path, "requests file", CatalogError)
    rows = []
    for number, row in parse_jsonl(text, path):
        if not isinstance(row, dict) or not isinstance(row.get("query"), str) or not row["query"].strip():
            raise CatalogError(f'{path}:{number}: each row needs a non-empty "query" string')
        row.setdefault("id", str(number))
        rows.append(row)
    if not rows:
        raise CatalogError(f"requests file '{path}' has no rows")
    return rows


def cmd_learn(args: Any) -> int:
    from router.learned import append_learned

    if bool(args.queries) == bool(args.from_log):
        raise ConfigError("give --queries FILE (labelled requests) or --from-log LOG (a decision log), one of them")
    from router.index import LibraryIndex
    from router.routing import Router

    source = skilled_library(args)  # read, not indexed: the index is built once, with the new examples
    if args.from_log:
        from router.serve.log import examples_from_log

        by_id, counts = examples_from_log(args.from_log, {s.id for s in source.skills})
        print(f"{counts['loads']} loads in the log: {counts['used']} used ({counts['shown']} shown, "
              f"{counts['not_shown']} loaded although not shown), {counts['no_request_id']} without a request id "
              f"(never linked: pass the routing's request_id as route_id when loading), {counts['unlinked']} naming "
              f"a routing not in the log, {counts['no_text']} without request text, {counts['unknown_skill']} of "
              "skills not in the library", file=sys.stderr)
    else:
        by_id = _labelled_examples(source, args.queries)
    added = append_learned(source.spec.learned_folder, by_id)
    router = Router(LibraryIndex.create(source.with_examples(by_id), progress=sys.stderr.isatty()))
    report_notes(router.notes)
    print(f"learned {added} new example requests for {len(by_id)} skills -> {router.learned_folder}")
    return 0


def _labelled_examples(source: Any, path: str) -> dict[str, list[str]]:
    from router.evaluation.labels import load_requests

    skills = {s.id: s for s in source.skills}
    requests = load_requests(path, known_ids=set(skills) | set(source.registry.names))
    examples: dict[str, list[str]] = {}
    for request in requests:
        for gold in request.gold or ():
            examples.setdefault(gold, []).append(request.query)
    ids = {key: (source.registry.lookup(key) or skills[key]).id for key in examples}
    by_id: dict[str, list[str]] = {}
    for key, queries in examples.items():
        by_id.setdefault(ids[key], []).extend(queries)
    return by_id
