"""Claude Code's print-mode flags, as scripts written for ``claude -p`` pass them.

- ``-p`` may be a flag, as in Claude Code: ``memagent -p --output-format json "PROMPT"`` and
  ``echo PROMPT | memagent -p --output-format json`` work (``-p`` followed by another option, or
  by nothing, takes its prompt from the bare words, else from stdin).
- ``--allowedTools``, ``--disallowedTools``, ``--add-dir`` and ``--mcp-config`` take several
  values, like Claude Code's: the words after them up to the next option are theirs
  (``--allowedTools Read "Bash(git log:*)"``), and a value may list several rules separated by
  commas or spaces outside parentheses (``"Bash(git *) Edit,Read"``).
- Claude Code options memagent does not have are refused by name, with why, before anything
  runs (exit 2), instead of a generic "no such option".

Terminal-free helpers; :mod:`memagent.cli.main` applies them to the command line.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memagent.jsontypes import JsonObject

VARIADIC = frozenset(
    {"--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools", "--add-dir", "--mcp-config"}
)
PRINT_FLAGS = ("-p", "--print")

# Claude Code options memagent refuses, each with the reason given to the user.
UNSUPPORTED = {
    "--fallback-model": "memagent does not switch models on its own; choose one with -m",
    "--include-partial-messages": "stream-json lines are whole messages; partial chunks are not streamed",
    "--json-schema": "structured output is not supported",
    "--max-budget-usd": "there is no spending cap; use --max-turns to bound a run",
    "--tools": "the built-in tool set is fixed; refuse tools with --disallowedTools",
    "--settings": "settings come from memagent's own files (see `memagent doctor`)",
    "--setting-sources": "settings come from memagent's own files (see `memagent doctor`)",
    "--strict-mcp-config": "MCP servers always come from the config files too",
    "--permission-prompt-tool": "approvals cannot be delegated to an MCP tool; use --allowedTools or --permission-mode",
    "--no-session-persistence": "every session keeps its transcript in .transcripts/",
    "--fork-session": "a resumed session always continues under the same session id",
    "--resume-session-at": "a session resumes from its end",
    "--agents": "custom agents are not supported",
    "--agent": "custom agents are not supported",
    "--betas": "beta headers cannot be set",
    "--effort": "the effort level cannot be set",
    "--max-thinking-tokens": "extended thinking cannot be configured",
    "--thinking": "extended thinking cannot be configured",
    "--plugin-dir": "plugins are not supported",
    "--include-hook-events": "hook events are not part of the output",
    "--debug": "there is no debug log; `memagent doctor` shows the set-up",
    "--debug-file": "there is no debug log; `memagent doctor` shows the set-up",
    "--worktree": "memagent works in the current checkout",
    "--ide": "there is no IDE integration",
}


class FlagError(ValueError):
    """A flag that cannot be used as given; ``str()`` is the one-line reason."""


def option_name(token: str) -> str:
    """``--add-dir=x`` → ``--add-dir``."""
    return token.split("=", 1)[0] if token.startswith("--") else token


def refuse_unsupported(args: Sequence[str], takes_value: frozenset[str]) -> None:
    """Raise FlagError for the first Claude Code option memagent does not have."""
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        if token == "--":
            return
        name = option_name(token)
        if name in UNSUPPORTED:
            raise FlagError(f"{name} is a Claude Code option memagent does not support: {UNSUPPORTED[name]}")
        skip = token in takes_value


def expand_variadic(args: Sequence[str], known: frozenset[str]) -> list[str]:
    """``--add-dir a b -p x`` → ``--add-dir a --add-dir b -p x``: the words after a variadic
    option, up to the next option, are its values."""
    out: list[str] = []
    current: str | None = None
    for index, token in enumerate(args):
        if token == "--":
            out.extend(args[index:])
            return out
        if token in VARIADIC:
            current = token
            out.append(token)
            continue
        if current is not None and out[-1] != current and not _is_option(token, known):
            out += [current, token]
            continue
        if _is_option(token, known):
            current = None
        out.append(token)
    return out


def _is_option(token: str, known: frozenset[str]) -> bool:
    return token.startswith("-") and token != "-" and (option_name(token) in known or option_name(token) in UNSUPPORTED)


def print_flag_form(args: Sequence[str], known: frozenset[str]) -> tuple[list[str], list[str] | None]:
    """Claude Code's ``-p`` is a flag. When ``-p`` is followed by an option or by nothing,
    returns the arguments without it and a marker: the caller gives ``-p`` the bare words as
    its prompt, or ``-`` (stdin). Otherwise returns the arguments unchanged and None."""
    for index, token in enumerate(args):
        if token == "--":
            break
        if token in PRINT_FLAGS:
            following = args[index + 1] if index + 1 < len(args) else None
            if following is not None and not _is_option(following, known):
                return list(args), None  # -p PROMPT
            return list(args[:index]) + list(args[index + 1 :]), []
    return list(args), None


def split_rules(values: Iterable[str]) -> tuple[str, ...]:
    """``["Bash(git log:*) Read", "Edit,Write"]`` → each rule on its own: commas and spaces
    separate rules, except inside parentheses."""
    rules: list[str] = []
    for value in values:
        depth, current = 0, list[str]()
        for char in value:
            if char in ", \t\n" and depth == 0:
                if current:
                    rules.append("".join(current))
                current = []
                continue
            depth += (char == "(") - (char == ")" and depth > 0)
            current.append(char)
        if current:
            rules.append("".join(current))
    return tuple(rules)


def check_session_id(value: str) -> str:
    """``--session-id`` must be a UUID, as in Claude Code; returned in canonical form."""
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise FlagError(f"--session-id {value!r} is not a UUID (e.g. {uuid.uuid4()})") from None


def read_prompt_file(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FlagError(f"{option}: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def prompt_text(text: str | None, file: Path | None, option: str) -> str | None:
    """The text of ``--system-prompt``/``--append-system-prompt`` or of its ``-file`` twin."""
    if text is not None and file is not None:
        raise FlagError(f"give either {option} or {option}-file, not both")
    if file is not None:
        return read_prompt_file(file, f"{option}-file")
    return text


def check_dirs(dirs: Iterable[Path]) -> tuple[Path, ...]:
    """``--add-dir`` folders, resolved; each must exist."""
    found = []
    for raw in dirs:
        path = Path(raw).expanduser()
        if not path.is_dir():
            raise FlagError(f"--add-dir {raw}: not a directory")
        found.append(path.resolve())
    return tuple(found)


def mcp_servers_from(values: Iterable[str]) -> JsonObject:
    """The ``mcpServers`` of each ``--mcp-config`` value (a file, or the JSON itself), merged:
    a later value wins for a server name."""
    from memagent.mcp_bridge.config import McpConfigError, read_servers_file

    servers: JsonObject = {}
    for value in values:
        text = value.strip()
        try:
            if text.startswith("{"):
                servers.update(_servers_of_json(text))
            else:
                path = Path(text).expanduser()
                if not path.is_file():
                    raise McpConfigError(f"{text} is not a file (or a JSON object)")
                servers.update(read_servers_file(path))
        except McpConfigError as exc:
            raise FlagError(f"--mcp-config: {exc}") from None
    return servers


def _servers_of_json(text: str) -> JsonObject:
    from memagent.mcp_bridge.config import McpConfigError

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError('the JSON needs an "mcpServers" object')
    return servers


__all__ = [
    "FlagError",
    "UNSUPPORTED",
    "VARIADIC",
    "check_dirs",
    "check_session_id",
    "expand_variadic",
    "mcp_servers_from",
    "print_flag_form",
    "prompt_text",
    "refuse_unsupported",
    "split_rules",
]
