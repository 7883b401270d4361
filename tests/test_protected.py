"""The one list of project paths that carry power (sandbox read-only, gate asks)."""

import pytest

from memagent.protected import is_protected, protected_reason


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/hooks",
        ".git",
        ".gitmodules",
        ".memagent.toml",
        "./.mcp.json",
        ".claude/settings.json",
        ".claude/commands/x.md",
        ".agents/skills/a/SKILL.md",
        ".codex/config.toml",
        ".memagent/commands/c.md",
        ".vscode/tasks.json",
        ".pre-commit-config.yaml",
        "lefthook.yml",
        ".husky/pre-commit",
    ],
)
def test_power_paths_are_protected(path):
    assert is_protected(path)
    assert protected_reason(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/app.py",
        ".git/objects/ab/cd",
        ".git/HEAD",
        "docs/.claude.md",
        "sub/.memagent.toml.bak",
        ".gitignore",
        "claude/settings.json",
        "",
        ".",
    ],
)
def test_ordinary_paths_are_not(path):
    assert not is_protected(path)
