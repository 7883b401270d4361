"""Prompt commands in a session: Markdown command files, skills and MCP prompts as ``/name``.

:func:`session_commands` gathers them (command files from the project and the user, then every
feature that offers ``commands()``: the skills, the MCP servers' prompts). :func:`submit_line`
is what ``-p`` starts for a line of input: a ``/name args`` line runs that command, any
other text is an ordinary turn.

Running a command (:func:`invocation_events`): its one-line notes are shown; each ``!`cmd```
snippet runs first, as a ``bash`` call through the agent's own path (hooks, the permission gate,
approval), with the command's ``allowed-tools`` already in force — a snippet that is refused, fails
or exits non-zero stops the command before anything is sent, with one line saying why. Then the
prompt, with the snippets' outputs in place, is sent as the user's message; during that turn the
command's ``allowed-tools`` run without asking and its ``model`` answers. Both are undone when
the turn ends, however it ends.
"""

from __future__ import annotations

import contextlib
import difflib
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memagent.commands_md import CommandSet, Invocation, PromptCommand, discover_commands
from memagent.events import AgentEvent, Notice, TurnEnded
from memagent.protocol import Submit

if TYPE_CHECKING:
    from memagent.agent.loop import Agent
    from memagent.paths import ProjectPaths
    from memagent.session import Session
    from memagent.tools.base import ToolOutcome

Attach = Callable[[str], str]


def builtin_names() -> frozenset[str]:
    from memagent.ui.commands import builtin_names as names

    return names()


@runtime_checkable
class OffersCommands(Protocol):
    """A feature with prompt commands of its own (skills, MCP prompts)."""

    def commands(self) -> Sequence[PromptCommand]: ...


def session_commands(session: Session) -> CommandSet:
    """Every prompt command of the session (built-in REPL commands keep their names)."""
    paths = session.paths
    reserved = builtin_names()
    found = discover_commands(paths.root, paths.home, reserved, user_home=paths.user_home, trusted=session.trusted)
    for feature in session.features:
        if isinstance(feature, OffersCommands):
            found.add(feature.commands(), reserved)
    return found


def early_commands(paths: ProjectPaths) -> CommandSet:
    """The prompt commands known before the session is open: command files and skills (the MCP
    servers' prompts come with the session)."""
    from memagent.features.skills import SkillCommand
    from memagent.skills import discover_skills
    from memagent.trust import is_trusted

    trusted = is_trusted(paths.home, paths.root)
    reserved = builtin_names()
    found = discover_commands(paths.root, paths.home, reserved, user_home=paths.user_home, trusted=trusted)
    skills = discover_skills(paths.root, paths.home, paths.user_home)
    found.add([SkillCommand(skill, trusted) for skill in skills.skills], reserved)
    return found


def completion_meta(commands: CommandSet) -> dict[str, str]:
    """What completion shows beside each command: its argument hint and description."""
    from memagent.ui.commands import all_commands

    meta = {c.name: c.help for c in all_commands()}
    for command in commands.commands:
        hint = f"{command.argument_hint} — " if command.argument_hint else ""
        meta.setdefault(command.name, f"{hint}{command.description}")
    return meta


def unknown_command(name: str, commands: CommandSet) -> str:
    close = difflib.get_close_matches(name, [*commands.names(), *builtin_names()], n=1, cutoff=0.7)
    hint = f"; did you mean /{close[0]}?" if close else ""
    return f"unknown command /{name}{hint}"


@contextlib.contextmanager
def turn_scope(agent: Agent, invocation: Invocation) -> Iterator[None]:
    """While inside: the invocation's allowed tools run without asking, its model answers."""
    gate = agent.gate
    saved_policy, saved_model = gate.policy, agent.config.model
    if invocation.allowed_tools:
        gate.policy = saved_policy.with_allow(invocation.allowed_tools)
    if invocation.model:
        agent.config.model = invocation.model
    try:
        yield
    finally:
        gate.policy = saved_policy
        agent.config.model = saved_model


def _snippet_failure(command: str, outcome: ToolOutcome) -> str | None:
    """Why a snippet's outcome stops the command, or None when it ran and exited 0."""
    code = outcome.details.get("exit_code", 0 if not outcome.is_error else None)
    if outcome.is_error or code != 0:
        output = str(outcome.details.get("output") or outcome.content).strip()
        last = output.splitlines()[-1] if output else ""
        why = f"exited with {code}" if code not in (0, None) else "was not run"
        detail = last if code not in (0, None) else " ".join(str(outcome.content).split())
        detail = detail[:200].rstrip(".")
        return f"!`{command}` {why}" + (f": {detail}" if detail else "")
    return None


def invocation_events(agent: Agent, invocation: Invocation, attach: Attach = lambda text: text) -> Iterator[AgentEvent]:
    """Run a prompt command: its snippets through the gate, then its turn (see the module doc)."""
    for note in invocation.notes:
        yield Notice(note, "warning")
    if invocation.error:
        yield TurnEnded("error", error=f"{invocation.command}: {invocation.error}")
        return
    outputs: list[str] = []
    with turn_scope(agent, invocation):
        for command in invocation.shell:
            outcome = yield from agent.run_tool("bash", {"command": command}, f"toolu_cmd_{uuid.uuid4().hex[:16]}")
            failure = _snippet_failure(command, outcome)
            if failure:
                yield TurnEnded("error", error=f"{invocation.command}: {failure}; nothing was sent")
                return
            outputs.append(str(outcome.details.get("output", outcome.content)))
        yield from agent.run_turn(attach(invocation.filled(outputs)))


def find_invocation(text: str, commands: CommandSet) -> Invocation | str | None:
    """The invocation a ``/name args`` line asks for; an error line for an unknown or built-in
    command; None for text that is not a command."""
    from memagent.ui.commands import is_command

    if not is_command(text):
        return None
    head, _, arguments = text.strip().partition(" ")
    name = head[1:]
    found = commands.get(name)
    if found is not None:
        return found.invoke(arguments)
    if name.lower() in builtin_names():
        return (
            f"/{name} is a command of the interactive chat; with -p, prompt commands (files, skills, MCP prompts) run"
        )
    return unknown_command(name, commands)


def submit_line(session: Session, text: str) -> None:
    """Start the turn of one line of input on the session's channel: a prompt command (its
    snippets, then its message), or an ordinary :class:`~memagent.protocol.Submit`. The front end
    then reads the turn's events from the session."""
    from memagent.ui.commands import is_command

    found = find_invocation(text, session_commands(session)) if is_command(text) else None
    if found is None:
        session.submit(Submit(text))
    elif isinstance(found, str):
        refusal: str = found
        session.submit_turn(text, lambda: iter([TurnEnded("error", error=refusal)]))
    else:
        invocation: Invocation = found
        session.submit_turn(text, lambda: invocation_events(session.agent, invocation))


__all__ = [
    "completion_meta",
    "early_commands",
    "find_invocation",
    "invocation_events",
    "session_commands",
    "submit_line",
    "turn_scope",
    "unknown_command",
]
