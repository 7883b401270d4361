"""Headless output in Claude Code's shapes, read by the ``claude-agent-sdk`` itself.

The real CLI runs against the fake Messages API; its stdout goes through the SDK's public
``query()`` (a replaying transport) or the SDK runs memagent as its CLI, so every line is
parsed by the SDK's own message parser into the SDK's own types.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

from fakeapi import FakeAnthropic, delay, error, text, tool, turn
from sdk_kit import memagent_cli, parse_with_sdk, sdk_env


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _run(run_cli, fake, project, *flags, prompt="hello", **kwargs):
    return run_cli(
        "-C", str(project), "--no-memory", "-p", prompt, *flags, env={"ANTHROPIC_BASE_URL": fake.url}, **kwargs
    )


def _kinds(messages):
    return [type(m).__name__ for m in messages]


def test_a_plain_answer_parses_into_the_sdk_types(run_cli, fake, project):
    fake.add(text("Forty-two."))
    result = _run(run_cli, fake, project, "--output-format", "stream-json", "--verbose")
    assert result.returncode == 0, result.stderr
    messages = parse_with_sdk(result.stdout)
    assert _kinds(messages) == ["SystemMessage", "AssistantMessage", "ResultMessage"]
    init, answer, final = messages
    assert init.subtype == "init" and init.data["session_id"] == final.session_id
    assert init.data["cwd"] == str(project) and "read_file" in init.data["tools"]
    assert {"model", "permissionMode", "mcp_servers", "slash_commands", "apiKeySource", "skills"} <= set(init.data)
    assert init.data["apiKeySource"] == "ANTHROPIC_API_KEY" and init.data["permissionMode"] == "default"
    assert answer.content == [TextBlock(text="Forty-two.")] and answer.model == "claude-sonnet-5-5"
    assert answer.message_id.startswith("msg_") and answer.stop_reason == "end_turn"
    assert answer.usage["output_tokens"] > 0 and answer.session_id == final.session_id
    assert final.subtype == "success" and final.is_error is False and final.result == "Forty-two."
    assert final.num_turns == 1 and final.stop_reason == "end_turn" and final.permission_denials == []
    assert 0 <= final.duration_api_ms <= final.duration_ms
    assert final.total_cost_usd > 0 and final.usage["output_tokens"] == answer.usage["output_tokens"]
    assert final.model_usage["claude-sonnet-5-5"]["outputTokens"] == answer.usage["output_tokens"]
    uuids = [json.loads(line)["uuid"] for line in result.stdout.splitlines()]
    assert len(set(uuids)) == 3 and final.uuid == uuids[-1]


def test_tool_use_and_its_result_parse_as_assistant_and_user_messages(run_cli, fake, project):
    (project / "notes.txt").write_text("alpha\n")
    fake.add(turn("Let me look.", tool("read_file", {"path": "notes.txt"}, id="toolu_read")), text("It says alpha."))
    result = _run(run_cli, fake, project, "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    messages = parse_with_sdk(result.stdout)
    assert _kinds(messages) == [
        "SystemMessage",
        "AssistantMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ResultMessage",
    ]
    _, said, call, outcome, answer, final = messages
    assert said.content == [TextBlock(text="Let me look.")]
    assert call.content == [ToolUseBlock(id="toolu_read", name="read_file", input={"path": "notes.txt"})]
    assert said.message_id == call.message_id != answer.message_id  # one API message, one line per block
    assert said.stop_reason == "tool_use"
    [block] = outcome.content
    assert isinstance(block, ToolResultBlock) and block.tool_use_id == "toolu_read" and block.is_error is False
    assert "alpha" in block.content and outcome.parent_tool_use_id is None
    assert final.num_turns == 2 and final.result == "It says alpha."
    assert fake.requests[1]["messages"][-1]["content"][0]["content"] == block.content  # what the model got


def test_an_api_error_is_an_error_result_with_errors(run_cli, fake, project):
    fake.add(error(400, "bad things"))
    result = _run(run_cli, fake, project, "--output-format", "stream-json")
    assert result.returncode == 1
    init, final = parse_with_sdk(result.stdout)
    assert isinstance(init, SystemMessage) and isinstance(final, ResultMessage)
    assert final.subtype == "error_during_execution" and final.is_error is True
    assert len(final.errors) == 1 and "bad things" in final.errors[0]
    assert final.terminal_reason == "model_error" and final.num_turns == 1
    assert result.stderr.startswith("memagent: ") and result.stderr.count("\n") == 1


def test_max_turns_is_error_max_turns_with_the_calls_made(run_cli, fake, project):
    fake.add(*[tool("glob", {"pattern": "*"}) for _ in range(3)], text("never reached"))
    result = _run(run_cli, fake, project, "--yes", "--max-turns", "2", "--output-format", "stream-json")
    assert result.returncode == 1
    messages = parse_with_sdk(result.stdout)
    final = messages[-1]
    assert final.subtype == "error_max_turns" and final.is_error and final.num_turns == 2
    assert final.terminal_reason == "max_turns" and "2 model calls" in final.errors[0]
    assert _kinds(messages).count("UserMessage") == 2 and len(fake.requests) == 2


def test_a_denied_tool_is_a_permission_denial(run_cli, fake, project):
    fake.add(tool("bash", {"command": "touch made.txt"}, id="toolu_bash"), text("I could not."))
    result = _run(run_cli, fake, project, "--output-format", "stream-json")  # no --yes: nobody to approve
    assert result.returncode == 0, result.stderr
    messages = parse_with_sdk(result.stdout)
    [outcome] = [m for m in messages if isinstance(m, UserMessage)]
    assert outcome.content[0].is_error is True
    final = messages[-1]
    assert final.permission_denials == [
        {"tool_name": "bash", "tool_use_id": "toolu_bash", "tool_input": {"command": "touch made.txt"}}
    ]
    assert not (project / "made.txt").exists()


def test_a_failing_tool_is_not_a_denial(run_cli, fake, project):
    fake.add(
        tool("read_file", {"path": "missing.txt"}, id="toolu_r"), tool("read_file", {}, id="toolu_bad"), text("ok")
    )
    result = _run(run_cli, fake, project, "--output-format", "json")
    final = json.loads(result.stdout)
    assert final["subtype"] == "success" and final["permission_denials"] == []


@pytest.mark.parametrize("scenario", ["success", "error", "max_turns"])
def test_the_json_result_parses_as_a_result_message(run_cli, fake, project, scenario):
    steps = {
        "success": [text("Done.")],
        "error": [error(400, "bad request")],
        "max_turns": [tool("glob", {"pattern": "*"}), text("x")],
    }[scenario]
    fake.add(*steps)
    result = _run(run_cli, fake, project, "--yes", "--max-turns", "1", "--output-format", "json")
    [line] = result.stdout.splitlines()
    [final] = parse_with_sdk(line)
    assert isinstance(final, ResultMessage)
    expected = {"success": "success", "error": "error_during_execution", "max_turns": "error_max_turns"}[scenario]
    assert final.subtype == expected and final.is_error == (scenario != "success")
    assert result.returncode == (0 if scenario == "success" else 1)
    assert final.session_id and final.uuid and isinstance(final.duration_api_ms, int)


def test_a_sigterm_mid_turn_ends_with_a_result_the_sdk_reads(cli_env, fake, project):
    fake.add(delay(60, text("too late")))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memagent",
            "-C",
            str(project),
            "--no-memory",
            "-p",
            "wait",
            "--output-format",
            "stream-json",
        ],
        env={**cli_env, "ANTHROPIC_BASE_URL": fake.url},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.wait_for_requests(1, timeout=120), "the request never came"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    messages = parse_with_sdk(out)
    final = messages[-1]
    assert isinstance(messages[0], SystemMessage) and isinstance(final, ResultMessage)
    assert final.is_error and final.subtype == "error_during_execution"
    assert final.errors == ["interrupted by SIGTERM"] and final.terminal_reason == "aborted_streaming"
    assert err.strip().splitlines()[-1] == "memagent: interrupted by SIGTERM" and "Traceback" not in err


def _interrupt_and_ask_again(options, first_question, running, next_question):
    """With the SDK's client: ask ``first_question``, wait for ``running()`` (an async wait for
    the turn to be under way), interrupt, read that turn's messages, then ask ``next_question``.
    (first turn's messages, second turn's, seconds from the interrupt to the first result)."""
    from claude_agent_sdk import ClaudeSDKClient

    async def drive():
        async with ClaudeSDKClient(options=options) as client:
            await client.query(first_question)
            await running(client)
            started = asyncio.get_running_loop().time()
            await asyncio.wait_for(client.interrupt(), 30)
            first = [message async for message in client.receive_response()]
            took = asyncio.get_running_loop().time() - started
            await client.query(next_question)
            second = [message async for message in client.receive_response()]
        return first, second, took

    return asyncio.run(drive())


def test_the_sdk_clients_interrupt_stops_the_running_turn_and_the_session_goes_on(tmp_path, fake, project):
    """``ClaudeSDKClient.interrupt()`` mid-turn: memagent reads the control request while the turn
    runs, answers it, ends that turn with a result, and takes the next message."""
    fake.add(delay(60, text("too late")), text("Second answer."))
    options = ClaudeAgentOptions(cli_path=memagent_cli(tmp_path, project, "--no-memory"), env=sdk_env(fake.url))

    async def model_asked(client):
        assert await asyncio.to_thread(fake.wait_for_requests, 1, 120), "the request never came"

    first, second, took = _interrupt_and_ask_again(options, "wait for it", model_asked, "and now?")
    stopped, answered = first[-1], second[-1]
    assert isinstance(stopped, ResultMessage) and stopped.is_error and stopped.subtype == "error_during_execution"
    assert stopped.terminal_reason == "aborted_streaming" and took < 20
    assert isinstance(answered, ResultMessage) and answered.result == "Second answer." and not answered.is_error
    assert answered.session_id == stopped.session_id


def test_an_interrupt_while_a_command_runs_stops_it_and_the_next_message_is_answered(tmp_path, fake, project):
    fake.add(tool("bash", {"command": "sleep 60"}, id="toolu_sleep"), text("Answered after the stop."))
    cli = memagent_cli(tmp_path, project, "--no-memory", "--yes")
    options = ClaudeAgentOptions(cli_path=cli, env=sdk_env(fake.url))

    async def command_running(client):
        async for message in client.receive_messages():  # until the command is asked for
            if isinstance(message, AssistantMessage) and isinstance(message.content[-1], ToolUseBlock):
                break
        await asyncio.sleep(1.0)  # and has started

    first, second, took = _interrupt_and_ask_again(options, "sleep a minute", command_running, "are you there?")
    assert first[-1].is_error and first[-1].terminal_reason == "aborted_tools" and took < 20
    assert second[-1].result == "Answered after the stop." and not second[-1].is_error
    assert len(fake.requests) == 2  # the stopped command's turn asked the model nothing more


def test_the_agent_sdk_runs_memagent_as_its_cli(tmp_path, fake, project):
    """``ClaudeAgentOptions(cli_path=...)``: the SDK starts memagent with its own flags
    (``--output-format stream-json --verbose --system-prompt "" --input-format stream-json``, no
    ``-p``), sends its ``initialize`` request and the prompt on stdin, and reads the answer."""
    (project / "notes.txt").write_text("alpha\n")
    fake.add(tool("read_file", {"path": "notes.txt"}, id="toolu_r"), text("It says alpha."))
    cli = memagent_cli(tmp_path, project, "--no-memory")
    stderr: list[str] = []
    options = ClaudeAgentOptions(cli_path=cli, env=sdk_env(fake.url), stderr=stderr.append, max_turns=5)

    async def ask():
        return [message async for message in query(prompt="what is in notes.txt?", options=options)]

    messages = asyncio.run(ask())
    kinds = _kinds(messages)
    assert kinds == ["SystemMessage", "AssistantMessage", "UserMessage", "AssistantMessage", "ResultMessage"], stderr
    final = messages[-1]
    assert final.subtype == "success" and final.result == "It says alpha." and final.num_turns == 2
    assert isinstance(messages[1], AssistantMessage) and messages[1].content[0].name == "read_file"
    assert fake.requests[0]["messages"][0]["content"][0]["text"] == "what is in notes.txt?"
    # --system-prompt "" (the SDK's default): memagent's base prompt is left out
    assert "You are memagent" not in json.dumps(fake.requests[0].get("system"))
    assert fake.errors == []


# ------------------------------------------------------------------ stream-json input


def _user_line(text, **extra):
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}, **extra})


def _stream(run_cli, fake, project, lines, *flags):
    return run_cli(
        "-C",
        str(project),
        "--no-memory",
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        *flags,
        env={"ANTHROPIC_BASE_URL": fake.url},
        input="".join(line + "\n" for line in lines),
    )


def test_max_turns_caps_every_turn_of_a_stdin_stream(run_cli, fake, project):
    fake.add(tool("glob", {"pattern": "*"}), tool("glob", {"pattern": "*"}), text("Done."))
    result = _stream(run_cli, fake, project, [_user_line("loop"), _user_line("again")], "--yes", "--max-turns", "2")
    results = [json.loads(line) for line in result.stdout.splitlines() if json.loads(line)["type"] == "result"]
    assert [(r["subtype"], r["num_turns"]) for r in results] == [("error_max_turns", 2), ("success", 1)]
    assert len(fake.requests) == 3


def test_two_messages_on_stdin_are_two_turns_of_one_session(run_cli, fake, project):
    fake.add(text("Answer one."), text("Answer two."))
    blocks = [{"type": "text", "text": "second"}, {"type": "text", "text": "question"}]
    result = _stream(run_cli, fake, project, [_user_line("first question"), _user_line(blocks)])
    assert result.returncode == 0, result.stderr
    messages = parse_with_sdk(result.stdout)
    assert _kinds(messages) == ["SystemMessage", "AssistantMessage", "ResultMessage"] * 2
    first, second = messages[2], messages[5]
    assert (first.result, second.result) == ("Answer one.", "Answer two.")
    assert first.session_id == second.session_id == messages[0].data["session_id"]
    texts = [[b["text"] for b in m["content"] if b["type"] == "text"] for m in fake.requests[1]["messages"]]
    assert texts[:2] == [["first question"], ["Answer one."]] and texts[2][0] == "second\n\nquestion"
    assert len(list((project / ".transcripts").glob("*.jsonl"))) == 1


def test_bad_input_lines_get_an_error_result_and_the_rest_still_runs(run_cli, fake, project):
    fake.add(text("Still here."))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    lines = ["this is not json", json.dumps({"type": "bogus"}), _user_line([image]), _user_line("real question")]
    result = _stream(run_cli, fake, project, lines)
    assert result.returncode == 1  # some input failed
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    errors = [o for o in objects if o["type"] == "result" and o["is_error"]]
    assert [e["errors"][0].split(":")[0] for e in errors] == ["stdin line 1", "stdin line 2", "stdin line 3"]
    assert "not JSON" in errors[0]["errors"][0] and "'bogus'" in errors[1]["errors"][0]
    assert "no text" in errors[2]["errors"][0]
    assert objects[-1]["subtype"] == "success" and objects[-1]["result"] == "Still here."
    assert len(result.stderr.strip().splitlines()) == 3 and "Traceback" not in result.stderr
    assert len(fake.requests) == 1
    parse_with_sdk(result.stdout)  # every line, the error results too, is one the SDK reads


def test_control_requests_and_replayed_messages(run_cli, fake, project):
    fake.add(text("Hi."))
    lines = [
        json.dumps({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize"}}),
        json.dumps({"type": "control_request", "request_id": "req_2", "request": {"subtype": "set_model"}}),
        json.dumps({"type": "keep_alive"}),
        _user_line("hello", uuid="11111111-2222-4333-8444-555555555555"),
    ]
    result = _stream(run_cli, fake, project, lines, "--replay-user-messages")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    init_answer, refused = objects[0], objects[1]
    assert init_answer["type"] == "control_response" and init_answer["response"]["subtype"] == "success"
    assert init_answer["response"]["request_id"] == "req_1" and "commands" in init_answer["response"]["response"]
    assert refused["response"] == {
        "subtype": "error",
        "request_id": "req_2",
        "error": "memagent does not support the control request 'set_model'",
    }
    replayed = next(o for o in objects if o["type"] == "user")
    assert replayed["isReplay"] is True and replayed["uuid"] == "11111111-2222-4333-8444-555555555555"
    assert replayed["message"] == {"role": "user", "content": "hello"}
    assert objects[-1]["result"] == "Hi."


def test_stream_input_without_any_message_is_an_error(run_cli, fake, project):
    result = _stream(run_cli, fake, project, [])
    assert result.returncode == 2 and "no message on stdin" in result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["is_error"] is True and fake.requests == []


@pytest.mark.parametrize(
    "flags, message",
    [
        (["-p", "--input-format", "stream-json", "--output-format", "json"], "needs --output-format stream-json"),
        (["-p", "a prompt", "--input-format", "stream-json", "--output-format", "stream-json"], "come on stdin"),
        (["-p", "hi", "--replay-user-messages"], "--replay-user-messages goes with"),
        (["-p", "hi", "--input-format", "yaml"], "--input-format must be one of text, stream-json"),
    ],
)
def test_stream_input_usage_errors(run_cli, project, flags, message):
    result = run_cli("-C", str(project), *flags)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1


# ------------------------------------------------------------------ one session id across -c / -r


def _json_run(run_cli, fake, project, prompt, *flags):
    result = _run(run_cli, fake, project, "--output-format", "json", *flags, prompt=prompt)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _texts(request):
    return [b["text"] for m in request["messages"] for b in m["content"] if b.get("type") == "text"]


def test_resume_and_continue_report_the_first_runs_session_id(run_cli, fake, project):
    fake.add(text("one"), text("two"), text("three"), text("four"))
    first = _json_run(run_cli, fake, project, "first")["session_id"]
    assert _json_run(run_cli, fake, project, "second", "-r", first)["session_id"] == first
    assert _json_run(run_cli, fake, project, "third", "-c")["session_id"] == first
    # -r with that id again continues the newest part of the session, not its first transcript
    assert _json_run(run_cli, fake, project, "fourth", "-r", first)["session_id"] == first
    assert _texts(fake.requests[-1]) == ["first", "one", "second", "two", "third", "three", "fourth"]


def test_session_id_names_a_new_session_that_r_continues(run_cli, fake, project):
    fake.add(text("one"), text("two"))
    chosen = "3f2b5d3e-1111-4222-8333-444455556666"
    assert _json_run(run_cli, fake, project, "first", "--session-id", chosen.upper())["session_id"] == chosen
    assert _json_run(run_cli, fake, project, "second", "-r", chosen)["session_id"] == chosen
    assert _texts(fake.requests[-1]) == ["first", "one", "second"]
    again = _run(run_cli, fake, project, "--session-id", chosen, "--output-format", "json")
    assert again.returncode == 2 and "already in use; continue it with -r" in again.stderr
    assert json.loads(again.stdout)["errors"] == [again.stderr.removeprefix("memagent: ").strip()]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--session-id", "not-a-uuid"], "is not a UUID"),
        (["--session-id", "3f2b5d3e-1111-4222-8333-444455556666", "-c"], "--session-id starts a new session"),
    ],
)
def test_session_id_usage_errors(run_cli, project, flags, message):
    result = run_cli("-C", str(project), "-p", "hi", *flags)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1


# ------------------------------------------------------------------ errors as JSON, cost


@pytest.mark.parametrize(
    "flags, env, message",
    [
        (["-p", "hi", "--max-turns", "abc"], {}, "--max-turns: 'abc' is not a whole number"),
        (["-p", "hi", "--fallback-model", "claude-haiku-4-5"], {}, "--fallback-model is a Claude Code option"),
        (["-p", "--input-format", "stream-json", "--output-format", "json"], {}, "needs --output-format stream-json"),
        (["-p", "hi"], {"ANTHROPIC_API_KEY": ""}, "no API key"),
        (["-p", "-"], {}, "stdin was empty"),
        (["-p", "hi", "-r", "no-such-session"], {}, "no session 'no-such-session'"),
    ],
)
@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_errors_before_the_turn_are_a_json_result_too(run_cli, project, flags, env, message, output_format):
    result = run_cli("-C", str(project), "--output-format", output_format, *flags, env=env)
    assert result.returncode in (1, 2) and result.stderr.count("\n") == 1 and message in result.stderr
    [line] = result.stdout.splitlines()
    [final] = parse_with_sdk(line)
    assert final.is_error and final.subtype == "error_during_execution" and final.num_turns == 0
    assert final.errors == [result.stderr.removeprefix("memagent: ").split("; see '")[0].strip()]


def test_text_output_never_gets_a_json_error(run_cli, project):
    result = run_cli("-C", str(project), "-p", "hi", "--max-turns", "abc")
    assert result.returncode == 2 and result.stdout == ""


def test_an_unknown_models_cost_is_null_not_zero(run_cli, fake, project):
    fake.add(text("local answer"), error(500, "down"))
    ok = _run(run_cli, fake, project, "-m", "my-local-model", "--output-format", "json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["total_cost_usd"] is None
    failed = _run(run_cli, fake, project, "-m", "my-local-model", "--output-format", "json")
    final = json.loads(failed.stdout)
    assert failed.returncode == 1 and final["total_cost_usd"] is None and final["modelUsage"] == {}


def test_a_known_models_cost_is_zero_when_nothing_was_spent(run_cli, fake, project):
    fake.add(error(400, "bad request"))
    final = json.loads(_run(run_cli, fake, project, "--output-format", "json").stdout)
    assert final["is_error"] and final["total_cost_usd"] == 0.0


def test_the_agent_sdk_client_holds_a_two_turn_conversation_with_memagent(tmp_path, fake, project):
    from claude_agent_sdk import ClaudeSDKClient

    (project / "notes.txt").write_text("alpha\n")
    fake.add(tool("read_file", {"path": "notes.txt"}, id="toolu_r"), text("It says alpha."), text("You asked twice."))
    cli = memagent_cli(tmp_path, project, "--no-memory")
    options = ClaudeAgentOptions(cli_path=cli, env=sdk_env(fake.url), allowed_tools=["Read"], max_turns=4)

    async def converse():
        turns = []
        async with ClaudeSDKClient(options=options) as client:
            for question in ("what is in notes.txt?", "what did I ask?"):
                await client.query(question)
                turns.append([message async for message in client.receive_response()])
            await client.interrupt()  # between turns: acknowledged, nothing to stop
        return turns

    first, second = asyncio.run(converse())
    assert first[-1].result == "It says alpha." and second[-1].result == "You asked twice."
    assert first[-1].session_id == second[-1].session_id
    # --allowedTools Read (from allowed_tools) let the read run in print mode without --yes
    [outcome] = [m for m in first if isinstance(m, UserMessage)]
    assert outcome.content[0].is_error is False and first[-1].permission_denials == []
    assert _texts(fake.requests[-1])[:3] == ["what is in notes.txt?", "It says alpha.", "what did I ask?"]
