"""Hooks: the user's shell commands at points of a session's life, run as Claude Code runs them.

Each hook runs with ``sh -c`` in the project root, gets one JSON object on stdin and has
``timeout`` seconds (then its whole process group is killed). Tools are named as Claude Code
names them (``Bash``, ``Read``, ``Write``, ``Edit``, ``Glob``, ``Grep``, ``TodoWrite``,
``mcp__server__tool``; :mod:`memagent.tools.claude_names`) and their inputs spelled its way
(``command``, ``file_path``, ``content``, ``old_string``/``new_string``), so a hook written for
Claude Code works unchanged; memagent's own names work in matchers too.

Every payload holds ``session_id``, ``transcript_path``, ``cwd``, ``permission_mode`` and
``hook_event_name``, plus per event (the ``matcher`` column says what a matcher is compared with):

| event | when | fields | matcher |
|---|---|---|---|
| ``SessionStart`` | the session opens; after a compaction | ``source`` (startup, resume, clear, compact) | source |
| ``UserPromptSubmit`` | before a prompt joins the conversation | ``prompt`` | — |
| ``PreToolUse`` | before a tool call (before the permission check) | ``tool_name``, ``tool_input``, ``tool_use_id`` | tool |
| ``PostToolUse`` | a tool call succeeded | … and ``tool_response`` | tool |
| ``PostToolUseFailure`` | a tool call failed | … and ``tool_response``, ``error`` | tool |
| ``Notification`` | memagent waits for the user (an approval prompt) | ``message``, ``notification_type`` | type |
| ``Stop`` | the model ends its turn | ``stop_hook_active``, ``last_assistant_message`` | — |
| ``PreCompact`` / ``PostCompact`` | around a compaction | ``trigger`` (auto, manual), ``custom_instructions`` | trigger |
| ``SessionEnd`` | the session closes | ``reason`` | reason |

Claude Code's other events (``SubagentStart``/``SubagentStop``, ``PermissionRequest``, …) are
accepted and never fire (a subagent's tool calls meet the tool hooks, but no subagent event runs;
memagent's own prompts decide permissions); an
unknown event or field, or a hook type other than ``command``, is one notice and ignored. A
hook's ``if`` (a permission rule such as ``Bash(git commit:*)``) limits a tool event's hook to the
calls that rule covers.

Matchers, as Claude Code reads them: empty or ``*`` matches everything; names of letters, digits,
``_`` joined by ``|`` (or ``,``) are compared exactly (``Edit|Write``); anything else is a regular
expression searched in the name (``mcp__github__.*``); a bad expression matches nothing.

What a hook's answer does:

- exit code 2 blocks: ``PreToolUse`` refuses the call and the model reads stderr;
  ``PostToolUse``/``PostToolUseFailure`` send stderr to the model; ``UserPromptSubmit`` refuses the
  prompt and tells the user; ``Stop`` keeps the model working, with stderr as its next message
  (at most ``AgentConfig.max_stop_continuations`` times a turn; ``stop_hook_active`` is true then);
- another non-zero exit, a timeout or a command that cannot start: one warning line, nothing more;
- exit 0: stdout may be JSON. ``decision: "block"`` with ``reason`` (and for ``PreToolUse``
  ``hookSpecificOutput.permissionDecision: "deny"`` with ``permissionDecisionReason``) acts as exit
  code 2 with that reason; ``hookSpecificOutput.additionalContext`` reaches the model (for
  ``PreToolUse``/``PostToolUse`` after the tool's result); a ``PreToolUse`` hook's
  ``permissionDecision: "ask"`` (or ``"allow"``) goes to the permission gate, which makes the call
  ask (or approves it — never past a deny rule, plan mode or a protected path); ``continue: false`` ends the turn
  (``stopReason`` is shown to the user, not the model); ``systemMessage`` is shown to the user;
  ``suppressOutput`` keeps plain stdout from being used. Plain stdout of ``SessionStart`` and
  ``UserPromptSubmit`` is context for the model. Everything a hook adds for the model is marked
  ("[Context from the user's hooks, EVENT:]"), never passed raw.

Where a hook runs: hooks from the user's own configuration (``~/.claude/settings.json``,
``$MEMAGENT_HOME/config.toml``) run on the host; hooks a *project* file defines
(``.claude/settings.json``, ``.memagent.toml``) run in the bubblewrap sandbox, like the ``bash``
tool's commands, unless the user's own configuration sets ``sandbox_project_hooks = false``.

Environment: ours filtered (:mod:`memagent.childenv`: never the API key, no secret-looking
variable unless ``sandbox_pass_env`` names it) plus ``CLAUDE_PROJECT_DIR`` (and
``MEMAGENT_PROJECT_DIR``). ``SessionStart``
hooks also get ``CLAUDE_ENV_FILE``, a file they may write ``export NAME=value`` lines to; those
variables are set for every later ``bash`` call of the session (the lines are read, never run:
``$NAME`` and ``${NAME}`` are expanded from the environment the commands already get).
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memagent.agent.feature import BaseFeature, Feature, SubagentContext, ToolCall, TurnInput
from memagent.childenv import filtered_environment
from memagent.config import HookCommand, HooksSettings
from memagent.context.conversation import Conversation
from memagent.jsontypes import JsonMapping, JsonObject, JsonValue, json_object, json_str
from memagent.llm.items import Injected
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
# Events Claude Code documents that never fire in memagent, and why (said once if configured).
NEVER_FIRED = {
    "SubagentStart": "memagent's subagents do not run them", "SubagentStop": "memagent's subagents do not run them",
    "PermissionRequest": "memagent asks for permission itself", "PermissionDenied": "not run by memagent",
    "TeammateIdle": "memagent has no teammates", "Elicitation": "MCP elicitation is not supported",
    "ElicitationResult": "MCP elicitation is not supported",
}  # fmt: skip
RUN_EVENTS = frozenset({
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Notification",
    "Stop", "PreCompact", "PostCompact", "SessionEnd",
})  # fmt: skip
_SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_|, -]+$")
_HOOK_VARS = ("MEMAGENT_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE")
_EXPORT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class HookResult:
    block_reason: str | None = None
    output: str = ""
    problem: str | None = None  # one line when the hook itself failed
    answer: JsonObject = field(default_factory=dict)  # stdout as a JSON object, when it is one


@dataclass
class Outcome:
    """What the hooks of one event said, together."""

    block: str | None = None  # the first block reason (exit 2 or a blocking decision)
    context: list[str] = field(default_factory=list)  # for the model
    halt: str | None = None  # continue: false — its stopReason
    decisions: list[tuple[str, str]] = field(default_factory=list)  # PreToolUse: (allow|ask, reason)


def matches(matcher: str, *names: str) -> bool:
    """Claude Code's matcher rules over ``names`` (a tool's Claude Code name and memagent's)."""
    matcher = matcher.strip()
    if matcher in ("", "*"):
        return True
    if _SIMPLE_MATCHER.match(matcher):
        wanted = {part.strip() for part in re.split(r"[|,]", matcher) if part.strip()}
        return any(name in wanted for name in names)
    try:
        pattern = re.compile(matcher)
    except re.error:
        return False
    return any(pattern.search(name) for name in names)


def _json_answer(stdout: str) -> JsonObject:
    text = stdout.strip()
    if not text.startswith("{"):
        return {}
    try:
        return json_object(json.loads(text))
    except json.JSONDecodeError:
        return {}


def _block_reason(answer: JsonMapping) -> str | None:
    """A block from a JSON answer: ``decision: block`` or ``permissionDecision: deny``."""
    if str(answer.get("decision", "")).lower() in ("block", "deny"):
        return str(answer.get("reason") or "blocked by a hook")
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict) and str(specific.get("permissionDecision", "")).lower() == "deny":
        return str(specific.get("permissionDecisionReason") or "blocked by a hook")
    return None


def hook_context(event: str, text: str) -> str:
    """The block that carries hooks' output to the model: ``[Context from the user's hooks, EVENT:]``."""
    return f"{Marker.HOOK_CONTEXT.value}, {event}:]\n{text}"


def _first_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def run_hook(
    hook: HookCommand, payload: JsonMapping, cwd: Path, env: Mapping[str, str], executor: Executor | None = None
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
    answer = _json_answer(stdout)
    return HookResult(block_reason=_block_reason(answer), output=stdout, answer=answer)


def _read(sink: IO[bytes]) -> str:
    sink.seek(0)
    return sink.read().decode("utf-8", errors="replace")


def read_env_file(path: Path, env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``export NAME=value`` lines of a ``CLAUDE_ENV_FILE``, read (never run): (variables, one
    note per line that is not such an assignment). ``$NAME``/``${NAME}`` come from ``env`` and
    the variables set above them."""
    found: dict[str, str] = {}
    notes: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found, notes
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _EXPORT.match(line)
        try:
            words = shlex.split(match.group(2)) if match else []
        except ValueError:
            words = []
        if match is None or len(words) > 1:
            notes.append(f"CLAUDE_ENV_FILE: {line.strip()[:80]!r} is not an `export NAME=value` line; ignored")
            continue
        scope = {**env, **found}
        found[match.group(1)] = _VAR.sub(lambda m: scope.get(m.group(1) or m.group(2), ""), words[0] if words else "")
    return found, notes


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
        permission_mode: Callable[[], str] = lambda: "default",
        shell_env: MutableMapping[str, str] | None = None,
        env_dir: Path | None = None,
        source: str = "startup",
        condition: Callable[[str, ToolCall], bool] | None = None,
        sandboxed: Executor | None = None,
        pass_env: Iterable[str] = (),
    ) -> None:
        self.hooks = hooks
        self.root = root
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.warn = warn
        self.permission_mode = permission_mode
        self.shell_env = shell_env if shell_env is not None else {}  # variables later bash calls get
        self.env_dir = env_dir
        self.source = source  # startup | resume | clear: why the session started
        self.condition = condition  # does a hook's ``if`` rule cover this call?
        self.sandboxed = sandboxed  # where a project's hooks run (None: on the host, like the user's)
        base = filtered_environment(env, pass_env)
        self.env = {**base, "MEMAGENT_PROJECT_DIR": str(root), "CLAUDE_PROJECT_DIR": str(root)}
        self._session_context: str | None = None
        self._started = False
        self._prompt_context: list[str] = []
        self._tool_context: list[str] = []
        self._halt: str | None = None
        self._stop_active = False
        self._ran_once: set[int] = set()
        for note in hooks.notes:
            warn(f"hooks: {note}")
        for event, why in NEVER_FIRED.items():
            if hooks.for_event(event):
                warn(f"hooks: {event} hooks never run in memagent ({why})")

    # ------------------------------------------------------------------ running

    def _payload(self, event: str, fields: JsonObject) -> JsonObject:
        transcript = self.transcript_path()
        return {
            "session_id": self.session_id(),
            "transcript_path": str(transcript) if transcript else None,
            "cwd": str(self.root),
            "permission_mode": self.permission_mode(),
            "hook_event_name": event,
            **fields,
        }

    def _selected(self, event: str, names: tuple[str, ...], call: ToolCall | None = None) -> list[HookCommand]:
        chosen = []
        for hook in self.hooks.for_event(event):
            if names and not matches(hook.matcher, *names):
                continue
            if hook.condition and call is not None and not self._covers(hook.condition, call):
                continue
            if hook.once and id(hook) in self._ran_once:
                continue
            self._ran_once.add(id(hook)) if hook.once else None
            chosen.append(hook)
        return chosen

    def _covers(self, rule: str, call: ToolCall) -> bool:
        if self.condition is None:
            return True  # nothing to judge it with: run the hook rather than skip a check
        return self.condition(rule, call)

    def _run(
        self,
        event: str,
        names: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
        call: ToolCall | None = None,
        **fields: JsonValue,
    ) -> Outcome:
        """Run the event's hooks whose matcher accepts ``names`` (and whose ``if`` rule covers
        ``call``), in order, until one blocks; ``fields`` join the payload's common ones."""
        outcome = Outcome()
        payload = self._payload(event, fields)
        for hook in self._selected(event, names, call):
            executor, hook_env = self._where(hook, env or self.env)
            if hook.run_async:
                threading.Thread(
                    target=run_hook,
                    args=(hook, payload, self.root, hook_env, executor),
                    daemon=True,
                    name="memagent-hook",
                ).start()
                continue
            result = run_hook(hook, payload, self.root, hook_env, executor)
            if result.problem:
                self.warn(f"{event} hook `{_first_line(hook.command, 60)}` failed: {result.problem}")
                continue
            self._read_answer(event, result, outcome)
            if outcome.block is not None or outcome.halt is not None:
                break
        return outcome

    def _where(self, hook: HookCommand, env: Mapping[str, str]) -> tuple[Executor, Mapping[str, str]]:
        """A project's hook runs in the sandbox (with the sandbox's environment); the user's own
        hooks on the host."""
        if hook.origin == "project" and self.sandboxed is not None:
            confined = self.sandboxed
            if isinstance(confined, SandboxedExecutor):
                return confined, {**confined.environment(env, self.root), **{k: env[k] for k in _HOOK_VARS if k in env}}
            return confined, env
        return LocalExecutor(), env

    def _read_answer(self, event: str, result: HookResult, outcome: Outcome) -> None:
        answer = result.answer
        message = json_str(answer.get("systemMessage"))
        if message.strip():
            self.warn(f"{event} hook: {_first_line(message, 300)}")
        if answer.get("continue") is False:
            outcome.halt = str(answer.get("stopReason") or f"a {event} hook stopped the turn")
        if result.block_reason is not None:
            outcome.block = result.block_reason
        specific = json_object(answer.get("hookSpecificOutput"))
        decision = str(specific.get("permissionDecision") or answer.get("decision") or "").lower()
        if decision in ("allow", "approve", "ask"):
            outcome.decisions.append(
                (
                    "ask" if decision == "ask" else "allow",
                    str(specific.get("permissionDecisionReason") or answer.get("reason") or ""),
                )
            )
        extra = specific.get("additionalContext")
        if isinstance(extra, str) and extra.strip():
            outcome.context.append(extra.strip())
        elif not answer and result.output.strip() and event in ("SessionStart", "UserPromptSubmit"):
            outcome.context.append(result.output.strip())

    @staticmethod
    def _context(event: str, pieces: list[str]) -> str | None:
        text = "\n".join(pieces)[:MAX_CONTEXT_CHARS]
        return hook_context(event, text) if text.strip() else None

    # ------------------------------------------------------------------ session start and end

    def system_text(self) -> str | None:
        if not self._started:
            self._started = True
            self._session_context = self._session_start(self.source)
        return self._session_context

    def _session_start(self, source: str) -> str | None:
        env_file = self._env_file(source)
        env = {**self.env, "CLAUDE_ENV_FILE": str(env_file)} if env_file is not None else self.env
        outcome = self._run("SessionStart", (source,), env=env, source=source)
        if outcome.halt:
            self.warn(f"SessionStart hook: {outcome.halt}")
        if env_file is not None:
            self._take_env_file(env_file)
        return self._context("SessionStart", outcome.context)

    def _env_file(self, source: str) -> Path | None:
        if self.env_dir is None or not self.hooks.for_event("SessionStart"):
            return None
        try:
            self.env_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self.env_dir / f"session-{source}.sh"
            path.touch(mode=0o600)
            return path
        except OSError as exc:
            self.warn(f"hooks: CLAUDE_ENV_FILE cannot be made ({exc.strerror or exc})")
            return None

    def _take_env_file(self, path: Path) -> None:
        variables, notes = read_env_file(path, {**self.env, **self.shell_env})
        for note in notes:
            self.warn(note)
        self.shell_env.update(variables)
        try:
            path.unlink()
        except OSError:
            pass

    def close(self) -> None:
        self._run("SessionEnd", ("other",), reason="other")

    # ------------------------------------------------------------------ prompts and turns

    def check_prompt(self, text: str) -> str | None:
        self._stop_active = False
        self._halt = None
        outcome = self._run("UserPromptSubmit", prompt=text)
        self._prompt_context = outcome.context if outcome.block is None and outcome.halt is None else []
        if outcome.block is not None:
            return f"a UserPromptSubmit hook says: {outcome.block}"
        return f"a UserPromptSubmit hook stopped it: {outcome.halt}" if outcome.halt else None

    def turn_context(self, turn: TurnInput) -> Injected | None:
        pieces, self._prompt_context = self._prompt_context, []
        text = self._context("UserPromptSubmit", pieces)
        return Injected(Marker.HOOK_CONTEXT, text) if text else None

    def continue_turn(self, text: str) -> Injected | None:
        outcome = self._run("Stop", stop_hook_active=self._stop_active, last_assistant_message=text)
        if outcome.halt:
            self.warn(f"Stop hook: {outcome.halt}")
            return None
        if outcome.block is None:
            return None
        self._stop_active = True
        return Injected(
            Marker.HOOK_CONTEXT, hook_context("Stop", f"A Stop hook asks you to keep working: {outcome.block}")
        )

    def halt_reason(self) -> str | None:
        reason, self._halt = self._halt, None
        return f"a hook stopped the turn: {reason}" if reason else None

    # ------------------------------------------------------------------ tools

    def check_tool(self, call: ToolCall) -> HookVerdict | None:
        """The hooks' word for the gate: a refusal, else "ask" if any hook asks, else "allow"."""
        name, tool_input = self._claude_call(call)
        outcome = self._run(
            "PreToolUse", (name, call.name), call=call, tool_name=name, tool_input=tool_input, tool_use_id=call.id
        )
        self._tool_context += [c for c in [self._context("PreToolUse", outcome.context)] if c]
        if outcome.halt:
            self._halt = outcome.halt
            return HookVerdict("deny", outcome.halt, source="a PreToolUse hook that stopped the turn")
        if outcome.block is not None:
            return HookVerdict("deny", outcome.block)
        for wanted in ("ask", "allow"):
            said = next((reason for action, reason in outcome.decisions if action == wanted), None)
            if said is not None:
                return HookVerdict(wanted, said)
        return None

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        name, tool_input = self._claude_call(call)
        event = "PostToolUseFailure" if outcome.is_error else "PostToolUse"
        fields: JsonObject = {
            "tool_name": name,
            "tool_input": tool_input,
            "tool_use_id": call.id,
            "tool_response": self._response(name, tool_input, outcome),
        }
        if outcome.is_error:
            fields["error"] = outcome.content[:2000]
        result = self._run(event, (name, call.name), None, call, **fields)
        if result.block is not None:
            result.context.insert(0, f"{event} hook feedback: {result.block}")
        context = self._context(event, result.context)
        if context:
            self._tool_context.append(context)
        if result.halt:
            self._halt = result.halt

    def after_tools(self, names: list[str]) -> Injected | None:
        pieces, self._tool_context = self._tool_context, []
        return Injected(Marker.HOOK_CONTEXT, "\n\n".join(pieces)) if pieces else None

    def _claude_call(self, call: ToolCall) -> tuple[str, JsonObject]:
        if call.tool is not None:
            return call.tool.claude_call(call.input, self.root)
        return call.name, dict(call.input)

    @staticmethod
    def _response(name: str, tool_input: JsonObject, outcome: ToolOutcome) -> JsonObject:
        """``tool_response`` in Claude Code's shape for its tools, with memagent's keys beside."""
        content = outcome.content[:MAX_PAYLOAD_CHARS]
        response: JsonObject = {"content": content, "is_error": outcome.is_error}
        if name == "Bash":
            output = str(outcome.details.get("output", content))[:MAX_PAYLOAD_CHARS]
            response.update(
                stdout=output,
                stderr="",
                interrupted=bool(outcome.details.get("timed_out")),
                isImage=False,
                exit_code=outcome.details.get("exit_code"),
            )
        elif "file_path" in tool_input:
            response.update(filePath=tool_input["file_path"], success=not outcome.is_error)
        return response

    # ------------------------------------------------------------------ compaction and waiting

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        self._run("PreCompact", ("auto",), trigger="auto", custom_instructions="", messages=len(messages))

    def reinject(self) -> str | None:
        """After a compaction: PostCompact hooks, then SessionStart hooks with ``source: compact``,
        whose context is put back (the compaction dropped what they said at the start)."""
        self._run("PostCompact", ("auto",), trigger="auto")
        return self._session_start("compact")

    def notify(self, message: str, kind: str = "permission_prompt") -> None:
        """``Notification`` hooks: memagent is waiting for the user."""
        self._run("Notification", (kind,), message=message, notification_type=kind)

    def after_turn(self, conversation: Conversation) -> None:
        self._stop_active = False

    def for_subagent(self, child: SubagentContext) -> Feature:
        """A subagent's tool calls meet the same PreToolUse and PostToolUse hooks; the session's
        other events stay the session's."""
        return SubagentToolHooks(self)


class SubagentToolHooks(HooksFeature):
    """The session's hooks, for one of its subagents: its tool calls meet the same PreToolUse and
    PostToolUse hooks (same payload, verdicts through the subagent's gate), and what those hooks
    add or a halt they ask for goes to the subagent's own turn. The session's other events
    (SessionStart, UserPromptSubmit, Stop, compaction, SessionEnd) stay the session's."""

    def __init__(self, session: HooksFeature) -> None:  # not super().__init__: it would warn again
        self.__dict__.update(session.__dict__)  # the same hooks, environment and ``once`` record
        self.session = session
        self._session_context = None
        self._prompt_context = []
        self._tool_context = []
        self._halt = None
        self._stop_active = False

    def system_text(self) -> str | None:
        return None

    def close(self) -> None:
        return None

    def check_prompt(self, text: str) -> str | None:
        self._halt = None
        return None

    def turn_context(self, turn: TurnInput) -> Injected | None:
        return None

    def continue_turn(self, text: str) -> Injected | None:
        return None

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        return None

    def reinject(self) -> str | None:
        return None

    def after_turn(self, conversation: Conversation) -> None:
        return None

    def for_subagent(self, child: SubagentContext) -> Feature:
        return SubagentToolHooks(self.session)


__all__ = [
    "HookResult",
    "HooksFeature",
    "NEVER_FIRED",
    "RUN_EVENTS",
    "SubagentToolHooks",
    "matches",
    "read_env_file",
    "run_hook",
]
