"""Every README command, run as a user runs it: in a terminal (a pseudo terminal 80 columns wide), on the bundled
library and on a real corpus folder, from a fresh cache (so the first build exports the model).

    python benchmarks/user_run.py [--out benchmarks/results/user_run.txt]

Each command's terminal output is kept as the screen shows it once it is done: escape codes are dropped and a
progress row redrawn in place is kept once, as last drawn, so the record shows which steps showed progress, the
``done: ... (N s)`` line of each step that took a second or more, and every table as printed. The script checks
what the issue asked for and prints the verdict at the end: every step over a second showed progress, and no
table cut a skill name (no ``…``). Writes the record to --out.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "awesome-skills" / "skills"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
SPINNER = re.compile(r"^[\u2800-\u28ff] ")


def run(argv: list[str], env: dict[str, str], stdin: bytes | None = None, columns: int = 80) -> tuple[int, str, float]:
    """Run ``argv`` with stdout and stderr on a pseudo terminal ``columns`` wide; its output and duration."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=follower, stderr=follower, env=env, cwd=env["RUN_CWD"])
    os.close(follower)
    if stdin is not None and child.stdin:
        child.stdin.write(stdin)
        child.stdin.close()
    data = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        elif child.poll() is not None:
            break
    status = child.wait()
    os.close(leader)
    return status, data.decode("utf-8", "replace"), time.perf_counter() - start


def screen(raw: str) -> list[str]:
    """The lines a reader keeps: escape codes dropped, each redrawn progress row once (its last drawing)."""
    text = ANSI.sub("", raw)
    lines: list[str] = []
    rows: dict[str, int] = {}
    for line in re.split(r"[\r\n]", text):  # a row redrawn in place is a line of its own
        line = line.rstrip()
        if not line.strip():
            continue
        if SPINNER.match(line):  # a progress row: keep one per step, as last drawn
            key = re.sub(r"[\u2800-\u28ff]|\d+:\d\d:\d\d|[\d,]+/[\d,?]+|[━╸╺]+", "", line).split()
            name = " ".join(key)
            if name in rows:
                lines[rows[name]] = line
                continue
            rows[name] = len(lines)
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "user_run.txt"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skill-router-user-run-"))
    bin_dir = Path(sys.executable).parent
    env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "TERM": "xterm-256color",
           "XDG_CACHE_HOME": str(work / "cache"), "RUN_CWD": str(work)}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    # The working folder holds copies, so that the learned examples, configs and reports land there.
    subprocess.run(["cp", "-r", str(ROOT / "skills"), str(work / "skills")], check=True)
    subprocess.run(["cp", str(ROOT / "benchmarks" / "data" / "bundled-dev.jsonl"),
                    str(ROOT / "benchmarks" / "data" / "bundled-test.jsonl"), str(work)], check=True)
    (work / ".claude").mkdir()
    (work / ".claude" / "skills").symlink_to(work / "skills")  # where Claude Code, and so the hook, looks
    corpus = str(CORPUS)
    hook_input = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "will it rain in Lyon this weekend?",
                             "cwd": str(work), "session_id": "s1"}).encode()
    commands: list[tuple[str, list[str], bytes | None]] = [
        ("bundled", ["prompt", "will it rain in Lyon this weekend?", "--skills", "skills", "--profile", "genkit"],
         None),
        ("bundled", ["list", "--skills", "skills"], None),
        ("bundled", ["prompt", "--skills", "skills", "--profile", "unreal", "-k", "3", "review my Go code"], None),
        ("bundled", ["use", "weather-forecast", "--skills", "skills", "--profile", "unreal"], None),
        ("bundled", ["lint", "--skills", "skills"], None),
        ("bundled", ["index", "--skills", "skills"], None),
        ("bundled", ["route", "will it rain in Lyon this weekend?", "--skills", "skills"], None),
        ("bundled", ["route", "--queries", "bundled-test.jsonl", "--json", "--skills", "skills"], None),
        ("bundled", ["eval", "--queries", "bundled-test.jsonl", "--skills", "skills", "--html", "eval.html"], None),
        ("bundled", ["overlap", "--skills", "skills", "--top", "5", "--html", "overlap.html"], None),
        ("bundled", ["tune", "--queries", "bundled-dev.jsonl", "--held-out", "bundled-test.jsonl", "--skills",
                     "skills", "-o", "tuned.json"], None),
        ("bundled", ["learn", "--queries", "bundled-dev.jsonl", "--skills", "skills"], None),
        ("bundled", ["eval", "--queries", "bundled-dev.jsonl", "--skills", "skills", "--profile", "claude-code",
                     "--retrievers", "default"], None),
        ("bundled", ["prompt", "--profile", "claude-code", "--emit-config", "will it rain in Lyon?", "--skills",
                     "skills"], None),
        ("bundled", ["hook", "claude-code"], hook_input),
        ("corpus", ["list", "--skills", corpus], None),
        ("corpus", ["lint", "--skills", corpus], None),
        ("corpus", ["index", "--skills", corpus, "--index-dir", str(work / "corpus-index")], None),
        ("corpus", ["route", "write a commit message for my staged changes", "--skills", corpus, "--index-dir",
                    str(work / "corpus-index")], None),
        ("corpus", ["overlap", "--skills", corpus, "--index-dir", str(work / "corpus-index"), "--top", "10",
                    "--html", "corpus-overlap.html"], None),
    ]
    record: list[str] = [f"# {len(commands)} commands in a pseudo terminal 80 columns wide; fresh cache "
                         f"(XDG_CACHE_HOME in a new folder); skills = bundled library copy, corpus = "
                         f"awesome-skills/skills ({corpus})", ""]
    slow_without_progress: list[str] = []
    cut: list[str] = []
    for where, argv, stdin in commands:
        shown = " ".join(a if " " not in a else repr(a) for a in argv).replace(corpus, "$CORPUS")
        status, raw, seconds = run([str(bin_dir / "skill-router"), *argv], env, stdin)
        lines = screen(raw)
        long_lines = [line for line in lines if len(line) > 400]  # JSON lines of route --queries: keep a sample
        if argv[0] == "list" or (argv[0] == "lint" and where == "corpus") or long_lines:
            lines = lines[:25] + [f"... ({len(lines) - 25} more lines)"] + lines[-5:] if len(lines) > 31 else lines
        record += [f"$ skill-router {shown}    # {where}: exit {status}, {seconds:.1f} s", *lines, ""]
        progressed = any(SPINNER.match(line) or line.startswith("done: ") for line in lines)
        if seconds > 1.5 and not progressed and argv[0] not in ("list", "lint", "use", "hook"):
            slow_without_progress.append(f"{shown} ({seconds:.1f} s)")
        if any("…" in line for line in lines):
            cut.append(shown)
        print(f"{seconds:6.1f} s exit {status} {shown[:90]}", file=sys.stderr)
    record += ["# verdict",
               f"commands over 1.5 s that showed no progress: {slow_without_progress or 'none'}",
               f"commands whose output has a cut cell ('…'): {cut or 'none'}"]
    Path(args.out).write_text("\n".join(record) + "\n", encoding="utf-8")
    print("\n".join(record[-3:]))
    print(f"wrote {args.out}; reports in {work}")


if __name__ == "__main__":
    main()
