"""Hooks: the user's shell commands at points of a session's life (the ``hooks`` setting).

Each hook runs with ``sh -c`` in the project root, gets one JSON object on stdin and has
``timeout`` seconds (then its whole process group is killed). The object always holds
``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``, plus per event:

- ``SessionStart``: ``source`` ("startup"). Its stdout is added to the system prompt as context.
- ``UserPromptSubmit``: ``prompt``. It may block the prompt; its stdout is added to the message.
- ``PreToolUse``: ``tool_name``, ``tool_input``. It may block the call; the model reads the reason.
- ``PostToolUse``: ``tool_name``, ``tool_input``, ``tool_response`` (``content``, ``is_error``).
- ``PreCompact``: ``trigger`` ("compaction") and ``messages`` (how many are about to be summarised).
- ``Stop``: the turn is over.

Blocking (``UserPromptSubmit`` and ``PreToolUse``): exit code 2 blocks with stderr as the reason,
or stdout is a JSON object ``{"decision": "block", "reason": "…"}`` (Claude Code's
``hookSpecificOutput.permissionDecision: "deny"`` with ``permissionDecisionReason`` is read
too). A ``PreToolUse`` hook's decision goes to the gate, which weighs it with the rules and the
mode: ``permissionDecision: "ask"`` makes the call ask, ``"allow"`` approves it (never past a
deny rule, plan mode or a protected path). Any other failure — a non-zero exit, a timeout, a command that cannot start — is reported
in one warning line and never blocks or ends anything.

Where a hook runs: hooks from the user's own configuration (``$MEMAGENT_HOME/config.toml``, the
environment) run on the host; hooks a *project* file defines run in the bubblewrap sandbox, like
the ``bash`` tool's commands (project writable, its configuration read-only, home hidden, no
network), unless the user's own configuration sets ``sandbox_project_hooks = false``.

The environment of a hook is ours filtered (:mod:`memagent.childenv`: never the API key, no
secret-looking variable unless ``sandbox_pass_env`` names it) plus ``MEMAGENT_PROJECT_DIR`` (and
``CLAUDE_PROJECT_DIR``, so hooks written for Claude Code work).
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Mapping

from memagent.agent.feature import BaseFeature, Feature, SubagentContext, ToolCall, TurnInput
from memagent.childenv import filtered_environment
from memagent.context.conversation import Conversation
from memagent.config import HookCommand, HooksSettings
from memagent.llm.types import Message
from memagent.markers import Marker
from memagent.permissions.effects import HookVerdict
from memagent.tools.base import ToolOutcome
from memagent.tools.executor import Command, Executor, LocalExecutor, SandboxedExecutor
from memagent.tools.sandbox import SandboxRefused

BLOCK_EXIT = 2
HOOK_SHELL = "/bin/sh"
MAX_CONTEXT_CHARS = 10_000
MAX_PAYLOAD_CHARS = 100_000
# Claude Code's tool names, so a matcher written for it ("Bash", "Edit|Write") works here.
CLAUDE_NAMES = {
    "bash": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "todo": "TodoWrite",
}


@dataclass(frozen=True)
class HookResult:
    block_reason: str | None = None
    output: str = ""
    problem: str | None = None  # one line when the hook itself failed
    decision: str | None = None  # a PreToolUse hook's "ask" or "allow" (a refusal is block_reason)


def matches(matcher: str, tool_name: str) -> bool:
    """Empty or ``*`` matches every tool; otherwise a regex matched against the whole name (or
    Claude Code's name for the same tool), case-insensitively. A bad regex matches literally."""
    if matcher.strip() in ("", "*"):
        return True
    names = [tool_name] + ([CLAUDE_NAMES[tool_name]] if tool_name in CLAUDE_NAMES else [])
    try:
        pattern = re.compile(matcher, re.IGNORECASE)
    except re.error:
        return matcher in names
    return any(pattern.fullmatch(name) for name in names)


def _json_answer(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _decision(stdout: str) -> str | None:
    """A block reason from a JSON answer on stdout, if it asks to block."""
    data = _json_answer(stdout)
    if data is None:
        return None
    if str(data.get("decision", "")).lower() in ("block", "deny"):
        return str(data.get("reason") or "blocked by a hook")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict) and str(specific.get("permissionDecision", "")).lower() == "deny":
        return str(specific.get("permissionDecisionReason") or "blocked by a hook")
    return None


def _permission_decision(stdout: str) -> tuple[str | None, str]:
    """A PreToolUse hook's ``permissionDecision`` of "ask" or "allow", with its reason."""
    data = _json_answer(stdout)
    specific = data.get("hookSpecificOutput") if data else None
    if not isinstance(specific, dict):
        return None, ""
    decision = str(specific.get("permissionDecision", "")).lower()
    reason = str(specific.get("permissionDecisionReason") or "")
    return (decision, reason) if decision in ("ask", "allow") else (None, "")


def hook_context(event: str, text: str) -> str:
    """The block that carries hooks' stdout to the model: ``[Context from the user's hooks, EVENT:]``."""
    return f"{Marker.HOOK_CONTEXT.value}, {event}:]\n{text}"


def _first_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def run_hook(
    hook: HookCommand, payload: dict[str, Any], cwd: Path, env: Mapping[str, str], executor: Executor | None = None
) -> HookResult:
    """Run one hook command with ``executor`` (default: on the host); never raises."""
    data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    command = Command(cwd, env, hook.timeout, script=hook.command, shell=HOOK_SHELL, stdin=data)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            done = (executor or LocalExecutor()).run(command, out, stderr=err)
        except SandboxRefused as exc:
            return HookResult(problem=str(exc))
        except OSError as exc:
            return HookResult(problem=f"cannot start: {exc}")
        stdout, stderr = _read(out), _read(err)
    if done.timed_out:
        return HookResult(problem=f"timed out after {hook.timeout:g}s")
    if done.code == BLOCK_EXIT:
        return HookResult(block_reason=stderr.strip() or "blocked by a hook (exit code 2)", output=stdout)
    if done.code != 0:
        detail = _first_line(stderr) or _first_line(stdout)
        return HookResult(output=stdout, problem=f"exit code {done.code}" + (f": {detail}" if detail else ""))
    block = _decision(stdout)
    decision, reason = _permission_decision(stdout) if block is None else (None, "")
    return HookResult(block_reason=block, output=stdout if decision is None else reason, decision=decision)


def _read(sink: IO[bytes]) -> str:
    sink.seek(0)
    return sink.read().decode("utf-8", errors="replace")


class HooksFeature(BaseFeature):
    name = "hooks"

    def __init__(
        self,
        hooks: HooksSettings,
        *,
        root: Path,
        session_id: Callable[[], str],
        env: Mapping[str, str],
        transcript_path: Callable[[], Path | None] = lambda: None,
        warn: Callable[[str], None] = lambda line: None,
        executor: Executor | None = None,
        pass_env: Iterable[str] = (),
    ) -> None:
        self.hooks = hooks
        self.root = root
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.warn = warn
        self.executor = executor or LocalExecutor()
        base = filtered_environment(env, pass_env)
        if isinstance(self.executor, SandboxedExecutor):
            base = self.executor.environment(base, root)
        self.env = {**base, "MEMAGENT_PROJECT_DIR": str(root), "CLAUDE_PROJECT_DIR": str(root)}
        self._session_context: str | None = None
        self._started = False
        self._prompt_context: list[str] = []

    # ------------------------------------------------------------------ running

    def _payload(self, event: str, **fields: Any) -> dict[str, Any]:
        transcript = self.transcript_path()
        return {
            "session_id": self.session_id(),
            "transcript_path": str(transcript) if transcript else None,
            "cwd": str(self.root),
            "hook_event_name": event,
            **fields,
        }

    def _run(self, event: str, **fields: Any) -> tuple[str | None, list[str]]:
        """Run the event's matching hooks in order: (first block reason, outputs). Stops at a block.
        A ``tool_name`` field selects the hooks whose matcher accepts it."""
        block, outputs, _ = self._run_all(event, **fields)
        return block, outputs

    def _run_all(self, event: str, **fields: Any) -> tuple[str | None, list[str], list[HookResult]]:
        outputs: list[str] = []
        results: list[HookResult] = []
        tool_name = fields.get("tool_name")
        for hook in self.hooks.for_event(event):
            if tool_name is not None and not matches(hook.matcher, tool_name):
                continue
            result = run_hook(hook, self._payload(event, **fields), self.root, self.env, self.executor)
            results.append(result)
            if result.problem:
                self.warn(f"{event} hook `{_first_line(hook.command, 60)}` failed: {result.problem}")
            if result.block_reason is not None:
                return result.block_reason, outputs, results
            if result.output.strip() and not result.problem and result.decision is None:
                outputs.append(result.output.strip())
        return None, outputs, results

    # ------------------------------------------------------------------ Feature hooks

    def system_text(self) -> str | None:
        if not self._started:
            self._started = True
            _, outputs = self._run("SessionStart", source="startup")
            text = "\n".join(outputs)[:MAX_CONTEXT_CHARS]
            self._session_context = hook_context("SessionStart", text) if text else None
        return self._session_context

    def check_prompt(self, text: str) -> str | None:
        reason, outputs = self._run("UserPromptSubmit", prompt=text)
        self._prompt_context = outputs if reason is None else []
        return None if reason is None else f"a UserPromptSubmit hook says: {reason}"

    def turn_context(self, turn: TurnInput) -> str | None:
        outputs, self._prompt_context = self._prompt_context, []
        text = "\n".join(outputs)[:MAX_CONTEXT_CHARS]
        return hook_context("UserPromptSubmit", text) if text else None

    def check_tool(self, call: ToolCall) -> HookVerdict | None:
        """The hooks' word for the gate: a refusal, else "ask" if any hook asks, else "allow"."""
        reason, _, results = self._run_all("PreToolUse", **self._tool_fields(call))
        if reason is not None:
            return HookVerdict("deny", reason)
        for wanted in ("ask", "allow"):
            said = next((r for r in results if r.decision == wanted), None)
            if said is not None:
                return HookVerdict(wanted, said.output.strip())
        return None

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        response = {"content": outcome.content[:MAX_PAYLOAD_CHARS], "is_error": outcome.is_error}
        self._run("PostToolUse", tool_response=response, **self._tool_fields(call))

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        self._run("PreCompact", trigger="compaction", messages=len(messages))

    def after_turn(self, conversation: Conversation) -> None:
        self._run("Stop", stop_hook_active=False)

    @staticmethod
    def _tool_fields(call: ToolCall) -> dict[str, Any]:
        return {"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.input}

    def for_subagent(self, child: SubagentContext) -> Feature:
        """A subagent's tool calls meet the same PreToolUse and PostToolUse hooks; the session's
        other events stay the session's."""
        return SubagentToolHooks(self)


class SubagentToolHooks(BaseFeature):
    """The tool hooks of a session, for one of its subagents."""

    name = "hooks"

    def __init__(self, hooks: HooksFeature) -> None:
        self.hooks = hooks

    def check_tool(self, call: ToolCall) -> str | None:
        return self.hooks.check_tool(call)

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        self.hooks.after_tool(call, outcome)

    def for_subagent(self, child: SubagentContext) -> Feature:
        return self


__all__ = ["HookResult", "HooksFeature", "SubagentToolHooks", "matches", "run_hook"]
