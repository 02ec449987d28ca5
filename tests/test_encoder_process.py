"""The embedding model in a forked process of its own (router.encoder_process): the very vectors of the encoder
in this process, the model's identity before it loads, and a clear error for a model without an export or a
child that died."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from router.encoder_process import EncoderProcess, EncoderProcessError, Unprepared

TEXTS = ["make a pdf report from this csv", "", "Prévisions météo à Lyon ☔ 天气预报", "review my go code " * 60]


@pytest.fixture(scope="module")
def onnx(encoder: object) -> object:
    from indexes.onnx_export import ensure_onnx_encoder

    return ensure_onnx_encoder(encoder)


def test_the_child_embeds_the_very_vectors_of_the_encoder_here(onnx: object) -> None:
    process = EncoderProcess(lambda: None)
    pid = process.pid
    try:
        assert process.identity() == ("sentence-transformers/all-MiniLM-L6-v2", 384)
        for texts in (TEXTS, TEXTS[:1], [TEXTS[2], TEXTS[0]]):
            got = process.encode(texts)
            assert got.dtype == np.float32 and got.shape == (len(texts), 384)
            assert np.array_equal(got, onnx.encode(texts))  # type: ignore[attr-defined]  # bit for bit
            asked = process.encode_requests(texts)  # by the int8 request graph, there as here
            assert np.array_equal(asked, onnx.encode_requests(texts))  # type: ignore[attr-defined]
            assert not np.array_equal(asked, got)
        assert process.encode([]).shape == (0, 384)
        assert process.encoded_count == 2 * (len(TEXTS) + 3)
        with pytest.raises(TypeError, match="wrap it in a list"):
            process.encode("one string")
    finally:
        process.close()
    with pytest.raises(ProcessLookupError):  # stopped and reaped
        os.kill(pid, 0)


def test_a_model_without_an_export_is_unprepared_before_anything_loads(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no export cached there
    process = EncoderProcess(lambda: None)
    try:
        with pytest.raises(Unprepared, match="^the model's ONNX export is not made yet$"):
            process.encode(["x"])
    finally:
        process.close()


def test_a_child_that_died_is_an_error_that_says_so(onnx: object) -> None:
    process = EncoderProcess(lambda: None)
    try:
        process.identity()
        os.kill(process.pid, 9)
        with pytest.raises(EncoderProcessError, match="^the embedding process ended without an answer$"):
            process.encode(["x"])
    finally:
        process.close()
    with pytest.raises(EncoderProcessError, match="closed"):
        process.encode(["x"])


def test_a_model_that_fails_to_resolve_is_reported(onnx: object) -> None:
    def broken() -> str | None:
        raise ValueError("skill-router.json: 'model' must be a string")

    process = EncoderProcess(broken)
    try:
        with pytest.raises(EncoderProcessError, match="failed to load or run: ValueError: skill-router.json"):
            process.identity()
    finally:
        process.close()


def test_prefetched_texts_are_answered_with_the_same_vectors(onnx: object) -> None:
    process = EncoderProcess(lambda: None, prefetch=TEXTS[:2])
    try:
        requests = onnx.encode_requests  # type: ignore[attr-defined]
        # the prefetch is a request's: a library's texts equal to it are embedded by the float graph all the same
        assert np.array_equal(process.encode(TEXTS[:2]), onnx.encode(TEXTS[:2]))  # type: ignore[attr-defined]
        assert np.array_equal(process.encode_requests(TEXTS[:1]), requests(TEXTS[:1]))
        assert np.array_equal(process.encode_requests(TEXTS[:2]), requests(TEXTS[:2]))
        assert np.array_equal(process.encode_requests(TEXTS[:2]), requests(TEXTS[:2]))
    finally:
        process.close()


@pytest.mark.parametrize("index_built", [False, True])
def test_a_hook_for_a_library_not_prepared_says_what_to_run_and_prints_nothing(tmp_path: Path,
                                                                             index_built: bool) -> None:
    """The index is checked by the hook's child, the model's export by the model's process; either one missing
    is named, with the command that prepares the library, and the prompt goes on without context."""
    import json
    import subprocess
    import sys

    from serve_support import copy_bundled

    project = tmp_path / "project"
    copy_bundled(project / ".claude" / "skills")
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_RUNTIME_DIR": str(tmp_path)}
    env.pop("SKILL_ROUTER_URL", None)
    index = tmp_path / "index"
    if index_built:  # as far as the hook's check goes: the export is what is missing
        index.mkdir()
        (index / "manifest.json").write_text("{}")
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": "will it rain in Lyon?", "cwd": str(project)}
    done = subprocess.run([sys.executable, "-m", "router.cli", "hook", "claude-code", "--no-start", "--index-dir",
                           str(index), "--timeout", "30"], input=json.dumps(payload), capture_output=True,
                          text=True, timeout=120, cwd=project, env=env)
    missing = "the model's ONNX export is not made yet" if index_built else "its index is not built yet"
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (f"skill-router hook: no warm server was running, and this library cannot be routed "
                           f"in-process within a prompt: {missing}; run 'skill-router setup claude-code' once\n")


def test_the_model_process_ends_with_the_process_that_started_it() -> None:
    """A hook's child killed at its deadline takes the model's process with it (Linux)."""
    import subprocess
    import sys
    import time

    code = ("import sys, time; from router.encoder_process import EncoderProcess; "  # a model that takes a minute
            "p = EncoderProcess(lambda: time.sleep(60)); print(p.pid, flush=True); time.sleep(60)")
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        child = int(starter.stdout.readline())
        os.kill(child, 0)  # running
        starter.kill()
        starter.wait(timeout=30)
        for _ in range(600):  # a killed child waits as a zombie until init reaps it: gone as well
            try:
                os.kill(child, 0)
                if Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    break
            except (ProcessLookupError, FileNotFoundError):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the model's process {child} outlived the process that started it")
    finally:
        starter.kill()
        starter.wait(timeout=30)
        if starter.stdout is not None:
            starter.stdout.close()
