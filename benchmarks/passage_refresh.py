"""How long does the passage index (router.passages) take to refresh after one SKILL.md body edit?

    python benchmarks/passage_refresh.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/passage_refresh.py --name passage_refresh-other

The bodies of the ~680 corpus skills (benchmarks/body_cost.py's library), indexed once in a temporary folder; then
``--edits`` times one body gains a first line and the passage index is found again (``for_skills``) twice: as in a
new process (the in-memory caches emptied, so the previous index is read from the folder) and as in the same
process (a second body edited, the previous index in memory). Medians in seconds, with the load average, written to
benchmarks/results/<name>.json. Run it with another checkout first on ``PYTHONPATH`` to compare two versions on the
same machine, alternating the two.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from body_cost import sources  # body_cost.py's library: the first skill of each folder name
from common import save
from router import passages  # from PYTHONPATH first: the checkout being measured

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=7)
    parser.add_argument("--name", default="passage_refresh")
    args = parser.parse_args()
    texts = sources()
    bodies = [t.partition("\n---\n")[2] if t.startswith("---") else t for t in texts]
    ids = [f"s{i:05d}" for i in range(len(bodies))]
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        first = passages.for_skills(ids, bodies, folder)
        cold = time.perf_counter() - start
        new, same = [], []
        for k in range(args.edits):
            bodies[10 * k + 1] = f"Variant {k}.\n{bodies[10 * k + 1]}"
            passages._MEMO.clear()
            passages._CUT.clear()
            start = time.perf_counter()
            passages.for_skills(ids, bodies, folder)
            new.append(time.perf_counter() - start)
            bodies[10 * k + 2] = f"Variant {k}.\n{bodies[10 * k + 2]}"
            start = time.perf_counter()
            passages.for_skills(ids, bodies, folder)
            same.append(time.perf_counter() - start)
    result = {"skills": len(ids), "passages": len(first.owners) if first is not None else 0,
              "cold_build_s": round(cold, 3), "refresh_new_process_s": round(statistics.median(new), 4),
              "refresh_same_process_s": round(statistics.median(same), 4),
              "all_new_process_s": [round(x, 4) for x in new], "all_same_process_s": [round(x, 4) for x in same],
              "loadavg": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]}}
    print(result, "router.passages from", passages.__file__)
    save(args.name, result)


if __name__ == "__main__":
    main()
