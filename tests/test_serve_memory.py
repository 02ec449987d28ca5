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
