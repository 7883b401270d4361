"""Rewind through the real CLI and the REPL in a pty, against the fake Messages API: a session edits
three files over three turns (one through bash); going back to turn 1 restores them byte for byte
and the conversation, resume continues from there, and the user's own git state is untouched."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pexpect
import pytest

from fakeapi import text, tool
from repl_kit import PROMPT, expect_text

PTY_DIMENSIONS = (50, 160)
ORIGINAL = {"a.txt": b"alpha 1\n", "b.txt": b"beta\r\n1\r\n", "c.bin": bytes(range(256))}
GIT = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *GIT, *args], check=True, capture_output=True, text=True).stdout


def user_git_state(root: Path) -> dict[str, str]:
    return {
        "index": hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest(),
        "branches": git(root, "branch", "-a", "-v"),
        "stash": git(root, "stash", "list"),
        "refs": git(root, "for-each-ref"),
        "config": (root / ".git" / "config").read_text(),
        "untracked": (root / "notes.untracked").read_text(),
    }


@pytest.fixture
def repo(project) -> Path:
    """A project with its own git history, a branch, a stash, a staged file and an untracked one."""
    for name, data in ORIGINAL.items():
        (project / name).write_bytes(data)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "start")
    git(project, "branch", "topic")
    (project / "a.txt").write_bytes(b"stashed change\n")
    git(project, "stash", "-q")
    (project / "staged.txt").write_text("staged\n")
    git(project, "add", "staged.txt")
    (project / "notes.untracked").write_text("mine\n")
    return project


def three_edits() -> list:
    return [
        tool("write_file", {"path": "a.txt", "content": "alpha 2\n"}),
        text("Wrote a."),
        tool("edit_file", {"path": "b.txt", "old_text": "beta", "new_text": "BETA"}),
        text("Edited b."),
        tool("bash", {"command": "printf 'zz' > c.bin && mkdir -p gen && echo x > gen/new.txt"}),
        text("Ran bash."),
    ]


def files(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in ORIGINAL}


def user_words(request: dict) -> list[str]:
    found = []
    for message in request["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") == "text" and not block["text"].startswith(("<", "[")):
                found.append(block["text"])
    return found


def submit(child: pexpect.spawn, line: str) -> None:
    child.send(line)
    child.expect_exact(line)
    child.send("\r")


def test_rewind_in_the_repl_then_resume_continues_from_there(spawn, fake, repo, run_cli, isolated_env):
    before_git = user_git_state(repo)
    fake.add(*three_edits(), text("Starting again."))
    child = spawn("--yes")
    child.expect(PROMPT)
    for prompt, answer in (("edit a", "Wrote a."), ("edit b", "Edited b."), ("edit c", "Ran bash.")):
        submit(child, prompt)
        expect_text(child, answer)
        child.expect(PROMPT)
    assert files(repo) != ORIGINAL and (repo / "gen" / "new.txt").exists()

    submit(child, "/rewind")
    expect_text(child, "1. edit a")
    expect_text(child, "3. edit c")
    child.expect("Rewind to turn")
    child.send("1\r")
    child.expect("Restore")
    child.send("b")
    expect_text(child, "Rewound to the start of turn 1")
    child.expect(PROMPT)
    assert files(repo) == ORIGINAL
    assert not (repo / "gen").exists()
    assert user_git_state(repo) == before_git
    # the prompt holds the rewound turn's words: edit them and send
    child.send(" again\r")
    expect_text(child, "Starting again.")
    child.expect(PROMPT)
    assert user_words(fake.requests[-1]) == ["edit a again"]
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []

    fake.add(text("Continued."))
    done = run_cli("-C", str(repo), "--no-memory", "-c", "-p", "and then?", env={"ANTHROPIC_BASE_URL": fake.url})
    assert done.returncode == 0, done.stderr
    assert user_words(fake.requests[-1]) == ["edit a again", "and then?"]
    assert user_git_state(repo) == before_git


def test_rewind_from_the_command_line(spawn, fake, repo, run_cli):
    before_git = user_git_state(repo)
    fake.add(*three_edits())
    child = spawn("--yes")
    child.expect(PROMPT)
    for prompt, answer in (("edit a", "Wrote a."), ("edit b", "Edited b."), ("edit c", "Ran bash.")):
        submit(child, prompt)
        expect_text(child, answer)
        child.expect(PROMPT)
    submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()

    listed = run_cli("-C", str(repo), "rewind", "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    turns = json.loads(listed.stdout)["turns"]
    assert [t["text"] for t in turns] == ["edit a", "edit b", "edit c"]
    assert all(t["checkpoint"] for t in turns)

    code_only = run_cli("-C", str(repo), "rewind", "--to", "3", "--code-only")
    assert code_only.returncode == 0, code_only.stderr
    assert (repo / "c.bin").read_bytes() == ORIGINAL["c.bin"] and (repo / "a.txt").read_bytes() == b"alpha 2\n"
    assert "files: 1 restored, 1 removed" in code_only.stdout

    done = run_cli("-C", str(repo), "rewind", "--to", "1", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["turn"] == 1 and report["conversation"] is True
    assert sorted(report["files"]["restored"]) == ["a.txt", "b.txt"]
    assert files(repo) == ORIGINAL and not (repo / "gen").exists()
    assert user_git_state(repo) == before_git

    fake.add(text("Fresh start."))
    resumed = run_cli("-C", str(repo), "--no-memory", "-c", "-p", "hello again", env={"ANTHROPIC_BASE_URL": fake.url})
    assert resumed.returncode == 0, resumed.stderr
    assert user_words(fake.requests[-1]) == ["hello again"]
    assert fake.errors == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["rewind"], "give --to N"),
        (["rewind", "--to", "1", "--list"], "give --to N"),
        (["rewind", "--to", "0"], "numbered from 1"),
        (["rewind", "--to", "1", "--code-only", "--conversation-only"], "exclude each other"),
        (["rewind", "--to", "x"], "--to"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(run_cli, project, args, message):
    done = run_cli("-C", str(project), *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_runtime_errors_are_one_line_and_exit_1(run_cli, project):
    none = run_cli("-C", str(project), "rewind", "--list")
    assert none.returncode == 1 and "no session" in none.stderr
    missing = run_cli("-C", str(project), "rewind", "--list", "--session", "nope")
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr
