"""The agent loop against scripted models: every path ends with a history the API accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memagent.agent.feature import BaseFeature, ToolCall, TurnInput
from memagent.agent.loop import Agent, Approval
from memagent.context.conversation import Conversation
from memagent.context.transcript import TranscriptWriter, read_records
from memagent.events import AssistantText, Notice, ToolCallFinished, ToolCallStarted, TurnEnded
from memagent.llm.invariants import request_problems
from memagent.llm.items import Injected, item, wire_block
from memagent.llm.scripted import FunctionModel, ScriptedModel, reply, tool_call
from memagent.llm.types import ModelError, PromptTooLongError, Usage, text_block
from memagent.markers import Marker
from memagent.permissions import Effect, declares
from memagent.tools.base import ToolContext, ToolError, ToolInput, ToolRegistry, tool


class EchoIn(ToolInput):
    text: str


class SleepIn(ToolInput):
    pass


def build_tools(calls: list[str]) -> ToolRegistry:
    @tool("echo", EchoIn, key_argument="text", effects=declares(Effect.READ))
    def echo(inp: EchoIn, ctx: ToolContext) -> str:
        """Echo the text back."""
        calls.append(inp.text)
        if inp.text == "fail":
            raise ToolError("echo was told to fail")
        return f"echo: {inp.text}"

    @tool("guarded", EchoIn, effects=declares(Effect.RUN))
    def guarded(inp: EchoIn, ctx: ToolContext) -> str:
        """A tool that needs approval."""
        calls.append("guarded:" + inp.text)
        return "guarded ran"

    @tool("interrupt", SleepIn, effects=declares(Effect.READ))
    def interrupt(inp: SleepIn, ctx: ToolContext) -> str:
        """Simulates Ctrl-C arriving while a tool runs."""
        raise KeyboardInterrupt

    return ToolRegistry.of([echo, guarded, interrupt])


def make_agent(tmp_path: Path, model, **kwargs) -> tuple[Agent, list[str]]:
    calls: list[str] = []
    writer = TranscriptWriter.open(tmp_path / ".transcripts", "s1")
    agent = Agent(
        model=model,
        tools=build_tools(calls),
        tool_context=ToolContext(root=tmp_path),
        system=[text_block("system prompt")],
        conversation=Conversation(recorder=writer, session_id="s1"),
        **kwargs,
    )
    return agent, calls


def assert_valid(model: FunctionModel) -> None:
    for request in model.requests:
        assert request_problems(request.messages) == []


def run(agent: Agent, text: str) -> list:
    return list(agent.run_turn(text))


def test_plain_answer_streams_text_and_records_transcript(tmp_path):
    model = ScriptedModel([reply("Hello there.")])
    agent, _ = make_agent(tmp_path, model)
    events = run(agent, "hi")
    assert [e.text for e in events if isinstance(e, AssistantText)] == ["Hello there."]
    assert events[-1] == TurnEnded("end_turn", final_text="Hello there.", usage=Usage().to_dict())
    records = read_records(tmp_path / ".transcripts" / "s1.jsonl").records
    assert [(r["role"], r["content"][0]["text"]) for r in records] == [("user", "hi"), ("assistant", "Hello there.")]


def test_tool_round_trip_puts_results_first_in_next_user_message(tmp_path):
    model = ScriptedModel([reply("Let me check.", tool_call("echo", {"text": "a"}, id="t1")), reply("Done.")])
    agent, calls = make_agent(tmp_path, model)
    events = run(agent, "go")
    assert calls == ["a"]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started[0].summary == "a"
    second = model.requests[1].messages
    assert second[-1]["role"] == "user"
    assert second[-1]["content"][0] == {"type": "tool_result", "tool_use_id": "t1", "content": "echo: a"}
    assert events[-1].final_text == "Done."
    assert_valid(model)


def test_parallel_calls_answered_in_order(tmp_path):
    model = ScriptedModel(
        [reply(tool_call("echo", {"text": "1"}, id="a"), tool_call("echo", {"text": "2"}, id="b")), reply("ok")]
    )
    agent, calls = make_agent(tmp_path, model)
    run(agent, "both")
    assert calls == ["1", "2"]
    ids = [b["tool_use_id"] for b in model.requests[1].messages[-1]["content"]]
    assert ids == ["a", "b"]
    assert_valid(model)


@pytest.mark.parametrize(
    "call, expected",
    [
        (tool_call("nope", {}, id="x"), "Unknown tool 'nope'"),
        (tool_call("echo", {"wrong": 1}, id="x"), "Invalid input for echo"),
        (tool_call("echo", {"text": "fail"}, id="x"), "echo was told to fail"),
    ],
)
def test_tool_failures_become_error_results(tmp_path, call, expected):
    model = ScriptedModel([reply(call), reply("recovered")])
    agent, _ = make_agent(tmp_path, model)
    events = run(agent, "try")
    finished = [e for e in events if isinstance(e, ToolCallFinished)][0]
    assert finished.is_error and expected in finished.content
    result = model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True and expected in result["content"]
    assert events[-1].stop_reason == "end_turn"
    assert_valid(model)


def test_non_interactive_refuses_tools_needing_approval(tmp_path):
    model = ScriptedModel([reply(tool_call("guarded", {"text": "x"}, id="g")), reply("ok")])
    agent, calls = make_agent(tmp_path, model, non_interactive=True)
    run(agent, "do it")
    assert calls == []
    result = model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] and "--yes" in result["content"]


def test_approver_always_is_remembered_for_exactly_that_call(tmp_path):
    asked: list[str] = []

    def approver(t, raw, summary, reason):
        asked.append(raw["text"])
        return Approval.ALWAYS

    script = [
        reply(tool_call("guarded", {"text": "1"})),
        reply("a"),
        reply(tool_call("guarded", {"text": "1"})),
        reply("b"),
        reply(tool_call("guarded", {"text": "2"})),
        reply("c"),
    ]
    agent, calls = make_agent(tmp_path, ScriptedModel(script), approver=approver)
    for prompt in ("one", "one again", "two"):
        run(agent, prompt)
    assert asked == ["1", "2"]  # the same call is not asked again; another one is
    assert calls == ["guarded:1", "guarded:1", "guarded:2"]


def test_denied_call_tells_the_model(tmp_path):
    model = ScriptedModel([reply(tool_call("guarded", {"text": "1"})), reply("fine")])
    agent, calls = make_agent(tmp_path, model, approver=lambda t, raw, s, why: Approval.DENY)
    run(agent, "x")
    assert calls == []
    assert "did not approve" in model.requests[1].messages[-1]["content"][0]["content"]


def test_model_error_ends_turn_and_next_turn_is_valid(tmp_path):
    model = ScriptedModel([ModelError("API error 529 (overloaded)"), reply("back")])
    agent, _ = make_agent(tmp_path, model)
    first = run(agent, "hello")
    assert first[-1].stop_reason == "error" and "529" in first[-1].error
    second = run(agent, "again")
    assert second[-1].final_text == "back"
    texts = [b["text"] for b in model.requests[1].messages[0]["content"]]
    assert texts[0] == "hello" and texts[-1] == "again"
    assert_valid(model)


def test_ctrl_c_inside_tool_cancels_turn_and_keeps_history_valid(tmp_path):
    model = ScriptedModel(
        [reply(tool_call("echo", {"text": "1"}, id="e"), tool_call("interrupt", {}, id="i")), reply("next")]
    )
    agent, calls = make_agent(tmp_path, model)
    events = run(agent, "work")
    assert events[-1].stop_reason == "cancelled"
    results = agent.conversation.messages[-1]["content"]
    assert [b["tool_use_id"] for b in results] == ["e", "i"]
    assert results[0]["content"] == "echo: 1" and results[1]["is_error"]
    run(agent, "go on")
    assert_valid(model)


def test_ctrl_c_mid_stream_keeps_partial_text(tmp_path):
    class CutModel(FunctionModel):
        def stream(self, request):
            self.requests.append(request)
            if len(self.requests) == 1:
                yield from [AssistantTextDelta("partial ans")]
                raise KeyboardInterrupt
            yield from super().stream(request)

    from memagent.llm.types import TextDelta as AssistantTextDelta

    model = CutModel(lambda r: reply("full"))
    agent, _ = make_agent(tmp_path, model)
    events = run(agent, "q")
    assert events[-1].stop_reason == "cancelled"
    assert "partial ans" in agent.conversation.messages[-1]["content"][0]["text"]
    run(agent, "q2")
    assert_valid(model)


def test_repair_after_interrupt_outside_generator(tmp_path):
    model = ScriptedModel([reply(tool_call("echo", {"text": "1"}, id="e")), reply("after")])
    agent, _ = make_agent(tmp_path, model)
    gen = agent.run_turn("start")
    for event in gen:
        if isinstance(event, ToolCallStarted):
            break  # the consumer was interrupted while rendering
    gen.close()
    agent.repair_after_interrupt()
    run(agent, "continue")
    assert_valid(model)


def test_max_tokens_without_tool_reports(tmp_path):
    model = ScriptedModel([reply("cut off", stop_reason="max_tokens")])
    agent, _ = make_agent(tmp_path, model)
    events = run(agent, "long")
    assert any(isinstance(e, Notice) and "max_tokens" in e.text for e in events)
    assert events[-1].stop_reason == "max_tokens"


def test_pause_turn_continues(tmp_path):
    model = ScriptedModel([reply("thinking...", stop_reason="pause_turn"), reply("done")])
    agent, _ = make_agent(tmp_path, model)
    events = run(agent, "q")
    assert events[-1].final_text == "done"
    assert len(model.requests) == 2


def test_refusal_is_reported_and_history_stays_usable(tmp_path):
    model = ScriptedModel([reply("I can't help with that.", stop_reason="refusal"), reply("ok")])
    agent, _ = make_agent(tmp_path, model)
    events = run(agent, "bad")
    assert events[-1].stop_reason == "refusal"
    run(agent, "good")
    assert_valid(model)


def test_prompt_too_long_asks_the_policy_to_shrink_and_retries(tmp_path):
    recovered: list[int] = []

    class Policy:
        def __init__(self, can_shrink: bool = True):
            self.can_shrink = can_shrink

        def view(self, conversation):
            return conversation.messages

        def before_request(self, conversation):
            return iter(())

        def force_compact(self, conversation, focus=None):
            return iter(())

        def observe(self, usage, sent):
            pass

        def fit(self, blocks):
            return blocks, []

        def recover_too_long(self, conversation, attempt):
            recovered.append(attempt)
            yield Notice("made smaller")
            return self.can_shrink

    model = ScriptedModel([PromptTooLongError("prompt is too long"), reply("fits now")])
    agent, _ = make_agent(tmp_path, model, context=Policy())
    events = run(agent, "big")
    assert recovered == [1]
    assert events[-1].final_text == "fits now"

    recovered.clear()
    model2 = ScriptedModel([PromptTooLongError("prompt is too long")] * 2)
    agent2, _ = make_agent(tmp_path / "b", model2, context=Policy(can_shrink=False))
    events2 = run(agent2, "big")
    assert events2[-1].stop_reason == "error" and "could not be made smaller" in events2[-1].error
    assert recovered == [1] and model2.remaining == 1  # nothing changed: no pointless retry

    recovered.clear()
    model3 = ScriptedModel([PromptTooLongError("prompt is too long")] * 5 + [reply("never")])
    agent3, _ = make_agent(tmp_path / "c", model3, context=Policy())
    events3 = run(agent3, "big")
    assert events3[-1].stop_reason == "error" and recovered == [1, 2, 3, 4]
    assert_valid(model3)


class InjectingFeature(BaseFeature):
    name = "injecting"

    def turn_context(self, turn: TurnInput) -> Injected | None:
        return Injected(Marker.MEMORIES, "[Memory#m_1] the build uses make")

    def after_tools(self, names: list[str]) -> Injected | None:
        return Injected(Marker.REMINDER, "<reminder>update your todos</reminder>") if "echo" in names else None


def test_features_inject_into_newest_user_message_and_after_results(tmp_path):
    model = ScriptedModel([reply(tool_call("echo", {"text": "1"}, id="e")), reply("ok")])
    agent, _ = make_agent(tmp_path, model, features=[InjectingFeature()])
    run(agent, "build it")
    first = model.requests[0]
    assert all("Memory#" not in b["text"] for b in first.system)
    assert first.messages[-1]["content"][-1]["text"].startswith("[Memory#m_1]")
    last_user = model.requests[1].messages[-1]["content"]
    assert last_user[0]["type"] == "tool_result"
    assert item(last_user[-1]) == Injected(Marker.REMINDER, "<reminder>update your todos</reminder>")
    assert wire_block(last_user[-1]) == {"type": "text", "text": "<reminder>update your todos</reminder>"}
    assert_valid(model)


def test_transcript_is_flushed_after_each_message(tmp_path):
    seen: list[int] = []

    def answer(request):
        path = tmp_path / ".transcripts" / "s1.jsonl"
        seen.append(len(path.read_text().splitlines()))
        return reply("ok") if len(seen) > 1 else reply(tool_call("echo", {"text": "z"}))

    agent, _ = make_agent(tmp_path, FunctionModel(answer))
    run(agent, "q")
    # before the first call the user message is on disk; before the second, also the
    # assistant tool call and the tool results
    assert seen == [1, 3]
    lines = (tmp_path / ".transcripts" / "s1.jsonl").read_text().splitlines()
    assert all(json.loads(line)["type"] == "message" for line in lines)


class FlakyFile:
    """A transcript file whose writes fail (a full disk) until ``healed``."""

    def __init__(self, real):
        self.real = real
        self.healed = False

    def write(self, data):
        if not self.healed:
            raise OSError(28, "No space left on device")
        return self.real.write(data)

    def fileno(self):
        return self.real.fileno()

    def close(self):
        self.real.close()


def test_a_full_disk_loses_nothing_and_is_reported_once(tmp_path):
    model = ScriptedModel([reply("one"), reply("two"), reply("three")])
    agent, _ = make_agent(tmp_path, model)
    run(agent, "first")  # opens the file
    writer = agent.conversation.recorder
    flaky = FlakyFile(writer._fh)
    writer._fh = flaky
    events = run(agent, "second")
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "No space left" in notices[0].text and notices[0].level == "error"
    assert events[-1].final_text == "two"  # the turn itself went on
    assert writer.pending == 2
    flaky.healed = True
    events = run(agent, "third")
    assert any(isinstance(e, Notice) and "nothing was lost" in e.text for e in events)
    writer.close()
    loaded = read_records(tmp_path / ".transcripts" / "s1.jsonl")
    texts = [r["content"][0]["text"] for r in loaded.records if r["type"] == "message"]
    assert texts == ["first", "one", "second", "two", "third", "three"]


class GuardFeature(BaseFeature):
    """Refuses prompts mentioning 'secret' and echo calls with text 'rm'; records what ran."""

    name = "guard"

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

    def check_prompt(self, text: str) -> str | None:
        return "prompts about secrets are blocked" if "secret" in text else None

    def check_tool(self, call: ToolCall) -> str | None:
        return "no rm here" if call.input.get("text") == "rm" else None

    def after_tool(self, call: ToolCall, outcome) -> None:
        self.ran.append((call.name, outcome.content))


def test_a_feature_can_block_a_prompt_before_it_reaches_the_model(tmp_path):
    model = ScriptedModel([reply("never")])
    guard = GuardFeature()
    agent, _ = make_agent(tmp_path, model, features=[guard])
    events = run(agent, "tell me the secret")
    assert events[-1].stop_reason == "refused" and "secrets are blocked" in events[-1].error
    assert model.requests == [] and agent.conversation.messages == []


def test_a_feature_can_block_a_tool_call_and_sees_the_calls_that_ran(tmp_path):
    model = ScriptedModel(
        [
            reply(tool_call("echo", {"text": "rm"}, id="a"), tool_call("echo", {"text": "ok"}, id="b")),
            reply("done"),
        ]
    )
    guard = GuardFeature()
    agent, calls = make_agent(tmp_path, model, features=[guard], auto_approve=True)
    run(agent, "go")
    results = {b["tool_use_id"]: b for b in model.requests[1].messages[-1]["content"] if b["type"] == "tool_result"}
    assert results["a"]["is_error"] and "no rm here" in str(results["a"]["content"])
    assert not results["b"].get("is_error")
    assert [name for name, _ in guard.ran] == ["echo"]
    assert_valid(model)


class StopHookFeature(BaseFeature):
    name = "stop-hook"

    def __init__(self) -> None:
        self.asked = 0

    def continue_turn(self, text: str) -> Injected | None:
        self.asked += 1
        return (
            Injected(Marker.HOOK_CONTEXT, "[Context from the user's hooks, Stop:]\nrun the tests")
            if self.asked == 1
            else None
        )


def test_a_stop_hooks_continuation_is_injected_and_opens_no_user_turn(tmp_path):
    model = ScriptedModel([reply("done"), reply("tests pass")])
    agent, _ = make_agent(tmp_path, model, features=[StopHookFeature()])
    run(agent, "fix it")
    nudge = agent.conversation.messages[-2]["content"][0]
    assert item(nudge) == Injected(Marker.HOOK_CONTEXT, "[Context from the user's hooks, Stop:]\nrun the tests")
    assert agent.conversation.user_turns == 1
    assert_valid(model)
