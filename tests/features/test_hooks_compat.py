"""Hooks written for Claude Code, run by memagent through the real loop (scripted model, real tools,
real shell commands): its tool names and inputs, every event's decisions and outputs, PostToolUse
feedback, Stop continuing the turn, ``continue: false``, ``CLAUDE_ENV_FILE``, and configuration
memagent cannot use costing one notice each instead of a failure to start."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memagent.agent.loop import Agent, Approval
from memagent.config import HooksSettings
from memagent.context.conversation import Conversation
from memagent.events import Notice, ToolCallFinished, TurnEnded
from memagent.features.hooks import HooksFeature, read_env_file
from memagent.llm.items import kind_of
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.llm.types import text_block
from memagent.markers import Marker
from memagent.runtime import hook_condition, notifying
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools
from memagent.tools.sandbox import Sandbox, SandboxConfig
from memagent.tools.shell import ShellConfig

# A PreToolUse validator in the style of Claude Code's documented examples: it reads the event
# from stdin, looks only at Bash calls and blocks with exit code 2 and a reason on stderr.
BASH_VALIDATOR = """\
import json, re, sys
event = json.load(sys.stdin)
if event.get("tool_name") != "Bash":
    sys.exit(0)
command = event.get("tool_input", {}).get("command", "")
rules = [(r"^grep\\b(?!.*\\|)", "Use 'rg' instead of 'grep'"), (r"^find\\s+\\S+\\s+-name\\b", "Use 'rg --files'")]
problems = [message for pattern, message in rules if re.search(pattern, command)]
if problems:
    print("\\n".join(problems), file=sys.stderr)
    sys.exit(2)
"""
# A write guard that reads file_path / content / new_string, as Claude Code spells them.
WRITE_GUARD = """\
import json, sys
event = json.load(sys.stdin)
data = event["tool_input"]
path = data.get("file_path", "")
text = data.get("content", "") + data.get("new_string", "")
if not path.startswith("/"):
    print("file_path is not absolute: " + path, file=sys.stderr); sys.exit(2)
if path.endswith(".env"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                      "permissionDecisionReason": "secrets files are off limits"}}))
elif "TODO" in text:
    print(json.dumps({"decision": "block", "reason": "no TODOs in committed code"}))
"""


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / "hooks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return f"{sys.executable} {path}"


def make(tmp_path: Path, script, warnings=None, shell: ShellConfig | None = None, **events):
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    feature = HooksFeature(
        HooksSettings.model_validate(events),
        root=root,
        session_id=lambda: "s-1",
        env={"PATH": "/usr/bin:/bin"},
        warn=(warnings.append if warnings is not None else lambda line: None),
        permission_mode=lambda: "acceptEdits",
        shell_env=shell.extra_env if shell is not None else None,
        env_dir=tmp_path / "env",
        condition=hook_condition(root),
    )
    model = ScriptedModel(script)
    agent = Agent(
        model=model,
        tools=ToolRegistry.of(builtin_tools(shell or ShellConfig(Sandbox(SandboxConfig(enabled=False))))),
        tool_context=ToolContext(root=root),
        system=[text_block("s")],
        conversation=Conversation(),
        features=[feature],
        auto_approve=True,
    )
    return agent, model, feature, root


def _results(request) -> list[dict]:
    return [b for b in request.messages[-1]["content"] if b.get("type") == "tool_result"]


def _marked(request) -> list[str]:
    return [
        b["text"]
        for b in request.messages[-1]["content"]
        if b.get("type") == "text" and kind_of(b) is Marker.HOOK_CONTEXT
    ]


def test_a_claude_code_bash_validator_blocks_grep_and_lets_the_rest_through(tmp_path):
    validator = _script(tmp_path, "bash_validator.py", BASH_VALIDATOR)
    script = [
        reply(tool_call("bash", {"command": "grep -r TODO src"})),
        reply(tool_call("bash", {"command": "echo fine"})),
        reply("ok"),
    ]
    agent, model, _, _ = make(
        tmp_path, script, PreToolUse=[{"matcher": "Bash", "hooks": [{"type": "command", "command": validator}]}]
    )
    list(agent.run_turn("search"))
    blocked = _results(model.requests[1])[0]
    assert blocked["is_error"] is True and "Use 'rg' instead of 'grep'" in blocked["content"]
    assert _results(model.requests[2])[0]["content"].startswith("fine")


def test_a_write_guard_reads_file_path_content_and_new_string(tmp_path):
    guard = _script(tmp_path, "guard.py", WRITE_GUARD)
    script = [
        reply(tool_call("write_file", {"path": "config/.env", "content": "KEY=1"})),
        reply(tool_call("write_file", {"path": "a.py", "content": "# TODO later"})),
        reply(tool_call("write_file", {"path": "b.py", "content": "print(1)"})),
        reply(tool_call("edit_file", {"path": "b.py", "old_text": "print(1)", "new_text": "print(2)  # TODO"})),
        reply("done"),
    ]
    agent, model, _, root = make(tmp_path, script, PreToolUse=[{"matcher": "Edit|Write", "command": guard}])
    list(agent.run_turn("write things"))
    assert "secrets files are off limits" in _results(model.requests[1])[0]["content"]
    assert "no TODOs in committed code" in _results(model.requests[2])[0]["content"]
    assert not _results(model.requests[3])[0].get("is_error") and (root / "b.py").read_text() == "print(1)"
    assert "no TODOs in committed code" in _results(model.requests[4])[0]["content"]
    assert not (root / "config" / ".env").exists() and not (root / "a.py").exists()


def test_post_tool_use_feedback_reaches_the_model_marked_after_the_results(tmp_path):
    feedback = """echo '{"decision": "block", "reason": "lint failed: E501", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ruff is the linter"}}'"""
    script = [
        reply(tool_call("write_file", {"path": "a.py", "content": "x = 1\n"}), tool_call("bash", {"command": "false"})),
        reply("fixed"),
    ]
    failing = "cat > failure.json; echo 'the command failed, look at stderr' >&2; exit 2"
    agent, model, _, root = make(
        tmp_path,
        script,
        PostToolUse=[{"matcher": "Write", "command": feedback}],
        PostToolUseFailure=[{"command": failing}],
    )
    list(agent.run_turn("write"))
    blocks = model.requests[1].messages[-1]["content"]
    assert [b["type"] for b in blocks][:2] == ["tool_result", "tool_result"]  # results first, then the feedback
    marked = _marked(model.requests[1])
    assert marked == [
        "[Context from the user's hooks, PostToolUse:]\nPostToolUse hook feedback: lint failed: E501\n"
        "ruff is the linter"
    ]
    assert not (root / "failure.json").exists()  # `false` exits 1 but is not an error result: PostToolUse


def test_post_tool_use_failure_runs_for_failed_calls(tmp_path):
    script = [reply(tool_call("read_file", {"path": "missing.txt"})), reply("ok")]
    agent, model, _, root = make(
        tmp_path, script, PostToolUseFailure=[{"command": "cat > failure.json; echo 'try ls first' >&2; exit 2"}]
    )
    list(agent.run_turn("read"))
    event = json.loads((root / "failure.json").read_text())
    assert event["tool_name"] == "Read" and event["tool_input"]["file_path"] == str(root / "missing.txt")
    assert "error" in event and event["tool_response"]["success"] is False
    assert _marked(model.requests[1]) == [
        "[Context from the user's hooks, PostToolUseFailure:]\nPostToolUseFailure hook feedback: try ls first"
    ]


def test_a_stop_hook_keeps_the_model_working_once_then_lets_it_stop(tmp_path):
    stop = (
        'python3 -c "import json,sys; e=json.load(sys.stdin); '
        "print(json.dumps({} if e['stop_hook_active'] else {'decision': 'block', 'reason': 'run the tests first'}))\""
    )
    agent, model, _, _ = make(tmp_path, [reply("done?"), reply("tests pass, done.")], Stop=[{"command": stop}])
    events = list(agent.run_turn("fix it"))
    assert events[-1] == TurnEnded("end_turn", final_text="tests pass, done.", usage=events[-1].usage)
    second = model.requests[1].messages
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[-1]["content"][0]["text"] == (
        "[Context from the user's hooks, Stop:]\nA Stop hook asks you to keep working: run the tests first"
    )


def test_a_stop_hook_that_never_lets_go_is_bounded(tmp_path):
    agent, model, _, _ = make(
        tmp_path, [reply(f"attempt {n}") for n in range(20)], Stop=[{"command": "echo 'not yet' >&2; exit 2"}]
    )
    events = list(agent.run_turn("go"))
    assert events[-1].stop_reason == "end_turn" and len(model.requests) == 1 + agent.config.max_stop_continuations


def test_continue_false_ends_the_turn_with_the_reason_for_the_user(tmp_path):
    halt = """echo '{"continue": false, "stopReason": "maintenance window: no changes now"}'"""
    script = [
        reply(tool_call("bash", {"command": "touch one"}), tool_call("bash", {"command": "touch two"})),
        reply("never asked"),
    ]
    agent, model, _, root = make(tmp_path, script, PreToolUse=[{"matcher": "Bash", "command": halt}])
    events = list(agent.run_turn("change things"))
    assert len(model.requests) == 1 and not (root / "one").exists() and not (root / "two").exists()
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices == ["a hook stopped the turn: maintenance window: no changes now"]
    assert events[-1].stop_reason == "halted" and events[-1].error is None
    assert [e.is_error for e in events if isinstance(e, ToolCallFinished)] == [True, True]
    agent.model = ScriptedModel([reply("fine now")])
    agent.features = []
    assert list(agent.run_turn("and now?"))[-1].final_text == "fine now"  # the history stayed valid


def test_json_context_is_marked_and_system_messages_are_warnings(tmp_path):
    warnings: list[str] = []
    prompt_hook = """echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ticket ABC-1 is open"}, "systemMessage": "prompt logged"}'"""
    start_hook = (
        """echo '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "on branch main"}}'"""
    )
    agent, model, feature, _ = make(
        tmp_path,
        [reply("ok")],
        warnings,
        UserPromptSubmit=[{"command": prompt_hook}],
        SessionStart=[{"matcher": "startup", "command": start_hook}, {"matcher": "resume", "command": "echo NEVER"}],
    )
    assert feature.system_text() == "[Context from the user's hooks, SessionStart:]\non branch main"
    list(agent.run_turn("status?"))
    texts = [b["text"] for b in model.requests[0].messages[-1]["content"]]
    assert texts == ["status?", "[Context from the user's hooks, UserPromptSubmit:]\nticket ABC-1 is open"]
    assert warnings == ["UserPromptSubmit hook: prompt logged"]


def test_env_file_exports_reach_later_bash_calls_and_are_never_run(tmp_path):
    shell = ShellConfig(Sandbox(SandboxConfig(enabled=False)))
    writer = (
        "printf '%s\\n' 'export DEPLOY_ENV=staging' 'export PATH=\"$PATH:/opt/tools\"' "
        "'export SNEAKY=\"$(touch pwned)\"' 'export LOUD=$(touch pwned-too)' 'touch also-pwned' "
        '>> "$CLAUDE_ENV_FILE"'
    )
    warnings: list[str] = []
    script = [reply(tool_call("bash", {"command": 'echo $DEPLOY_ENV; echo $PATH; echo "[$SNEAKY]"'})), reply("ok")]
    agent, model, feature, root = make(tmp_path, script, warnings, shell=shell, SessionStart=[{"command": writer}])
    feature.system_text()
    list(agent.run_turn("where do we deploy?"))
    output = _results(model.requests[1])[0]["content"]
    assert output.startswith("staging\n") and ":/opt/tools\n" in output and "[$(touch pwned)]" in output
    assert not (root / "pwned").exists() and not (root / "also-pwned").exists() and not (root / "pwned-too").exists()
    assert any("'touch also-pwned' is not an `export NAME=value` line; ignored" in w for w in warnings)
    assert any("'export LOUD=$(touch pwned-too)' is not an `export NAME=value` line" in w for w in warnings)
    assert not list((tmp_path / "env").glob("*.sh"))  # read, then removed


def test_read_env_file_expands_from_the_environment_and_earlier_lines(tmp_path):
    env_file = tmp_path / "env.sh"
    env_file.write_text("# comment\nexport A=1\nB=\"$A-two ${HOME}\"\nexport C='$A literal?'\n")
    found, notes = read_env_file(env_file, {"HOME": "/home/u"})
    assert found == {"A": "1", "B": "1-two /home/u", "C": "1 literal?"} and notes == []


def test_notification_hooks_hear_about_approval_prompts_and_session_end_at_close(tmp_path):
    agent, model, feature, root = make(
        tmp_path,
        [reply(tool_call("bash", {"command": "echo hi"})), reply("ok")],
        Notification=[{"matcher": "permission_prompt", "command": "cat >> notified.jsonl"}],
        SessionEnd=[{"command": "cat > ended.json"}],
    )
    asked = []
    agent.permissions.policy = agent.permissions.policy.with_mode("default")
    agent.approver = notifying(lambda tool, raw, summary, *why: asked.append(summary) or Approval.ALLOW, [feature])
    list(agent.run_turn("say hi"))
    event = json.loads((root / "notified.jsonl").read_text().splitlines()[0])
    assert (
        event["notification_type"] == "permission_prompt"
        and event["message"] == "memagent needs your permission to use Bash"
    )
    assert asked == ["echo hi"]
    feature.close()
    assert json.loads((root / "ended.json").read_text())["reason"] == "other"


def test_what_memagent_cannot_use_is_one_notice_each_and_never_a_failure(tmp_path):
    warnings: list[str] = []
    events = {
        "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}],
        "BrandNewEvent": [{"command": "true"}],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "prompt", "prompt": "Is this safe?"},
                    {
                        "type": "command",
                        "command": "touch seen",
                        "statusMessage": "checking",
                        "fancy": 1,
                        "asyncRewake": True,
                    },
                ],
            }
        ],
    }
    agent, model, _, root = make(
        tmp_path, [reply(tool_call("bash", {"command": "echo x"})), reply("ok")], warnings, **events
    )
    list(agent.run_turn("go"))
    assert (root / "seen").exists()
    assert warnings == [
        "hooks: unknown hook event 'BrandNewEvent' ignored",
        "hooks: hooks.PreToolUse: hooks of type 'prompt' are not supported by memagent; skipped",
        "hooks: hooks.PreToolUse: fields asyncRewake, fancy ignored",
        "hooks: SubagentStop hooks never run in memagent (memagent's subagents do not run them)",
    ]


def test_an_if_condition_limits_a_hook_to_the_calls_its_rule_covers(tmp_path):
    script = [
        reply(tool_call("bash", {"command": "git status"})),
        reply(tool_call("bash", {"command": "git add . && git commit -m x"})),
        reply(tool_call("write_file", {"path": "src/a.py", "content": "x"})),
        reply("ok"),
    ]
    log = (
        'python3 -c \'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command") or "write")\' >> if.log'
    )
    agent, model, _, root = make(
        tmp_path,
        script,
        PostToolUse=[
            {"matcher": "Bash", "hooks": [{"type": "command", "command": log, "if": "Bash(git commit:*)"}]},
            {"matcher": "Write", "hooks": [{"type": "command", "command": log, "if": "Edit(src/**)"}]},
        ],
    )
    list(agent.run_turn("commit"))
    assert (root / "if.log").read_text().splitlines() == ["git add . && git commit -m x", "write"]


def test_async_hooks_do_not_hold_the_call_and_once_hooks_run_once(tmp_path):
    script = [
        reply(tool_call("bash", {"command": "echo a"})),
        reply(tool_call("bash", {"command": "echo b"})),
        reply("ok"),
    ]
    agent, model, _, root = make(
        tmp_path,
        script,
        PreToolUse=[{"command": "sleep 5; exit 2", "async": True}, {"command": "echo run >> once.log", "once": True}],
    )
    started = time.monotonic()
    list(agent.run_turn("go"))
    assert time.monotonic() - started < 4
    assert [r.get("is_error") for r in (_results(model.requests[1]) + _results(model.requests[2]))] == [None, None]
    assert (root / "once.log").read_text() == "run\n"
