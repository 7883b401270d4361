"""`.mcp.json` parsing: the format other agents use, `${VAR}` expansion, trust, clear reasons."""

from __future__ import annotations

import json

import pytest

from memagent.mcp_bridge.config import (
    HttpServer,
    McpConfigError,
    StdioServer,
    expand,
    load_mcp_config,
    server_environment,
    tool_name,
)


def write(path, servers):
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_expand_plain_default_and_missing():
    env = {"A": "1", "EMPTY": ""}
    assert expand("x${A}y", env) == "x1y"
    assert expand("${B:-fallback}", env) == "fallback"
    assert expand("${EMPTY:-d}", env) == "d"
    assert expand("${EMPTY}", env) == ""
    assert expand("$A and ${A:-z}", env) == "$A and 1"
    with pytest.raises(McpConfigError, match="environment variable MISSING is not set"):
        expand("${MISSING}", env)


def test_stdio_and_http_entries_with_expansion(tmp_path):
    user = write(
        tmp_path / "mcp.json",
        {
            "files": {"command": "${TOOLS}/server", "args": ["--root", "${ROOT:-.}"], "env": {"TOKEN": "${TOKEN}"}},
            "search": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        },
    )
    config = load_mcp_config(
        user, None, {"TOOLS": "/opt", "TOKEN": "t0k", "HOST": "example.com"}, project_trusted=False
    )
    assert config.broken == [] and config.problems == []
    files, search = config.servers
    assert (files.command, files.args, files.env, files.origin) == (
        "/opt/server",
        ("--root", "."),
        {"TOKEN": "t0k"},
        "user",
    )
    assert (search.url, search.headers) == ("https://example.com/mcp", {"Authorization": "Bearer t0k"})
    assert isinstance(files, StdioServer) and isinstance(search, HttpServer)
    # what `mcp list` and /mcp show is the configuration as written: expanded secrets stay hidden
    assert files.target == "${TOOLS}/server --root ${ROOT:-.}" and search.target == "https://${HOST}/mcp"


def test_broken_entries_are_listed_with_their_reason_and_the_rest_still_load(tmp_path):
    user = write(
        tmp_path / "mcp.json",
        {
            "ok": {"command": "srv"},
            "nokey": {"command": "srv", "env": {"K": "${NOT_SET}"}},
            "sse": {"type": "sse", "url": "http://x/sse"},
            "nourl": {"type": "http"},
            "nocmd": {"args": ["x"]},
            "badargs": {"command": "srv", "args": "one string"},
            "ws": {"type": "ws", "url": "ws://x"},
        },
    )
    config = load_mcp_config(user, None, {}, project_trusted=True)
    assert [s.name for s in config.servers] == ["ok", "sse"]
    assert config.servers[1].transport == "sse" and config.servers[1].url == "http://x/sse"
    reasons = {b.name: b.reason for b in config.broken}
    assert reasons == {
        "nokey": "environment variable NOT_SET is not set",
        "nourl": 'an http server needs a "url"',
        "nocmd": 'a stdio server needs a "command"',
        "badargs": "args must be a list of strings",
        "ws": 'transport "ws" is not supported (use stdio, "type": "http" or "type": "sse")',
    }


def test_project_servers_need_trust_and_override_user_servers(tmp_path):
    user = write(tmp_path / "mcp.json", {"shared": {"command": "user-version"}, "mine": {"command": "m"}})
    project = write(tmp_path / ".mcp.json", {"shared": {"command": "project-version"}, "repo": {"command": "r"}})
    untrusted = load_mcp_config(user, project, {}, project_trusted=False)
    assert [(s.name, s.command) for s in untrusted.servers] == [("shared", "user-version"), ("mine", "m")]
    assert untrusted.untrusted == ["repo", "shared"]
    trusted = load_mcp_config(user, project, {}, project_trusted=True)
    assert [(s.name, s.command, s.origin) for s in trusted.servers] == [
        ("shared", "project-version", "project"),
        ("mine", "m", "user"),
        ("repo", "r", "project"),
    ]


def test_unreadable_files_are_one_line_problems(tmp_path):
    bad = tmp_path / "mcp.json"
    bad.write_text("{not json")
    wrong = tmp_path / ".mcp.json"
    wrong.write_text(json.dumps({"mcpServers": ["a"]}))
    config = load_mcp_config(bad, wrong, {}, project_trusted=True)
    assert config.servers == []
    assert len(config.problems) == 2
    assert "is not valid JSON" in config.problems[0] and "\n" not in config.problems[0]
    assert '"mcpServers" must be an object' in config.problems[1]
    assert load_mcp_config(tmp_path / "none.json", None, {}, project_trusted=True).empty


def test_server_environment_does_not_leak_secrets():
    spec = StdioServer("s", "cmd", env={"TOKEN": "given"})
    env = {"PATH": "/bin", "HOME": "/h", "ANTHROPIC_API_KEY": "secret", "TOKEN": "outer"}
    assert server_environment(spec, env) == {"PATH": "/bin", "HOME": "/h", "TOKEN": "given"}


def test_tool_names_are_api_safe():
    assert tool_name("files", "read") == "mcp__files__read"
    assert tool_name("my server", "do.it/now") == "mcp__my_server__do_it_now"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == 64 and long.startswith("mcp__ssss")


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_a_server_naming_memagents_own_key_is_not_started(tmp_path, name):
    config = load_mcp_config(
        write(
            tmp_path / "mcp.json",
            {
                "stdio": {"command": "srv", "env": {"KEY": f"${{{name}}}"}},
                "http": {"type": "http", "url": "https://example.com/mcp", "headers": {"x-api-key": f"${{{name}}}"}},
            },
        ),
        None,
        {name: "sk-ant-own-key", "PATH": "/bin"},
        project_trusted=True,
    )
    assert config.servers == []
    assert len(config.broken) == 2 and all(name in str(b) and "never passed" in str(b) for b in config.broken)


def test_inherited_values_shaped_like_secrets_are_dropped():
    spec = StdioServer("s", "cmd")
    env = {"PATH": "/bin", "HOME": "/h", "TERM": "https://hooks.slack.com/services/T0/B0/x", "USER": "me"}
    assert server_environment(spec, env) == {"PATH": "/bin", "HOME": "/h", "USER": "me"}


def test_a_project_mcp_json_linked_out_of_the_project_is_not_read(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    elsewhere = write(tmp_path / "elsewhere.json", {"x": {"command": "srv"}})
    (project / ".mcp.json").symlink_to(elsewhere)
    config = load_mcp_config(tmp_path / "none.json", project / ".mcp.json", {}, project_trusted=True)
    assert config.servers == [] and "outside the project" in config.problems[0]
