"""The fake Messages API itself: validation, scripting, usage accounting, process mode."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from fakeapi import (
    EXHAUSTED,
    FakeAnthropic,
    FakeAnthropicProcess,
    cut,
    delay,
    error,
    normalize_step,
    text,
    tool,
    turn,
)

TOOL = {"name": "read_file", "input_schema": {"type": "object", "properties": {}}}


def post(fake, body, path="/v1/messages", headers=None):
    """Send a raw request (bypassing the SDK's own checks); returns (status, JSON or SSE text)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        fake.url + path, data=data, method="POST", headers={"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read().decode()
            status = response.status
            kind = response.headers.get("content-type", "")
    except urllib.error.HTTPError as err:
        raw, status, kind = err.read().decode(), err.code, err.headers.get("content-type", "")
    return status, (json.loads(raw) if kind.startswith("application/json") else raw)


def body(messages, **extra):
    return {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": messages, **extra}


def u(*blocks):
    return {"role": "user", "content": [b if isinstance(b, dict) else {"type": "text", "text": b} for b in blocks]}


def a(*blocks):
    return {"role": "assistant", "content": [b if isinstance(b, dict) else {"type": "text", "text": b} for b in blocks]}


CALL = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}

VIOLATIONS = {
    "first message from assistant": (body([a("hi"), u("x")]), 'first message must use the "user" role'),
    "roles do not alternate": (body([u("a"), u("b")]), "roles must alternate"),
    "tool_use without result": (body([u("a"), a(CALL), u("b")]), "without `tool_result` blocks immediately after"),
    "trailing tool_use": (body([u("a"), a(CALL)]), "without `tool_result` blocks immediately after"),
    "result after text": (body([u("a"), a(CALL), u("b", RESULT)]), "must come before any other content"),
    "orphan result": (body([u(RESULT)]), "unexpected `tool_use_id`"),
    "duplicate tool_use id": (body([u("a"), a(CALL), u(RESULT), a(CALL), u(RESULT)]), "ids must be unique"),
    "empty content": (body([{"role": "user", "content": []}]), "non-empty content"),
    "blank text": (body([u(" ")]), "non-whitespace text"),
    "no messages": (body([]), "at least one message"),
    "missing model": ({"max_tokens": 10, "messages": [u("a")]}, "model: Field required"),
    "missing max_tokens": ({"model": "m", "messages": [u("a")]}, "max_tokens: Field required"),
    "tool without input_schema": (body([u("a")], tools=[{"name": "read_file"}]), "input_schema: Field required"),
    "tool without name": (body([u("a")], tools=[{"input_schema": {"type": "object"}}]), "tools.0.name"),
    "stream not a boolean": (body([u("a")], stream="yes"), "stream: Input should be a valid boolean"),
    "too many cache breakpoints": (
        body([u(*[{"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)])]),
        "A maximum of 4 blocks with cache_control",
    ),
}


@pytest.mark.parametrize("name", list(VIOLATIONS))
def test_each_invariant_violation_is_rejected_and_recorded(name):
    request_body, expected = VIOLATIONS[name]
    with FakeAnthropic([text("must not be used")]) as fake:
        status, answer = post(fake, request_body)
        assert status == 400
        assert answer["type"] == "error" and answer["error"]["type"] == "invalid_request_error"
        assert expected in answer["error"]["message"]
        assert fake.errors and all(e.startswith("request 1: ") for e in fake.errors)
        assert any(expected in e for e in fake.errors)
        assert fake.remaining == 1, "a rejected request does not consume the script"


def test_a_valid_conversation_is_answered():
    with FakeAnthropic([text("fine")]) as fake:
        status, answer = post(fake, body([u("a"), a("Reading", CALL), u(RESULT, "and a reminder")], tools=[TOOL]))
        assert status == 200 and fake.errors == []
        assert answer["content"] == [{"type": "text", "text": "fine"}]
        assert answer["stop_reason"] == "end_turn" and answer["role"] == "assistant"
        assert answer["usage"]["input_tokens"] > 0 and answer["usage"]["output_tokens"] > 0


def test_sse_events_have_the_shape_the_sdk_needs():
    with FakeAnthropic([turn("Hi there.", tool("read_file", {"path": "a.txt"}, id="toolu_9"))]) as fake:
        status, raw = post(fake, body([u("a")], stream=True))
    assert status == 200
    events = []
    for chunk in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        events.append(data)
    names = [e["type"] for e in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    start = events[0]["message"]
    assert start["content"] == [] and set(start["usage"]) >= {"input_tokens", "output_tokens"}
    assert all("index" in e for e in events if e["type"].startswith("content_block"))
    json_parts = [e["delta"]["partial_json"] for e in events if e.get("delta", {}).get("type") == "input_json_delta"]
    assert len(json_parts) > 1 and json.loads("".join(json_parts)) == {"path": "a.txt"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use" and events[-2]["usage"]["output_tokens"] > 0


def test_an_exhausted_script_is_a_500_and_an_error():
    with FakeAnthropic() as fake:
        status, answer = post(fake, body([u("a")]))
        assert status == 500 and answer["error"]["message"] == EXHAUSTED
        assert fake.errors == [EXHAUSTED]


def test_the_responder_answers_when_the_script_is_empty():
    seen = []

    def responder(request_json):
        seen.append(request_json["messages"][-1]["content"][0]["text"])
        return text(f"echo: {seen[-1]}")

    with FakeAnthropic([text("scripted first")], responder=responder) as fake:
        assert post(fake, body([u("one")]))[1]["content"][0]["text"] == "scripted first"
        assert post(fake, body([u("two")]))[1]["content"][0]["text"] == "echo: two"
        assert seen == ["two"] and fake.errors == []


def test_a_failing_responder_is_reported_not_hung():
    def responder(request_json):
        raise KeyError("boom")

    with FakeAnthropic(responder=responder) as fake:
        status, answer = post(fake, body([u("a")]))
        assert status == 500 and "responder raised KeyError" in answer["error"]["message"]
        assert len(fake.errors) == 1


def test_error_steps_use_the_real_error_shape():
    with FakeAnthropic([error(529), error(429, "slow down"), error(400, "prompt is too long: 1 > 0")]) as fake:
        for status, kind, message in [
            (529, "overloaded_error", "Overloaded"),
            (429, "rate_limit_error", "slow down"),
            (400, "invalid_request_error", "prompt is too long: 1 > 0"),
        ]:
            got_status, answer = post(fake, body([u("a")]))
            assert (got_status, answer["type"], answer["error"]) == (
                status,
                "error",
                {"type": kind, "message": message},
            )
        assert fake.errors == []


def test_count_tokens_estimates_characters_over_four():
    with FakeAnthropic() as fake:
        short = post(fake, {"model": "m", "messages": [u("a")]}, path="/v1/messages/count_tokens")[1]
        long = post(fake, {"model": "m", "messages": [u("a" * 4000)]}, path="/v1/messages/count_tokens")[1]
        assert 1000 <= long["input_tokens"] <= 1020
        assert short["input_tokens"] < 20
        assert fake.requests == [] and len(fake.count_token_requests) == 2 and fake.errors == []


def test_cache_reads_are_reported_for_a_repeated_prefix():
    system = [{"type": "text", "text": "S" * 4000, "cache_control": {"type": "ephemeral"}}]
    with FakeAnthropic([text("one"), text("two"), text("three")]) as fake:
        first = post(fake, body([u("question one")], system=system))[1]["usage"]
        second = post(fake, body([u("question two")], system=system))[1]["usage"]
        uncached = post(fake, body([u("question two")], system=[{"type": "text", "text": "S" * 4000}]))[1]["usage"]
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] >= 1000
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["input_tokens"] < 20
    assert uncached["cache_read_input_tokens"] == 0 and uncached["input_tokens"] >= 1000


def test_cache_reads_reach_back_to_an_earlier_newest_message_breakpoint():
    marked = {"type": "text", "text": "Q" * 2000, "cache_control": {"type": "ephemeral"}}
    plain = {"type": "text", "text": "Q" * 2000}
    with FakeAnthropic([text("answer"), text("next")]) as fake:
        post(fake, body([u(marked)]))
        later = post(
            fake,
            body([u(plain), a("answer"), u({"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}})]),
        )
    assert later[1]["usage"]["cache_read_input_tokens"] >= 500


def test_a_cut_non_streaming_request_drops_the_connection():
    with FakeAnthropic([cut(2)]) as fake:
        with pytest.raises((urllib.error.URLError, ConnectionError, http_client_errors())):
            post(fake, body([u("a")]))


def http_client_errors():
    import http.client

    return http.client.HTTPException


def test_stopping_the_server_does_not_wait_for_a_delayed_answer():
    fake = FakeAnthropic([delay(30, text("late"))]).start()
    import threading

    worker = threading.Thread(target=lambda: _ignore_errors(post, fake, body([u("a")])), daemon=True)
    worker.start()
    time.sleep(0.2)
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 3


def _ignore_errors(fn, *args):
    try:
        fn(*args)
    except Exception:
        return


def test_the_api_key_is_enforced_when_configured():
    with FakeAnthropic([text("ok")], api_key="k1") as fake:
        assert post(fake, body([u("a")]))[0] == 401
        assert post(fake, body([u("a")]), headers={"x-api-key": "k1"})[0] == 200
        assert fake.errors == []


def test_json_shorthand_steps_match_the_helpers():
    assert normalize_step("hi") == text("hi")
    assert normalize_step({"text": "hi"}) == text("hi")
    assert normalize_step({"tool": "read_file", "input": {"path": "a"}, "id": "toolu_x"}) == tool(
        "read_file", {"path": "a"}, "toolu_x"
    )
    assert normalize_step({"error": 529}) == error(529)
    assert normalize_step({"cut": 3, "step": "x"}) == cut(3, text("x"))
    assert normalize_step({"delay": 1.5, "step": {"text": "x"}}) == delay(1.5, text("x"))
    parallel = normalize_step(
        {
            "turn": [
                "Reading.",
                {"tool": "read_file", "input": {}, "id": "t1"},
                {"tool": "read_file", "input": {}, "id": "t2"},
            ]
        }
    )
    assert parallel["stop_reason"] == "tool_use" and [b["type"] for b in parallel["content"]] == [
        "text",
        "tool_use",
        "tool_use",
    ]
    with pytest.raises(ValueError):
        normalize_step({"bogus": 1})


def test_the_fake_runs_as_a_separate_process(tmp_path):
    import anthropic

    script = ["from a script file", {"tool": "read_file", "input": {"path": "x"}, "id": "toolu_p1"}]
    with FakeAnthropicProcess(script, tmp_path, api_key="proc-key") as fake:
        client = anthropic.Anthropic(api_key="proc-key", base_url=fake.url, max_retries=0)
        first = client.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=[u("hi")])
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=50, messages=[u("hi"), a("from a script file"), u("go")]
        ) as stream:
            second = stream.get_final_message()
        assert first.content[0].text == "from a script file"
        assert second.content[0].input == {"path": "x"} and second.stop_reason == "tool_use"
        assert fake.wait_for_requests(2, timeout=5) and not fake.wait_for_requests(3, timeout=0.1)
        assert len(fake.requests) == 2 and fake.errors == [] and fake.remaining == 0
    assert fake.proc.returncode is not None


def test_wait_for_requests_sees_a_request_that_is_still_being_answered():
    import threading

    with FakeAnthropic([delay(0.5, text("slow"))]) as fake:
        assert not fake.wait_for_requests(1, timeout=0.05)
        worker = threading.Thread(target=post, args=(fake, body([u("a")])), daemon=True)
        worker.start()
        assert fake.wait_for_requests(1, timeout=5)
        assert worker.is_alive(), "the request is seen before its delayed answer"
        worker.join(timeout=5)


def test_a_system_role_message_is_rejected_unless_tolerated_for_the_claude_code_comparison():
    system_message = {"role": "system", "content": [{"type": "text", "text": "a reminder"}]}
    with FakeAnthropic([text("never")]) as strict:
        status, answer = post(strict, body([u("a"), system_message]))
        assert status == 400 and "Input should be 'user' or 'assistant'" in answer["error"]["message"]
    with FakeAnthropic([text("fine")], tolerate_system_role=True) as tolerant:
        assert post(tolerant, body([u("a"), system_message]))[0] == 200
        # tolerated means skipped: the rest of the conversation is still checked
        status, answer = post(tolerant, body([system_message, u("a"), u("b")]))
        assert status == 400 and "roles must alternate" in answer["error"]["message"]
        status, answer = post(tolerant, body([system_message]))
        assert status == 400 and "at least one message" in answer["error"]["message"]
        assert tolerant.remaining == 0


def test_a_stalled_stream_pauses_mid_answer_then_finishes():
    from fakeapi import stall

    with FakeAnthropic([stall(4, 0.6, text("first part and the rest"))]) as fake:
        started = time.monotonic()
        status, raw = post(fake, body([u("a")], stream=True))
        elapsed = time.monotonic() - started
    assert status == 200 and elapsed >= 0.6
    deltas = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
    text_parts = [d["delta"]["text"] for d in deltas if d.get("delta", {}).get("type") == "text_delta"]
    assert "".join(text_parts) == "first part and the rest"
    assert normalize_step({"stall": 4, "seconds": 2, "step": "x"}) == stall(4, 2, text("x"))


def test_the_tolerance_flag_reaches_the_separate_process(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    tests_dir = Path(__file__).resolve().parents[1]
    (tmp_path / "script.json").write_text(json.dumps(["fine"]))
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakeapi",
            "--script",
            str(tmp_path / "script.json"),
            "--port-file",
            str(port_file),
            "--tolerate-system-role",
        ],
        cwd=tests_dir,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}"
        fake = type("Remote", (), {"url": url})()
        system_message = {"role": "system", "content": [{"type": "text", "text": "a reminder"}]}
        assert post(fake, body([u("a"), system_message]))[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)
