"""Which MCP servers to connect to: ``.mcp.json`` (project) and ``$MEMAGENT_HOME/mcp.json`` (user).

The format is the one Claude Code and Cursor use, so an existing file works unchanged::

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "some-server"], "env": {"TOKEN": "${TOKEN}"}},
        "search": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${API_TOKEN:-none}"}}
    }}

A server with a ``command`` (``type`` absent or ``"stdio"``) is started as a subprocess and
spoken to over its stdin/stdout; ``type: "http"`` (or ``"streamable-http"``) is the streamable
HTTP transport and ``type: "sse"`` the older HTTP+SSE transport (both take ``url`` and
``headers``). ``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args``,
``env``, ``url`` and ``headers`` from the environment passed in. A server that names a variable
that is not set (and has no default) is not started; it is listed with the reason.

Both files are read; a project server with the same name as a user server replaces it. Project
servers widen what the agent can do (they run programs chosen by the repository), so they are
used only when the project is trusted; otherwise they are listed as skipped.

A stdio server's environment is a small safe set inherited from ours (``PATH``, ``HOME``,
``LANG``, …; a secret-looking value among them is dropped) plus its ``env`` entries: API keys in
our environment are not handed to third-party servers unless the configuration names them
explicitly — and memagent's own API credentials (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``)
never, even when named: a server naming one is not started, and says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memagent.childenv import NEVER_PASSED, is_secret_variable
from memagent.fsutil import resolves_inside
from memagent.jsontypes import JsonObject, JsonValue

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"
# Variables a stdio server inherits from our environment (besides its own ``env``).
INHERITED_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64  # the Messages API limit on tool names


class McpConfigError(Exception):
    """A problem with one server entry; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class StdioServer:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    origin: str = "user"  # "user" or "project"
    display: str = ""  # the command line as configured, before expansion (no secrets shown)

    @property
    def transport(self) -> str:
        return "stdio"

    @property
    def target(self) -> str:
        return self.display or " ".join([self.command, *self.args])


@dataclass(frozen=True)
class HttpServer:
    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    origin: str = "user"
    display: str = ""  # the URL as configured, before expansion
    sse: bool = False  # the HTTP+SSE transport (``"type": "sse"``) instead of streamable HTTP

    @property
    def transport(self) -> str:
        return "sse" if self.sse else "http"

    @property
    def target(self) -> str:
        return self.display or self.url


ServerSpec = StdioServer | HttpServer


@dataclass(frozen=True)
class BrokenServer:
    """An entry that cannot be started, with why (shown by ``memagent mcp list`` and ``/mcp``)."""

    name: str
    reason: str
    origin: str = "user"


@dataclass
class McpConfig:
    servers: list[ServerSpec] = field(default_factory=list)
    broken: list[BrokenServer] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)  # project servers skipped: project not trusted
    problems: list[str] = field(default_factory=list)  # whole files that could not be read

    @property
    def empty(self) -> bool:
        return not (self.servers or self.broken or self.untrusted or self.problems)


def expand(value: str, env: Mapping[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from ``env``; a missing variable is an error."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name.upper() in NEVER_PASSED:
            raise McpConfigError(f"{name} is memagent's own API credential; it is never passed to a server")
        found = env.get(name)
        if default is not None:
            return found or default  # as in the shell: unset or empty takes the default
        if found is not None:
            return found
        raise McpConfigError(f"environment variable {name} is not set")

    return _VAR.sub(one, value)


def _strings(value: JsonValue, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise McpConfigError(f"{what} must be a list of strings")
    return [str(v) for v in value]


def _mapping(value: JsonValue, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        raise McpConfigError(f"{what} must be an object of strings")
    return {str(k): str(v) for k, v in value.items()}


def parse_server(name: str, entry: JsonValue, env: Mapping[str, str], origin: str) -> ServerSpec:
    """One ``mcpServers`` entry; raises :class:`McpConfigError` with the reason."""
    if not isinstance(entry, dict):
        raise McpConfigError("the entry must be an object")
    kind = str(entry.get("type") or ("http" if "url" in entry and "command" not in entry else "stdio"))
    if kind in ("http", "streamable-http", "streamableHttp", "sse"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            raise McpConfigError(f'an {"sse" if kind == "sse" else "http"} server needs a "url"')
        headers = {k: expand(v, env) for k, v in _mapping(entry.get("headers"), "headers").items()}
        expanded = expand(url, env)
        if not expanded.startswith(("http://", "https://")):
            raise McpConfigError(f"url must start with http:// or https://, not {url[:40]!r}")
        return HttpServer(name, expanded, headers, origin, display=url, sse=kind == "sse")
    if kind != "stdio":
        raise McpConfigError(f'transport "{kind}" is not supported (use stdio, "type": "http" or "type": "sse")')
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError('a stdio server needs a "command"')
    raw_args = _strings(entry.get("args"), "args")
    args = tuple(expand(a, env) for a in raw_args)
    server_env = {k: expand(v, env) for k, v in _mapping(entry.get("env"), "env").items()}
    display = " ".join([command, *raw_args])
    return StdioServer(name, expand(command, env), args, server_env, origin, display=display)


def read_servers_file(path: Path) -> JsonObject:
    """The ``mcpServers`` object of one file ({} when the file does not exist)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{path}: "mcpServers" must be an object of servers')
    return servers


def load_mcp_config(
    user_file: Path,
    project_file: Path | None,
    env: Mapping[str, str],
    *,
    project_trusted: bool,
    extra_servers: Mapping[str, JsonValue] | None = None,
) -> McpConfig:
    """Both files merged (project entries win by name); never raises for bad content.

    ``extra_servers`` (``mcpServers`` entries the user gave on the command line, ``--mcp-config``)
    are the user's own choice, used like the user file's and winning over both files by name."""
    config = McpConfig()
    entries: dict[str, tuple[JsonValue, str]] = {}
    sources = [(user_file, "user")] + ([(project_file, "project")] if project_file is not None else [])
    for path, origin in sources:
        if origin == "project" and path.is_symlink() and not resolves_inside(path, path.parent):
            config.problems.append(f"{path}: a symlink to a file outside the project; not read")
            continue
        try:
            servers = read_servers_file(path)
        except McpConfigError as exc:
            config.problems.append(str(exc))
            continue
        if origin == "project" and servers and not project_trusted:
            config.untrusted.extend(sorted(servers))
            continue
        for name, entry in servers.items():
            entries[str(name)] = (entry, origin)
    for name, entry in (extra_servers or {}).items():
        entries[str(name)] = (entry, "command line")
    for name, (entry, origin) in entries.items():
        try:
            config.servers.append(parse_server(name, entry, env, origin))
        except McpConfigError as exc:
            config.broken.append(BrokenServer(name, str(exc), origin))
    return config


def server_environment(spec: StdioServer, env: Mapping[str, str]) -> dict[str, str]:
    """What a stdio server runs with: the safe inherited set, then its own ``env``."""
    base = {
        key: env[key]
        for key in INHERITED_VARS
        if env.get(key) and not env[key].startswith("()") and not is_secret_variable(key, env[key])
    }
    return {**base, **spec.env}


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, made safe for the Messages API (letters, digits, _ and -, ≤ 64)."""
    name = f"mcp__{_NAME_OK.sub('_', server)}__{_NAME_OK.sub('_', tool)}"
    return name[:MAX_TOOL_NAME]


__all__ = [
    "BrokenServer",
    "HttpServer",
    "McpConfig",
    "McpConfigError",
    "PROJECT_FILE",
    "ServerSpec",
    "StdioServer",
    "USER_FILE",
    "expand",
    "load_mcp_config",
    "parse_server",
    "server_environment",
    "tool_name",
]
