"""What a server process does so that the memory one burst of requests takes is given back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WHERE = """
import sys
import numpy as np
from router.serve.service import return_large_blocks
if sys.argv[1] == "server":
    return_large_blocks()
for _ in range(3):
    block = np.ones((8 << 20) // 8)
    del block  # glibc's own threshold is now above 8 MB
kept = np.ones((3 << 20) // 8)
for line in open("/proc/self/maps"):
    low, high = (int(x, 16) for x in line.split()[0].split("-"))
    if low <= kept.ctypes.data < high:
        print(line.split()[5] if len(line.split()) > 5 else "a mapping of its own")
"""


def test_a_server_maps_large_blocks_on_their_own_so_that_freeing_them_returns_them() -> None:
    """glibc raises its threshold for mapping a block on its own past each large block freed; after one batch of
    long requests, blocks of their size then stayed in the heap for good. A server fixes it at 1 MiB."""
    places = {}
    for kind in ("server", "plain"):
        done = subprocess.run([sys.executable, "-c", WHERE, kind], capture_output=True, text=True, timeout=60,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        places[kind] = done.stdout.strip()
    assert places == {"server": "a mapping of its own", "plain": "[heap]"}


FAULTS = """
import resource, sys
import numpy as np
from router.serve.service import return_large_blocks
if sys.argv[1] == "server":
    return_large_blocks()
for _ in range(5):
    np.ones(100_000)  # warm up: the heap has grown
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    a, b = np.ones(100_000), np.ones(100_000)  # one request's score arrays at 100,000 skills, 800 KB each
    del a, b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_a_server_keeps_what_one_request_frees_instead_of_faulting_it_in_again() -> None:
    """A fixed mapping threshold also fixes glibc's trim threshold at 128 KiB: each freed score array was handed
    back to the OS and faulted in again (about 200 page faults an array). The server keeps up to 8 MB freed."""
    faults = {}
    for kind in ("server", "plain"):
        done = subprocess.run([sys.executable, "-c", FAULTS, kind], capture_output=True, text=True, timeout=60,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        faults[kind] = int(done.stdout.strip())
    assert faults["server"] < 1000, faults  # 400 arrays of 196 pages each, if each were faulted in again


def test_loading_a_service_fixes_the_threshold(monkeypatch) -> None:
    from router.serve import service

    calls: list[str] = []
    monkeypatch.setattr(service, "return_large_blocks", lambda: calls.append("fixed"))
    loaded = service.Service(lambda encoder: (_ for _ in ()).throw(RuntimeError("no library")), model=object())
    try:
        try:
            loaded.load()
        except RuntimeError:
            pass
    finally:
        loaded.close()
    assert calls == ["fixed"]
