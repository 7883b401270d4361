"""Hooks run real shell commands: JSON on stdin, blocking by exit code 2 or a JSON decision,
matchers, timeouts and failures reported in one line."""

from __future__ import annotations

import json
import time

from memagent.agent.feature import ToolCall, TurnInput
from memagent.config import HooksSettings, Settings, load_settings, project_paths
from memagent.features.hooks import HooksFeature, matches
from memagent.llm.items import Injected
from memagent.markers import Marker
from memagent.tools.base import ToolOutcome
from memagent.tools.shell import bash_tool

CALL = ToolCall(id="toolu_1", name="bash", input={"command": "rm -rf build"}, tool=bash_tool())


def feature(tmp_path, warnings=None, **events):
    hooks = HooksSettings.model_validate(events)
    return HooksFeature(
        hooks,
        root=tmp_path,
        session_id=lambda: "s-123",
        env={"PATH": "/usr/bin:/bin"},
        transcript_path=lambda: tmp_path / ".transcripts" / "s-123.jsonl",
        warn=(warnings.append if warnings is not None else lambda line: None),
    )


def test_pre_tool_use_exit_2_blocks_with_stderr_and_gets_the_event_on_stdin(tmp_path):
    hook = {"matcher": "bash", "command": "cat > event.json; echo 'rm is not allowed here' >&2; exit 2"}
    verdict = feature(tmp_path, PreToolUse=[hook]).check_tool(CALL)
    assert verdict.action == "deny" and verdict.reason == "rm is not allowed here"
    event = json.loads((tmp_path / "event.json").read_text())
    assert event == {
        "session_id": "s-123",
        "transcript_path": str(tmp_path / ".transcripts" / "s-123.jsonl"),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",  # Claude Code's name: hooks written for it work unchanged
        "tool_use_id": "toolu_1",
        "tool_input": {"command": "rm -rf build"},
    }


def test_json_decisions_block_too(tmp_path):
    plain = {"command": """echo '{"decision": "block", "reason": "use the task graph"}'"""}
    claude = {
        "command": """echo '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}'"""
    }
    allow = {"command": """echo '{"decision": "approve"}'"""}
    assert feature(tmp_path, PreToolUse=[plain]).check_tool(CALL).reason == "use the task graph"
    assert feature(tmp_path, PreToolUse=[claude]).check_tool(CALL).reason == "no"
    assert feature(tmp_path, PreToolUse=[allow]).check_tool(CALL).action == "allow"  # Claude Code's deprecated spelling


def test_claude_code_ask_and_allow_decisions_go_to_the_gate(tmp_path):
    def says(decision):
        answer = {"hookSpecificOutput": {"permissionDecision": decision, "permissionDecisionReason": "because"}}
        return {"command": f"echo '{json.dumps(answer)}'"}

    asked = feature(tmp_path, PreToolUse=[says("allow"), says("ask")]).check_tool(CALL)
    assert (asked.action, asked.reason) == ("ask", "because")
    allowed = feature(tmp_path, PreToolUse=[says("allow")]).check_tool(CALL)
    assert allowed.action == "allow"


def test_matchers_select_tools_and_accept_claude_code_names():
    # a tool is matched by Claude Code's name and by memagent's
    assert matches("", "Bash", "bash") and matches("*", "Write", "write_file")
    assert matches("bash", "Bash", "bash") and not matches("bash", "bash_extra")
    assert matches("Bash", "Bash", "bash") and matches("Edit|Write", "Write", "write_file")
    assert matches("mcp__.*", "mcp__toy__echo") and not matches("read_file", "Bash", "bash")
    assert not matches("bad[regex", "bad[regex") and not matches("bad[regex", "Bash")  # a bad regex matches nothing


def test_non_matching_hooks_do_not_run(tmp_path):
    hooks = [{"matcher": "write_file", "command": "touch ran; exit 2"}]
    assert feature(tmp_path, PreToolUse=hooks).check_tool(CALL) is None
    assert not (tmp_path / "ran").exists()


def test_failures_and_timeouts_cost_one_warning_and_never_block(tmp_path):
    warnings: list[str] = []
    hooks = [
        {"command": "echo 'first line of trouble' >&2; echo more >&2; exit 1"},
        {"command": "sleep 30 & sleep 30", "timeout": 0.5},
        {"command": "/nonexistent/hook"},
    ]
    started = time.monotonic()
    assert feature(tmp_path, warnings, PreToolUse=hooks).check_tool(CALL) is None
    assert time.monotonic() - started < 10
    assert (
        warnings[0]
        == "PreToolUse hook `echo 'first line of trouble' >&2; echo more >&2; exit 1` failed: exit code 1: first line of trouble"
    )
    assert warnings[1].endswith("failed: timed out after 0.5s")
    assert "failed: exit code 127" in warnings[2]
    assert all("\n" not in w for w in warnings)


def test_post_tool_use_gets_the_response(tmp_path):
    hook = {"matcher": "bash", "command": "cat > post.json"}
    outcome = ToolOutcome("built 3 files\n[exit code: 0]", details={"exit_code": 0, "output": "built 3 files\n"})
    feature(tmp_path, PostToolUse=[hook]).after_tool(CALL, outcome)
    event = json.loads((tmp_path / "post.json").read_text())
    assert event["hook_event_name"] == "PostToolUse"
    assert event["tool_response"] == {
        "content": "built 3 files\n[exit code: 0]",
        "is_error": False,
        "stdout": "built 3 files\n",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "exit_code": 0,
    }


def test_user_prompt_submit_blocks_or_adds_context(tmp_path):
    blocker = feature(
        tmp_path, UserPromptSubmit=[{"command": "grep -q password && { echo 'no secrets' >&2; exit 2; }; exit 0"}]
    )
    assert blocker.check_prompt("my password is hunter2") == "a UserPromptSubmit hook says: no secrets"
    assert blocker.check_prompt("hello") is None
    adder = feature(tmp_path, UserPromptSubmit=[{"command": "echo 'branch: main'"}])
    assert adder.check_prompt("what branch?") is None
    context = adder.turn_context(TurnInput("what branch?"))
    assert context == Injected(Marker.HOOK_CONTEXT, "[Context from the user's hooks, UserPromptSubmit:]\nbranch: main")
    assert adder.turn_context(TurnInput("again")) is None  # used once


def test_session_start_runs_once_and_its_output_is_stable_system_text(tmp_path):
    hooks = {"SessionStart": [{"command": "echo started >> count; echo 'Use uv, not pip.'"}]}
    f = feature(tmp_path, **hooks)
    first = f.system_text()
    assert first == "[Context from the user's hooks, SessionStart:]\nUse uv, not pip."
    assert f.system_text() == first
    assert (tmp_path / "count").read_text() == "started\n"


def test_stop_and_pre_compact_run(tmp_path):
    f = feature(tmp_path, Stop=[{"command": "cat > stop.json"}], PreCompact=[{"command": "cat > compact.json"}])
    assert f.continue_turn("All done.") is None  # exit 0: the turn may end
    f.before_drop([{"role": "user", "content": []}] * 3, ["a", "b", "c"])
    stop = json.loads((tmp_path / "stop.json").read_text())
    assert stop["hook_event_name"] == "Stop" and stop["stop_hook_active"] is False
    assert stop["last_assistant_message"] == "All done."
    compact = json.loads((tmp_path / "compact.json").read_text())
    assert compact["messages"] == 3 and compact["trigger"] == "auto"


def test_settings_accept_the_flat_toml_shape_and_claude_codes_nested_shape(tmp_path):
    flat = Settings(hooks={"PreToolUse": [{"matcher": "bash", "command": "check"}]}).hooks
    nested = Settings(
        hooks={"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check", "timeout": 5}]}]}
    ).hooks
    assert flat.for_event("PreToolUse")[0].command == nested.for_event("PreToolUse")[0].command == "check"
    assert nested.for_event("PreToolUse")[0].timeout == 5 and nested.for_event("PreToolUse")[0].matcher == "Bash"
    root = tmp_path / "typo"
    root.mkdir()
    (root / ".memagent.toml").write_text('[[hooks.PreToolUs]]\ncommand = "x"\n')
    typo = load_settings(project_paths(root), env={"MEMAGENT_HOME": str(tmp_path / "home")}, trusted=True)
    assert typo.hooks.empty and typo.hooks.notes == (
        ".memagent.toml: unknown hook event 'PreToolUs' ignored",
    )  # never a failure to start


def test_hooks_load_from_a_toml_settings_file(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / ".memagent.toml").write_text(
        '[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = "python3 .hooks/check.py"\ntimeout = 30\n\n'
        '[[hooks.Stop]]\ncommand = "echo done"\n'
    )
    settings = load_settings(project_paths(root), env={"MEMAGENT_HOME": str(tmp_path / "home")}, trusted=True)
    assert settings.hooks.for_event("PreToolUse")[0].command == "python3 .hooks/check.py"
    assert settings.hooks.for_event("PreToolUse")[0].timeout == 30
    assert settings.hooks.for_event("PreToolUse")[0].origin == "project"  # stamped by the loader
    assert [h.command for h in settings.hooks.for_event("Stop")] == ["echo done"]
