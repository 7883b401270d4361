"""Background compaction: the summary is written while the session goes on, from 75% of the
threshold, and swapped in at the threshold; the turn waits for it only when the context is full.

A scripted slow summariser (it blocks until the test lets it answer) proves the turn does not
wait; the end-to-end test runs the real CLI against the fake Messages API with a summary model
that takes seconds to answer."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pexpect

from context.ctx_harness import PlannedBrain, settings_for
from context.test_compaction import assert_nothing_lost, request_tokens
from fakeapi import FakeAnthropic, text, tool
from memagent.llm.scripted import reply, tool_call
from memagent.markers import Marker

SUMMARY_OPEN = Marker.SUMMARY.value
THRESHOLD = 4_000


class SlowSummariser:
    """The first summary blocks until ``release`` is set; later ones answer at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, request) -> Any:
        self.calls += 1
        if self.calls == 1:
            assert self.release.wait(60), "the test never released the summariser"
            return reply("## Goal\nthe prepared summary")
        return reply("## Goal\na fresh summary")


def one_turn(brain: PlannedBrain, harness, number: int, reads: int = 2) -> None:
    for read in range(reads):
        brain.add(reply(f"Reading part {read}.", tool_call("read_file", {"path": f"src/mod{number}_{read}.py"})))
    brain.add(reply(f"Module {number} looks fine."))
    harness.turn(f"Check module {number}")


def background_session(make_session, summariser, **settings: Any):
    brain = PlannedBrain()
    harness = make_session(
        brain,
        summary=summariser,
        sizes=settings.pop("sizes", {}),
        settings=settings_for(THRESHOLD, compaction_background=True, **settings),
    )
    return brain, harness


def turns_until_preparing(brain, harness, limit: int = 20) -> int:
    for number in range(limit):
        one_turn(brain, harness, number)
        if harness.policy.preparation is not None:
            return number
    raise AssertionError("no summary was ever prepared")


def test_the_turn_goes_on_past_the_threshold_while_the_summary_is_written(make_session):
    summariser = SlowSummariser()
    brain, harness = background_session(make_session, summariser)
    started = turns_until_preparing(brain, harness)
    preparing = [n for n in harness.notices() if "preparing its summary in the background" in n]
    assert len(preparing) == 1 and "oldest messages" in preparing[0] and "newest kept verbatim" in preparing[0]
    percent = int(re.search(r"tokens, (\d+)% of the 4,000 compaction threshold", preparing[0]).group(1))
    assert 75 <= percent < 100  # prepared before the threshold
    # the summariser is blocked: turns run on past the threshold without waiting for it
    number = started
    while request_tokens(harness.main_requests()[-1]) < THRESHOLD + 500:
        number += 1
        one_turn(brain, harness, number)
        assert number < started + 20
    assert summariser.calls == 1 and not harness.policy.preparation.ready()
    assert not [r for r in harness.records() if r["type"] == "compaction"]
    assert any("this turn does not wait for it" in n for n in harness.notices())
    # released: the next request swaps the prepared summary in, keeping what came meanwhile
    summariser.release.set()
    assert harness.policy.preparation.wait(30)
    one_turn(brain, harness, number + 1)
    record = next(r for r in harness.records() if r["type"] == "compaction")
    assert record["summary"] == "## Goal\nthe prepared summary"
    swapped = next(r for r in harness.main_requests() if r.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN))
    assert "the prepared summary" in swapped.messages[0]["content"][0]["text"]
    kept = str(swapped.messages)
    assert f"Check module {number}" in kept and f"Check module {started + 1}" in kept  # arrived while it was written
    assert "Check module 0" not in kept
    assert request_tokens(swapped) < THRESHOLD
    done = [n for n in harness.notices() if n.startswith("Compacted:")]
    assert f"summarised the {record['dropped_messages']} oldest messages" in done[0]
    harness.assert_requests_valid()
    assert_nothing_lost(harness)


def test_a_full_context_waits_for_the_summary(make_session):
    """max_tokens leaves 4,750 tokens of a 200k window for the request: a large read fills it."""
    summariser = SlowSummariser()
    brain, harness = background_session(make_session, summariser, max_tokens=195_000, sizes={"big.py": 6_000})
    started = turns_until_preparing(brain, harness)
    timer = threading.Timer(1.0, summariser.release.set)
    timer.start()
    brain.add(reply("Reading the big one.", tool_call("read_file", {"path": "big.py"})), reply("Big looks fine."))
    before = time.monotonic()
    harness.turn("Check big.py")
    assert time.monotonic() - before >= 0.9  # it waited for the summariser
    assert any("The context is full: waiting" in n for n in harness.notices())
    (record,) = [r for r in harness.records() if r["type"] == "compaction"]
    assert record["summary"] == "## Goal\nthe prepared summary"
    last = harness.main_requests()[-1]
    assert last.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    assert f"Check module {started}" in str(harness.conversation.messages) or started == 0
    harness.assert_requests_valid()
    assert_nothing_lost(harness)


def test_a_jump_past_the_threshold_starts_the_summary_and_does_not_wait(make_session):
    summariser = SlowSummariser()
    brain, harness = background_session(make_session, summariser, sizes={"huge.py": 12_000})
    one_turn(brain, harness, 0)
    brain.add(reply("Reading.", tool_call("read_file", {"path": "huge.py"})), reply("Huge looks fine."))
    harness.turn("Check huge.py")  # from below 75% to past the threshold in one read
    assert harness.policy.preparation is not None and not harness.policy.preparation.ready()
    assert not [r for r in harness.records() if r["type"] == "compaction"]
    summariser.release.set()
    assert harness.policy.preparation.wait(30)
    one_turn(brain, harness, 1)
    summaries = [r["summary"] for r in harness.records() if r["type"] == "compaction"]
    assert summaries[0] == "## Goal\nthe prepared summary"
    assert_nothing_lost(harness)


def test_a_manual_compaction_meanwhile_makes_the_prepared_summary_stale(make_session):
    summariser = SlowSummariser()
    brain, harness = background_session(make_session, summariser)
    turns_until_preparing(brain, harness)
    stale = harness.policy.preparation
    summariser.release.set()  # the blocked first summary answers; /compact asks for a fresh one
    notices = [e.text for e in harness.policy.force_compact(harness.conversation, "the modules")]
    assert notices[-1].startswith("Compacted:") and harness.policy.preparation is None
    assert stale.wait(30)
    for number in range(30, 33):
        one_turn(brain, harness, number)
    summaries = [r["summary"] for r in harness.records() if r["type"] == "compaction"]
    assert summaries[0] == "## Goal\na fresh summary" and "## Goal\nthe prepared summary" not in summaries
    harness.assert_requests_valid()
    assert_nothing_lost(harness)


def test_the_waiting_path_is_kept_when_background_is_off(make_session):
    summariser = SlowSummariser()
    summariser.release.set()
    brain, harness = background_session(make_session, summariser)
    harness.policy.background = False
    for number in range(8):
        one_turn(brain, harness, number)
    assert harness.policy.preparation is None
    assert any(n.startswith("Context is") and "compacting" in n for n in harness.notices())
    assert [r for r in harness.records() if r["type"] == "compaction"]


# ------------------------------------------------------------------ the real CLI and the fake API

SMALL = "claude-haiku-4-5"
SUMMARY_SECONDS = 3.0
ROUND_SECONDS = 0.05


class TimedBrain:
    """Reads one module per round until the summary is in the context; the summary takes seconds,
    a round a twentieth of a second."""

    def __init__(self) -> None:
        self.summary_span: tuple[float, float] | None = None
        self.main_times: list[float] = []
        self.rounds = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == SMALL:
            began = time.monotonic()
            time.sleep(SUMMARY_SECONDS)
            with self.lock:
                self.summary_span = (began, time.monotonic())
            return text("## Goal\nRead every module.\n## Next step\ncontinue")
        with self.lock:
            self.main_times.append(time.monotonic())
            self.rounds += 1
        first = body["messages"][0]["content"][0].get("text", "")
        if first.startswith(SUMMARY_OPEN) or self.rounds > 300:
            return text("All modules read.")
        time.sleep(ROUND_SECONDS)  # the model's own time to answer
        return tool("read_file", {"path": f"mod{self.rounds % 30}.py"})


def test_through_the_cli_the_turn_does_not_wait_for_a_slow_summary(run_cli, project):
    for number in range(30):
        (project / f"mod{number}.py").write_text(
            "".join(f"def f_{number}_{i}(): return {i}  # line\n" for i in range(60))
        )
    brain = TimedBrain()
    with FakeAnthropic(responder=brain) as fake:
        result = run_cli(
            "-C",
            str(project),
            "-p",
            "read every module",
            "--no-memory",
            "--yes",
            env={
                "ANTHROPIC_BASE_URL": fake.url,
                "MEMAGENT_COMPACT_TOKENS": "14000",
                "MEMAGENT_KEEP_TOOL_RESULTS": "100",
                "MEMAGENT_SMALL_MODEL": SMALL,
            },
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert fake.errors == [], fake.errors
    assert brain.summary_span is not None, result.stderr[-3000:]
    began, ended = brain.summary_span
    during = [t for t in brain.main_times if began < t < ended]
    assert during, "no request was sent while the summary was being written: the turn waited"
    assert "preparing its summary in the background" in result.stderr
    assert "Compacted:" in result.stderr and "All modules read." in result.stdout


def test_the_repl_says_before_and_after_what_a_compaction_summarises_and_keeps(spawn, fake, cli_env, project):
    from repl_kit import PROMPT, expect_text

    for number in range(30):
        (project / f"mod{number}.py").write_text(
            "".join(f"def f_{number}_{i}(): return {i}  # line\n" for i in range(60))
        )
    cli_env.update(
        {"MEMAGENT_COMPACT_TOKENS": "14000", "MEMAGENT_KEEP_TOOL_RESULTS": "100", "MEMAGENT_SMALL_MODEL": SMALL}
    )
    brain = TimedBrain()
    fake.responder = brain
    child = spawn("--yes")
    child.timeout = 180  # dozens of model rounds on a loaded machine
    child.expect(PROMPT)
    child.send("read every module\r")
    # single words: the REPL wraps notices at the console's width
    before = expect_text(child, "preparing")
    assert "Compacted" not in before
    expect_text(child, "summarised,")
    expect_text(child, "Compacted:")
    expect_text(child, "verbatim;")
    expect_text(child, "All modules read.")
    child.expect(PROMPT)
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []
