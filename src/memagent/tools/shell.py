"""The ``bash`` tool: run a shell command in the project root, safely enough to leave running.

* ``bash -c`` in the project root, stdin from ``/dev/null``, in its own session (so its own
  process group): a timeout or Ctrl-C kills the command *and everything it started*.
* stdout and stderr go, interleaved, into an anonymous temp file rather than a pipe, so a
  background child that keeps the descriptor open cannot hang us and huge output costs no memory.
* The result is capped at ``ctx.output_cap_chars`` keeping the head and the (usually more useful)
  tail; the full output is then saved under the outputs directory, where ``read_file`` can read it.
* A non-zero exit code is reported in the result but is not a tool error: the tool worked, the
  command failed, and the model reads the code. Timeouts and refusals are errors.
* A small blocklist refuses catastrophic commands before they run (see :func:`dangerous_reason`).
  It is a seat belt against accidents, the first line only; normal commands still need approval.
* The command runs through the sandboxed :mod:`memagent.tools.executor` — inside the bubblewrap
  sandbox of :mod:`memagent.tools.sandbox` when it can start (project writable, its power files
  read-only, home hidden, no network) — and never with a secret in its environment.
* While it runs, new output is passed to ``ctx.progress`` (the REPL shows the last lines live);
  a cancelled call (``ToolCancelled``, Ctrl-C, a termination signal) kills its process group.
* The saved full output is itself capped (``saved_output_max_bytes``): head and tail are kept
  and the total size is noted in the middle.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import shlex
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
from memagent.redact import RedactingWriter
from memagent.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolOutcome
from memagent.tools.fs import optional_field
from memagent.tools.paths import display_path, outputs_dir, project_root
from memagent.tools.background import ShellError, ShellRegistry
from memagent.tools.executor import Command, SandboxedExecutor
from memagent.tools.sandbox import Sandbox, SandboxConfig, SandboxRefused

if TYPE_CHECKING:
    from memagent.config import Settings

MAX_TIMEOUT_SECONDS = 600.0
# Above this much output only the head and tail bytes are decoded.
FULL_DECODE_LIMIT_BYTES = 64 * 1024 * 1024
HEAD_SHARE = 0.4  # of the cap; the rest goes to the tail

# --- dangerous commands --------------------------------------------------------------------

PRIVILEGE_COMMANDS = frozenset({"sudo", "su", "doas", "pkexec", "run0"})
POWER_COMMANDS = frozenset({"shutdown", "reboot", "halt", "poweroff"})
DEVICE_WRITERS = frozenset({"tee", "cp", "mv", "shred"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
# Words that may precede the real command without changing what runs.
SHELL_KEYWORDS = frozenset({"{", "}", "!", "if", "then", "do", "else", "elif", "while", "until", "time", "function"})
WRAPPERS = frozenset(
    {"env", "nohup", "time", "exec", "command", "builtin", "nice", "ionice", "stdbuf", "timeout", "xargs", "watch"}
)
SYSTEM_DIRS = frozenset(
    {"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root", "sbin", "srv", "sys"}
    | {"usr", "var"}
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPER_ARG = re.compile(r"^(-.*|\d+(\.\d+)?[smhd]?)$")
_BLOCK_DEVICE = re.compile(r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|dm-\d|md\d|mapper/|root$)")
_FORK_BOMB = re.compile(r"(?P<name>[\w:.-]+)\s*\(\s*\)\s*\{[^}]*?(?P=name)\s*\|\s*&?\s*(?P=name)\s*&")
_MAX_NESTING = 3


def _tokens(command: str) -> list[str]:
    """Shell-ish tokens with operators as separate tokens. Newlines and backticks end commands."""
    text = command.replace("\n", " ; ").replace("`", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes (e.g. a heredoc with an apostrophe): split crudely
        return [tok.strip("'\"") for tok in re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", text)]


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in "();<>|&" for c in token)


def split_commands(command: str) -> tuple[list[list[str]], list[str]]:
    """Split into simple commands (argv lists) and the targets of output redirections."""
    segments: list[list[str]] = [[]]
    redirect_targets: list[str] = []
    tokens = _tokens(command)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if _is_operator(token) and not ("(" in token or ")" in token) and ("<" in token or ">" in token):
            if ">" in token and i + 1 < len(tokens):
                redirect_targets.append(tokens[i + 1])
            i += 2  # the redirection and its target are not arguments
            continue
        if _is_operator(token):
            segments.append([])
        else:
            segments[-1].append(token)
        i += 1
    return [s for s in segments if s], redirect_targets


def _strip_prefixes(argv: list[str]) -> list[str] | None:
    """Drop assignments, keywords and wrappers (``env``, ``nohup``, ``timeout 5`` …) in front.

    None means the segment only *looks up* a command (``command -v sudo``), it runs nothing.
    """
    while argv:
        word = argv[0].lstrip("\\")
        if word in SHELL_KEYWORDS or _ASSIGNMENT.match(word):
            argv = argv[1:]
            continue
        if os.path.basename(word) in WRAPPERS:
            options = []
            argv = argv[1:]
            while argv and (_WRAPPER_ARG.match(argv[0]) or _ASSIGNMENT.match(argv[0])):
                options.append(argv[0])
                argv = argv[1:]
            if os.path.basename(word) == "command" and any(o in ("-v", "-V") for o in options):
                return None
            continue
        break
    return argv


def _home_dir() -> str:
    return os.path.normpath(os.path.expanduser("~"))


def is_critical_path(raw: str) -> bool:
    """``/``, ``/*``, ``~``, ``$HOME/*``, the home directory or a top-level system directory."""
    target = raw.strip()
    for home in ("~", "$HOME", "${HOME}"):
        if target == home or target.startswith(home + "/"):
            return target[len(home) :].strip("/") in ("", "*", ".*", ".")
    if not target.startswith("/"):
        return False
    parts = [p for p in target.split("/") if p not in ("", ".")]
    if parts and parts[-1] in ("*", ".*"):
        parts = parts[:-1]
    norm = os.path.normpath("/" + "/".join(parts))
    if norm == "/" or norm == _home_dir():
        return True
    return norm.count("/") == 1 and norm[1:] in SYSTEM_DIRS


def _split_options(args: list[str]) -> tuple[set[str], list[str]]:
    """Short flags as single letters, long flags whole, then the operands."""
    flags: set[str] = set()
    operands: list[str] = []
    options_done = False
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("--"):
            flags.add(arg)
        elif not options_done and arg.startswith("-") and len(arg) > 1:
            flags.update(arg[1:])
        else:
            operands.append(arg)
    return flags, operands


def _recursive(flags: set[str]) -> bool:
    return bool(flags & {"r", "R", "--recursive"})


def _segment_reason(argv: list[str], depth: int) -> str | None:
    stripped = _strip_prefixes(argv)
    if not stripped:
        return None
    name = os.path.basename(stripped[0].lstrip("\\"))
    args = stripped[1:]
    flags, operands = _split_options(args)
    if name in PRIVILEGE_COMMANDS:
        return f"privilege escalation ({name}) is not allowed"
    if name in POWER_COMMANDS or (name == "systemctl" and set(args) & {"poweroff", "reboot", "halt", "kexec"}):
        return "shutting down or rebooting the machine is not allowed"
    if name in ("init", "telinit") and set(args) & {"0", "6"}:
        return "shutting down or rebooting the machine is not allowed"
    if name.startswith("mkfs") or name in ("mke2fs", "wipefs"):
        return f"formatting a filesystem ({name}) is not allowed"
    if name == "dd" and any(a.startswith("of=") and _BLOCK_DEVICE.match(a[3:]) for a in args):
        return "writing to a block device with dd is not allowed"
    if name in DEVICE_WRITERS and any(_BLOCK_DEVICE.match(a) for a in operands):
        return f"writing to a block device ({name}) is not allowed"
    if name == "rm":
        if "--no-preserve-root" in flags:
            return "rm --no-preserve-root is not allowed"
        if _recursive(flags) and any(is_critical_path(t) for t in operands):
            return "recursively deleting the root, home or a system directory is not allowed"
    if name in ("chmod", "chown", "chgrp") and _recursive(flags) and any(is_critical_path(t) for t in operands):
        return f"recursive {name} on the root, home or a system directory is not allowed"
    if name == "find" and args and is_critical_path(args[0]) and _find_deletes(args):
        return "deleting from the root, home or a system directory with find is not allowed"
    if name == "kill" and _kills_everything(args):
        return "signalling every process (kill -1) is not allowed"
    if name in SHELLS and depth < _MAX_NESTING:
        script = _inline_script(args)
        if script is not None:
            return dangerous_reason(script, _depth=depth + 1)
    if name == "eval" and args and depth < _MAX_NESTING:
        return dangerous_reason(" ".join(args), _depth=depth + 1)
    return None


def _kills_everything(args: list[str]) -> bool:
    """``kill -9 -1`` / ``kill -s KILL -1`` / ``kill -- -1``: pid -1 is every process we may signal."""
    rest = list(args)
    if rest and rest[0] in ("-s", "-n") and len(rest) > 1:
        rest = rest[2:]
    elif len(rest) > 1 and rest[0].startswith("-") and rest[0] != "--":
        rest = rest[1:]  # the signal (-9, -KILL, -SIGTERM, and -1 for SIGHUP)
    if rest and rest[0] == "--":
        rest = rest[1:]
    return "-1" in rest


def _find_deletes(args: list[str]) -> bool:
    """``find … -delete`` or ``find … -exec rm …``."""
    for i, arg in enumerate(args):
        if arg == "-delete":
            return True
        if arg in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(args):
            if os.path.basename(args[i + 1]) in ("rm", "shred"):
                return True
    return False


def _inline_script(args: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` (also ``-lc``, ``-ec`` …), if given."""
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else None
    return None


def dangerous_reason(command: str, *, _depth: int = 0) -> str | None:
    """Why ``command`` must not run, or None. Parses ``;``/``&&``/``|`` segments with shlex."""
    if _FORK_BOMB.search(command):
        return "fork bombs are not allowed"
    segments, redirect_targets = split_commands(command)
    if any(_BLOCK_DEVICE.match(target) for target in redirect_targets):
        return "redirecting output to a block device is not allowed"
    for argv in segments:
        reason = _segment_reason(argv, _depth)
        if reason:
            return reason
    return None


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

    @classmethod
    def from_settings(cls, settings: "Settings", memagent_home: Path | None = None) -> "ShellConfig":
        return cls(
            sandbox=Sandbox(SandboxConfig.from_settings(settings, memagent_home)),
            saved_output_max_bytes=settings.saved_output_max_bytes,
        )

    @property
    def executor(self) -> SandboxedExecutor:
        return SandboxedExecutor(self.sandbox)

    def command(self, script: str, root: Path, timeout: float = 0.0) -> Command:
        """``script`` as the bash tool runs it in ``root``: its environment filtered, nothing
        waiting for a human."""
        env = {**self.executor.environment(os.environ, root), **NON_INTERACTIVE}
        return Command(root, env, timeout, script=script)

    def with_background(self) -> "ShellConfig":
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


def _copy_capped(sink: IO[bytes], out: IO[bytes], max_bytes: int) -> int:
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


def _not_dangerous(inp: BashInput) -> bool:
    """Approval predicate: dangerous commands are refused by the handler without asking."""
    return dangerous_reason(inp.command) is None


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
    return (f"{prefix}Command running in background with ID: {started.id}. Read its output with bash_output "
            f"(bash_id \"{started.id}\"); stop it with kill_shell (shell_id \"{started.id}\").")


def bash_tool(config: ShellConfig | None = None) -> Tool:
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
            output = render_output(sink, ctx, shell.saved_output_max_bytes)
        code, notice = done.code, done.notice
        prefix = notice + "\n" if notice else ""
        if code is None:
            body = output.rstrip("\n") or "(no output)"
            return ToolOutcome(
                f"{prefix}Command timed out after {timeout:g} s; it and its child processes were killed.\n"
                f"Partial output:\n{body}",
                is_error=True,
            )
        if not output:
            output = "(no output)\n"
        elif not output.endswith("\n"):
            output += "\n"
        return prefix + output + _describe_exit(code)

    return Tool(
        name="bash",
        description=BASH_DESCRIPTION,
        input_model=BashInput,
        handler=bash,
        needs_approval=_not_dangerous,
        key_argument="command",
        streams_output=True,
    )
