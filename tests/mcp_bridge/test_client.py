"""The MCP client against real SDK servers: stdio and streamable HTTP, failures contained."""

from __future__ import annotations

import base64
import sys
import time

import pytest

from mcp_kit import START_TIMEOUT, TOY, http_server, toy_stdio
from memagent.features.mcp_client import McpClientFeature
from memagent.mcp_bridge.config import McpConfig, StdioServer
from memagent.mcp_bridge.manager import FAILED, READY, RECONNECTING, McpManager
from memagent.tools.base import ToolContext, ToolRegistry


@pytest.fixture(scope="module")
def shared(http_toy):
    """Started once for the module: two stdio toys (``b`` is the one crashed) and an HTTP toy."""
    manager = McpManager(
        [
            toy_stdio("toy", env={"TOY_TOKEN": "secret-sauce"}),
            toy_stdio("b"),
            http_server("web", http_toy, {"X-Trace": "1"}),
        ],
        env={"PATH": "/usr/bin:/bin"},
        connect_timeout=START_TIMEOUT,
    )
    manager.start()
    assert manager.wait_ready(START_TIMEOUT)
    yield manager
    manager.close()


@pytest.fixture
def manager_of():
    made: list[McpManager] = []

    def make(*servers, **options) -> McpManager:
        options.setdefault("connect_timeout", START_TIMEOUT)
        manager = McpManager(list(servers), env={"PATH": "/usr/bin:/bin"}, **options)
        made.append(manager)
        manager.start()
        return manager

    yield make
    for manager in made:
        manager.close()


def test_stdio_server_lists_tools_and_answers_calls(shared):
    manager = shared
    status = manager.status("toy")
    assert status.status == READY and status.server_info == "toy 1.0"
    assert [t.name for t in status.tools] == ["echo", "add", "picture", "crash", "slow", "fails"]
    echo = status.tools[0]
    assert echo.input_schema["required"] == ["text"]
    assert manager.call_tool("toy", "echo", {"text": "hi"}, 30).text == "toy says: hi (TOY_TOKEN=secret-sauce)"
    assert manager.call_tool("toy", "add", {"a": 2, "b": 3}, 30).text == "5"


def test_tool_errors_are_error_results_and_the_server_stays_up(shared):
    manager = shared
    failed = manager.call_tool("toy", "fails", {}, 30)
    assert failed.is_error and "fails" in failed.text
    invalid = manager.call_tool("toy", "add", {"a": "x"}, 30)
    assert invalid.is_error and "add" in invalid.text
    slow = manager.call_tool("toy", "slow", {"seconds": 1.5}, 0.5)
    assert slow.is_error and "did not answer within 0.5s" in slow.text
    assert manager.call_tool("toy", "add", {"a": 1, "b": 1}, 30).text == "2"
    assert manager.status("toy").status == READY


def test_images_come_back_as_image_blocks(shared):
    manager = shared
    outcome = manager.call_tool("toy", "picture", {}, 30)
    assert not outcome.is_error and outcome.text == "a red dot"
    (image,) = outcome.images
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]).startswith(b"\x89PNG")


def test_a_crash_fails_that_call_and_the_server_comes_back(shared):
    manager = shared
    crashed = manager.call_tool("b", "crash", {}, 30)
    assert crashed.is_error and "stopped working" in crashed.text
    status = manager.status("b")
    assert status.status == RECONNECTING and "connection lost" in status.reason
    assert manager.call_tool("toy", "echo", {"text": "still here"}, 30).text.startswith("toy says: still here")
    again = manager.call_tool("b", "echo", {"text": "x"}, START_TIMEOUT)  # waits for the reconnection
    assert not again.is_error and again.text.startswith("toy says: x")
    assert manager.status("b").status == READY and manager.status("b").reconnects == 1
    assert manager.call_tool("web", "add", {"a": 1, "b": 2}, 30).text == "3"


def test_start_failures_and_hangs_cost_one_line_each(manager_of):
    missing = StdioServer("missing", "/nonexistent/mcp-server")
    manager = manager_of(toy_stdio("fails", "--fail"), missing, connect_timeout=START_TIMEOUT)
    assert manager.wait_ready(START_TIMEOUT)
    reasons = {s.name: s.reason for s in manager.statuses()}
    assert all(s.status == FAILED for s in manager.statuses())
    assert "toy: missing configuration, giving up" in reasons["fails"]
    assert "\n" not in reasons["fails"] and reasons["missing"]
    hung = manager_of(toy_stdio("hang", "--hang"), connect_timeout=1.0)
    started = time.monotonic()
    assert hung.wait_ready(10)
    assert time.monotonic() - started < 8
    assert hung.status("hang").reason == "did not answer within 1s"
    assert hung.call_tool("hang", "echo", {"text": "x"}, 5).is_error


def test_streamable_http_server(shared):
    manager = shared
    status = manager.status("web")
    assert status.status == READY, status.reason
    assert (
        manager.call_tool("web", "echo", {"text": "over http"}, 30).text == "toy says: over http (TOY_TOKEN=from-http)"
    )
    assert manager.call_tool("web", "picture", {}, 30).images


def test_unreachable_http_server_fails_with_a_reason(manager_of):
    manager = manager_of(http_server("nowhere", "http://127.0.0.1:9/mcp"))
    assert manager.wait_ready(START_TIMEOUT)
    status = manager.status("nowhere")
    assert status.status == FAILED and status.reason


def test_feature_freezes_a_stable_tool_list_and_warns_once_per_problem(tmp_path):
    warnings: list[str] = []
    config = McpConfig(servers=[toy_stdio("toy"), toy_stdio("broken", "--fail")])
    feature = McpClientFeature(config, env={}, root=tmp_path, startup_wait=START_TIMEOUT, warn=warnings.append)
    try:
        tools = feature.tools()
        names = [t.name for t in tools]
        assert names[:2] == ["mcp__toy__echo", "mcp__toy__add"] and len(names) == 6
        assert [t.name for t in feature.tools()] == names  # frozen: asked again, same list
        registry = ToolRegistry.of(tools)
        schemas = registry.schemas()
        assert schemas[0]["input_schema"]["properties"]["text"]["type"] == "string"
        assert "MCP tool 'echo' of the 'toy' server" in schemas[0]["description"]
        from memagent.permissions import Effect

        assert Effect.RUN in tools[0].declare({}).effects  # no annotation: it acts
        assert tools[0].summary({"text": "hello"}) == "hello"
        outcome = registry.run("mcp__toy__echo", {"text": "via registry"}, ToolContext(root=tmp_path))
        assert outcome.content.startswith("toy says: via registry") and not outcome.is_error
        bad = registry.run("mcp__toy__echo", ["not", "an", "object"], ToolContext(root=tmp_path))
        assert bad.is_error and "Invalid input for mcp__toy__echo" in bad.content
        assert len(warnings) == 1 and warnings[0].startswith("MCP server broken failed: ")
        started = time.monotonic()
        feature.close()
        assert time.monotonic() - started < 8
        assert feature.manager.status("toy").status == "stopped"
        assert registry.run("mcp__toy__echo", {"text": "x"}, ToolContext(root=tmp_path)).is_error
    finally:
        feature.close()


def test_feature_with_no_servers_starts_nothing(tmp_path):
    feature = McpClientFeature(McpConfig(), env={}, root=tmp_path)
    assert feature.tools() == []
    assert feature.manager._thread is None
    feature.close()


def test_late_servers_are_left_out_with_a_warning(tmp_path):
    warnings: list[str] = []
    config = McpConfig(servers=[StdioServer("late", sys.executable, (str(TOY), "stdio", "--hang"))])
    feature = McpClientFeature(config, env={}, root=tmp_path, startup_wait=0.2, warn=warnings.append)
    try:
        assert feature.tools() == []
        assert warnings == ["MCP server late still starting after 0.2s; its tools are not offered in this session"]
    finally:
        feature.close()


def test_annotations_declare_what_a_tool_does(tmp_path):
    from memagent.permissions import Effect

    feature = McpClientFeature(McpConfig(servers=[toy_stdio("toy")]), env={}, root=tmp_path, startup_wait=START_TIMEOUT)
    try:
        tools = {t.name: t for t in feature.tools()}
        assert tools["mcp__toy__add"].declare({}).effects == {Effect.READ}  # readOnlyHint
        assert tools["mcp__toy__echo"].declare({}).effects == {Effect.RUN}  # no annotation: it acts
        assert "delete or overwrite" in tools["mcp__toy__fails"].declare({}).note  # destructiveHint
    finally:
        feature.close()


def test_a_changed_tool_list_is_withheld_until_approved(tmp_path):
    from memagent.features.mcp_client import approve_tool_list, pinned_tool_lists

    home = tmp_path / "home"

    def session(*flags):
        warnings: list[str] = []
        feature = McpClientFeature(
            McpConfig(servers=[toy_stdio("toy", *flags)]),
            env={},
            root=tmp_path,
            startup_wait=START_TIMEOUT,
            warn=warnings.append,
            pin_tools=pinned_tool_lists(home, tmp_path, warnings.append),
        )
        try:
            return [t.name for t in feature.tools()], warnings, feature.statuses()
        finally:
            feature.close()

    first, warnings, _ = session()
    assert "mcp__toy__echo" in first and warnings == []  # the first list seen is recorded
    assert session()[0] == first
    pulled, warnings, statuses = session("--rug-pull")
    assert pulled == [] and any("changed its tools" in w and "/mcp approve toy" in w for w in warnings)
    approve_tool_list(home, tmp_path, statuses[0])
    approved, warnings, _ = session("--rug-pull")
    assert "mcp__toy__upload" in approved and warnings == []
