"""A server's ONNX export is made in a process of its own: the server then embeds with the export and never imports
torch; a child that fails leaves one note naming why, and the server goes on with sentence-transformers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from router import encoders

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A server's encoder chosen in a fresh process over an empty cache: (the process, the cache folder)."""
    tmp_path = tmp_path_factory.mktemp("served")
    code = ("import json, sys\nfrom router import encoders\nnotes = []\n"
            "chosen = encoders.choose(None, notes, export=True, threads=1)\n"
            "vector = chosen.encode_requests(['will it rain in Lyon this weekend?'])\n"
            "print(json.dumps([type(chosen).__name__, chosen.int8_requests, 'torch' in sys.modules,\n"
            "                  'sentence_transformers' in sys.modules, notes, vector.shape[1]]))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    env.pop(encoders.INT8_ENV, None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900,
                          cwd=tmp_path)
    return done, tmp_path / "cache"


@pytest.mark.model
def test_a_server_with_no_cached_export_gets_one_from_a_child_and_never_imports_torch(served) -> None:
    done, cache = served
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '["OnnxEncoder", true, false, false, [], 384]'
    exports = list((cache / "skill-router" / "onnx").glob("*/onnx.json"))
    assert len(exports) == 1  # in the cache, for every later process


@pytest.mark.model
def test_a_server_loads_a_complete_cached_export_once(served, monkeypatch: pytest.MonkeyPatch) -> None:
    """No child and no second session (one more session left 17 MB more resident in a replica)."""
    from indexes import OnnxEncoder

    monkeypatch.setenv("XDG_CACHE_HOME", str(served[1]))
    loads: list[Path] = []
    real = OnnxEncoder.load.__func__  # type: ignore[attr-defined]

    def counting(cls, folder, **options):  # type: ignore[no-untyped-def]
        loads.append(Path(folder))
        return real(cls, folder, **options)

    monkeypatch.setattr(OnnxEncoder, "load", classmethod(counting))
    monkeypatch.setattr(encoders, "export_in_child", lambda *_: pytest.fail("a cached export is exported again"))
    notes: list[str] = []
    chosen = encoders.choose(None, notes, export=True, threads=1)
    assert isinstance(chosen, OnnxEncoder) and chosen.int8_requests
    assert len(loads) == 1 and notes == []


def test_a_child_that_fails_leaves_its_reason_and_the_server_goes_on(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    notes: list[str] = []
    assert not encoders.export_in_child(str(tmp_path / "no-such-model"), notes)
    assert len(notes) == 1
    assert notes[0].startswith("embedding with sentence-transformers: the ONNX export failed (")
    assert "no-such-model" in notes[0]  # the child's own last line names the model it could not load
    assert not (tmp_path / "cache" / "skill-router" / "onnx").exists() or \
        not list((tmp_path / "cache" / "skill-router" / "onnx").glob("*/onnx.json"))


def test_a_child_past_its_time_is_given_up_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    notes: list[str] = []
    assert not encoders.export_in_child(None, notes, timeout_s=0.01)
    assert notes == ["embedding with sentence-transformers: the ONNX export did not finish in 0 s; the next start "
                     "tries again"]
