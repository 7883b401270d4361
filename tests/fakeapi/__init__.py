"""A loopback fake of the Anthropic Messages API, so the real SDK and CLI run end to end offline.

In-process::

    from fakeapi import FakeAnthropic, text, tool, turn, error, cut, delay

    with FakeAnthropic([tool("read_file", {"path": "a.txt"}), text("done")]) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.url          # plus any ANTHROPIC_API_KEY
        ...
        assert fake.errors == []                      # no request broke an API invariant

As a separate process (for tests that run the real ``memagent`` CLI in a subprocess)::

    python -m fakeapi --script steps.json --port-file port.txt [--log-file log.json] [--api-key K]

or, from a test, ``with FakeAnthropicProcess(steps, tmp_path) as fake: fake.url, fake.requests,
fake.errors``. The port file receives the port number once the server listens; the log file is
rewritten (atomically) after every request as ``{"requests": [...], "errors": [...]}``.

``--tolerate-system-role`` (``FakeAnthropic(tolerate_system_role=True)``) accepts the ``role:
system`` messages Claude Code 2.1.x sends, for running Claude Code itself against the fake side by
side with memagent; memagent's own tests never use it.

Every request is validated (roles alternate from ``user``; every ``tool_use`` answered by a
``tool_result`` first in the next user message; no orphan results; unique ids; no empty content
or blank text; ``model``/``max_tokens`` present; tools have ``name`` and an object
``input_schema`` with no top-level ``anyOf``/``oneOf``/``allOf``, as the real API demands; at most
four cache breakpoints). A violation is answered 400 ``invalid_request_error`` and appended to
``errors``. A request that finds the script empty gets 500 "fake server: script exhausted"
(with ``x-should-retry: false``) and is recorded in ``errors`` too.

Too-long mode: ``FakeAnthropic(max_input_tokens=N)`` (``--max-input-tokens N``) answers 400
``prompt is too long: X tokens > N maximum`` to any request estimated above N tokens, as the real
API does above the model's window; ``count_tokens=False`` (``--no-count-tokens``) removes the
count-tokens endpoint.

Usage reported: ``input_tokens`` ≈ characters/4 of the request; when the request carries
``cache_control``, the prefix up to a breakpoint is "written" and a later request sharing a
written prefix reports it as ``cache_read_input_tokens`` (``cache_creation_input_tokens`` for the
newly written part).

JSON script format (a list; each item is one answer, consumed in order)::

    "plain text"                                     an end_turn answer with that text
    {"text": "final answer"}                         same
    {"tool": "write_file", "input": {...}, "id": "toolu_1"}       one tool call (id optional)
    {"tool": "write_file", "input": {...}, "truncate_at": 10}     its JSON cut after 10 chars
    {"turn": ["I'll read both.", {"tool": "read_file", "input": {"path": "a"}},
              {"tool": "read_file", "input": {"path": "b"}}], "stop_reason": null}
                                                     several blocks; stop_reason inferred
    {"error": 529, "message": "Overloaded", "error_type": "overloaded_error", "retry_after": 0.01}
    {"cut": 4, "step": {"text": "..."}}               SSE stream closed after 4 events
    {"delay": 2.5, "step": {"text": "..."}}           answer after 2.5 s
    {"stall": 6, "seconds": 30, "step": {"text": "..."}}  pause 30 s after 6 SSE events
                                                     (a client that hangs up meanwhile is
                                                     recorded in .hangups)

The full forms produced by the Python helpers (``{"type": "message", ...}``, ``{"type": "error",
...}``, ``{"type": "cut", ...}``, ``{"type": "delay", ...}``, ``{"type": "stall", ...}``, ``{"type": "stream_error", ...}``)
are accepted as well. SSE events are counted from ``message_start`` (1), ``ping`` (2), then each
block's start / deltas / stop, ``message_delta``, ``message_stop``.
"""

from fakeapi.process import FakeAnthropicProcess
from fakeapi.server import EXHAUSTED, FakeAnthropic, PromptCache, estimate_tokens
from fakeapi.steps import cut, delay, error, normalize_step, stall, stream_error, text, thinking, tool, turn
from fakeapi.validation import check_request

__all__ = [
    "EXHAUSTED",
    "FakeAnthropic",
    "FakeAnthropicProcess",
    "PromptCache",
    "check_request",
    "cut",
    "delay",
    "error",
    "estimate_tokens",
    "normalize_step",
    "stall",
    "stream_error",
    "text",
    "thinking",
    "tool",
    "turn",
]
