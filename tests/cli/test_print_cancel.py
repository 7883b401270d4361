"""Print mode runs its turn through the session protocol: a signal while the answer streams is a
Cancel that closes the stream's connection at once (the fake sees the client hang up), the exit
code is 128 + the signal and the final ``result`` says what was produced. The real CLI, SDK and
fake API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from fakeapi import FakeAnthropic, stall, text

SILENCE = 120.0
PROMPTLY = 20.0
ANSWER = "Alpha beta gamma delta epsilon zeta eta theta iota kappa"
FIRST_PIECE = "Alpha beta gamma"


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _start(cli_env, project, fake, *flags):
    return subprocess.Popen(
        [sys.executable, "-m", "memagent", "-C", str(project), "--no-memory", "-p", "talk", *flags],
        env={**cli_env, "ANTHROPIC_BASE_URL": fake.url},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_piece_sent(fake) -> bool:
    """The stalled stream has sent its first piece (the request arrived and the stall began)."""
    return fake.wait_for_requests(1, timeout=120)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_stream_closes_the_connection_and_reports_what_came(cli_env, project, fake, signum):
    fake.add(stall(4, SILENCE, text(ANSWER)))
    proc = _start(cli_env, project, fake, "--output-format", "stream-json")
    try:
        assert _first_piece_sent(fake), "the request never arrived"
        time.sleep(1.0)  # the first piece is on its way; the server is silent now
        started = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=PROMPTLY)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert took < PROMPTLY and "Traceback" not in err
    assert fake.wait_for_hangups(1, timeout=5), "the stalled stream was never closed"
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["terminal_reason"] == "aborted_streaming"
    assert result["result"].startswith(FIRST_PIECE) and "kappa" not in result["result"]
    assert result["permission_denials"] == []


def test_text_mode_sigterm_mid_stream_prints_the_partial_answer(cli_env, project, fake):
    fake.add(stall(4, SILENCE, text(ANSWER)))
    proc = _start(cli_env, project, fake)
    try:
        assert _first_piece_sent(fake), "the request never arrived"
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=PROMPTLY)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert out.startswith(FIRST_PIECE) and "kappa" not in out
    assert err.rstrip().endswith("memagent: interrupted by SIGTERM")
    assert fake.wait_for_hangups(1, timeout=5)
