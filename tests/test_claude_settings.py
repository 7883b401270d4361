"""Claude Code's settings files: precedence, sources, and what a project file may do before the
user trusts it (narrow: always; widen: only once trusted)."""

from __future__ import annotations

import json
from pathlib import Path

from memagent.claude_settings import read_claude_settings
from memagent.paths import ProjectPaths


def _paths(tmp_path: Path) -> ProjectPaths:
    root, user = tmp_path / "project", tmp_path / "user"
    (root / ".claude").mkdir(parents=True)
    (user / ".claude").mkdir(parents=True)
    return ProjectPaths(root=root, home=tmp_path / "mh", user_home=user)


def _write(path: Path, data) -> None:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


USER = {
    "permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(~/.ssh/**)"], "defaultMode": "acceptEdits"},
    "env": {"EDITOR": "vim", "SHARED": "user"},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}
PROJECT = {
    "permissions": {
        "allow": ["Bash(npm test:*)"],
        "ask": ["Bash(git push:*)"],
        "deny": ["Read(./.env)", "Bash(curl:*)"],
        "defaultMode": "bypassPermissions",
        "additionalDirectories": ["../shared"],
    },
    "env": {"SHARED": "project"},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}]},
}
LOCAL = {"permissions": {"deny": ["Edit(secrets/**)"], "defaultMode": "plan"}, "env": {"SHARED": "local"}}


def test_a_trusted_project_adds_everything_with_claude_codes_precedence(tmp_path):
    paths = _paths(tmp_path)
    _write(paths.claude_home / "settings.json", USER)
    _write(paths.root / ".claude" / "settings.json", PROJECT)
    _write(paths.root / ".claude" / "settings.local.json", LOCAL)
    found = read_claude_settings(paths, trusted=lambda label: True)
    assert found.notes == []
    assert [(r.rule, r.source) for r in found.deny] == [
        ("Read(~/.ssh/**)", "~/.claude/settings.json"),
        ("Read(./.env)", ".claude/settings.json"),
        ("Bash(curl:*)", ".claude/settings.json"),
        ("Edit(secrets/**)", ".claude/settings.local.json"),
    ]
    assert [r.rule for r in found.allow] == ["Bash(git status:*)", "Bash(npm test:*)"]
    assert found.default_mode == ("plan", ".claude/settings.local.json")  # the most specific file's
    assert found.env == {"EDITOR": "vim", "SHARED": "local"}
    assert found.additional_directories == [(Path("../shared"), ".claude/settings.json")]
    stop, pre = found.hooks.for_event("Stop"), found.hooks.for_event("PreToolUse")
    forged = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "origin": "user"}]}]}}
    _write(paths.root / ".claude" / "settings.local.json", forged)
    assert read_claude_settings(paths, trusted=lambda label: True).hooks.for_event("Stop")[-1].origin == "project"
    assert (stop[0].command, stop[0].origin, stop[0].source) == ("notify-send done", "user", "~/.claude/settings.json")
    assert (pre[0].command, pre[0].matcher, pre[0].origin) == ("check.sh", "Bash", "project")
    assert found.rules_by_source()[".claude/settings.json"] == {
        "allow": ["Bash(npm test:*)"],
        "ask": ["Bash(git push:*)"],
        "deny": ["Read(./.env)", "Bash(curl:*)"],
    }


def test_an_untrusted_project_only_narrows_and_says_what_waits(tmp_path):
    paths = _paths(tmp_path)
    _write(paths.claude_home / "settings.json", USER)
    _write(paths.root / ".claude" / "settings.json", PROJECT)
    found = read_claude_settings(paths, trusted=lambda label: False)
    assert [r.rule for r in found.deny] == ["Read(~/.ssh/**)", "Read(./.env)", "Bash(curl:*)"]  # deny always applies
    assert [r.rule for r in found.ask] == ["Bash(git push:*)"]  # and ask
    assert [r.rule for r in found.allow] == ["Bash(git status:*)"]  # the user's own file is trusted
    assert found.default_mode == ("acceptEdits", "~/.claude/settings.json")  # bypassPermissions waits
    assert found.env == {"EDITOR": "vim", "SHARED": "user"} and found.additional_directories == []
    assert found.hooks.for_event("PreToolUse") == () and len(found.hooks.for_event("Stop")) == 1
    assert found.notes == [
        ".claude/settings.json asks for allow, defaultMode, additionalDirectories, hooks, env; "
        "ignored because this project is not trusted (run `memagent trust` in it to allow them)"
    ]


def test_a_narrowing_mode_applies_without_trust(tmp_path):
    paths = _paths(tmp_path)
    _write(paths.root / ".claude" / "settings.local.json", {"permissions": {"defaultMode": "plan"}})
    found = read_claude_settings(paths, trusted=lambda label: False)
    assert found.default_mode == ("plan", ".claude/settings.local.json") and found.notes == []


def test_broken_files_and_rules_are_notices_never_failures(tmp_path):
    paths = _paths(tmp_path)
    _write(paths.claude_home / "settings.json", "{ not json")
    _write(
        paths.root / ".claude" / "settings.json",
        {
            "permissions": {"deny": ["Bash(rm:*)", "Bash(unclosed", 7], "allow": "Bash"},
            "env": ["x"],
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "ok?"}]}], "Nope": []},
        },
    )
    (tmp_path / "elsewhere.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
    (paths.root / ".claude" / "settings.local.json").symlink_to(tmp_path / "elsewhere.json")

    def check(rule: str) -> str | None:
        return "not Tool or Tool(pattern)" if rule.count("(") != rule.count(")") else None

    found = read_claude_settings(paths, trusted=lambda label: True, check_rule=check)
    assert found.deny == []  # the list had a non-string: the whole list is refused, once
    assert (
        found.notes[0]
        == "~/.claude/settings.json is not valid JSON (Expecting property name enclosed in double quotes, line 1); ignored"
    )
    assert ".claude/settings.json: permissions.deny is not a list of strings; ignored" in found.notes
    assert ".claude/settings.json: permissions.allow is not a list of strings; ignored" in found.notes
    assert ".claude/settings.json: env is not an object of strings; ignored" in found.notes
    assert any(n.startswith(".claude/settings.local.json is a symlink leading outside") for n in found.notes)
    assert found.hooks.empty and ".claude/settings.json: unknown hook event 'Nope' ignored" in found.hooks.notes
    _write(paths.root / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(rm:*)", "Bash(unclosed"]}})
    again = read_claude_settings(paths, trusted=lambda label: True, check_rule=check)
    assert [r.rule for r in again.deny] == ["Bash(rm:*)"]
    assert ".claude/settings.json: permissions.deny: not Tool or Tool(pattern); that rule is ignored" in again.notes


def test_slash_permissions_names_the_file_each_claude_rule_came_from(tmp_path):
    from types import SimpleNamespace

    from memagent.config import Settings
    from memagent.runtime import SessionOptions, session_gate, session_mode
    from memagent.ui.commands import run_command

    paths = _paths(tmp_path)
    _write(paths.claude_home / "settings.json", USER)
    _write(paths.root / ".claude" / "settings.json", PROJECT)
    claude = read_claude_settings(paths, trusted=lambda label: False)
    settings = Settings()
    gate = session_gate(
        paths,
        settings,
        session_mode(SessionOptions(), settings, claude),
        {},
        settings_trusted=False,
        warn=lambda line: None,
        claude=claude,
    )
    from memagent.session import Session

    session = SimpleNamespace(agent=SimpleNamespace(gate=gate), claude=claude)
    session.permissions = lambda: Session.permissions(session)  # the session's own query, over this gate
    text = run_command("/permissions", lambda: session).text
    assert "mode: acceptEdits" in text
    assert "Read(~/.ssh/**) (from ~/.claude/settings.json)" in text
    assert "Read(./.env) (from .claude/settings.json), Bash(curl:*) (from .claude/settings.json)" in text
    assert "ask: Bash(git push:*) (from .claude/settings.json)" in text
    assert "Bash(git status:*) (from ~/.claude/settings.json)" in text
    assert "mode from ~/.claude/settings.json (defaultMode: acceptEdits)" in text


def test_trust_status_says_what_claude_codes_files_ask_for(run_cli, project):
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text(
        json.dumps({"env": {"A": "1"}, "permissions": {"deny": ["Bash"]}})
    )
    status = run_cli("trust", "--status", "-C", str(project))
    assert status.returncode == 0
    assert "  .claude/settings.local.json asks for: env (is ignored)" in status.stdout
    data = json.loads(run_cli("trust", "--status", "--json", "-C", str(project)).stdout)
    assert data["claude_settings_ask_for"] == {".claude/settings.local.json": ["env"]}
