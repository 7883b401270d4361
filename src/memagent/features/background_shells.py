"""Background shells as a feature: ``bash_output`` and ``kill_shell`` over the session's
:class:`~memagent.tools.background.ShellRegistry` (``bash`` with ``run_in_background: true``
starts them), every one killed when the session closes. Claude Code's tool names and inputs
(``bash_id`` and ``filter``; ``shell_id``). What a read returns is capped like any command's
output (head and tail kept; the full text saved, secrets redacted, where ``read_file`` can read
it). Subagents share the session's shells: one may start a server that another reads.
"""

from __future__ import annotations

import re
import tempfile

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from memagent.agent.feature import BaseFeature, Feature, SlashCommand, SlashInput, SlashReply, SubagentContext
from memagent.feature_settings import BackgroundShellSettings
from memagent.permissions import Effect, declares
from memagent.tools import claude_names
from memagent.tools.background import RUNNING, BackgroundShell, ShellError, ShellRegistry
from memagent.tools.base import RegisteredTool, ToolContext, ToolError, ToolInput, tool
from memagent.tools.fs import optional_field
from memagent.tools.shell import DEFAULT_SAVED_OUTPUT_MAX_BYTES, render_output

BASHES_USAGE = "usage: /bashes [kill ID]"


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="The id of the background shell (what bash with run_in_background returned).")
    filter: str | SkipJsonSchema[None] = optional_field(
        "A regular expression: only the new output lines that match it are returned (the others are read and gone)."
    )


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The id of the background shell to stop.")


def describe(shell: BackgroundShell) -> str:
    """``running for 12 s`` / ``completed (exit code 0) after 3 s`` / ``killed after 40 s``."""
    seconds = f"{shell.runtime():.0f} s"
    if shell.status == RUNNING:
        return f"running for {seconds}"
    if shell.killed:
        return f"killed after {seconds}"
    return f"{shell.status} (exit code {shell.exit_code}) after {seconds}"


def background_tools(
    registry: ShellRegistry, saved_max_bytes: int = DEFAULT_SAVED_OUTPUT_MAX_BYTES
) -> list[RegisteredTool]:
    """``bash_output`` and ``kill_shell`` over one session's shells."""

    @tool(
        "bash_output",
        BashOutputInput,
        key_argument="bash_id",
        effects=declares(Effect.READ),
        claude=claude_names.BASH_OUTPUT,
    )
    def bash_output(args: BashOutputInput, ctx: ToolContext) -> str:
        """Read what a background shell printed since the last read, with its status and exit code.
        Returns only new output; call it again later for more. With `filter` (a regular
        expression), only matching lines are returned."""
        try:
            shell = registry.get(args.bash_id)
            pattern = re.compile(args.filter) if args.filter else None
        except ShellError as exc:
            raise ToolError(str(exc)) from None
        except re.error as exc:
            raise ToolError(f"filter is not a valid regular expression: {exc}") from None
        state = describe(shell)  # before reading: once it says ended, what is read is all there is
        text, dropped = shell.take(pattern)
        lines = [f"{shell.id} ({shell.command}): {state}"]
        if dropped:
            lines.append(f"[{dropped} bytes of older output were dropped: they were not read in time]")
        if not text:
            lines.append("(no new output" + (" matching the filter)" if pattern else ")"))
            return "\n".join(lines)
        with tempfile.TemporaryFile() as sink:
            sink.write(text.encode("utf-8"))
            lines.append(render_output(sink, ctx, saved_max_bytes).rstrip("\n"))
        return "\n".join(lines)

    @tool(
        "kill_shell",
        KillShellInput,
        key_argument="shell_id",
        effects=declares(Effect.SESSION),
        claude=claude_names.KILL_SHELL,
    )  # stops only a command this session started
    def kill_shell(args: KillShellInput, ctx: ToolContext) -> str:
        """Stop a background shell and everything it started."""
        try:
            shell = registry.get(args.shell_id)
        except ShellError as exc:
            raise ToolError(str(exc)) from None
        if shell.status != RUNNING:
            return f"{shell.id} had already ended: {describe(shell)}."
        shell.kill()
        return f"Killed {shell.id} ({shell.command}) after {shell.runtime():.0f} s."

    return [bash_output, kill_shell]


class BackgroundShellsFeature(BaseFeature):
    """The session's background shells: their tools, and the kill when the session ends."""

    name = "background_shells"
    settings_model = BackgroundShellSettings

    def __init__(
        self,
        registry: ShellRegistry,
        saved_max_bytes: int = DEFAULT_SAVED_OUTPUT_MAX_BYTES,
        *,
        owner: bool = True,
        settings: BackgroundShellSettings | None = None,
    ) -> None:
        self.registry = registry
        self.saved_max_bytes = saved_max_bytes
        self.owner = owner  # the session's own feature kills the shells; a subagent's view does not
        if owner and settings is not None:
            registry.limit = settings.background_shell_limit  # the session's limit, its subagents included
        self._tools: list[RegisteredTool] = []

    def tools(self) -> list[RegisteredTool]:
        if not self._tools:
            self._tools = background_tools(self.registry, self.saved_max_bytes)
        return list(self._tools)

    def close(self) -> None:
        if self.owner:
            self.registry.kill_all()

    def for_subagent(self, child: SubagentContext) -> Feature:
        return BackgroundShellsFeature(self.registry, self.saved_max_bytes, owner=False)

    def listing(self) -> list[str]:
        """One line per shell, for ``/bashes``."""
        return [f"{s.id}  {describe(s)}  pid {s.pid}  $ {s.command}" for s in self.registry.shells()]

    def kill(self, shell_id: str) -> str:
        """``/bashes kill ID``: one line saying what happened."""
        try:
            shell = self.registry.get(shell_id)
        except ShellError as exc:
            return str(exc)
        if shell.status != RUNNING:
            return f"{shell.id} had already ended: {describe(shell)}."
        shell.kill()
        return f"Killed {shell.id} after {shell.runtime():.0f} s."

    def bashes(self, command: SlashInput) -> SlashReply:
        """``/bashes``: the session's background shells; ``/bashes kill ID`` stops one."""
        words = command.argument.split()
        if words and (words[0] != "kill" or len(words) != 2):
            return SlashReply(BASHES_USAGE, error=True)
        if words:
            return SlashReply(self.kill(words[1]))
        lines = self.listing()
        if not lines:
            return SlashReply("No background shells in this session (bash with run_in_background starts one).")
        return SlashReply(
            "\n".join(["Background shells:", *[f"  {line}" for line in lines], "Stop one with /bashes kill ID."])
        )

    slash_commands = (
        SlashCommand(
            "bashes",
            "/bashes [kill ID]",
            "background shells: list them, or stop one",
            bashes,
            "Background shells are not available in this session.",
        ),
    )


__all__ = ["BackgroundShellsFeature", "BashOutputInput", "KillShellInput", "background_tools", "describe"]
