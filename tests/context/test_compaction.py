"""Layers 2 and 3: auto-compaction, the circuit breaker, the fallback, the compact tool."""

from __future__ import annotations

import re

from context.ctx_harness import SMALL, PlannedBrain, failing_summary
from memagent.llm.scripted import reply, tool_call
from memagent.llm.tokens import TokenCounter, estimate_message
from memagent.llm.types import ModelError, PromptTooLongError
from memagent.markers import Marker

SUMMARY_OPEN, STATE_HEADER = Marker.SUMMARY.value, Marker.STATE.value

NOTICE = re.compile(
    r"^Compacted: ([\d,]+) → ([\d,]+) tokens; summarised the \d+ oldest messages, kept the \d+ newest "
    r"verbatim(?:, re-injected \d+ state block\(s\))?; full transcript: \.transcripts/20261121-100000-aaaa\.jsonl$"
)


def coding_turns(brain: PlannedBrain, harness, turns: int, reads_per_turn: int = 2, start: int = 0) -> None:
    for number in range(start, start + turns):
        for read in range(reads_per_turn):
            brain.add(reply(f"Reading part {read}.", tool_call("read_file", {"path": f"src/mod{number}_{read}.py"})))
        brain.add(reply(f"Module {number} looks fine."))
        harness.turn(f"Check module {number}")


def request_tokens(request) -> int:
    return TokenCounter().context_tokens(request.system, request.tools, request.messages)


def assert_nothing_lost(harness) -> None:
    """Every message ever appended is in the transcript, in order, unchanged."""
    assert harness.transcript_messages() == harness.conversation.appended


def test_auto_compaction_summarises_reinjects_and_keeps_requests_bounded(make_session):
    brain = PlannedBrain()
    todo_state = {"text": "Todo list:\n[>] #1 check every module"}
    harness = make_session(brain, threshold=4_000, reinject=[lambda: todo_state["text"], lambda: None])
    snapshots = []
    for batch in range(4):
        coding_turns(brain, harness, 3, start=batch * 3)
        snapshots.append(harness.writer.path.read_bytes())
        todo_state["text"] = f"Todo list:\n[>] #{batch + 2} next module batch"
    compactions = [r for r in harness.records() if r["type"] == "compaction"]
    assert len(compactions) >= 2
    notices = [n for n in harness.notices() if n.startswith("Compacted")]
    assert len(notices) == len(compactions)
    for notice, record in zip(notices, compactions):
        before, after = (int(x.replace(",", "")) for x in NOTICE.match(notice).groups())
        assert (before, after) == (record["tokens_before"], record["tokens_after"])
        assert after < before and before >= 4_000
        assert record["summary"] == "## Goal\nthe summary of the dropped part"
        assert record["summary_model"] == SMALL
    # the summary went to the small model and saw the dropped part
    first_summary = harness.summary_requests()[0]
    assert first_summary.tools == [] and "Check module 0" in first_summary.messages[0]["content"][0]["text"]
    # the live history: summary, then re-injected state read at compaction time, then raw turns
    head = harness.conversation.messages[0]["content"]
    assert head[0]["text"].startswith(SUMMARY_OPEN) and "the summary of the dropped part" in head[0]["text"]
    assert head[1]["text"].startswith(STATE_HEADER) and "Todo list:" in head[1]["text"]
    # every request valid; none above the threshold by more than one round of tool output
    harness.assert_requests_valid()
    round_size = max(estimate_message(m) for m in harness.conversation.appended) * 2
    assert max(request_tokens(r) for r in harness.main_requests()) <= 4_000 + round_size
    # the transcript only grew
    for earlier, later in zip(snapshots, snapshots[1:]):
        assert later.startswith(earlier)
    assert_nothing_lost(harness)


def test_before_drop_gets_exactly_the_dropped_messages(make_session):
    brain = PlannedBrain()
    seen = []
    harness = make_session(brain, threshold=3_000, before_drop=[lambda messages, ids: seen.append((messages, ids))])
    before = []
    original_before_request = harness.policy.before_request

    def spy(conversation):
        before.append((list(conversation.messages), list(conversation.ids)))
        yield from original_before_request(conversation)

    harness.policy.before_request = spy
    coding_turns(brain, harness, 6)
    assert seen, "no compaction happened"
    dropped, dropped_ids = seen[0]
    snapshot_messages, snapshot_ids = next(
        s for s in before if s[1][: len(dropped_ids)] == dropped_ids and len(s[1]) > len(dropped_ids)
    )
    assert dropped == snapshot_messages[: len(dropped)]
    record = next(r for r in harness.records() if r["type"] == "compaction")
    assert record["dropped_from"] == dropped_ids[0] and record["kept_from"] == snapshot_ids[len(dropped_ids)]


def test_a_failing_summary_falls_back_to_a_digest_that_keeps_the_facts(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=3_000, summary=failing_summary)
    brain.add(reply(tool_call("read_file", {"path": "missing/settings.py"})), reply("settings.py is missing"))
    harness.turn("Open missing/settings.py")
    coding_turns(brain, harness, 5)
    record = next(r for r in harness.records() if r["type"] == "compaction")
    assert record["fallback"] == "summary model overloaded" and record["summary_model"] is None
    assert "missing/settings.py" in record["summary"] and "does not exist" in record["summary"]
    assert any("summary model failed" in n for n in harness.notices())
    assert harness.conversation.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    harness.assert_requests_valid()
    assert_nothing_lost(harness)


def test_never_compacts_twice_without_new_messages(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=10**9)
    coding_turns(brain, harness, 3)
    first = list(harness.policy.force_compact(harness.conversation, "module checks"))
    second = list(harness.policy.force_compact(harness.conversation))
    assert [e.text.startswith("Compacted") for e in first] == [True]
    assert [e.text for e in second] == ["Nothing new to compact since the last compaction."]
    assert len(harness.summary_requests()) == 1
    records = [r for r in harness.records() if r["type"] == "compaction"]
    assert len(records) == 1 and records[0]["focus"] == "module checks"
    assert "focus on: module checks" in harness.summary_requests()[0].messages[0]["content"][0]["text"]
    coding_turns(brain, harness, 1, start=10)
    assert list(harness.policy.force_compact(harness.conversation))[0].text.startswith("Compacted")


def test_a_compaction_that_would_not_shrink_is_abandoned_and_not_retried_in_the_same_turn(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=3_000, summary=lambda request: reply("## Goal\n" + "word " * 20_000))
    coding_turns(brain, harness, 3)
    messages_before = list(harness.conversation.messages)
    assert any(n.startswith("Compaction abandoned: the result") for n in harness.notices())
    assert not [r for r in harness.records() if r["type"] == "compaction"]
    assert harness.conversation.messages == messages_before
    # one attempt, then it waited for the next turn instead of paying for a summary every round
    assert len(harness.summary_requests()) == 1
    assert any("waiting for the next turn" in n for n in harness.notices())
    coding_turns(brain, harness, 1, start=5)
    assert len(harness.summary_requests()) == 2
    harness.assert_requests_valid()


def test_the_compact_tool_runs_before_the_next_model_call(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=10**9)
    coding_turns(brain, harness, 3)
    brain.add(
        reply("Phase done; compacting.", tool_call("compact", {"focus": "the module audit"})),
        reply("Compacted, carrying on."),
    )
    harness.turn("Wrap up this phase")
    finished = [e for e in harness.events if type(e).__name__ == "ToolCallFinished" and e.name == "compact"]
    assert finished[0].content.startswith("Compaction scheduled focusing on: the module audit")
    last_request = harness.main_requests()[-1]
    assert last_request.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    # the compact call and its result are the kept tail, so the pair stays intact
    assert last_request.messages[-2]["content"][-1]["name"] == "compact"
    assert last_request.messages[-1]["content"][0]["type"] == "tool_result"
    assert any(r["type"] == "compaction" and r["focus"] == "the module audit" for r in harness.records())
    harness.assert_requests_valid()


def test_prompt_too_long_forces_a_compaction_and_one_retry(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=10**9)
    coding_turns(brain, harness, 3)
    brain.add(
        PromptTooLongError("prompt is too long: 210000 tokens > 200000 maximum"), reply("Answer after compacting.")
    )
    ended = harness.turn("One more question")
    assert ended.stop_reason == "end_turn" and ended.final_text == "Answer after compacting."
    assert any(n.startswith("Compacted") for n in harness.notices())
    assert harness.main_requests()[-1].messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    harness.assert_requests_valid()


def test_a_long_single_turn_is_cut_mid_turn_keeping_the_request(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=3_000)
    for read in range(10):
        brain.add(
            reply(
                tool_call("read_file", {"path": f"pkg/part{read}.py"}),
                tool_call("bash", {"command": f"pytest -k part{read}"}),
            )
        )
    brain.add(reply("All parts checked."))
    ended = harness.turn("Audit every part of pkg and run its tests")
    assert ended.final_text == "All parts checked."
    assert [r for r in harness.records() if r["type"] == "compaction"]
    head = harness.main_requests()[-1].messages[0]["content"]
    assert any("Audit every part of pkg and run its tests" in b["text"] for b in head)
    harness.assert_requests_valid()
    assert_nothing_lost(harness)


def test_report_breaks_the_context_down(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=50_000)
    coding_turns(brain, harness, 2)
    report = harness.policy.report()
    assert set(report) >= {
        "system",
        "tools",
        "messages",
        "tool_results",
        "memory",
        "total",
        "threshold",
        "until_compaction",
    }
    assert report["tool_results"] > report["messages"] > 0 and report["tools"] > 0
    assert report["until_compaction"] == 50_000 - report["total"]
    assert report["total"] == request_tokens(harness.agent.build_request())


def test_the_report_renders_as_the_context_command_shows_it(make_session):
    """The REPL's ``/context`` renders the policy's report itself."""
    from memagent.ui.commands import format_context_report

    brain = PlannedBrain()
    harness = make_session(brain, threshold=50_000)
    coding_turns(brain, harness, 1)
    report = harness.policy.report()
    text = format_context_report(report)
    assert text.splitlines()[0].startswith(f"context: {report['total']:,} tokens") and "tool results" in text
    assert "compaction at 50,000" in text and ".transcripts/20261121-100000-aaaa.jsonl" in text


def test_an_unknown_small_model_falls_back_to_the_session_model(make_session):
    """A local server with one model answers 404 for the small model: the main model summarises."""

    def summary(request):
        if request.model == SMALL:
            raise ModelError("API rejected the request (404 not_found_error): model: small-model")
        return reply("## Goal\nwritten by the session model")

    brain = PlannedBrain()
    harness = make_session(brain, threshold=3_000, summary=summary)
    coding_turns(brain, harness, 5)
    record = next(r for r in harness.records() if r["type"] == "compaction")
    assert record["summary"] == "## Goal\nwritten by the session model" and "fallback" not in record
    assert record["summary_model"] == harness.settings.model
    assert [r.model for r in harness.summary_requests()[:2]] == [SMALL, None]
