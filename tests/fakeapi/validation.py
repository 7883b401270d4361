"""The fake server's own checks of a Messages API request body.

Deliberately written independently of ``memagent.llm.invariants`` (different structure, different
wording) so that a bug in one is not mirrored by the other. Messages imitate the real API's
``invalid_request_error`` wording closely enough to be recognisable.
"""

from __future__ import annotations

import re
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_CACHE_BREAKPOINTS = 4

USER_BLOCK_TYPES = {"text", "image", "document", "tool_result", "search_result"}
ASSISTANT_BLOCK_TYPES = {"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use"}


def check_request(body: Any, *, counting_tokens: bool = False, tolerate_system_role: bool = False) -> list[str]:
    """All the reasons the real API would answer this body with a 400 (as far as we model it).

    ``tolerate_system_role`` skips ``role: system`` messages instead of rejecting them: Claude
    Code 2.1.x sends such messages, and the side-by-side comparison runs it against this fake.
    memagent's own tests never set it."""
    if not isinstance(body, dict):
        return ["request body must be a JSON object"]
    problems: list[str] = []
    problems += _check_top_level(body, counting_tokens)
    problems += _check_tools(body.get("tools"))
    problems += _check_system(body.get("system"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages: at least one message is required")
    else:
        if tolerate_system_role:
            messages = [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
        problems += _check_messages(messages) if messages else ["messages: at least one message is required"]
    breakpoints = count_cache_breakpoints(body)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    return problems


def _check_top_level(body: dict, counting_tokens: bool) -> list[str]:
    problems = []
    if not isinstance(body.get("model"), str) or not body.get("model"):
        problems.append("model: Field required")
    if not counting_tokens:
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            problems.append("max_tokens: Field required")
        elif max_tokens < 1:
            problems.append("max_tokens: must be greater than or equal to 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream: Input should be a valid boolean")
    return problems


MEMORY_TOOL_TYPE = "memory_20250818"
# The memory tool entry's fields, as the Messages API takes them (MemoryTool20250818Param).
MEMORY_TOOL_FIELDS = {"type", "name", "cache_control", "allowed_callers", "defer_loading", "input_examples", "strict"}


def _check_memory_tool(i: int, tool: dict, seen: set[str]) -> list[str]:
    """The client-side memory tool: ``name`` must be ``memory``; no description or schema."""
    problems = []
    if tool.get("name") != "memory":
        problems.append(f"tools.{i}.memory_20250818.name: Input should be 'memory'")
    elif "memory" in seen:
        problems.append("tools: Tool names must be unique. Duplicate: memory")
    seen.add("memory")
    for key in sorted(set(tool) - MEMORY_TOOL_FIELDS):
        problems.append(f"tools.{i}.memory_20250818.{key}: Extra inputs are not permitted")
    return problems


def _check_tools(tools: Any) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["tools: Input should be a valid list"]
    problems = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            problems.append(f"tools.{i}: Input should be an object")
            continue
        if tool.get("type") == MEMORY_TOOL_TYPE:
            problems += _check_memory_tool(i, tool, seen)
            continue
        if "type" in tool and tool.get("type") not in (None, "custom"):
            continue  # server tools (web_search, ...) have their own shapes
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            problems.append(f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        elif name in seen:
            problems.append(f"tools: Tool names must be unique. Duplicate: {name}")
        else:
            seen.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            problems.append(f"tools.{i}.input_schema: Field required")
        elif schema.get("type") != "object":
            problems.append(f"tools.{i}.input_schema.type: Input should be 'object'")
        elif any(key in schema for key in ("anyOf", "oneOf", "allOf")):
            problems.append(
                f"tools.{i}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"
            )
    return problems


def _check_system(system: Any) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    if not isinstance(system, list):
        return ["system: Input should be a valid string or list"]
    problems = []
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            problems.append(f"system.{i}: system blocks must be text blocks")
        elif not str(block.get("text", "")).strip():
            problems.append(f"system.{i}: text content blocks must contain non-whitespace text")
    return problems


def _blocks_of(message: dict) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _check_messages(messages: list) -> list[str]:
    problems: list[str] = []
    expected_role = "user"
    seen_ids: set[str] = set()
    pending: list[str] = []  # tool_use ids the next user message must answer
    pending_from = 0  # index of the assistant message that made those calls
    for n, message in enumerate(messages):
        where = f"messages.{n}"
        if not isinstance(message, dict):
            problems.append(f"{where}: Input should be an object")
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"{where}.role: Input should be 'user' or 'assistant'")
            continue
        if role != expected_role:
            if n == 0:
                problems.append(f'{where}: first message must use the "user" role')
            else:
                problems.append(f'{where}: roles must alternate between "user" and "assistant"')
        expected_role = "assistant" if role == "user" else "user"
        content = message.get("content")
        if content is None or content == "" or content == []:
            problems.append(f"{where}: all messages must have non-empty content")
            if role == "user" and pending:
                problems.append(_missing_results(pending_from, pending))
            pending = []
            continue
        if not isinstance(content, (str, list)):
            problems.append(f"{where}.content: Input should be a valid string or list")
            continue
        blocks = _blocks_of(message)
        problems += _check_block_shapes(where, role, blocks)
        if role == "user":
            problems += _check_results(n, blocks, pending, pending_from)
            pending = []
        else:
            if pending:
                problems.append(_missing_results(pending_from, pending))
            pending, more = _collect_tool_uses(where, blocks, seen_ids)
            pending_from = n
            problems += more
    if pending:
        problems.append(_missing_results(pending_from, pending))
    return problems


def _missing_results(index: int, ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def _check_block_shapes(where: str, role: str, blocks: list) -> list[str]:
    allowed = USER_BLOCK_TYPES if role == "user" else ASSISTANT_BLOCK_TYPES
    problems = []
    for i, block in enumerate(blocks):
        at = f"{where}.content.{i}"
        if not isinstance(block, dict) or "type" not in block:
            problems.append(f"{at}: content blocks must be objects with a type")
            continue
        kind = block["type"]
        if kind not in allowed:
            problems.append(f"{at}: block type {kind!r} is not allowed in a {role} message")
        elif kind == "text" and not (isinstance(block.get("text"), str) and block["text"].strip()):
            problems.append(f"{at}: text content blocks must contain non-whitespace text")
        elif kind == "thinking" and not isinstance(block.get("signature"), str):
            problems.append(f"{at}.signature: Field required")
    return problems


def _collect_tool_uses(where: str, blocks: list, seen_ids: set[str]) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    problems: list[str] = []
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        tool_id = block.get("id")
        if not isinstance(tool_id, str) or not TOOL_USE_ID.match(tool_id):
            problems.append(f"{where}.content.{i}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
            continue
        if tool_id in seen_ids:
            problems.append(f"{where}.content.{i}: `tool_use` ids must be unique, {tool_id} is repeated")
        seen_ids.add(tool_id)
        if not isinstance(block.get("name"), str) or not block.get("name"):
            problems.append(f"{where}.content.{i}.name: Field required")
        if not isinstance(block.get("input"), dict):
            problems.append(f"{where}.content.{i}.input: Input should be a valid dictionary")
        ids.append(tool_id)
    return ids, problems


def _check_results(n: int, blocks: list, pending: list[str], pending_from: int) -> list[str]:
    """A user message must open with the results for the previous assistant's tool calls."""
    problems = []
    answered: list[str] = []
    seen_other = False
    for i, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        if block.get("type") != "tool_result":
            seen_other = True
            continue
        result_id = block.get("tool_use_id")
        if result_id not in pending:
            problems.append(
                f"messages.{n}.content.{i}: unexpected `tool_use_id` found in `tool_result` blocks: {result_id}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
        elif result_id in answered:
            problems.append(f"messages.{n}.content.{i}: duplicate `tool_result` for {result_id}")
        else:
            answered.append(result_id)
        if seen_other:
            problems.append(
                f"messages.{n}.content.{i}: `tool_result` blocks must come before any other content in the message"
            )
    missing = [tool_id for tool_id in pending if tool_id not in answered]
    if missing:
        problems.append(_missing_results(pending_from, missing))
    return problems


def count_cache_breakpoints(body: dict) -> int:
    count = 0
    for tool in body.get("tools") or []:
        count += isinstance(tool, dict) and "cache_control" in tool
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for b in system if isinstance(b, dict) and "cache_control" in b)
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            count += sum(1 for b in _blocks_of(message) if isinstance(b, dict) and "cache_control" in b)
    return count
