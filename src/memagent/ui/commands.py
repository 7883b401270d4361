"""REPL slash commands: a table of small functions, each taking the session and the argument.

A handler returns a :class:`Reply` (text to show, and whether to quit); it never prints, so
every command is testable without a terminal. Commands that do not need the session (``/help``,
``/exit``) run before the background session has finished opening.

The table here holds the front end's own commands (``/help``, ``/model``, ``/compact`` …). A
command that belongs to a capability (``/todos``, ``/tasks``, ``/bashes``, ``/agents``, ``/mcp``)
is declared by its feature (``BaseFeature.slash_commands``) and dispatched here to the session's
instance of that feature; ``/help`` and completion list both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from memagent.jsontypes import json_int, json_object

if TYPE_CHECKING:
    from memagent.agent.feature import BaseFeature, SlashCommand
    from memagent.commands_md import CommandSet, Invocation
    from memagent.llm.types import Message
    from memagent.protocol import Op
    from memagent.session import Session

FeatureT = TypeVar("FeatureT", bound="BaseFeature")

NOT_AVAILABLE = "not available yet"


def carry_out(session: Session, op: Op) -> tuple[list[str], str | None]:
    """Send one operation through the session protocol: the lines it produced (notices, what
    changed) and the one-line error when it was rejected."""
    from memagent.events import Notice
    from memagent.protocol import OpCompleted, OpRejected

    session.submit(op)
    lines: list[str] = []
    for event in session.events():
        if isinstance(event, OpRejected):
            return lines, event.error
        if isinstance(event, Notice):
            lines.append(event.text)
        elif isinstance(event, OpCompleted) and event.text:
            lines.append(event.text)
    return lines, None


@dataclass(frozen=True)
class Reply:
    text: str = ""
    style: str = ""  # a rich style for the whole text ("red" for errors)
    exit: bool = False
    send: str = ""  # a prompt the REPL sends as the user's next message (/init)
    action: str = ""  # something only the REPL can do: "clear" (a new session), "rewind" (the picker)
    argument: str = ""  # the command's argument, for an action
    invoke: Invocation | None = None  # a prompt command to run (files, skills, MCP prompts)


@dataclass(frozen=True)
class Command:
    """A command run on the open session."""

    name: str
    usage: str
    help: str
    handler: Callable[[Session, str], Reply]
    busy: str = ""  # shown with a spinner while a slow command runs


@dataclass(frozen=True)
class EarlyCommand:
    """A command that needs no session: it runs while the session is still opening."""

    name: str
    usage: str
    help: str
    handler: Callable[[str], Reply]


INPUT_HELP = """\
Input: Enter sends · Esc then Enter (or Alt-Enter) inserts a newline · pasted text keeps
its newlines · Up/Down browse the history (saved across sessions) · Ctrl-C cancels the
running turn, or clears the line at the prompt · Ctrl-D or /exit quits.
Approvals: y = allow once, a = always allow that tool this session (and save a rule for this
exact call in this project), n or Esc = deny."""


def cmd_help(arg: str, custom: CommandSet | None = None) -> Reply:
    extra = custom.commands if custom is not None else []
    known = all_commands()
    width = max(len(c.usage) for c in (*known, *extra))
    lines = ["Commands:"] + [f"  {c.usage.ljust(width)}  {c.help}" for c in known]
    if extra:
        lines += ["Custom commands (Markdown prompts, skills, MCP prompts):"]
        lines += [f"  {c.usage.ljust(width)}  {c.description} [{c.source}]" for c in extra]
    return Reply("\n".join(lines) + "\n\n" + INPUT_HELP + "\n" + CONTEXT_HELP)


CONTEXT_HELP = """\
Context: @path attaches a file (Tab completes paths) · !command runs a shell command now and
gives its output to the model with your next message."""


def cmd_exit(arg: str) -> Reply:
    return Reply(exit=True)


def cmd_memory(session: Session, arg: str) -> Reply:
    if session.memory is None:
        text = session.memory_off_reason or "memory is off"
        return Reply(text if arg else text + "\n" + instruction_files_text(session))
    try:
        if arg:
            return Reply(format_hits(session.memory.search(arg)) or f"No memories match {arg!r}.")
        return Reply(format_memory_stats(session.memory.stats()) + "\n" + instruction_files_text(session))
    except Exception as exc:  # a store problem is shown, never a crash of the REPL
        return Reply(f"memory error: {exc}", "red")


def instruction_files_text(session: Session) -> str:
    """Which instruction files (AGENTS.md, CLAUDE.md, imports) this session loaded."""
    from memagent.features.instructions import InstructionsFeature, describe_files

    feature = session.feature(InstructionsFeature)
    if feature is None:
        return "instruction files: not loaded in this session"
    if not feature.files:
        return "instruction files: none (create AGENTS.md, or run /init to draft one)"
    lines = ["instruction files (in the system prompt, re-injected after compaction):"]
    lines += describe_files(feature.files)
    lines += [f"  ! {warning}" for warning in feature.warnings]
    return "\n".join(lines)


def format_hits(hits: Iterable[object]) -> str:
    """Search hits (a card and its score each) as ``[id] (score) content`` lines."""
    lines = []
    for hit in hits:
        card = getattr(hit, "card", hit)
        ident = _field(card, "id")
        content = " ".join(str(_field(card, "content") or card).split())
        score = _field(hit, "score")
        score_text = f" ({score:.2f})" if isinstance(score, (int, float)) else ""
        lines.append(f"[{ident}]{score_text} {content}")
    return "\n".join(lines)


def format_memory_stats(stats: Mapping[str, object]) -> str:
    """MemoryService.stats() in a few lines, leaving out the zero counts."""
    if "active" not in stats:
        return format_stats(stats)

    def counts(key: str) -> str:
        found = {name: n for name, n in json_object(stats.get(key)).items() if n}
        return ", ".join(f"{name} {n}" for name, n in found.items()) or "none"

    from memagent.ui.words import plural

    active = json_int(stats["active"])
    lines = [f"memory: {plural(active, 'active card')} ({stats.get('total', active)} in all)"]
    lines.append(f"  by type: {counts('by_type')}")
    lines.append(f"  by scope: {counts('by_scope')}")
    for label, value in json_object(stats.get("stores")).items():
        store = json_object(value)
        lines.append(f"  {label} store: {store.get('location')} ({store.get('active', 0)} active)")
    embedder = json_object(stats.get("embedder"))
    if embedder:
        lines.append(f"  embedder: {embedder.get('name')} (dim {embedder.get('dim')})")
    return "\n".join(lines)


def format_stats(stats: object, indent: int = 0) -> str:
    """A mapping as indented ``key: value`` lines (nested mappings indented one level more)."""
    if not isinstance(stats, Mapping):
        return " " * indent + str(stats)
    lines = []
    for key, value in stats.items():
        if isinstance(value, dict) and value:
            lines.append(" " * indent + f"{key}:")
            lines.append(format_stats(value, indent + 2))
        else:
            lines.append(" " * indent + f"{key}: {value}")
    return "\n".join(lines)


def _field(obj: object, name: str) -> object:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def cmd_sessions(session: Session, arg: str, limit: int = 20) -> Reply:
    from memagent.context.sessions import list_sessions

    sessions = list_sessions(session.paths.transcripts)
    if not sessions:
        return Reply("No sessions yet.")
    lines = []
    for info in reversed(sessions[-limit:]):
        marker = "*" if info.id == session.session_id else " "
        started = (info.started or "")[:16].replace("T", " ")
        turns = f"{info.turns} turn{'s' if info.turns != 1 else ''}"
        kind = info.kind or "interactive"
        lines.append(
            f"{marker} {info.id}  {started}  {kind:<11}  {turns:>9}  {info.first_user_line or '(no messages)'}"
        )
    if len(sessions) > limit:
        lines.append(f"({len(sessions) - limit} older sessions not shown; `memagent sessions list` shows all)")
    lines.append("Resume one with: memagent -r SESSION_ID (or -c for the latest)")
    return Reply("\n".join(lines))


def cmd_context(session: Session, arg: str) -> Reply:
    report = session.context_report()
    if report is None:
        return Reply(f"/context: {NOT_AVAILABLE}")
    return Reply(format_context_report(report))


def format_context_report(report: Mapping[str, object]) -> str:
    """The context policy's report as a few readable lines (another shape: key: value)."""
    needed = ("total", "threshold", "system", "tools", "messages", "tool_results", "memory")
    if not all(isinstance(report.get(key), int) for key in needed):
        return format_stats(report)
    total, threshold = json_int(report["total"]), json_int(report["threshold"])
    share = f" ({total / threshold:.0%} of the compaction threshold)" if threshold else ""
    lines = [
        f"context: {total:,} tokens{share}; compaction at {threshold:,}",
        "  " + " · ".join(f"{key.replace('_', ' ')} {report[key]:,}" for key in needed[2:]),
    ]
    details = []
    if "message_count" in report:
        details.append(f"{report['message_count']} messages")
    if report.get("elided_tool_results"):
        details.append(f"{report['elided_tool_results']} old tool results elided")
    if "compactions" in report:
        details.append(f"{report['compactions']} compactions")
    if details:
        lines.append("  " + ", ".join(details))
    if report.get("transcript"):
        lines.append(f"  full history: {report['transcript']}")
    return "\n".join(lines)


def cmd_compact(session: Session, arg: str) -> Reply:
    from memagent.protocol import Compact

    if not session.status().can_compact:
        return Reply(f"/compact: {NOT_AVAILABLE}")
    lines, error = carry_out(session, Compact(arg or None))
    if error is not None:
        return Reply(f"/compact: {error}", "red")
    notices, done = lines[:-1], lines[-1:]  # the compaction's own notices, then what the session says
    return Reply("\n".join(notices or done))


EXPAND_USAGE = "usage: /expand [N] (1 = the newest tool result, 2 = the one before, …)"


def tool_results(messages: Sequence[Message]) -> list[tuple[str, str, bool]]:
    """Every tool result of the conversation, oldest first: (call label, full text, is_error)."""
    from memagent.llm import items

    calls: dict[str, str] = {}
    found: list[tuple[str, str, bool]] = []
    for message in messages:
        for part in items.message_items(message):
            if isinstance(part, items.ToolUse):
                key = next(iter(part.input.values()), "")
                calls[part.id] = f"{part.name}({' '.join(str(key).split())[:80]})" if key else part.name
            elif isinstance(part, items.ToolResult):
                found.append((calls.get(part.tool_use_id, "tool"), part.text, part.is_error))
    return found


def cmd_expand(session: Session, arg: str) -> Reply:
    """Show a tool result in full (the REPL shows only its first line)."""
    try:
        back = int(arg or "1")
    except ValueError:
        return Reply(EXPAND_USAGE, "red")
    if back < 1:
        return Reply(EXPAND_USAGE, "red")
    results = tool_results(session.history())
    if not results:
        return Reply("No tool results in this session yet.")
    if back > len(results):
        return Reply(
            f"This session has {len(results)} tool result{'s' if len(results) != 1 else ''}; {EXPAND_USAGE}", "red"
        )
    label, content, is_error = results[-back]
    status = " (error)" if is_error else ""
    return Reply(f"── {label}{status}, result {len(results) - back + 1} of {len(results)} ──\n{content.rstrip()}")


def cmd_clear(session: Session, arg: str) -> Reply:
    return Reply(action="clear")


def cmd_rewind(session: Session, arg: str) -> Reply:
    """Asks questions, so the REPL runs it (:mod:`memagent.ui.rewind`)."""
    from memagent.ui.rewind import parse

    try:
        parse(arg)
    except ValueError as exc:
        return Reply(str(exc), "red")
    return Reply(action="rewind", argument=arg)


def cmd_model(session: Session, arg: str) -> Reply:
    """Show the model, or switch the main model for the rest of this session (aliases such as
    ``sonnet`` and ``opus`` resolve through the model registry)."""
    from memagent.models import describe, resolve
    from memagent.protocol import SetModel

    current = session.status().model
    if not arg:
        return Reply(
            f"model: {describe(current)}\n(summaries and memory extraction: {session.settings.small_model})\n"
            "Switch with /model NAME (an id, or sonnet, opus, haiku)."
        )
    if len(arg.split()) != 1:
        return Reply("usage: /model [NAME] (one model id)", "red")
    name = resolve(arg)
    if not re.fullmatch(r"[A-Za-z0-9][\w.:/@\[\]-]*", name):
        return Reply(f"not a model id: {name!r}", "red")
    lines, error = carry_out(session, SetModel(name))
    if error is not None:
        return Reply(f"/model: {error}", "red")
    return Reply(f"{lines[-1]} (from the next message on)")


def cmd_cost(session: Session, arg: str) -> Reply:
    from memagent.pricing import format_cost

    meter = session.usage_totals()
    if meter is None:
        return Reply(f"/cost: {NOT_AVAILABLE}")
    calls = f"{meter.calls} model call{'s' if meter.calls != 1 else ''}"
    lines = [
        f"tokens: {meter.input_tokens:,} in · {meter.output_tokens:,} out ({calls})",
        f"cache: {meter.cache_read_tokens:,} read · {meter.cache_write_tokens:,} written",
    ]
    if meter.cost is None:
        lines.append(f"estimated cost: unknown (no price for {', '.join(sorted(meter.unpriced_models))})")
    else:
        lines.append(
            f"estimated cost: {format_cost(meter.cost)} (list prices; summaries and memory extraction included)"
        )
    return Reply("\n".join(lines))


INIT_PROMPT = """\
Please write an AGENTS.md file for this project: the instructions a coding agent (you, in a later \
session, or another agent) needs to work here well. First look around: list the files, read the \
README, the build and packaging files, the test set-up and a few central modules, and the \
existing AGENTS.md or CLAUDE.md if there is one (improve it instead of starting over). Then write \
AGENTS.md in the project root with write_file. Keep it short and concrete (under about 150 \
lines): what the project is, how to build, run and test it (exact commands), the layout of the \
code, conventions to follow (style, naming, error handling, tests), and pitfalls. Do not invent \
anything you did not see in the project."""


def cmd_init(session: Session, arg: str) -> Reply:
    extra = f"\n\nAlso: {arg}" if arg else ""
    return Reply("Asking the model to draft AGENTS.md…", "dim", send=INIT_PROMPT + extra)


MODE_EFFECT = {
    "default": "tools that change things ask first",
    "acceptEdits": "file edits run without asking; bash asks",
    "plan": "only read-only tools run; the model plans and changes nothing",
    "bypassPermissions": "nothing asks but writes to protected paths; deny rules and the guard still refuse",
}
MODE_CYCLE = ("default", "acceptEdits", "plan")  # Shift-Tab; bypassPermissions only for a --yes session


def mode_named(name: str) -> str | None:
    """The permission mode a user typed (case, ``-`` and ``_`` do not matter), else None."""
    from memagent.permissions import MODES

    folded = name.strip().lower().replace("-", "").replace("_", "")
    return next((mode for mode in MODES if mode.lower() == folded), None)


def set_permission_mode(session: Session, mode: str) -> str:
    """Switch the running session's permission mode (from the next tool call on); the reply text."""
    from memagent.protocol import SetPermissionMode

    lines, error = carry_out(session, SetPermissionMode(mode))
    if error is not None:
        return f"permissions: {error}"
    return f"{lines[-1]} ({MODE_EFFECT[mode]})"


def next_mode(session: Session, started_in: str) -> str:
    """The mode after the current one in the Shift-Tab cycle (``started_in``: the session's first mode)."""
    cycle = MODE_CYCLE + (("bypassPermissions",) if started_in == "bypassPermissions" else ())
    current = session.status().permission_mode
    return cycle[(cycle.index(current) + 1) % len(cycle)] if current in cycle else cycle[0]


def cmd_permissions(session: Session, arg: str) -> Reply:
    """Show the mode and rules, or switch the mode: ``/permissions plan``."""
    from memagent.permissions import MODES

    if arg:
        mode = mode_named(arg)
        if mode is None:
            return Reply(f"unknown permission mode {arg!r}; use one of: {', '.join(MODES)}", "red")
        return Reply(set_permission_mode(session, mode) + " · Shift-Tab cycles modes")
    view = session.permissions()
    lines = ["Permissions:"] + [f"  {line}" for line in view.rules]
    if view.mode_source:
        lines.append(f"  mode from {view.mode_source}")
    lines.append("  asks before a call that " + ", ".join(view.asks_for))
    lines.append("  ('always' approves exactly that call; `memagent doctor` shows the project's trust)")
    lines.append(f"  Switch with /permissions MODE ({', '.join(MODES)}) or Shift-Tab.")
    return Reply("\n".join(lines))


COMMANDS: tuple[Command | EarlyCommand, ...] = (
    EarlyCommand("help", "/help", "show this help", cmd_help),
    EarlyCommand("exit", "/exit", "quit (also /quit, Ctrl-D)", cmd_exit),
    Command("memory", "/memory [query]", "search long-term memory, or show its stats", cmd_memory),
    Command("sessions", "/sessions", "earlier sessions in this project", cmd_sessions),
    Command("context", "/context", "how full the context window is", cmd_context),
    Command("expand", "/expand [N]", "show the newest (or N-th newest) tool result in full", cmd_expand),
    Command(
        "permissions",
        "/permissions [mode]",
        "the permission mode and rules, or switch the mode (Shift-Tab cycles)",
        cmd_permissions,
    ),
    Command(
        "compact",
        "/compact [focus]",
        "summarise the conversation so far to free context",
        cmd_compact,
        busy="Compacting the conversation…",
    ),
    Command("clear", "/clear", "start a new session (the current one stays resumable)", cmd_clear),
    Command(
        "rewind", "/rewind [N]", "go back to the start of an earlier turn: files, conversation or both", cmd_rewind
    ),
    Command("model", "/model [name]", "show the model, or switch to another one", cmd_model),
    Command("cost", "/cost", "tokens used and the estimated price of this session", cmd_cost),
    Command("init", "/init [notes]", "ask the model to draft AGENTS.md for this project", cmd_init),
)
ALIASES = {"quit": "exit", "q": "exit", "?": "help"}


def feature_commands() -> tuple[Command, ...]:
    """The slash commands the session's features own (``/todos``, ``/bashes``, ``/mcp`` …), as
    their classes declare them: known before the session is open, run on its instance."""
    from memagent.features import with_slash_commands

    return tuple(
        Command(declared.name, declared.usage, declared.help, _run_on_feature(kind, declared))
        for kind in with_slash_commands()
        for declared in kind.slash_commands
    )


def _run_on_feature(kind: type[FeatureT], declared: SlashCommand[FeatureT]) -> Callable[[Session, str], Reply]:
    def run(session: Session, arg: str) -> Reply:
        from memagent.agent.feature import SlashInput

        feature = session.feature(kind)
        if feature is None:
            return Reply(declared.absent)
        answer = declared.run(feature, SlashInput(arg))
        return Reply(answer.text, "red" if answer.error else "")

    return run


def all_commands() -> tuple[Command | EarlyCommand, ...]:
    """The front end's own commands, then the features'."""
    return COMMANDS + feature_commands()


def builtin_names() -> frozenset[str]:
    """Every built-in command name and alias (custom commands cannot take these)."""
    return frozenset({c.name for c in all_commands()} | set(ALIASES))


def is_command(line: str) -> bool:
    """A slash command, as opposed to a message that starts with a path like ``/etc/hosts …``."""
    text = line.strip()
    if not text or "\n" in text:
        return False  # several lines are a message, even when the first starts with "/"
    head = text.split(maxsplit=1)[0]
    return head.startswith("/") and "/" not in head[1:]


def find_command(name: str) -> Command | EarlyCommand | None:
    """The command ``/name`` runs (the front end's own are found without importing the features)."""
    name = ALIASES.get(name, name)
    own = next((c for c in COMMANDS if c.name == name), None)
    return own or next((c for c in feature_commands() if c.name == name), None)


def run_command(
    line: str,
    get_session: Callable[[], Session],
    busy: Callable[[str], AbstractContextManager[object]] | None = None,
    custom: CommandSet | None = None,
) -> Reply:
    """Parse and run one ``/command [argument]`` line; ``busy(message)`` wraps slow commands.

    Built-in commands win; then the prompt commands in ``custom`` (Markdown files, skills, MCP
    prompts), whose invocation comes back as ``Reply.invoke`` for the REPL to run."""
    head, _, arg = line.strip().partition(" ")
    command = find_command(head[1:].lower())
    if command is None:
        found = custom.get(head[1:]) if custom is not None else None
        if found is not None:
            return Reply(invoke=found.invoke(arg))
        return Reply(f"Unknown command {head} — type /help", "red")
    if command.name == "help":
        return cmd_help(arg.strip(), custom)
    if isinstance(command, EarlyCommand):
        return command.handler(arg.strip())
    session = get_session()
    if command.busy and busy is not None:
        with busy(command.busy):
            return command.handler(session, arg.strip())
    return command.handler(session, arg.strip())


__all__ = [
    "COMMANDS",
    "Command",
    "EarlyCommand",
    "Reply",
    "all_commands",
    "builtin_names",
    "feature_commands",
    "find_command",
    "is_command",
    "run_command",
]
