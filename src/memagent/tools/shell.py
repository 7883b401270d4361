"""The ``bash`` tool: run a shell command in the project root, safely enough to leave running.

* ``bash -c`` in the project root, stdin from ``/dev/null``, in its own session (so its own
  process group): a timeout or Ctrl-C kills the command *and everything it started*.
* stdout and stderr go, interleaved, into an anonymous temp file rather than a pipe, so a
  background child that keeps the descriptor open cannot hang us and huge output costs no memory.
* The result is capped at ``ctx.output_cap_chars`` keeping the head and the (usually more useful)
  tail; the full output is then saved under the outputs directory, where ``read_file`` can read it.
* A non-zero exit code is reported in the result but is not a tool error: the tool worked, the
  command failed, and the model reads the code. Timeouts and refusals are errors.
* The gate decides whether a command runs (:mod:`memagent.permissions`): the tool declares the
  command it runs, and the gate's dangerous-command guard refuses catastrophic ones in every
  mode. The handler checks the same guard once more, so a call that reaches it some other way
  is refused too.
* The command runs through the sandboxed :mod:`memagent.tools.executor` — inside the bubblewrap
  sandbox of :mod:`memagent.tools.sandbox` when it can start (project writable, its power files
  read-only, home hidden, no network) — and never with a secret in its environment.
* While it runs, new output is passed to ``ctx.progress`` (the REPL shows the last lines live);
  a cancelled call (``ToolCancelled``, Ctrl-C, a termination signal) kills its process group,
  and when the user interrupted it the model gets the output printed so far.
* The saved full output is itself capped (``saved_output_max_bytes``): head and tail are kept
  and the total size is noted in the middle.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from memagent.fsutil import private_dir
from memagent.jsontypes import JsonValue
from memagent.permissions.danger import dangerous_reason
from memagent.permissions.effects import Effect, declares
from memagent.redact import RedactingWriter
from memagent.tools import claude_names
from memagent.tools.background import ShellError, ShellRegistry
from memagent.tools.base import Tool, ToolCancelled, ToolContext, ToolError, ToolInput, ToolOutcome
from memagent.tools.executor import Command, SandboxedExecutor
from memagent.tools.fs import optional_field
from memagent.tools.paths import display_path, outputs_dir, project_root
from memagent.tools.sandbox import Sandbox, SandboxConfig, SandboxRefused

if TYPE_CHECKING:
    from memagent.config import Settings

MAX_TIMEOUT_SECONDS = 600.0
INTERRUPTED_COMMAND = "The user interrupted this command; it and its child processes were killed."
# Above this much output only the head and tail bytes are decoded.
FULL_DECODE_LIMIT_BYTES = 64 * 1024 * 1024
HEAD_SHARE = 0.4  # of the cap; the rest goes to the tail

# --- running -------------------------------------------------------------------------------

DEFAULT_SAVED_OUTPUT_MAX_BYTES = 8 * 1024 * 1024


class BashInput(ToolInput):
    command: str = Field(description="The shell command to run (bash -c) in the project root.")
    timeout: float | SkipJsonSchema[None] = optional_field(
        f"Seconds before the command and its children are killed (default 120, max {MAX_TIMEOUT_SECONDS:g}).",
        exclusiveMinimum=0,
        maximum=MAX_TIMEOUT_SECONDS,
    )
    run_in_background: bool | SkipJsonSchema[None] = optional_field(
        "Run the command in the background and return its id at once (no timeout); read its output "
        "later with bash_output and stop it with kill_shell. For servers, watchers and long builds."
    )

    @field_validator("timeout")
    @classmethod
    def _timeout_in_range(cls, value: float | None) -> float | None:
        if value is not None and not (0 < value <= MAX_TIMEOUT_SECONDS):
            raise ValueError(f"timeout must be more than 0 and at most {MAX_TIMEOUT_SECONDS:g} seconds")
        return value


@dataclass
class ShellConfig:
    """How the bash tool runs commands: the executor (sandboxed, probed once), the saved-output
    cap, and the session's background shells (None: ``run_in_background`` is refused)."""

    sandbox: Sandbox = field(default_factory=Sandbox)
    saved_output_max_bytes: int = DEFAULT_SAVED_OUTPUT_MAX_BYTES
    background: ShellRegistry | None = None
    # Variables every command gets on top of its (scrubbed) environment, shared with whoever
    # sets them during the session (a SessionStart hook's CLAUDE_ENV_FILE).
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(
        cls, settings: Settings, memagent_home: Path | None = None, extra_env: dict[str, str] | None = None
    ) -> ShellConfig:
        return cls(
            sandbox=Sandbox(SandboxConfig.from_settings(settings, memagent_home)),
            saved_output_max_bytes=settings.saved_output_max_bytes,
            extra_env=extra_env if extra_env is not None else {},
        )

    @property
    def executor(self) -> SandboxedExecutor:
        return SandboxedExecutor(self.sandbox)

    def command(self, script: str, root: Path, timeout: float = 0.0) -> Command:
        """``script`` as the bash tool runs it in ``root``: its environment filtered, nothing
        waiting for a human."""
        env = {**self.executor.environment(os.environ, root), **NON_INTERACTIVE, **self.extra_env}
        return Command(root, env, timeout, script=script)

    def with_background(self) -> ShellConfig:
        """This configuration with a registry of background shells of its own (run by the same
        executor, with the same environment)."""
        self.background = ShellRegistry(self.executor, self.command)
        return self


# Nothing a command starts may wait for a human.
NON_INTERACTIVE = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


def split_head_tail(text: str, cap: int) -> tuple[str, str, int]:
    """Head and tail of ``text`` within ``cap`` chars, cut at line breaks when that loses little."""
    head_budget = int(cap * HEAD_SHARE)
    tail_budget = cap - head_budget
    head = text[:head_budget]
    newline = head.rfind("\n")
    if newline >= head_budget // 2:
        head = head[: newline + 1]
    tail = text[len(text) - tail_budget :] if tail_budget > 0 else ""
    newline = tail.find("\n")
    if 0 <= newline < tail_budget // 2:
        tail = tail[newline + 1 :]
    return head, tail, len(text) - len(head) - len(tail)


def _copy_capped(sink: IO[bytes], out: RedactingWriter, max_bytes: int) -> int:
    """Copy ``sink`` into ``out``, keeping only its head and tail past ``max_bytes``; its size."""
    size = sink.seek(0, os.SEEK_END)
    sink.seek(0)
    if size <= max_bytes:
        shutil.copyfileobj(sink, out)
        return size
    head_bytes = int(max_bytes * HEAD_SHARE)
    tail_bytes = max_bytes - head_bytes
    head = sink.read(head_bytes)
    head = head[: head.rfind(b"\n") + 1] or head  # whole lines: a secret is never cut in two
    sink.seek(size - tail_bytes)
    sink.readline()  # the tail starts at a line too
    omitted = sink.tell() - len(head)
    out.write(head)
    out.write(f"\n[… {omitted} bytes omitted here; the command wrote {size} bytes in all …]\n".encode())
    shutil.copyfileobj(sink, out)
    return size


def _save_full_output(sink: IO[bytes], ctx: ToolContext, max_bytes: int) -> str:
    """Save the output (capped at ``max_bytes``) in the outputs directory, atomically.

    Returns how the result should name it: its display path, and the cap when it applied."""
    directory = outputs_dir(ctx)
    root = project_root(ctx)
    # 0700 with the folders on the way, never through a symlink planted in the project
    # (``UnsafePath``, an OSError: not saved)
    private_dir(directory, inside=root if directory.is_relative_to(root) else None)
    name = f"bash-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}.log"
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw, RedactingWriter(raw) as out:  # no secret reaches the disk
            size = _copy_capped(sink, out, max(max_bytes, 1024))
        os.replace(tmp_name, directory / name)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    shown = display_path(ctx, directory / name)
    if size > max(max_bytes, 1024):
        return f"full output ({size} bytes) saved to {shown}, its middle cut to keep {max_bytes} bytes"
    return f"full output saved to {shown}"


def render_output(sink: IO[bytes], ctx: ToolContext, saved_max_bytes: int = DEFAULT_SAVED_OUTPUT_MAX_BYTES) -> str:
    """The command's output for the model: whole when short, else head + marker + tail."""
    cap = max(ctx.output_cap_chars, 100)
    size = sink.seek(0, os.SEEK_END)
    sink.seek(0)
    if size <= FULL_DECODE_LIMIT_BYTES:
        text = sink.read().decode("utf-8", errors="replace")
        if len(text) <= cap:
            return text
        head, tail, omitted = split_head_tail(text, cap)
    else:  # decode only the ends; count what is left out in bytes ~ chars
        head_bytes = sink.read(cap * 4)
        sink.seek(max(0, size - cap * 4))
        tail_bytes = sink.read()
        head, _, _ = split_head_tail(head_bytes.decode("utf-8", errors="replace"), cap)
        _, tail, _ = split_head_tail(tail_bytes.decode("utf-8", errors="replace"), cap)
        omitted = size - len(head.encode()) - len(tail.encode())
    try:
        where = _save_full_output(sink, ctx, saved_max_bytes)
    except OSError as exc:
        where = f"full output could not be saved: {exc}"
    if head and not head.endswith("\n"):
        head += "\n"
    return f"{head}[… {omitted} chars omitted; {where}]\n{tail}"


def _describe_exit(code: int) -> str:
    if code < 0:
        with suppress(ValueError):
            return f"[killed by signal {signal.Signals(-code).name}]"
        return f"[killed by signal {-code}]"
    return f"[exit code: {code}]"


BASH_DESCRIPTION = """\
Run a shell command with bash in the project root and return its combined stdout/stderr.

Each call starts a fresh shell in the project root (`cd` does not carry over; chain with
`&&`). Non-interactive (stdin is empty): never start editors, pagers or prompts. The result ends
with the exit code. Long output keeps the head and tail; the full text is saved to a file
you can open with read_file. Default timeout 120 s (`timeout` up to 600). For a server, a
watcher or anything long, pass `run_in_background: true`: you get an id at once and read the
output with bash_output. Prefer read_file,
glob, grep, edit_file and write_file over cat, find, grep, sed and echo redirection.
Commands usually run in a sandbox: only the project folder is writable (its git config and
hooks and agent configuration such as .mcp.json, .claude/ and .memagent.toml stay read-only),
/tmp is private, the home folder is hidden (tool caches stay readable) and there is no
network. Catastrophic commands
(sudo, rm -rf /, mkfs, …) are refused."""


def _start_background(shell: ShellConfig, command: str, root: Path) -> str:
    if shell.background is None:
        raise ToolError("background commands are not available here; run it without run_in_background")
    try:
        started = shell.background.start(command, root)
    except SandboxRefused as exc:
        raise ToolError(f"{exc}. The command was not run.") from None
    except (ShellError, OSError) as exc:
        raise ToolError(f"the command could not start in the background: {exc}") from None
    prefix = started.notice + "\n" if started.notice else ""
    return (
        f"{prefix}Command running in background with ID: {started.id}. Read its output with bash_output "
        f'(bash_id "{started.id}"); stop it with kill_shell (shell_id "{started.id}").'
    )


def bash_tool(config: ShellConfig | None = None) -> Tool[BashInput]:
    """The ``bash`` tool, running commands as ``config`` says (default: sandboxed when possible)."""
    shell = config or ShellConfig()

    def bash(inp: BashInput, ctx: ToolContext) -> str | ToolOutcome:
        command = inp.command
        if not command.strip():
            raise ToolError("command is empty.")
        reason = dangerous_reason(command)
        if reason:
            raise ToolError(
                f"Refused: {reason}. The command was not run; if it is really needed, ask the user to run it."
            )
        root = project_root(ctx)
        if inp.run_in_background:
            return _start_background(shell, command, root)
        timeout = inp.timeout or ctx.bash_timeout
        with tempfile.TemporaryFile() as sink:
            try:
                done = shell.executor.run(shell.command(command, root, timeout), sink, progress=ctx.progress)
            except SandboxRefused as exc:
                raise ToolError(f"{exc}. The command was not run.") from None
            except ToolCancelled:  # the user interrupted it: the model gets what it printed so far
                body = render_output(sink, ctx, shell.saved_output_max_bytes).rstrip("\n") or "(no output)"
                return ToolOutcome(f"{INTERRUPTED_COMMAND}\nPartial output:\n{body}", is_error=True)
            output = render_output(sink, ctx, shell.saved_output_max_bytes)
        code, notice = done.code, done.notice
        prefix = notice + "\n" if notice else ""
        if code is None:
            body = output.rstrip("\n") or "(no output)"
            return ToolOutcome(
                f"{prefix}Command timed out after {timeout:g} s; it and its child processes were killed.\n"
                f"Partial output:\n{body}",
                is_error=True,
                details={"exit_code": None, "output": output, "timed_out": True},
            )
        details: dict[str, JsonValue] = {"exit_code": code, "output": output, "timed_out": False}
        if not output:
            output = "(no output)\n"
        elif not output.endswith("\n"):
            output += "\n"
        return ToolOutcome(prefix + output + _describe_exit(code), details=details)

    return Tool(
        name="bash",
        description=BASH_DESCRIPTION,
        input_model=BashInput,
        handler=bash,
        effects=lambda inp: declares(Effect.RUN, command=inp.command),
        key_argument="command",
        streams_output=True,
        claude=claude_names.BASH,
    )
