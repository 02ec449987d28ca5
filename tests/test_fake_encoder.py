"""The encoder seam (indexes.base.Encoder) and its fast fake: feature hashing, checked from the formula, and a
router built on it that never imports torch or sentence-transformers."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from indexes import FakeEncoder

ROOT = Path(__file__).resolve().parents[1]


def bucket(token: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dim, 1.0 if digest[4] & 1 else -1.0


def test_a_text_is_the_signed_hash_of_its_tokens_normalised() -> None:
    encoder = FakeEncoder(dim=16)
    vectors = encoder.encode(["weather", "weather weather", "", "weather forecast"])
    index, sign = bucket("weather", 16)
    expected = np.zeros(16, dtype=np.float32)
    expected[index] = sign
    np.testing.assert_array_equal(vectors[0], expected)
    np.testing.assert_array_equal(vectors[1], expected)  # repeated tokens: same direction, unit length
    np.testing.assert_array_equal(vectors[2], np.eye(16, dtype=np.float32)[0])  # no tokens: the first axis
    other, other_sign = bucket("forecast", 16)
    both = np.zeros(16)
    both[index] += sign
    both[other] += other_sign
    np.testing.assert_allclose(vectors[3], both / np.linalg.norm(both), rtol=1e-6)
    assert vectors.dtype == np.float32 and encoder.calls == 4 and encoder.dim == 16
    assert encoder.encode([]).shape == (0, 16)


def test_a_router_on_the_fake_encoder_routes_without_torch(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    for name, description in [("weather-forecast", "Give the weather forecast for a city."),
                              ("go-review", "Review Go code for bugs."),
                              ("sql-tuning", "Speed up a slow SQL query.")]:
        (library / name).mkdir(parents=True)
        (library / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n")
    script = textwrap.dedent(f"""
        import sys
        from indexes import FakeEncoder
        from router import Router, RouterConfig
        router = Router.from_skills([{str(library)!r}], "genkit", RouterConfig(route_above=0, k=1),
                                    index_folder={str(tmp_path / "idx")!r}, encoder=FakeEncoder())
        print(router.route("weather forecast for Lyon").shown[0].name)
        print(sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "weather-forecast\n[]\n"
