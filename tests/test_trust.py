"""The trust store: keyed by the project's resolved root, kept in $MEMAGENT_HOME (0600), never
in the project; `memagent trust` / `--revoke` / `--status`; saved rules join the policy."""

from __future__ import annotations

import json
import os
import stat

import pytest

from memagent.permissions import project_permissions
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
    assert is_trusted(home, root) and is_trusted(home, root / "." )
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
    assert {"auto_approve", "permission_mode", "allow", "chroma_url", "hooks", "sandbox", "sandbox_network",
            "mcp_servers"} <= set(WIDENING_SETTINGS)


def test_saved_rules_join_the_project_policy(home, tmp_path):
    save_rule(home, tmp_path, "Bash(npm test)")
    save_rule(home, tmp_path, "Bash(npm test)")
    assert saved_rules(home, tmp_path) == ["Bash(npm test)"]
    policy = project_permissions(home, tmp_path, mode="default", deny=["Bash(rm:*)"], warn=print)
    assert policy.decide("bash", {"command": "npm test"}).action == "allow"
    assert policy.decide("bash", {"command": "rm -r x"}).action == "deny"
    other = project_permissions(home, tmp_path / "other", mode="default", warn=print)
    assert other.decide("bash", {"command": "npm test"}).action == "ask"
    assert policy.always("bash", {"command": "make lint"}) == "Bash(make lint)"
    assert policy.decide("bash", {"command": "make lint"}).action == "allow"
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


def test_a_saved_rule_never_keeps_a_secret(tmp_path):
    """An "always" answer on a command holding a key saves the rule redacted (it will ask again)."""
    from memagent.trust import save_rule, saved_rules

    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    key = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc9x"
    save_rule(home, root, f"Bash(curl -u {key}: https://api.stripe.com/v1/charges)")
    assert key not in (home / "projects.json").read_text()
    assert saved_rules(home, root) == ["Bash(curl -u [REDACTED:stripe-key]: https://api.stripe.com/v1/charges)"]
