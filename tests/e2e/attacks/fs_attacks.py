"""Classes 3 and 6: memagent's data folders reached through links (deleting or writing outside
the project), and files memagent reads by itself leaving the project."""

from __future__ import annotations

import json
import os

from fakeapi import tool

from .harness import Attack, World


def _bash(command: str) -> dict:
    return tool("bash", {"command": command})


# --- class 3: deleting or writing outside the project ----------------------------------------


def transcripts_symlink_retention(w: World) -> list[str]:
    (w.project / ".transcripts").symlink_to(w.victim)
    w.write(".memagent.toml", "transcript_retention = 1\n")
    w.session()
    return []


def transcripts_symlink_users_retention(w: World) -> list[str]:
    """Same link, but retention is the user's own setting (trusted): still nothing outside goes."""
    (w.project / ".transcripts").symlink_to(w.victim)
    (w.memagent_home / "config.toml").write_text("transcript_retention = 1\n")
    w.session()
    return []


def transcript_entry_links(w: World) -> list[str]:
    """A real ``.transcripts`` holding an old memagent-looking transcript whose output folder is a
    symlink to the victim, and a ``.jsonl`` that is a symlink to a victim file."""
    folder = w.project / ".transcripts"
    folder.mkdir()
    (folder / "20200101-000000-aaaa.jsonl").write_text(
        json.dumps({"type": "session_start", "session_id": "20200101-000000-aaaa"}) + "\n"
    )
    os.utime(folder / "20200101-000000-aaaa.jsonl", (1_000_000_000, 1_000_000_000))
    (folder / "20200101-000000-aaaa").symlink_to(w.victim)
    (folder / "20200101-000000-bbbb.jsonl").symlink_to(w.victim / "old.jsonl")
    (w.memagent_home / "config.toml").write_text("transcript_retention = 1\n")
    w.session()
    return []


def tasks_swapped_mid_session(w: World) -> list[str]:
    (w.other / ".tasks").mkdir()
    w._before = w._snapshots()
    w.session(
        tool("task_create", {"subject": "first"}),
        _bash(f"rm -rf .tasks && ln -s {w.other}/.tasks .tasks && echo swapped"),
        tool("task_create", {"subject": "injected"}),
    )
    return []


def memory_cards_link(w: World) -> list[str]:
    """``.memory`` is real but ``.memory/cards`` is a symlink to the victim folder."""
    (w.project / ".memory").mkdir()
    (w.project / ".memory" / "cards").symlink_to(w.victim)
    w.commit("cards link")
    w.session(tool("memory_save", {"content": "The build uses make", "memory_type": "fact"}))
    return []


def tasks_lock_dangling_link(w: World) -> list[str]:
    """``.tasks/.lock`` shipped as a dangling symlink into the victim folder: taking the lock
    must not create a file there."""
    (w.project / ".tasks").mkdir()
    (w.project / ".tasks" / ".lock").symlink_to(w.victim / "created-by-lock")
    (w.project / ".tasks" / "task_1.json").symlink_to(w.victim / "notes.txt")
    w.session(
        tool("task_create", {"subject": "x"}),
        tool("task_update", {"task_id": 1, "status": "completed"}),
        flags=("--yes", "--no-memory"),
    )
    return []


def transcripts_swapped_mid_session(w: World) -> list[str]:
    """A command swaps ``.transcripts`` for a link to the victim folder; the next command's
    output is long enough to be saved in full under ``.transcripts/<session>/``."""
    w.session(
        _bash(f"rm -rf .transcripts && ln -s {w.victim} .transcripts && echo swapped"),
        _bash("seq 1 300000"),
        _bash("echo after"),
    )
    return []


def memory_private_link_from_sandbox(w: World) -> list[str]:
    """A command swaps ``.memory/private`` for a link to the other repository, then a session card
    is saved."""
    w.session(
        tool("memory_save", {"content": "The build uses make", "memory_type": "fact"}),
        _bash(f"mkdir -p .memory && rm -rf .memory/private && ln -s {w.other} .memory/private && echo ok"),
        tool("memory_save", {"content": "Deploys go through Argo CD", "memory_type": "fact", "private": True}),
    )
    return []


# --- class 6: files memagent reads by itself --------------------------------------------------


def agents_md_symlink(w: World) -> list[str]:
    (w.project / "AGENTS.md").symlink_to(w.home / ".aws" / "credentials")
    w.session()
    return []


def nested_agents_md_symlink(w: World) -> list[str]:
    """An ``AGENTS.md`` in a sub-folder (read when the agent works there), and ``CLAUDE.local.md``."""
    (w.project / "src" / "AGENTS.md").symlink_to(w.home / ".aws" / "credentials")
    (w.project / "CLAUDE.local.md").symlink_to(w.home / ".ssh" / "id_rsa")
    w.session(tool("read_file", {"path": "src/app.py"}), tool("bash", {"command": "cd src && ls"}))
    return []


def import_home_paths(w: World) -> list[str]:
    """``@imports`` naming home files directly, by ``~``, by ``..`` and through a folder symlink."""
    (w.project / "docs").symlink_to(w.home)
    w.write(
        "AGENTS.md",
        f"See @~/.ssh/id_rsa and @../home/.aws/credentials and @docs/.m2/settings.xml and @{w.home}/.npmrc\n",
    )
    w.session()
    return []


def skill_and_command_links(w: World) -> list[str]:
    """A skill folder symlinked to ``~/.aws``, a custom command symlinked to ``id_rsa``, invoked."""
    (w.project / ".claude" / "skills").mkdir(parents=True)
    (w.project / ".claude" / "skills" / "aws").symlink_to(w.home / ".aws")
    w.write("creds.md", f"---\nname: creds\ndescription: creds\n---\n@{w.home}/.aws/credentials\n")
    (w.project / ".claude" / "commands").mkdir(parents=True)
    (w.project / ".claude" / "commands" / "deploy.md").symlink_to(w.home / ".ssh" / "id_rsa")
    (w.project / ".agents" / "skills" / "creds").mkdir(parents=True)
    (w.project / ".agents" / "skills" / "creds" / "SKILL.md").symlink_to(w.project / "creds.md")
    w.session(tool("skill", {"name": "creds"}), tool("skill", {"name": "aws"}), prompt="/deploy")
    return []


def card_file_link(w: World) -> list[str]:
    (w.project / ".memory" / "cards").mkdir(parents=True)
    (w.project / ".memory" / "cards" / "m_0123456789ab.md").symlink_to(w.home / ".aws" / "credentials")
    w.commit("card")
    w.session(tool("memory_search", {"query": "aws secret access key"}), prompt="what is the aws secret?")
    return []


def read_tools_outside(w: World) -> list[str]:
    """The model's own reads in default mode (no approval needed for reads): home files by
    absolute path, ``~``, ``..``, a folder symlink, and grep/glob over them."""
    (w.project / "lib").symlink_to(w.home)
    w.session(
        tool("read_file", {"path": str(w.home / ".ssh" / "id_rsa")}),
        tool("read_file", {"path": "~/.aws/credentials"}),
        tool("read_file", {"path": "../home/.netrc"}),
        tool("read_file", {"path": "lib/.npmrc"}),
        tool("grep", {"pattern": "CANARY", "path": str(w.home)}),
        tool("grep", {"pattern": "CANARY", "path": "lib"}),
        tool("glob", {"pattern": "**/*", "path": str(w.home / ".ssh")}),
        flags=("--permission-mode", "default"),
    )
    return []


ATTACKS = (
    Attack(
        "3/transcripts-link",
        3,
        ".transcripts symlinked out plus an untrusted transcript_retention",
        transcripts_symlink_retention,
        named=True,
    ),
    Attack(
        "3/transcripts-link-user",
        3,
        ".transcripts symlinked out, retention from the user's own config",
        transcripts_symlink_users_retention,
    ),
    Attack(
        "3/transcript-entries",
        3,
        "links inside .transcripts: an output folder and a .jsonl to the victim",
        transcript_entry_links,
    ),
    Attack(
        "3/tasks-swap",
        3,
        ".tasks swapped for a link into another repository mid-session",
        tasks_swapped_mid_session,
        named=True,
    ),
    Attack(
        "3/transcripts-swap",
        3,
        ".transcripts swapped for a link mid-session, then a long output saved",
        transcripts_swapped_mid_session,
    ),
    Attack("3/memory-cards-link", 3, ".memory/cards symlinked to the victim, then memory_save", memory_cards_link),
    Attack(
        "3/tasks-lock-link",
        3,
        ".tasks/.lock and a task file as links out, then task_create/update",
        tasks_lock_dangling_link,
    ),
    Attack(
        "3/memory-private-swap", 3, ".memory/private swapped for a link mid-session", memory_private_link_from_sandbox
    ),
    Attack("6/agents-md-link", 6, "AGENTS.md a symlink to ~/.aws/credentials", agents_md_symlink, named=True),
    Attack(
        "6/nested-instructions",
        6,
        "a nested AGENTS.md and CLAUDE.local.md linked to home files",
        nested_agents_md_symlink,
    ),
    Attack("6/imports-home", 6, "@imports of ~, .., absolute and folder-symlinked home paths", import_home_paths),
    Attack(
        "6/skills-commands",
        6,
        "a skill folder, a SKILL.md and a custom command linked out",
        skill_and_command_links,
        named=True,
    ),
    Attack("6/card-link", 6, "a card file symlinked to ~/.aws/credentials", card_file_link, named=True),
    Attack(
        "6/read-tools", 6, "read_file/grep/glob of home files by path, ~, .. and a folder symlink", read_tools_outside
    ),
)
