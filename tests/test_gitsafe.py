"""memagent's own git calls run nothing a repository configures (real git, real programs).

The hostile repository's ``.git/config`` names a program at every place git would run one —
``core.fsmonitor``, ``core.hooksPath``, ``diff.external``, a clean/smudge/process filter driver,
a textconv driver, a pager, an ``ssh`` command — and an ``includeIf`` pulls in a second config
file that does the same. Each program appends to a log; after memagent's calls the log is empty.
The same calls with a plain ``git`` do run them (so the test would catch a regression).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memagent.gitsafe import GitError, git_environment, run_git
from memagent.memory.erasure import git_tracked

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    log = tmp_path / "ran.log"
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    (repo / "card.md").write_text("a card\n")
    (repo / "data.bin").write_text("data\n")
    subprocess.run([*GIT, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-q", "-m", "x"], check=True)
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "ran $0 $*; key=$ANTHROPIC_API_KEY" >> {log}\ncat\n')
    evil.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-checkout", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho hook {hook} >> {log}\n")
        (hooks / hook).chmod(0o755)
    (repo / ".gitattributes").write_text("*.md filter=evil diff=evil\n*.bin filter=second\n")
    included = tmp_path / "included.cfg"
    included.write_text(f'[core]\n\tfsmonitor = {evil}\n[filter "second"]\n\tclean = {evil}\n\tprocess = {evil}\n')
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(
            f"[core]\n\tfsmonitor = {evil}\n\thooksPath = {hooks}\n\tpager = {evil}\n\tsshCommand = {evil}\n"
            f'[diff]\n\texternal = {evil}\n[diff "evil"]\n\ttextconv = {evil}\n\tcommand = {evil}\n'
            f'[filter "evil"]\n\tclean = {evil}\n\tsmudge = {evil}\n\tprocess = {evil}\n'
            f'[includeIf "gitdir:{repo}/"]\n\tpath = {included}\n'
        )
    for name in ("card.md", "data.bin"):  # modified, with an old stamp: git must look at them
        (repo / name).write_text("changed\n")
        os.utime(repo / name, (1_000_000_000, 1_000_000_000))
    return repo, log


def test_plain_git_runs_the_repository_programs(hostile_repo) -> None:
    """The control: without memagent's guard, these repositories do run code."""
    repo, log = hostile_repo
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True)
    assert log.exists() and "ran" in log.read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["ls-files", "--full-name", "--", "card.md"],
        ["status", "--porcelain"],
        ["diff", "--stat"],
        ["log", "-p", "-1"],
        ["rev-parse", "--show-toplevel"],
        ["add", "--dry-run", "card.md"],
    ],
)
def test_memagent_git_runs_none_of_them(hostile_repo, args, monkeypatch) -> None:
    repo, log = hostile_repo
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    run_git(args, repo)
    assert not log.exists(), log.read_text()


def test_git_tracked_still_answers_and_runs_nothing(hostile_repo) -> None:
    repo, log = hostile_repo
    untracked = repo / "new.md"
    untracked.write_text("new\n")
    assert git_tracked([repo / "card.md", untracked]) == [repo / "card.md"]
    assert not log.exists()


def test_git_gets_a_clean_environment(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=/tmp/x'")
    env = git_environment()
    assert "ANTHROPIC_API_KEY" not in env and "GIT_CONFIG_PARAMETERS" not in env
    assert "GIT_DIR" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"


def test_a_driver_name_that_cannot_be_overridden_refuses(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write('[filter "a=b"]\n\tclean = /bin/false\n')
    with pytest.raises(GitError):
        run_git(["status"], repo)


def test_a_missing_git_is_a_git_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitError):
        run_git(["status"], tmp_path)
