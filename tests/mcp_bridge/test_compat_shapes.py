"""MCP servers as they are in the wild: schemas the Messages API refuses, task-only tools,
resources and resource links, prompts as slash commands, noise on stdout, the SSE transport,
and real servers from PyPI — through the real agent loop, the real SDK and a strict fake API."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys

import pytest

from fakeapi import FakeAnthropic, text, tool
from mcp_kit import START_TIMEOUT, compat_stdio, http_server, run_http_toy
from memagent.agent.loop import Agent, Approval
from memagent.features.mcp_client import McpClientFeature
from memagent.llm.anthropic import AnthropicModel
from memagent.mcp_bridge.config import McpConfig, StdioServer
from memagent.mcp_bridge.manager import READY, McpManager
from memagent.tools.base import ToolContext, ToolRegistry


@pytest.fixture(scope="module")
def compat(tmp_path_factory):
    warnings: list[str] = []
    made = McpClientFeature(
        McpConfig(servers=[compat_stdio()]),
        env={"PATH": "/usr/bin:/bin"},
        root=tmp_path_factory.mktemp("root"),
        startup_wait=START_TIMEOUT,
        warn=warnings.append,
    )
    made.tools()
    yield made, warnings
    made.close()


def agent_for(fake: FakeAnthropic, tools, tmp_path) -> Agent:
    model = AnthropicModel("claude-sonnet-5-5", api_key="test-key", base_url=fake.url, max_retries=0)
    return Agent(
        model=model,
        tools=ToolRegistry.of(tools),
        tool_context=ToolContext(root=tmp_path),
        system=[{"type": "text", "text": "You are a test."}],
        approver=lambda *a: Approval.ALLOW,
    )


def results_of(request):
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


def test_the_strict_fake_refuses_a_top_level_anyof_as_the_real_api_does(tmp_path):
    raw = {"name": "lookup", "description": "d", "input_schema": {"type": "object", "anyOf": [{"type": "object"}]}}
    import anthropic

    with FakeAnthropic([text("never")]) as fake:
        client = anthropic.Anthropic(api_key="k", base_url=fake.url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="does not support oneOf, allOf, or anyOf at the top level"):
            client.messages.create(model="m", max_tokens=10, tools=[raw], messages=[{"role": "user", "content": "hi"}])


def test_awkward_schemas_are_rewritten_or_left_out_with_a_notice_and_the_session_works(compat, tmp_path):
    feature, warnings = compat
    names = [t.name for t in feature.tools()]
    assert "mcp__compat__lookup" in names and "mcp__compat__tagged" in names
    assert "mcp__compat__scalar_or_object" not in names and "mcp__compat__background_job" not in names
    said = "\n".join(warnings)
    assert "scalar_or_object of compat left out: its top-level oneOf has a branch of type 'string'" in said
    assert "background_job of compat left out: it runs only as an MCP task" in said
    schemas = {s["name"]: s["input_schema"] for s in ToolRegistry.of(feature.tools()).schemas()}
    lookup = schemas["mcp__compat__lookup"]
    assert "anyOf" not in lookup and lookup["type"] == "object"
    assert set(lookup["properties"]) == {"id", "name"} and "required" not in lookup
    assert "(by id: id); (by name: name)" in lookup["description"]
    assert schemas["mcp__compat__tagged"]["required"] == ["record", "tag"]
    with FakeAnthropic([tool("mcp__compat__lookup", {"name": "ada"}, id="toolu_l"), text("found")]) as fake:
        events = list(agent_for(fake, feature.tools(), tmp_path).run_turn("look ada up"))
        assert fake.errors == []  # every request, tools included, passed the strict checks
        assert results_of(fake.requests[1])[0]["content"] == "lookup got [('name', 'ada')]"
    assert events[-1].final_text == "found"


def test_resources_are_listed_and_read_and_links_in_results_are_readable(compat, tmp_path):
    feature, _ = compat
    registry = ToolRegistry.of(feature.tools())
    ctx = ToolContext(root=tmp_path)
    listing = registry.run("list_mcp_resources", {}, ctx)
    assert not listing.is_error
    assert "compat: notes://readme (readme, text/markdown) — The project readme" in listing.content
    assert "compat: notes://archive (archive, application/zip)" in listing.content
    readme = registry.run("read_mcp_resource", {"server": "compat", "uri": "notes://readme"}, ctx)
    assert readme.content == "[resource notes://readme]\n# Readme\nHello from a resource."
    logo = registry.run("read_mcp_resource", {"server": "compat", "uri": "notes://logo"}, ctx)
    assert logo.images and base64.b64decode(logo.images[0]["source"]["data"]).startswith(b"\x89PNG")
    archive = registry.run("read_mcp_resource", {"server": "compat", "uri": "notes://archive"}, ctx)
    assert archive.content == "[binary resource notes://archive (application/zip, 10,240 bytes) not shown]"
    missing = registry.run("read_mcp_resource", {"server": "compat", "uri": "notes://nope"}, ctx)
    assert missing.is_error and "no resource notes://nope" in missing.content
    unknown = registry.run("read_mcp_resource", {"server": "elsewhere", "uri": "x://y"}, ctx)
    assert unknown.is_error and "no MCP server named 'elsewhere'" in unknown.content
    linked = registry.run("mcp__compat__link_readme", {}, ctx)
    assert (
        "[resource link notes://readme (readme, text/markdown): The project readme — read it with "
        "read_mcp_resource(server='compat', uri='notes://readme')]" in linked.content
    )
    for name in ("list_mcp_resources", "read_mcp_resource"):  # they change nothing: the gate runs them
        assert registry.get(name).effects.reads_only, name


def test_prompts_are_slash_commands_with_positional_arguments(compat):
    feature, _ = compat
    (review,) = feature.commands()
    assert review.name == "mcp__compat__review" and review.usage == "/mcp__compat__review <file> [focus]"
    assert review.source == "MCP server compat"
    ran = review.invoke("src/app.py error handling")
    assert ran.error is None and ran.prompt == "Please review src/app.py with a focus on error handling."
    assert ran.shell == []  # a server's text never runs shell commands
    assert review.invoke("a.py").prompt == "Please review a.py with a focus on everything."
    missing = review.invoke("")
    assert missing.error == "missing file; usage: /mcp__compat__review <file> [focus]"


def test_noise_on_stdout_is_one_line_and_never_a_traceback(capfd, tmp_path):
    warnings: list[str] = []
    feature = McpClientFeature(
        McpConfig(servers=[compat_stdio("noisy", "--junk")]),
        env={"PATH": "/usr/bin:/bin"},
        root=tmp_path,
        startup_wait=START_TIMEOUT,
        warn=warnings.append,
    )
    try:
        tools = feature.tools()
        assert "mcp__noisy__lookup" in [t.name for t in tools]
        outcome = ToolRegistry.of(tools).run("mcp__noisy__lookup", {"id": 3}, ToolContext(root=tmp_path))
        assert outcome.content == "lookup got [('id', 3)]"  # a junk line in the middle of a call costs nothing
        assert feature.manager.status("noisy").noise.startswith("ignored 2 lines of stdout")  # what /mcp shows
    finally:
        feature.close()
    noise = [w for w in warnings if w.startswith("MCP server noisy:")]
    assert noise == [
        "MCP server noisy: ignored 1 line of stdout that is not MCP JSON "
        "(first: 'compat server 0.1 starting (this line is not JSON)')"
    ]  # said once
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "chatter" not in captured.err + captured.out


def test_the_sse_transport():
    for url in run_http_toy("sse"):
        manager = McpManager([http_server("old", url, sse=True)], connect_timeout=START_TIMEOUT)
        manager.start()
        try:
            assert manager.wait_ready(START_TIMEOUT)
            status = manager.status("old")
            assert status.status == READY and status.transport == "sse", status.reason
            assert manager.call_tool("old", "add", {"a": 40, "b": 2}, 30).text == "42"
            assert manager.call_tool("old", "picture", {}, 30).images
        finally:
            manager.close()


def _pypi_server(name: str) -> str:
    found = shutil.which(name) or str(__import__("pathlib").Path(sys.executable).parent / name)
    if not __import__("os").path.exists(found):
        pytest.fail(f"{name} is a test dependency (pip install -e '.[test]')")
    return found


def test_real_servers_from_pypi_round_trip_through_the_strict_fake(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "hello.txt").write_text("hi\n")
    servers = [
        StdioServer("time", _pypi_server("mcp-server-time"), ("--local-timezone", "UTC")),
        StdioServer("git", _pypi_server("mcp-server-git"), ("--repository", str(repo))),
    ]
    warnings: list[str] = []
    feature = McpClientFeature(
        McpConfig(servers=servers),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        root=tmp_path,
        startup_wait=START_TIMEOUT,
        warn=warnings.append,
    )
    try:
        names = [t.name for t in feature.tools()]
        assert "mcp__time__get_current_time" in names and "mcp__git__git_status" in names, warnings
        script = [
            tool("mcp__time__get_current_time", {"timezone": "UTC"}, id="toolu_t"),
            tool("mcp__git__git_status", {"repo_path": str(repo)}, id="toolu_g"),
            text("It is now, and hello.txt is untracked."),
        ]
        with FakeAnthropic(script) as fake:
            events = list(agent_for(fake, feature.tools(), tmp_path).run_turn("time and status please"))
            assert fake.errors == []
            assert '"timezone": "UTC"' in results_of(fake.requests[1])[0]["content"]
            assert "hello.txt" in results_of(fake.requests[2])[0]["content"]
        assert events[-1].final_text == "It is now, and hello.txt is untracked."
    finally:
        feature.close()


def test_a_server_whose_tool_list_changed_offers_no_resources_either(tmp_path):
    warnings: list[str] = []
    feature = McpClientFeature(
        McpConfig(servers=[compat_stdio()]),
        env={"PATH": "/usr/bin:/bin"},
        root=tmp_path,
        startup_wait=START_TIMEOUT,
        warn=warnings.append,
        pin_tools=lambda server, origin, tools: False,
    )  # a list that changed since approved
    try:
        names = [t.name for t in feature.tools()]
        assert names == [] and feature.withheld == ["compat"]
        resources = feature._resource_tools()
        registry = ToolRegistry.of(resources)
        ctx = ToolContext(root=tmp_path)
        refused = registry.run("read_mcp_resource", {"server": "compat", "uri": "notes://readme"}, ctx)
        assert refused.is_error and "changed its tools since they were approved" in refused.content
        listed = registry.run("list_mcp_resources", {}, ctx)
        assert "notes://" not in listed.content
    finally:
        feature.close()
