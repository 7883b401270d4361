"""The JSON objects of headless output, in the shapes Claude Code's ``claude -p`` writes.

Pure builders (no I/O): :mod:`memagent.ui.headless` decides when each is written. A tool written
for ``claude -p --output-format stream-json`` (or the ``claude-agent-sdk`` message parser) reads
them unchanged:

- ``system``/``init``: ``cwd``, ``session_id``, ``tools``, ``mcp_servers`` (``name``,
  ``status``), ``model``, ``permissionMode``, ``slash_commands``, ``apiKeySource``,
  ``output_style``, ``agents``, ``skills``, ``plugins``, plus ``memagent_version``;
- ``system``/``notice``: memagent's own notices (``level``, ``text``): warnings, compaction,
  retries;
- ``assistant``: ``message`` is the Messages API message as the model sent it (``id``,
  ``model``, ``role``, ``stop_reason``, ``usage``), one line per content block;
- ``user``: a tool's result (``message.content`` holds one ``tool_result`` block), or a replayed
  input message (``isReplay``);
- ``result``: the turn's outcome (see :func:`result_message`).

Every line carries ``session_id`` and a fresh ``uuid``. A line is built here and only serialised,
so it is a ``dict[str, object]``; the per-model usage rows, which are summed, are
:class:`ModelUsage`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TypedDict

from memagent.llm.items import is_blank_text, wire_block
from memagent.llm.types import ModelResponse, Usage

USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
# memagent's stop reasons (TurnEnded.stop_reason) → Claude Code's ``terminal_reason`` values.
TERMINAL_REASONS = {"max_rounds": "max_turns", "error": "model_error", "refused": "hook_stopped"}
# An MCP server's state in memagent → the word Claude Code's init message uses.
MCP_STATES = {"ready": "connected", "failed": "failed", "starting": "pending"}


class ModelUsage(TypedDict):
    """One model's row of ``modelUsage``: its calls' tokens summed, and their cost (None: unknown)."""

    inputTokens: int
    outputTokens: int
    cacheReadInputTokens: int
    cacheCreationInputTokens: int
    webSearchRequests: int
    costUSD: float | None


def new_uuid() -> str:
    return str(uuid.uuid4())


def timestamp() -> str:
    """UTC time with milliseconds, as the ``timestamp`` of ``user`` lines."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def zero_usage() -> dict[str, int]:
    return {key: 0 for key in USAGE_KEYS}


def system_init(
    *,
    session_id: str,
    cwd: str,
    model: str,
    tools: list[str],
    mcp_servers: list[dict[str, str]],
    permission_mode: str,
    slash_commands: list[str],
    skills: list[str],
    api_key_source: str,
    version: str,
) -> dict[str, object]:
    return {
        "type": "system",
        "subtype": "init",
        "cwd": cwd,
        "session_id": session_id,
        "tools": tools,
        "mcp_servers": mcp_servers,
        "model": model,
        "permissionMode": permission_mode,
        "slash_commands": slash_commands,
        "apiKeySource": api_key_source,
        "output_style": "default",
        "agents": [],
        "skills": skills,
        "plugins": [],
        "memagent_version": version,
        "uuid": new_uuid(),
    }


def notice(level: str, text: str, session_id: str) -> dict[str, object]:
    return {
        "type": "system",
        "subtype": "notice",
        "level": level,
        "text": text,
        "session_id": session_id,
        "uuid": new_uuid(),
    }


def assistant_messages(response: ModelResponse, session_id: str) -> list[dict[str, object]]:
    """One ``assistant`` line per content block of a model response, all with its message id."""
    lines: list[dict[str, object]] = []
    message_id = response.id or f"msg_{uuid.uuid4().hex[:24]}"
    for block in response.content:
        if is_blank_text(block):
            continue
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": response.model,
            "content": [wire_block(block)],
            "stop_reason": response.stop_reason,
            "stop_sequence": None,
            "usage": response.usage.to_dict(),
        }
        lines.append(
            {
                "type": "assistant",
                "message": message,
                "parent_tool_use_id": None,
                "session_id": session_id,
                "uuid": new_uuid(),
            }
        )
    return lines


def tool_result_message(tool_use_id: str, content: str, is_error: bool, session_id: str) -> dict[str, object]:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}
    return {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": new_uuid(),
        "timestamp": timestamp(),
    }


def replayed_user_message(message: Mapping[str, object], session_id: str, line_uuid: str | None) -> dict[str, object]:
    """An input message echoed back (``--replay-user-messages``), keeping its uuid if it had one."""
    return {
        "type": "user",
        "message": dict(message),
        "session_id": session_id,
        "parent_tool_use_id": None,
        "uuid": line_uuid or new_uuid(),
        "timestamp": timestamp(),
        "isReplay": True,
    }


def model_usage(
    responses: Iterable[ModelResponse], price: Callable[[str, Usage], float | None]
) -> dict[str, ModelUsage]:
    """``modelUsage``: the agent's own model calls, summed per model that answered.

    ``price(model, usage)`` gives the cost in US dollars or None when the price is unknown."""
    per_model: dict[str, ModelUsage] = {}
    for response in responses:
        usage = response.usage
        row = per_model.setdefault(
            response.model or "unknown",
            ModelUsage(
                inputTokens=0,
                outputTokens=0,
                cacheReadInputTokens=0,
                cacheCreationInputTokens=0,
                webSearchRequests=0,
                costUSD=0.0,
            ),
        )
        row["inputTokens"] += usage.input_tokens
        row["outputTokens"] += usage.output_tokens
        row["cacheReadInputTokens"] += usage.cache_read_input_tokens
        row["cacheCreationInputTokens"] += usage.cache_creation_input_tokens
        cost = price(response.model, usage)
        spent = row["costUSD"]
        row["costUSD"] = None if cost is None or spent is None else round(spent + cost, 6)
    return per_model


def result_message(
    *,
    subtype: str,
    session_id: str,
    result: str,
    error: str | None,
    stop_reason: str | None,
    terminal_reason: str | None,
    num_turns: int,
    duration_ms: int,
    duration_api_ms: int,
    usage: Mapping[str, int],
    total_cost_usd: float | None,
    model: str,
    model_usage: Mapping[str, ModelUsage],
    permission_denials: list[dict[str, object]],
) -> dict[str, object]:
    """The last line of a turn. ``subtype`` is ``success``, ``error_max_turns`` or
    ``error_during_execution``; an error also carries ``errors`` (one line each) and memagent's
    ``error`` (the same reason, or null)."""
    message: dict[str, object] = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "duration_ms": duration_ms,
        "duration_api_ms": duration_api_ms,
        "num_turns": num_turns,
        "result": result,
        "stop_reason": stop_reason,
        "session_id": session_id,
        "total_cost_usd": total_cost_usd,
        "usage": dict(usage),
        "modelUsage": dict(model_usage),
        "permission_denials": permission_denials,
        "terminal_reason": terminal_reason,
        "model": model,
        "error": error,
        "uuid": new_uuid(),
    }
    if subtype != "success":
        message["errors"] = [error or "the turn did not finish"]
    if terminal_reason is None:  # no turn ran (a usage error, a bad input line)
        del message["terminal_reason"]
    return message


def control_success(request_id: str, response: Mapping[str, object] | None = None) -> dict[str, object]:
    """The answer to a ``control_request`` from the driving program (the Agent SDK)."""
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": dict(response or {})},
    }


def control_error(request_id: str, reason: str) -> dict[str, object]:
    return {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": reason}}


def setup_error_result(reason: str, session_id: str = "", model: str = "") -> dict[str, object]:
    """The result line when no turn ran: a usage or setup error, or an input line that is not a
    message. Nothing was spent, so the cost is 0."""
    return result_message(
        subtype="error_during_execution",
        session_id=session_id,
        result="",
        error=reason,
        stop_reason=None,
        terminal_reason=None,
        num_turns=0,
        duration_ms=0,
        duration_api_ms=0,
        usage=zero_usage(),
        total_cost_usd=0.0,
        model=model,
        model_usage={},
        permission_denials=[],
    )


__all__ = [
    "MCP_STATES",
    "ModelUsage",
    "TERMINAL_REASONS",
    "assistant_messages",
    "control_error",
    "control_success",
    "model_usage",
    "new_uuid",
    "notice",
    "replayed_user_message",
    "result_message",
    "setup_error_result",
    "system_init",
    "tool_result_message",
    "zero_usage",
]
