"""Settings that delete data or lower a gate are the user's to set: an untrusted project file is
ignored (with a notice), and every such value is range-checked with a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from memagent.config import (
    USER_ONLY_SETTINGS,
    WIDENING_SETTINGS,
    ConfigError,
    load_settings_with_notices,
    project_paths,
    setting_origin,
)

GATES = {
    "memory_min_confidence": "0.0",
    "memory_duplicate_cosine": "0.01",
    "memory_auto_writes_per_session": "100000",
    "memory_archive_below_confidence": "1.0",
    "transcript_retention": "1",
    "output_cap_chars": "100",
    "saved_output_max_bytes": "2048",
    "inline_max_tokens": "1000000",
    "bash_timeout": "3600",
    "sandbox_caches": '[".ssh"]',
    "sandbox_pass_env": '["AWS_SECRET_ACCESS_KEY"]',
}


def paths_with(tmp_path: Path, project: str = "", user: str = ""):
    root = tmp_path / "project"
    root.mkdir(parents=True, exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    (root / ".memagent.toml").write_text(project)
    (home / "config.toml").write_text(user)
    return project_paths(root, env={"MEMAGENT_HOME": str(home)})


@pytest.mark.parametrize("key", list(GATES))
def test_an_untrusted_project_cannot_lower_a_gate(tmp_path: Path, key: str) -> None:
    assert key in WIDENING_SETTINGS
    paths = paths_with(tmp_path, f"{key} = {GATES[key]}\n")
    settings, notices = load_settings_with_notices(paths, env={})
    default, _ = load_settings_with_notices(paths_with(tmp_path / "d"), env={})
    assert getattr(settings, key) == getattr(default, key)
    assert len(notices) == 1 and key in notices[0] and "not trusted" in notices[0]
    trusted, _ = load_settings_with_notices(paths, env={}, trusted=True)
    assert getattr(trusted, key) != getattr(default, key)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("saved_output_max_bytes = -1", "at least 1024"),
        ("output_cap_chars = -5", "at least 100"),
        ("bash_timeout = -1", "more than 0"),
        ("bash_timeout = 99999", "at most 3600"),
        ("transcript_retention = 0", "at least 1"),
        ("memory_min_confidence = -0.5", "at least 0"),
        ("memory_min_confidence = 2", "at most 1"),
        ("memory_k = 0", "at least 1"),
    ],
)
def test_bad_values_are_one_line_errors(tmp_path: Path, line: str, words: str) -> None:
    paths = paths_with(tmp_path, user=line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings_with_notices(paths, env={})
    message = str(caught.value)
    assert "\n" not in message and words in message and line.split()[0] in message


def test_a_user_only_setting_is_never_taken_from_a_project(tmp_path: Path) -> None:
    assert "sandbox_project_hooks" in USER_ONLY_SETTINGS
    paths = paths_with(tmp_path, "sandbox_project_hooks = false\n")
    settings, notices = load_settings_with_notices(paths, env={}, trusted=True)
    assert settings.sandbox_project_hooks is True
    assert any("sandbox_project_hooks" in n and "only your own" in n for n in notices)
    paths = paths_with(tmp_path, "", user="sandbox_project_hooks = false\n")
    assert load_settings_with_notices(paths, env={})[0].sandbox_project_hooks is False


def test_the_origin_of_a_setting(tmp_path: Path) -> None:
    hooks = '[[hooks.Stop]]\ncommand = "true"\n'
    paths = paths_with(tmp_path, hooks)
    assert setting_origin(paths, "hooks", env={}, trusted=True) == "project"
    assert setting_origin(paths, "hooks", env={}, trusted=False) == "default"  # ignored, untrusted
    paths = paths_with(tmp_path / "u", "", user=hooks)
    assert setting_origin(paths, "hooks", env={}, trusted=True) == "user"
    assert setting_origin(paths, "hooks", env={"MEMAGENT_HOOKS": '{"Stop": []}'}, trusted=True) == "user"


def test_a_project_config_linked_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    paths = paths_with(tmp_path)
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('model = "read-from-outside"\n')
    paths.project_config.unlink()
    paths.project_config.symlink_to(elsewhere)
    settings, notices = load_settings_with_notices(paths, env={}, trusted=True)
    assert settings.model != "read-from-outside"
    assert any("a symlink to a file outside the project; not read" in n for n in notices)


def test_an_untrusted_project_may_make_a_gate_stricter(tmp_path: Path) -> None:
    paths = paths_with(tmp_path, "require_review = true\nmemory_min_confidence = 0.9\n")
    settings, notices = load_settings_with_notices(paths, env={})
    assert settings.require_review is True and settings.memory_min_confidence == 0.9 and notices == []
    paths = paths_with(tmp_path / "u", "memory_min_confidence = 0.8\n", user="memory_min_confidence = 0.95\n")
    settings, notices = load_settings_with_notices(paths, env={})
    assert settings.memory_min_confidence == 0.95 and "memory_min_confidence" in notices[0]
    paths = paths_with(tmp_path / "r", "require_review = false\n", user="require_review = true\n")
    settings, notices = load_settings_with_notices(paths, env={})
    assert settings.require_review is True and "require_review" in notices[0]
