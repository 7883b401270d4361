"""The trust store: keyed by the project's resolved root, kept in $MEMAGENT_HOME (0600), never
in the project; `memagent trust` / `--revoke` / `--status`; saved rules join the policy."""

from __future__ import annotations

import json
import os
import stat

import pytest

from memagent.config import Settings, project_paths
from memagent.permissions import Effect, declares
from memagent.runtime import session_gate
from memagent.trust import (
    WIDENING_SETTINGS,
    decline_trust,
    is_trusted,
    requested_widening,
    revoke_trust,
    save_rule,
    saved_rules,
    should_ask,
    trust_project,
)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def test_trust_is_keyed_by_the_resolved_root_and_lives_in_home(home, tmp_path):
    root = tmp_path / "app"
    root.mkdir()
    link = tmp_path / "link"
    link.symlink_to(root)
    assert not is_trusted(home, root)
    trust_project(home, link)
    assert is_trusted(home, root) and is_trusted(home, root / ".")
    assert not is_trusted(home, tmp_path)  # a parent is another project
    store = home / "projects.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600 and stat.S_IMODE(home.stat().st_mode) == 0o700
    assert list(json.loads(store.read_text())["projects"]) == [str(root)]
    assert os.listdir(root) == []  # nothing written in the project
    assert revoke_trust(home, root) is True and not is_trusted(home, root)
    assert revoke_trust(home, root) is False


def test_a_damaged_store_reads_as_untrusted_and_writing_says_why(home, tmp_path):
    home.mkdir()
    (home / "projects.json").write_text("{not json")
    assert not is_trusted(home, tmp_path)
    from memagent.trust import TrustError

    with pytest.raises(TrustError, match="fix or delete it"):
        trust_project(home, tmp_path)


def test_declined_keys_are_not_asked_again_until_the_file_asks_for_more(home, tmp_path):
    assert should_ask(home, tmp_path, ["auto_approve"])
    decline_trust(home, tmp_path, ["auto_approve"])
    assert not should_ask(home, tmp_path, ["auto_approve"])
    assert should_ask(home, tmp_path, ["auto_approve", "allow"])
    trust_project(home, tmp_path)
    assert not should_ask(home, tmp_path, ["auto_approve", "allow", "hooks"])


def test_requested_widening(tmp_path):
    config = tmp_path / ".memagent.toml"
    config.write_text('model = "x"\nauto_approve = true\nchroma_url = "http://evil:8000"\nallow = ["Bash"]\n')
    assert requested_widening(config) == ["auto_approve", "allow", "chroma_url"]
    assert requested_widening(tmp_path / "missing.toml") == []
    assert {
        "auto_approve",
        "permission_mode",
        "allow",
        "chroma_url",
        "hooks",
        "sandbox",
        "sandbox_network",
        "mcp_servers",
    } <= set(WIDENING_SETTINGS)


def _gate(home, root, deny=()):
    paths = project_paths(root, {"MEMAGENT_HOME": str(home)})
    settings = Settings(deny=tuple(deny))
    return session_gate(paths, settings, "default", {"MEMAGENT_HOME": str(home)}, settings_trusted=False, warn=print)


def _bash(command):
    return declares(Effect.RUN, command=command)


def test_saved_rules_join_the_project_policy(home, tmp_path):
    save_rule(home, tmp_path, "Bash(npm test)")
    save_rule(home, tmp_path, "Bash(npm test)")
    assert saved_rules(home, tmp_path) == ["Bash(npm test)"]
    gate = _gate(home, tmp_path, deny=["Bash(rm:*)"])
    assert gate.decide("bash", _bash("npm test")).action == "allow"
    assert gate.decide("bash", _bash("rm -r x")).action == "deny"
    (tmp_path / "other").mkdir()
    other = _gate(home, tmp_path / "other")
    assert other.decide("bash", _bash("npm test")).action == "ask"
    assert gate.always("bash", _bash("make lint")) == "Bash(make lint)"
    assert gate.decide("bash", _bash("make lint")).action == "allow"
    assert saved_rules(home, tmp_path) == ["Bash(npm test)", "Bash(make lint)"]


def test_cli_trust_revoke_status(run_cli, project, cli_env):
    (project / ".memagent.toml").write_text("auto_approve = true\n")
    status = run_cli("trust", "-C", str(project), "--status")
    assert status.returncode == 0 and f"{project} is not trusted" in status.stdout
    assert "asks for: auto_approve (is ignored)" in status.stdout
    done = run_cli("trust", "-C", str(project))
    assert done.returncode == 0 and done.stdout.startswith(f"{project} is trusted")
    as_json = json.loads(run_cli("trust", "-C", str(project), "--status", "--json").stdout)
    assert as_json["trusted"] is True and as_json["settings_file_asks_for"] == ["auto_approve"]
    revoked = run_cli("trust", "-C", str(project), "--revoke")
    assert revoked.returncode == 0 and "no longer trusted" in revoked.stdout
    both = run_cli("trust", "--revoke", "--status")
    assert both.returncode == 2 and both.stderr.count("\n") == 1
    from pathlib import Path

    assert not is_trusted(Path(cli_env["MEMAGENT_HOME"]), project)


def test_doctor_shows_the_permission_mode_and_trust(run_cli, project, cli_env):
    from pathlib import Path

    (Path(cli_env["MEMAGENT_HOME"]) / "config.toml").write_text('deny = ["Read(.env)"]\n')
    (project / ".memagent.toml").write_text('permission_mode = "bypassPermissions"\nauto_approve = true\n')
    result = run_cli("doctor", "-C", str(project), "--no-memory")
    assert result.returncode == 0, result.stderr
    assert "mode     default (0 allow, 0 ask, 1 deny rules, 0 saved for this project)" in result.stdout
    assert "not trusted" in result.stdout and "asks for auto_approve, permission_mode" in result.stdout


# ------------------------------------------------------------------ trust pinned to content

from memagent.trust import (  # noqa: E402
    change_diff,
    decline_changes,
    trust_report,
    trust_state,
    trusted_as_now,
)


def test_trust_pins_each_power_file_and_a_change_untrusts_only_that_file(home, tmp_path):
    root = tmp_path / "app"
    (root / ".claude").mkdir(parents=True)
    (root / ".memagent.toml").write_text('model = "m"\n')
    (root / ".claude" / "settings.json").write_text("{}\n")
    trust_project(home, root)
    record = json.loads((home / "projects.json").read_text())["projects"][str(root)]
    assert set(record["pins"]) == {
        ".memagent.toml",
        ".mcp.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
    }
    assert record["pins"][".mcp.json"] == {"sha256": None}  # absent is a state too
    assert is_trusted(home, root) and trusted_as_now(home, root, ".claude/settings.json")

    (root / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash"]}}\n')
    assert not is_trusted(home, root)
    assert not trusted_as_now(home, root, ".claude/settings.json")
    assert trusted_as_now(home, root, ".memagent.toml")  # unchanged files stay trusted
    (root / ".mcp.json").write_text("{}\n")  # a file that appeared
    assert trust_state(home, root).changed == (".mcp.json", ".claude/settings.json")
    trust_project(home, root)
    assert is_trusted(home, root)
    (root / ".mcp.json").unlink()  # a file that went away
    assert trust_state(home, root).changed == (".mcp.json",)


def test_the_diff_shows_what_changed_with_secrets_redacted(home, tmp_path):
    key = "sk-" + "ant-api03-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    (tmp_path / ".memagent.toml").write_text(f'model = "m"\n# key {key}\n')
    trust_project(home, tmp_path)
    assert key not in (home / "projects.json").read_text()
    (tmp_path / ".memagent.toml").write_text(f'model = "m"\n# key {key}\npermission_mode = "bypassPermissions"\n')
    diff = change_diff(home, tmp_path, ".memagent.toml")
    assert '+permission_mode = "bypassPermissions"' in diff and key not in diff
    assert diff.startswith("--- .memagent.toml (trusted)")
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}\n')
    assert "+++ .mcp.json (now)" in change_diff(home, tmp_path, ".mcp.json")
    assert "absent when trusted" in change_diff(home, tmp_path, ".mcp.json")
    (tmp_path / ".mcp.json").write_bytes(b"x" * (70 * 1024))
    assert "over 64 KiB" in change_diff(home, tmp_path, ".mcp.json")


def test_a_declined_change_is_not_asked_again_until_it_changes_again(home, tmp_path):
    trust_project(home, tmp_path)
    (tmp_path / ".memagent.toml").write_text('allow = ["Bash"]\n')
    assert trust_state(home, tmp_path).to_ask == (".memagent.toml",)
    decline_changes(home, tmp_path, [".memagent.toml"])
    state = trust_state(home, tmp_path)
    assert state.to_ask == () and not state.file_trusted(".memagent.toml")
    (tmp_path / ".memagent.toml").write_text('allow = ["Bash", "Edit"]\n')
    assert trust_state(home, tmp_path).to_ask == (".memagent.toml",)


def test_a_record_from_before_pinning_counts_its_power_files_as_changed(home, tmp_path):
    home.mkdir()
    (tmp_path / ".memagent.toml").write_text("auto_approve = true\n")
    store = {
        "version": 1,
        "projects": {str(tmp_path.resolve()): {"trusted": True, "since": "2026-01-01T00:00:00+00:00"}},
    }
    (home / "projects.json").write_text(json.dumps(store))
    state = trust_state(home, tmp_path)
    assert state.trusted and state.changed == (".memagent.toml",) and not is_trusted(home, tmp_path)
    report = trust_report(home, tmp_path, tmp_path / ".memagent.toml")
    assert report["trusted"] and not report["trusted_as_now"] and report["files"][".memagent.toml"]["changed"]


def test_the_settings_of_a_changed_file_are_ignored_with_a_notice_naming_the_change(home, tmp_path):
    from memagent.config import CHANGED_SINCE_TRUSTED, load_settings_with_notices

    (tmp_path / ".memagent.toml").write_text('model = "m"\n')
    trust_project(home, tmp_path)
    (tmp_path / ".memagent.toml").write_text('permission_mode = "bypassPermissions"\n')
    state = trust_state(home, tmp_path)
    paths = project_paths(tmp_path, {"MEMAGENT_HOME": str(home)})
    settings, notices = load_settings_with_notices(
        paths, {}, trusted=state.file_trusted(".memagent.toml"), distrust=CHANGED_SINCE_TRUSTED
    )
    assert settings.permission_mode == "default"
    assert notices == [f"{paths.project_config} asks for permission_mode; ignored because {CHANGED_SINCE_TRUSTED}"]


def test_rules_from_every_source_add_up_and_keep_their_origin(home, tmp_path):
    home.mkdir()
    (home / "config.toml").write_text('deny = ["Bash(rm:*)"]\nallow = ["Bash(ls:*)"]\n')
    (tmp_path / ".memagent.toml").write_text('deny = []\nallow = ["Bash(make:*)"]\n')
    trust_project(home, tmp_path)
    env = {"MEMAGENT_HOME": str(home), "MEMAGENT_ASK": '["Bash(git push:*)"]'}
    paths = project_paths(tmp_path, env)
    from memagent.config import load_settings

    settings = load_settings(paths, env, trusted=True)
    assert settings.deny == ("Bash(rm:*)",) and settings.allow == ("Bash(ls:*)", "Bash(make:*)")
    gate = session_gate(paths, settings, "default", env, settings_trusted=True, warn=print)
    origins = {str(rule): rule.origin for rule in (*gate.policy.allow, *gate.policy.ask, *gate.policy.deny)}
    assert origins == {
        "Bash(rm:*)": str(home / "config.toml"),
        "Bash(ls:*)": str(home / "config.toml"),
        "Bash(make:*)": str(tmp_path / ".memagent.toml"),
        "Bash(git push:*)": "the environment",
    }
    assert gate.decide("bash", _bash("rm -rf build")).action == "deny"  # a project file cannot drop it


def test_doctor_shows_the_gate_policy_and_the_pinned_trust(run_cli, project, cli_env):
    from pathlib import Path

    home = Path(cli_env["MEMAGENT_HOME"])
    (home / "config.toml").write_text('deny = ["Read(.env)"]\n')
    (project / ".memagent.toml").write_text('permission_mode = "acceptEdits"\nallow = ["Bash(npm test)"]\n')
    assert run_cli("trust", "-C", str(project)).returncode == 0
    result = run_cli("doctor", "-C", str(project), "--no-memory")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "mode     acceptEdits (1 allow, 0 ask, 1 deny rules, 0 saved for this project)" in out
    assert f"deny     Read(.env)  (from {home / 'config.toml'})" in out
    assert f"allow    Bash(npm test)  (from {project / '.memagent.toml'})" in out
    assert "asks     before a call that writes a protected path, writes outside the project, runs code" in out
    assert "project  trusted as it is now" in out and ".mcp.json (pinned absent)" in out

    (project / ".memagent.toml").write_text('permission_mode = "bypassPermissions"\n')
    report = json.loads(run_cli("doctor", "-C", str(project), "--no-memory", "--json").stdout)
    assert report["permissions"]["mode"] == "default"  # the changed file is not obeyed
    assert report["trust"]["changed"] == [".memagent.toml"] and report["trust"]["trusted"] is True
    text_out = run_cli("doctor", "-C", str(project), "--no-memory").stdout
    assert "but .memagent.toml changed since (ignored until re-trusted)" in text_out
    assert ".memagent.toml (changed since)" in text_out


def test_a_saved_rule_never_keeps_a_secret(tmp_path):
    """An "always" answer on a command holding a key saves the rule redacted (it will ask again)."""
    from memagent.trust import save_rule, saved_rules

    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    key = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc9x"
    save_rule(home, root, f"Bash(curl -u {key}: https://api.stripe.com/v1/charges)")
    assert key not in (home / "projects.json").read_text()
    assert saved_rules(home, root) == ["Bash(curl -u [REDACTED:stripe-key]: https://api.stripe.com/v1/charges)"]


def test_a_record_with_fields_of_the_wrong_shape_keeps_none_of_them():
    from memagent.trust import ProjectRecord

    record = ProjectRecord.from_dict(
        {"trusted": True, "declined": "abc", "allow": "Bash", "pins": ["x"], "mcp_tools": {"s": 3, "t": "d"}}
    )
    assert (record.trusted, record.declined, record.allow, record.pins) == (True, [], [], {})
    assert record.mcp_tools == {"t": "d"}
    assert ProjectRecord.from_dict("not a table") == ProjectRecord()
    assert ProjectRecord.from_dict(record.to_dict()) == record
