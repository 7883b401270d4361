"""Claude Code's print-mode flags through the real CLI and the fake Messages API: rules, system
prompt, extra folders, MCP servers from the command line, ``-p`` as a flag, and the options
memagent refuses by name."""

from __future__ import annotations

import json
import sys

import pytest

from fakeapi import FakeAnthropic, text, tool
from mcp_kit import TOY


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _run(run_cli, fake, project, *flags, prompt="go", **kwargs):
    return run_cli(
        "-C",
        str(project),
        "--no-memory",
        "-p",
        prompt,
        "--output-format",
        "json",
        *flags,
        env={"ANTHROPIC_BASE_URL": fake.url},
        **kwargs,
    )


def _result_blocks(request):
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


def _system_texts(request):
    return [block["text"] for block in request["system"]]


# ------------------------------------------------------------------ --allowedTools / --disallowedTools


@pytest.mark.parametrize(
    "flags",
    [
        ["--allowedTools", "Bash(echo hi)"],
        ["--allowed-tools", "Read", "Bash(echo hi)"],  # several values after one option
        ["--allowedTools", "Read,Bash(echo hi) Edit"],  # commas and spaces outside parentheses
    ],
)
def test_allowed_tools_let_a_command_run_without_yes(run_cli, fake, project, flags):
    fake.add(
        tool("bash", {"command": "echo hi"}, id="toolu_ok"),
        tool("bash", {"command": "echo other"}, id="toolu_no"),
        text("done"),
    )
    result = _run(run_cli, fake, project, *flags)
    assert result.returncode == 0, result.stderr
    (allowed,) = _result_blocks(fake.requests[1])
    (refused,) = _result_blocks(fake.requests[2])
    assert allowed["content"].startswith("hi\n") and not allowed.get("is_error")
    assert refused.get("is_error") is True
    assert json.loads(result.stdout)["permission_denials"] == [
        {"tool_name": "bash", "tool_use_id": "toolu_no", "tool_input": {"command": "echo other"}}
    ]


def test_disallowed_tools_refuse_even_with_yes(run_cli, fake, project):
    (project / "secret.txt").write_text("s3cret\n")
    fake.add(tool("read_file", {"path": "secret.txt"}, id="toolu_read"), text("refused"))
    result = _run(run_cli, fake, project, "--yes", "--disallowedTools", "Read")
    assert result.returncode == 0, result.stderr
    (block,) = _result_blocks(fake.requests[1])
    assert block["is_error"] is True and "s3cret" not in block["content"] and "Read" in block["content"]
    assert json.loads(result.stdout)["permission_denials"][0]["tool_use_id"] == "toolu_read"


def test_a_malformed_rule_is_a_usage_error(run_cli, fake, project):
    result = _run(run_cli, fake, project, "--allowedTools", "Bash()")
    assert result.returncode == 2 and "empty parentheses" in result.stderr and fake.requests == []


# ------------------------------------------------------------------ system prompt


def test_append_system_prompt_ends_the_system_prompt(run_cli, fake, project):
    (project / "AGENTS.md").write_text("Project rule: use tabs.\n")
    fake.add(text("ok"))
    result = _run(run_cli, fake, project, "--append-system-prompt", "Always answer in French.")
    assert result.returncode == 0, result.stderr
    texts = _system_texts(fake.requests[0])
    assert texts[-1] == "Always answer in French."
    assert "You are memagent" in texts[0] and any("use tabs" in t for t in texts)


def test_system_prompt_replaces_the_base_prompt_and_keeps_the_project_instructions(run_cli, fake, project, tmp_path):
    (project / "AGENTS.md").write_text("Project rule: use tabs.\n")
    prompt_file = tmp_path / "persona.md"
    prompt_file.write_text("You are a release bot.\n")
    fake.add(text("one"), text("two"))
    assert _run(run_cli, fake, project, "--system-prompt", "You are a test bot.").returncode == 0
    assert _run(run_cli, fake, project, "--system-prompt-file", str(prompt_file)).returncode == 0
    for request, persona in zip(fake.requests, ("You are a test bot.", "You are a release bot."), strict=True):
        texts = _system_texts(request)
        assert texts[0].strip() == persona and not any("You are memagent" in t for t in texts)
        assert any("use tabs" in t for t in texts)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--system-prompt", "a", "--system-prompt-file", "x.md"], "either --system-prompt or --system-prompt-file"),
        (["--append-system-prompt-file", "missing.md"], "--append-system-prompt-file: cannot read missing.md"),
    ],
)
def test_system_prompt_usage_errors(run_cli, project, flags, message):
    result = run_cli("-C", str(project), "-p", "hi", *flags)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1


# ------------------------------------------------------------------ --add-dir


@pytest.fixture
def elsewhere(tmp_path):
    folder = tmp_path / "shared-lib"
    folder.mkdir()
    (folder / "util.py").write_text("def helper():\n    return 42\n")
    return folder


def test_add_dir_lets_the_file_tools_read_and_write_there(run_cli, fake, project, elsewhere):
    target = elsewhere / "new.txt"
    fake.add(
        tool("read_file", {"path": str(elsewhere / "util.py")}, id="toolu_read"),
        tool("write_file", {"path": str(target), "content": "written\n"}, id="toolu_write"),
        tool("grep", {"pattern": "return 42", "path": str(elsewhere)}, id="toolu_grep"),
        tool("glob", {"pattern": f"{elsewhere}/**/*.py"}, id="toolu_glob"),
        text("done"),
    )
    result = _run(run_cli, fake, project, "--yes", "--add-dir", str(elsewhere))
    assert result.returncode == 0, result.stderr
    read, write, grep, glob = (_result_blocks(fake.requests[i])[0] for i in range(1, 5))
    assert "return 42" in read["content"] and not read.get("is_error")
    assert target.read_text() == "written\n" and not write.get("is_error")
    assert grep["content"].startswith(f"{elsewhere}/util.py:2:")
    assert glob["content"].strip() == f"{elsewhere}/util.py"


def test_without_add_dir_the_folder_stays_out_of_reach(run_cli, fake, project, elsewhere):
    fake.add(
        tool("read_file", {"path": str(elsewhere / "util.py")}, id="toolu_read"),
        tool("grep", {"pattern": "42", "path": str(elsewhere)}, id="toolu_grep"),
        text("refused"),
    )
    result = _run(run_cli, fake, project, "--yes")
    assert result.returncode == 0, result.stderr
    for request in fake.requests[1:3]:
        (block,) = _result_blocks(request)
        assert block["is_error"] is True and "escapes the project root" in block["content"]


def test_add_dir_makes_the_folder_writable_inside_the_sandbox(run_cli, fake, project, elsewhere):
    command = f"echo from-bash > {elsewhere}/bash.txt && cat {elsewhere}/bash.txt"
    fake.add(
        tool("bash", {"command": command}, id="toolu_1"),
        text("one"),
        tool("bash", {"command": command.replace("bash.txt", "other.txt")}, id="toolu_2"),
        text("two"),
    )
    denied = _run(run_cli, fake, project, "--yes")
    assert denied.returncode == 0, denied.stderr
    assert not (elsewhere / "bash.txt").exists()  # read-only for sandboxed commands
    allowed = _run(run_cli, fake, project, "--yes", "--add-dir", str(elsewhere))
    assert allowed.returncode == 0, allowed.stderr
    assert (elsewhere / "other.txt").read_text() == "from-bash\n"


def test_add_dir_must_exist(run_cli, project, tmp_path):
    result = run_cli("-C", str(project), "-p", "hi", "--add-dir", str(tmp_path / "nope"))
    assert result.returncode == 2 and "--add-dir" in result.stderr and "not a directory" in result.stderr


# ------------------------------------------------------------------ --mcp-config


def _toy_config(tmp_path):
    servers = {"mcpServers": {"toy": {"command": sys.executable, "args": [str(TOY), "stdio"]}}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(servers))
    return path, json.dumps(servers)


def _slow_start_settings(home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("mcp_startup_wait = 90\nmcp_connect_timeout = 90\n")


@pytest.mark.parametrize("form", ["file", "json"])
def test_mcp_config_adds_servers_for_this_run(run_cli, fake, project, tmp_path, isolated_env, form):
    _slow_start_settings(isolated_env)
    path, inline = _toy_config(tmp_path)
    fake.add(tool("mcp__toy__echo", {"text": "hi"}, id="toolu_echo"), text("The toy answered."))
    result = _run(
        run_cli,
        fake,
        project,
        "--yes",
        "--mcp-config",
        str(path) if form == "file" else inline,
        "--output-format",
        "stream-json",
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    init = json.loads(result.stdout.splitlines()[0])
    assert {"name": "toy", "status": "connected"} in init["mcp_servers"] and "mcp__toy__echo" in init["tools"]
    (echo,) = _result_blocks(fake.requests[1])
    assert echo["content"].startswith("toy says: hi")


@pytest.mark.parametrize(
    "value, message",
    [
        ("{not json", "not valid JSON"),
        ('{"servers": {}}', '"mcpServers"'),
        ("missing.json", "missing.json is not a file"),
    ],
)
def test_a_bad_mcp_config_is_a_usage_error(run_cli, project, value, message):
    result = run_cli("-C", str(project), "-p", "hi", "--mcp-config", value)
    assert result.returncode == 2 and "--mcp-config" in result.stderr and message in result.stderr


# ------------------------------------------------------------------ -p as a flag, refused options


def test_p_as_a_flag_takes_the_prompt_from_the_words_or_stdin(run_cli, fake, project):
    fake.add(text("from words"), text("from stdin"))
    words = run_cli(
        "-C",
        str(project),
        "--no-memory",
        "-p",
        "--output-format",
        "json",
        "what",
        "now",
        env={"ANTHROPIC_BASE_URL": fake.url},
    )
    piped = run_cli(
        "-C",
        str(project),
        "--no-memory",
        "--output-format",
        "json",
        "--verbose",
        "-p",
        env={"ANTHROPIC_BASE_URL": fake.url},
        input="piped question\n",
    )
    assert words.returncode == 0 and piped.returncode == 0, words.stderr + piped.stderr
    assert fake.requests[0]["messages"][0]["content"][0]["text"] == "what now"
    assert fake.requests[1]["messages"][0]["content"][0]["text"] == "piped question"


def test_a_prompt_that_starts_with_a_dash_is_still_a_prompt(run_cli, fake, project):
    fake.add(text("ok"))
    result = run_cli(
        "-C", str(project), "--no-memory", "-p", "-v is broken, why?", env={"ANTHROPIC_BASE_URL": fake.url}
    )
    assert result.returncode == 0, result.stderr
    assert fake.requests[0]["messages"][0]["content"][0]["text"] == "-v is broken, why?"


def test_dangerously_skip_permissions_is_bypass_mode(run_cli, fake, project):
    fake.add(tool("bash", {"command": "echo ran"}, id="toolu_1"), text("done"))
    result = _run(run_cli, fake, project, "--dangerously-skip-permissions")
    assert result.returncode == 0, result.stderr
    assert _result_blocks(fake.requests[1])[0]["content"].startswith("ran\n")
    clash = run_cli("-C", str(project), "-p", "hi", "--dangerously-skip-permissions", "--permission-mode", "plan")
    assert clash.returncode == 2 and "contradicts --permission-mode plan" in clash.stderr


@pytest.mark.parametrize(
    "flag",
    [
        "--fallback-model",
        "--include-partial-messages",
        "--json-schema",
        "--tools",
        "--max-budget-usd",
        "--settings",
        "--no-session-persistence",
        "--agents",
    ],
)
def test_claude_code_options_memagent_lacks_are_refused_by_name(run_cli, project, flag):
    result = run_cli("-C", str(project), "-p", "hi", flag, "value")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"memagent: {flag} is a Claude Code option memagent does not support: ")


def test_an_unsupported_option_given_as_a_value_is_not_refused(run_cli, fake, project):
    fake.add(text("ok"))
    result = run_cli("-C", str(project), "--no-memory", "-p", "--tools", env={"ANTHROPIC_BASE_URL": fake.url})
    assert result.returncode == 2  # -p then an option: -p is a flag and --tools is refused
    quoted = run_cli("-C", str(project), "--no-memory", "-p", "explain --tools", env={"ANTHROPIC_BASE_URL": fake.url})
    assert quoted.returncode == 0, quoted.stderr


def test_clear_after_session_id_starts_a_new_logical_session(tmp_path, monkeypatch):
    from memagent.cli.chat import ChatOptions, open_metered
    from memagent.llm.types import text_block

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    chosen = "3f2b5d3e-1111-4222-8333-444455556666"
    options = ChatOptions(
        root=tmp_path,
        prompt=None,
        continue_latest=False,
        resume_id=None,
        auto_approve=False,
        model=None,
        memory=False,
        session_id=chosen,
    )
    first = open_metered(options, non_interactive=True)
    try:
        assert first.logical_session_id == chosen
        first.agent.conversation.append("user", [text_block("hello")])  # the transcript now exists
    finally:
        first.close()
    fresh = open_metered(options, non_interactive=True, fresh=True)  # what /clear opens
    try:
        assert fresh.logical_session_id == fresh.session_id != chosen
    finally:
        fresh.close()
