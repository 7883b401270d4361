"""Script steps for the fake Messages API: plain JSON-able dicts, built by small helpers.

The same dicts are what a ``--script`` file holds (a JSON list), so a test can build a script in
Python and ``json.dump`` it for a server running in another process.
"""

from __future__ import annotations

import uuid
from typing import Any

Step = dict[str, Any]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

DEFAULT_ERROR_MESSAGES = {
    "invalid_request_error": "Invalid request",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


def new_tool_id() -> str:
    return f"toolu_{uuid.uuid4().hex[:24]}"


def _message(content: list[dict[str, Any]], stop_reason: str) -> Step:
    return {"type": "message", "content": content, "stop_reason": stop_reason}


def text(value: str, *, stop_reason: str = "end_turn") -> Step:
    """An assistant message holding one text block."""
    return _message([{"type": "text", "text": value}], stop_reason)


def tool(
    name: str, input: dict[str, Any] | None = None, id: str | None = None, *, truncate_at: int | None = None
) -> Step:
    """One tool call. ``truncate_at=N`` streams only the first N characters of the input JSON
    (what the API does when ``max_tokens`` strikes mid tool call); combine with
    ``turn(..., stop_reason="max_tokens")``."""
    block: dict[str, Any] = {"type": "tool_use", "id": id or new_tool_id(), "name": name, "input": dict(input or {})}
    if truncate_at is not None:
        block["truncate_at"] = truncate_at
    return _message([block], "tool_use")


def thinking(value: str, signature: str = "fake-signature") -> Step:
    """A thinking block (with its signature) as the API sends when extended thinking is on."""
    return _message([{"type": "thinking", "thinking": value, "signature": signature}], "end_turn")


def turn(*parts: str | Step, stop_reason: str | None = None, usage: dict[str, int] | None = None) -> Step:
    """One assistant message made of several parts: strings (text), ``text()``, ``tool()``,
    ``thinking()`` steps. The stop reason defaults to tool_use when a tool is called."""
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, str):
            content.append({"type": "text", "text": part})
        elif part.get("type") == "message":
            content.extend(part["content"])
        else:
            raise ValueError(f"turn() cannot contain a {part.get('type')!r} step")
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    step = _message(content, stop_reason)
    if usage:
        step["usage"] = dict(usage)
    return step


def error(status: int, message: str | None = None, type: str | None = None, *, retry_after: float = 0.01) -> Step:
    """An HTTP error with the real API's body shape. ``retry_after`` (seconds) is sent as a
    ``retry-after-ms`` header, which the SDK obeys, so retry tests do not sleep for seconds."""
    error_type = type or ERROR_TYPES.get(status, "api_error")
    return {
        "type": "error",
        "status": status,
        "error_type": error_type,
        "message": message or DEFAULT_ERROR_MESSAGES.get(error_type, "error"),
        "retry_after": retry_after,
    }


def stream_error(
    type: str = "overloaded_error", message: str = "Overloaded", *, after_events: int = 3, step: Step | None = None
) -> Step:
    """A stream that starts (HTTP 200) then sends an SSE ``error`` event after ``after_events``
    events, as the real API does when it becomes overloaded mid-answer."""
    return {
        "type": "stream_error",
        "error_type": type,
        "message": message,
        "after_events": after_events,
        "step": step or text("This answer is interrupted by an error event."),
    }


def cut(after_events: int = 4, step: Step | None = None) -> Step:
    """A stream whose connection is closed after ``after_events`` SSE events (before message_stop)."""
    return {
        "type": "cut",
        "after_events": after_events,
        "step": step or text("This answer will be cut off in the middle of the stream."),
    }


def stall(after_events: int, seconds: float, step: Step) -> Step:
    """A stream that sends ``after_events`` SSE events, then pauses ``seconds`` before the rest
    (a model that stops mid-answer: for interrupting a turn while text is streaming)."""
    return {"type": "stall", "after_events": after_events, "seconds": seconds, "step": step}


def delay(seconds: float, step: Step) -> Step:
    """Wait ``seconds`` before answering with ``step`` (for cancellation and timeout tests)."""
    return {"type": "delay", "seconds": seconds, "step": step}


STEP_TYPES = {"message", "error", "stream_error", "cut", "delay", "stall"}


def check_step(step: Any) -> None:
    """Reject a malformed script early, with a message naming the problem."""
    if not isinstance(step, dict) or step.get("type") not in STEP_TYPES:
        raise ValueError(f"not a fake API step: {step!r}")
    if step["type"] == "message":
        if not isinstance(step.get("content"), list) or not isinstance(step.get("stop_reason"), str):
            raise ValueError(f"message step needs content (list) and stop_reason: {step!r}")
    elif step["type"] == "error":
        if not isinstance(step.get("status"), int):
            raise ValueError(f"error step needs an integer status: {step!r}")
    elif step["type"] in ("cut", "stream_error", "delay", "stall"):
        check_step(step.get("step"))


def normalize_step(raw: Any) -> Step:
    """Accept a full step dict or a JSON shorthand (see the package docstring) and return a step."""
    if isinstance(raw, str):
        return text(raw)
    if not isinstance(raw, dict):
        raise ValueError(f"not a fake API step: {raw!r}")
    if "type" in raw:
        step = dict(raw)
        for key in ("step",):
            if key in step:
                step[key] = normalize_step(step[key])
        check_step(step)
        return step
    if "text" in raw:
        return text(raw["text"], stop_reason=raw.get("stop_reason", "end_turn"))
    if "tool" in raw:
        return tool(raw["tool"], raw.get("input"), raw.get("id"), truncate_at=raw.get("truncate_at"))
    if "turn" in raw:
        return turn(
            *[normalize_step(p) for p in raw["turn"]], stop_reason=raw.get("stop_reason"), usage=raw.get("usage")
        )
    if "error" in raw:
        return error(
            int(raw["error"]), raw.get("message"), raw.get("error_type"), retry_after=raw.get("retry_after", 0.01)
        )
    if "cut" in raw:
        return cut(int(raw["cut"]), normalize_step(raw["step"]) if "step" in raw else None)
    if "delay" in raw:
        return delay(float(raw["delay"]), normalize_step(raw["step"]))
    if "stall" in raw:
        return stall(int(raw["stall"]), float(raw.get("seconds", 30)), normalize_step(raw["step"]))
    raise ValueError(f"not a fake API step: {raw!r}")
