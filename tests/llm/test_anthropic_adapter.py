"""The real anthropic SDK, through memagent's adapter, against the loopback fake API."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys

import pytest

from fakeapi import FakeAnthropic, cut, delay, error, stream_error, text, thinking, tool, turn
from memagent.llm.anthropic import AnthropicModel
from memagent.llm.protocol import ChatModel
from memagent.llm.types import (
    AuthenticationError,
    ModelError,
    ModelRequest,
    PromptTooLongError,
    ResponseComplete,
    StreamInterrupted,
    TextDelta,
    ToolUseStarted,
    tool_result_block,
    user_message,
)

MODEL = "claude-sonnet-4-6"
READ_TOOL = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
WRITE_TOOL = {
    "name": "write_file",
    "description": "Write a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
}


def make_request(*messages, tools=(READ_TOOL, WRITE_TOOL), max_tokens=1024) -> ModelRequest:
    return ModelRequest(
        system=[
            {"type": "text", "text": "You are a careful coding agent."},
            {"type": "text", "text": "Project: demo."},
        ],
        messages=list(messages) or [user_message("hello")],
        tools=list(tools),
        max_tokens=max_tokens,
    )


def adapter(fake: FakeAnthropic, **kwargs) -> AnthropicModel:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("api_key", "sk-test")
    return AnthropicModel(MODEL, base_url=fake.url, **kwargs)


def run(model: AnthropicModel, request: ModelRequest | None = None):
    events = list(model.stream(request or make_request()))
    assert isinstance(events[-1], ResponseComplete)
    assert not any(isinstance(e, ResponseComplete) for e in events[:-1])
    return events[:-1], events[-1].response


def test_adapter_satisfies_the_chat_model_protocol(fake_api):
    model = adapter(fake_api)
    assert isinstance(model, ChatModel)
    assert model.name == MODEL


def test_streamed_text_arrives_as_deltas_and_a_final_response(fake_api):
    fake_api.add(text("The answer is forty-two, as computed."))
    events, response = run(adapter(fake_api))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1, "the fake splits text into several deltas"
    assert "".join(deltas) == "The answer is forty-two, as computed."
    assert response.content == [{"type": "text", "text": "The answer is forty-two, as computed."}]
    assert response.stop_reason == "end_turn"
    assert response.model == MODEL
    assert response.id.startswith("msg_")
    assert response.usage.output_tokens > 0 and response.usage.context_tokens > 0
    assert fake_api.requests[0]["stream"] is True


def test_tool_input_is_accumulated_from_json_deltas(fake_api):
    payload = {"path": "src/ünïcode.py", "content": "def f():\n    return {'a': [1, 2, 3]}\n" * 3}
    fake_api.add(tool("write_file", payload, id="toolu_write1"))
    events, response = run(adapter(fake_api))
    assert ToolUseStarted("toolu_write1", "write_file") in events
    assert response.content == [{"type": "tool_use", "id": "toolu_write1", "name": "write_file", "input": payload}]
    assert response.stop_reason == "tool_use"
    assert response.tool_uses()[0]["input"] == payload


def test_parallel_tool_calls_keep_their_order(fake_api):
    fake_api.add(
        turn(
            "Reading both files.",
            tool("read_file", {"path": "a"}, id="toolu_a"),
            tool("read_file", {"path": "b"}, id="toolu_b"),
        )
    )
    events, response = run(adapter(fake_api))
    started = [e for e in events if isinstance(e, ToolUseStarted)]
    assert [e.id for e in started] == ["toolu_a", "toolu_b"]
    assert [b["type"] for b in response.content] == ["text", "tool_use", "tool_use"]
    assert [b["input"]["path"] for b in response.tool_uses()] == ["a", "b"]
    json.dumps(response.content)  # plain, serialisable dicts


@pytest.mark.parametrize("reason", ["end_turn", "max_tokens", "stop_sequence", "refusal", "pause_turn"])
def test_every_text_stop_reason_is_reported(fake_api, reason):
    fake_api.add(text("Partial or complete answer", stop_reason=reason))
    _, response = run(adapter(fake_api))
    assert response.stop_reason == reason
    assert response.text() == "Partial or complete answer"


def test_tool_use_stop_reason_is_reported(fake_api):
    fake_api.add(tool("read_file", {"path": "x"}))
    _, response = run(adapter(fake_api))
    assert response.stop_reason == "tool_use"


def test_a_tool_call_cut_by_max_tokens_is_dropped(fake_api):
    fake_api.add(
        turn(
            "Writing the file now.",
            tool("write_file", {"path": "a.py", "content": "x" * 200}, id="toolu_cut", truncate_at=40),
            stop_reason="max_tokens",
        )
    )
    events, response = run(adapter(fake_api))
    assert ToolUseStarted("toolu_cut", "write_file") in events
    assert response.stop_reason == "max_tokens"
    assert response.content == [{"type": "text", "text": "Writing the file now."}]
    assert response.tool_uses() == []


def test_a_complete_tool_call_before_the_cut_one_is_kept(fake_api):
    fake_api.add(
        turn(
            tool("read_file", {"path": "a"}, id="toolu_ok"),
            tool("write_file", {"path": "b", "content": "yyyy"}, id="toolu_half", truncate_at=5),
            stop_reason="max_tokens",
        )
    )
    _, response = run(adapter(fake_api))
    assert [b["id"] for b in response.tool_uses()] == ["toolu_ok"]
    assert response.stop_reason == "max_tokens"


def test_thinking_blocks_are_kept_with_their_signature(fake_api):
    fake_api.add(turn(thinking("Let me consider the file layout.", signature="sig-abc123"), "Done thinking."))
    events, response = run(adapter(fake_api))
    assert response.content[0] == {
        "type": "thinking",
        "thinking": "Let me consider the file layout.",
        "signature": "sig-abc123",
    }
    assert response.content[1] == {"type": "text", "text": "Done thinking."}
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Done thinking."


def test_whitespace_only_text_blocks_are_not_kept(fake_api):
    fake_api.add(turn("\n\n", tool("read_file", {"path": "a"}, id="toolu_ws")))
    _, response = run(adapter(fake_api))
    assert response.content == [{"type": "tool_use", "id": "toolu_ws", "name": "read_file", "input": {"path": "a"}}]


@pytest.mark.fake_api_errors_ok
@pytest.mark.parametrize(
    ("status", "word", "message"),
    [
        (429, "rate limited", "Number of request tokens has exceeded your per-minute rate limit"),
        (529, "overloaded", "Overloaded"),
        (500, "server error", "Internal server error"),
    ],
)
def test_retryable_errors_become_one_line_model_errors(fake_api, status, word, message):
    fake_api.add(error(status))
    with pytest.raises(ModelError) as info:
        list(adapter(fake_api).stream(make_request()))
    assert type(info.value) is ModelError
    assert str(info.value) == f"API error {status} ({word}): {message}"
    assert len(fake_api.requests) == 1


def test_the_sdk_retry_recovers_from_an_overload(fake_api):
    fake_api.add(error(529), text("Recovered."))
    _, response = run(adapter(fake_api, max_retries=1))
    assert response.text() == "Recovered."
    assert len(fake_api.requests) == 2


def test_exhausted_retries_are_named_in_the_message(fake_api):
    fake_api.add(error(529, "Overloaded\nplease retry"), error(529, "Overloaded\nplease retry"))
    with pytest.raises(ModelError) as info:
        list(adapter(fake_api, max_retries=1).stream(make_request()))
    assert str(info.value) == "API error 529 (overloaded) after 1 retry: Overloaded please retry"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 199000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
    ],
)
def test_prompt_too_long_is_its_own_error(fake_api, message):
    fake_api.add(error(400, message))
    with pytest.raises(PromptTooLongError) as info:
        list(adapter(fake_api).stream(make_request()))
    assert message.split(":")[0] in str(info.value)


def test_request_too_large_counts_as_prompt_too_long(fake_api):
    fake_api.add(error(413))
    with pytest.raises(PromptTooLongError):
        list(adapter(fake_api).stream(make_request()))


def test_other_bad_requests_are_plain_model_errors(fake_api):
    fake_api.add(error(400, "messages.0.content: Field required"))
    with pytest.raises(ModelError) as info:
        list(adapter(fake_api).stream(make_request()))
    assert type(info.value) is ModelError
    assert str(info.value) == "API rejected the request (400 invalid_request_error): messages.0.content: Field required"


def test_a_scripted_401_is_an_authentication_error(fake_api):
    fake_api.add(error(401))
    with pytest.raises(AuthenticationError, match="invalid x-api-key"):
        list(adapter(fake_api, max_retries=2).stream(make_request()))
    assert len(fake_api.requests) == 1, "a 401 is not retried"


def test_a_wrong_key_is_an_authentication_error():
    with FakeAnthropic([text("never sent")], api_key="right-key") as fake:
        with pytest.raises(AuthenticationError) as info:
            list(adapter(fake, api_key="wrong-key").stream(make_request()))
        assert str(info.value) == "API key rejected (401): invalid x-api-key"
        assert fake.remaining == 1


def test_no_credentials_at_all_is_an_authentication_error(fake_api, monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    model = AnthropicModel(MODEL, base_url=fake_api.url, max_retries=0)
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        list(model.stream(make_request()))
    assert fake_api.requests == []


def test_bearer_token_and_api_key_both_reach_the_server():
    # anthropic 2.11 sends either credential as ``Authorization: Bearer``.
    with FakeAnthropic([text("one"), text("two")], api_key="secret") as fake:
        _, one = run(AnthropicModel(MODEL, auth_token="secret", base_url=fake.url, max_retries=0))
        _, two = run(AnthropicModel(MODEL, api_key="secret", base_url=fake.url, max_retries=0))
        assert (one.text(), two.text()) == ("one", "two")
        assert [h.get("authorization") for h in fake.headers] == ["Bearer secret", "Bearer secret"]


def test_api_key_wins_when_both_credentials_are_given():
    with FakeAnthropic([text("ok")], api_key="the-key") as fake:
        _, response = run(
            AnthropicModel(MODEL, api_key="the-key", auth_token="other", base_url=fake.url, max_retries=0)
        )
        assert response.text() == "ok"


def test_environment_variables_are_honoured(monkeypatch):
    """The credentials and base URL come from the environment through config (the one reader of
    it); the adapter itself never looks at the environment."""
    from memagent.config import Settings
    from memagent.runtime import make_model

    with FakeAnthropic([text("from env")], api_key="env-token") as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "env-token")
        model = make_model(Settings(model=MODEL))
        model.max_retries = 0
        _, response = run(model)
        assert response.text() == "from env"
        assert fake.headers[0].get("authorization") == "Bearer env-token"


@pytest.mark.parametrize("after_events", [0, 1, 4, 8])
def test_a_cut_stream_is_a_stream_interruption(fake_api, after_events):
    fake_api.add(cut(after_events, text("This answer is long enough to be cut in several places.")))
    with pytest.raises(StreamInterrupted):
        list(adapter(fake_api, max_retries=2).stream(make_request()))
    assert len(fake_api.requests) == 1, "a stream that already started is not retried"


def test_an_error_event_mid_stream_is_a_model_error(fake_api):
    fake_api.add(stream_error("overloaded_error", "Overloaded", after_events=4))
    with pytest.raises(ModelError) as info:
        list(adapter(fake_api).stream(make_request()))
    assert str(info.value) == "API error mid-stream (overloaded): Overloaded"


def test_an_unreachable_server_is_a_one_line_model_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = AnthropicModel(MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(ModelError) as info:
        list(model.stream(make_request()))
    assert str(info.value).startswith(f"cannot reach the API at http://127.0.0.1:{port}")
    assert "\n" not in str(info.value)


def test_a_slow_server_times_out_as_a_model_error(fake_api):
    fake_api.add(delay(3, text("too late")))
    model = adapter(fake_api, timeout=0.3)
    with pytest.raises(ModelError, match="timed out"):
        list(model.stream(make_request()))


def test_abandoning_a_stream_closes_it_and_the_model_stays_usable(fake_api):
    fake_api.add(text("First answer, abandoned after its first delta."), text("Second answer."))
    model = adapter(fake_api)
    stream = model.stream(make_request())
    assert isinstance(next(stream), TextDelta)
    stream.close()
    _, response = run(model)
    assert response.text() == "Second answer."


def test_cache_breakpoints_go_on_the_stable_prefix_and_newest_message(fake_api):
    fake_api.add(text("ok"))
    messages = [
        user_message("Read a and b."),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}],
        },
        {
            "role": "user",
            "content": [tool_result_block("toolu_1", "contents of a"), {"type": "text", "text": "Reminder: todos."}],
        },
    ]
    request = make_request(*messages)
    before = copy.deepcopy(request)
    run(adapter(fake_api), request)
    assert request == before, "the caller's request must not be mutated"
    sent = fake_api.requests[0]
    marked = lambda blocks: [i for i, b in enumerate(blocks) if "cache_control" in b]  # noqa: E731
    assert marked(sent["system"]) == [1]
    assert marked(sent["tools"]) == [1]
    assert marked(sent["messages"][0]["content"]) == [] and marked(sent["messages"][1]["content"]) == []
    assert marked(sent["messages"][2]["content"]) == [1]
    assert sent["messages"][2]["content"][1]["cache_control"] == {"type": "ephemeral"}
    unmarked = json.loads(json.dumps(sent))
    for part in (*unmarked["system"], *unmarked["tools"], *unmarked["messages"][2]["content"]):
        part.pop("cache_control", None)
    assert unmarked["system"] == before.system and unmarked["tools"] == before.tools
    assert unmarked["messages"] == before.messages


def test_the_prefix_is_byte_stable_across_turns_and_read_from_cache(fake_api):
    fake_api.add(tool("read_file", {"path": "a"}, id="toolu_r1"), text("The file says hi."))
    model = adapter(fake_api)
    first_request = make_request(user_message("What does a say?"))
    _, first = run(model, first_request)
    second_request = make_request(
        user_message("What does a say?"),
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [tool_result_block("toolu_r1", "hi")]},
    )
    _, second = run(model, second_request)
    one, two = fake_api.requests
    assert json.dumps(one["system"]) == json.dumps(two["system"])
    assert json.dumps(one["tools"]) == json.dumps(two["tools"])
    assert first.usage.cache_read_input_tokens == 0 and first.usage.cache_creation_input_tokens > 0
    assert second.usage.cache_read_input_tokens >= first.usage.cache_creation_input_tokens
    assert second.usage.context_tokens > first.usage.context_tokens


def test_existing_breakpoints_are_respected_within_the_limit_of_four(fake_api):
    fake_api.add(text("ok"))
    marked_block = {"type": "text", "text": "old turn", "cache_control": {"type": "ephemeral"}}
    messages = [
        {"role": "user", "content": [marked_block]},
        {"role": "assistant", "content": [{"type": "text", "text": "noted", "cache_control": {"type": "ephemeral"}}]},
        user_message("new turn"),
    ]
    run(adapter(fake_api), make_request(*messages))
    sent = fake_api.requests[0]
    count = json.dumps(sent).count('"cache_control"')
    assert count == 4
    assert "cache_control" not in sent["messages"][2]["content"][0], "system and tools come first; the budget is spent"


def test_request_model_overrides_the_adapter_default(fake_api):
    fake_api.add(text("ok"))
    request = make_request()
    request.model = "claude-haiku-4-5"
    _, response = run(adapter(fake_api), request)
    assert fake_api.requests[0]["model"] == "claude-haiku-4-5"
    assert response.model == "claude-haiku-4-5"
    assert fake_api.requests[0]["max_tokens"] == 1024


def test_importing_the_adapter_does_not_import_the_sdk():
    code = "import sys, memagent.llm.anthropic; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_count_tokens_asks_the_api(fake_api):
    model = adapter(fake_api)
    small = model.count_tokens(make_request(user_message("hi")))
    large = model.count_tokens(make_request(user_message("word " * 4000)))
    assert 0 < small < large and large >= 5000
    assert fake_api.requests == [] and len(fake_api.count_token_requests) == 2
    assert "max_tokens" not in fake_api.count_token_requests[0]


def test_count_tokens_errors_are_model_errors():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = AnthropicModel(MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(ModelError, match="cannot reach the API"):
        model.count_tokens(make_request())


def test_prepare_in_a_background_thread_then_stream(fake_api):
    import threading

    fake_api.add(text("warm"))
    model = adapter(fake_api)
    warm = threading.Thread(target=model.prepare)
    warm.start()
    warm.join(timeout=30)
    _, response = run(model)
    assert response.text() == "warm"


def test_an_empty_base_url_variable_means_the_default(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    model = AnthropicModel(MODEL, api_key="k", max_retries=0)
    model.prepare()
    assert model.base_url == "https://api.anthropic.com"


def test_lone_surrogates_become_replacement_characters_on_the_wire_only(fake_api):
    from memagent.llm.anthropic import build_params

    fake_api.add(text("ok"))
    messages = [
        user_message("List the files."),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "glob", "input": {"pattern": "*"}}],
        },
        {"role": "user", "content": [tool_result_block("toolu_1", "caf\udce9.txt")]},
    ]
    request = make_request(*messages)
    before = copy.deepcopy(request)
    params = build_params(request, "m")
    assert params["messages"][-1]["content"][0]["content"] == "caf\ufffd.txt"
    assert params["messages"][0] is request.messages[0]  # clean messages are shared, not copied
    run(adapter(fake_api), request)  # the real SDK encodes and sends it
    assert request == before, "the caller's request must not be mutated"
    assert fake_api.requests[0]["messages"][-1]["content"][0]["content"] == "caf\ufffd.txt"
