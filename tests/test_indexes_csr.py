"""BM25's term x document matrix built with numpy alone (:func:`indexes.bm25.csr`), as scipy.sparse builds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from indexes.bm25 import csr

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("shape", "count", "seed"), [((50, 30), 400, 0), ((7, 1000), 60, 1), ((1, 1), 1, 2),
                                                      ((3, 4), 0, 3), ((0, 5), 0, 4), ((2000, 3), 2500, 5)])
def test_the_same_arrays_and_types_as_scipy(shape: tuple[int, int], count: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    places = rng.choice(shape[0] * shape[1], size=count, replace=False) if count else np.zeros(0, dtype=np.int64)
    rows, columns = places // shape[1], places % shape[1]  # every place once, in no order
    values = rng.standard_normal(count)
    want = sparse.csr_matrix((values, (rows, columns)), shape=shape, dtype=np.float64)
    want.sort_indices()
    got = csr(values, rows, columns, shape)
    for name in ("data", "indices", "indptr"):
        assert getattr(got, name).dtype == getattr(want, name).dtype, name
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.shape == want.shape


def test_a_bm25_build_imports_no_scipy() -> None:
    code = ("import json, sys\n"
            "from indexes import BM25Index\n"
            "index = BM25Index.from_texts(('a', 'b', 'c'), ['fill a pdf form', 'rain in lyon', 'pdf to text'])\n"
            "print(json.dumps({'top': index.search('pdf form', 1)[0].id,\n"
            "                  'scipy': sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"top": "a", "scipy": []}
