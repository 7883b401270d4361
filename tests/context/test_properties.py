"""Property tests: random sessions through the real Agent, CompactingContext and transcript.

Histories mix tool calls, parallel calls, tool errors, reminders, cancellations (inside a tool and
mid model call), model errors, prompt-too-long retries, the compact tool, /compact, failing
summaries, and resumes into a new session, with a low threshold so auto-compaction lands at
random points. For every generated session:

- every request sent (main and summary) satisfies the Messages-API invariants;
- each transcript holds every message its conversation was ever given, in order, and only grows;
- resuming rebuilds exactly the live context.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context.ctx_harness import PlannedBrain, failing_summary, new_harness, settings_for
from memagent.context.resume import load_session, seed_conversation
from memagent.llm.scripted import reply, tool_call
from memagent.llm.types import ModelError, PromptTooLongError

CALL_KINDS = ("read", "bash", "missing", "cancel")


@dataclass(frozen=True)
class TurnPlan:
    rounds: tuple[tuple[tuple[str, int], ...], ...]  # each round: parallel calls (kind, size)
    ending: str  # answer | model_error | cancel_model
    compact_tool: bool
    too_long: bool
    after: str  # none | force | resume


calls = st.tuples(st.sampled_from(CALL_KINDS), st.sampled_from((50, 600, 2_500)))
turn_plans = st.builds(
    TurnPlan,
    rounds=st.lists(st.lists(calls, min_size=1, max_size=3).map(tuple), max_size=4).map(tuple),
    ending=st.sampled_from(("answer", "answer", "answer", "model_error", "cancel_model")),
    compact_tool=st.booleans(),
    too_long=st.booleans(),
    after=st.sampled_from(("none", "none", "none", "force", "resume")),
)


def call_block(kind: str, size: int, turn: int, number: int) -> dict:
    path = f"{'missing' if kind == 'missing' else 'cancel' if kind == 'cancel' else 'src'}/t{turn}_{number}.py"
    if kind == "bash":
        return tool_call("bash", {"command": f"pytest -k t{turn}_{number} " + "v" * size})
    return tool_call("read_file", {"path": path})


def script_turn(brain: PlannedBrain, plan: TurnPlan, turn: int, sizes: dict[str, int]) -> None:
    brain.queue.clear()  # a cancelled turn may leave planned answers behind
    if plan.too_long:
        brain.add(PromptTooLongError("prompt is too long: 250000 tokens > 200000 maximum"))
    for round_number, round_calls in enumerate(plan.rounds):
        blocks = []
        for number, (kind, size) in enumerate(round_calls):
            block = call_block(kind, size, turn, round_number * 10 + number)
            sizes[block["input"].get("path", "")] = size
            blocks.append(block)
        brain.add(reply(f"Round {round_number}.", *blocks))
    if plan.compact_tool:
        brain.add(reply(tool_call("compact", {"focus": f"turn {turn}"})))
    if plan.ending == "model_error":
        brain.add(ModelError("overloaded after retries"))
    elif plan.ending == "cancel_model":
        brain.add(KeyboardInterrupt())
    else:
        brain.add(reply(f"Turn {turn} answered."))


def check_harness(harness, snapshots: list[bytes]) -> None:
    harness.assert_requests_valid()
    assert harness.transcript_messages() == harness.conversation.appended
    current = harness.writer.path.read_bytes()
    if snapshots:
        assert current.startswith(snapshots[-1]), "the transcript was rewritten"
    snapshots.append(current)


def reminder_every_other_round():
    state = {"rounds": 0}

    def hook(names: list[str]) -> str | None:
        state["rounds"] += 1
        return "<reminder>Update the todo list.</reminder>" if state["rounds"] % 2 == 0 else None

    return hook


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans=st.lists(turn_plans, min_size=1, max_size=7),
    threshold=st.integers(min_value=1_500, max_value=6_000),
    summary_fails=st.booleans(),
    batch=st.sampled_from((1, 3, 6)),
)
def test_random_sessions_keep_every_invariant(plans, threshold, summary_fails, batch):
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        sizes: dict[str, int] = {}
        brain = PlannedBrain()
        options = dict(
            settings=settings_for(threshold, micro_compact_batch=batch),
            summary=failing_summary if summary_fails else None,
            sizes=sizes,
            reminders=[reminder_every_other_round()],
        )
        harness = new_harness(root, brain, session_id="20261121-100000-s000", **options)
        snapshots: list[bytes] = []
        sessions = 0
        try:
            for turn, plan in enumerate(plans):
                script_turn(brain, plan, turn, sizes)
                harness.turn(f"Turn {turn}: please continue the work")
                check_harness(harness, snapshots)
                if plan.after == "force":
                    list(harness.policy.force_compact(harness.conversation, "random focus"))
                    check_harness(harness, snapshots)
                elif plan.after == "resume":
                    harness.writer.close()
                    resumed = load_session(harness.transcripts, harness.session_id)
                    assert resumed.messages == harness.conversation.messages
                    sessions += 1
                    harness = new_harness(root, brain, session_id=f"20261121-100000-s{sessions:03d}", **options)
                    seed_conversation(harness.conversation, resumed)
                    snapshots = []
                    check_harness(harness, snapshots)
            harness.writer.close()
            compactions = sum(
                h.count(b'"type":"compaction"') for h in (p.read_bytes() for p in harness.transcripts.glob("*.jsonl"))
            )
            event(f"compactions: {min(compactions, 3)}{'+' if compactions >= 3 else ''}")
            event(f"sessions: {sessions + 1}")
            final = load_session(harness.transcripts, harness.session_id)
            assert final.messages == harness.conversation.messages
        finally:
            harness.writer.close()
