"""The dangerous-command guard: commands refused in every mode, before anyone is asked.

A seat belt against accidents (``rm -rf /``, ``sudo``, ``mkfs``, a fork bomb, ``kill -9 -1``),
not a sandbox. It reads the command with the gate's own parse (:mod:`.shell`), so it judges every
simple command bash would run — after a comment line, inside ``$( )``, ``bash -c '…'`` and
``eval``, after wrappers like ``env``, ``timeout 5`` or ``xargs`` — exactly as the rules do.
"""

from __future__ import annotations

import os
import re

from memagent.permissions.shell import SimpleCommand, analyse

PRIVILEGE_COMMANDS = frozenset({"sudo", "su", "doas", "pkexec", "run0"})
POWER_COMMANDS = frozenset({"shutdown", "reboot", "halt", "poweroff"})
DEVICE_WRITERS = frozenset({"tee", "cp", "mv", "shred"})
SYSTEM_DIRS = frozenset(
    {"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root", "sbin", "srv", "sys"}
    | {"usr", "var"}
)
_BLOCK_DEVICE = re.compile(r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|dm-\d|md\d|mapper/|root$)")
_FORK_BOMB = re.compile(r"(?P<name>[\w:.-]+)\s*\(\s*\)\s*\{[^}]*?(?P=name)\s*\|\s*&?\s*(?P=name)\s*&")


def _home_dir() -> str:
    return os.path.normpath(os.path.expanduser("~"))


def is_critical_path(raw: str) -> bool:
    """``/``, ``/*``, ``~``, ``$HOME/*``, the home directory or a top-level system directory."""
    target = raw.strip()
    for home in ("~", "$HOME", "${HOME}"):
        if target == home or target.startswith(home + "/"):
            return target[len(home) :].strip("/") in ("", "*", ".*", ".")
    if not target.startswith("/"):
        return False
    parts = [p for p in target.split("/") if p not in ("", ".")]
    if parts and parts[-1] in ("*", ".*"):
        parts = parts[:-1]
    norm = os.path.normpath("/" + "/".join(parts))
    if norm == "/" or norm == _home_dir():
        return True
    return norm.count("/") == 1 and norm[1:] in SYSTEM_DIRS


def _split_options(args: list[str]) -> tuple[set[str], list[str]]:
    """Short flags as single letters, long flags whole, then the operands."""
    flags: set[str] = set()
    operands: list[str] = []
    options_done = False
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("--"):
            flags.add(arg)
        elif not options_done and arg.startswith("-") and len(arg) > 1:
            flags.update(arg[1:])
        else:
            operands.append(arg)
    return flags, operands


def _recursive(flags: set[str]) -> bool:
    return bool(flags & {"r", "R", "--recursive"})


def _kills_everything(args: list[str]) -> bool:
    """``kill -9 -1`` / ``kill -s KILL -1`` / ``kill -- -1``: pid -1 is every process we may signal."""
    rest = list(args)
    if rest and rest[0] in ("-s", "-n") and len(rest) > 1:
        rest = rest[2:]
    elif len(rest) > 1 and rest[0].startswith("-") and rest[0] != "--":
        rest = rest[1:]  # the signal (-9, -KILL, -SIGTERM, and -1 for SIGHUP)
    if rest and rest[0] == "--":
        rest = rest[1:]
    return "-1" in rest


def _find_deletes(args: list[str]) -> bool:
    """``find … -delete`` or ``find … -exec rm …``."""
    for i, arg in enumerate(args):
        if arg == "-delete":
            return True
        if arg in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(args):
            if os.path.basename(args[i + 1]) in ("rm", "shred"):
                return True
    return False


def _destroys(name: str, args: list[str]) -> str | None:
    flags, operands = _split_options(args)
    if name == "rm":
        if "--no-preserve-root" in flags:
            return "rm --no-preserve-root is not allowed"
        if _recursive(flags) and any(is_critical_path(t) for t in operands):
            return "recursively deleting the root, home or a system directory is not allowed"
    if name in ("chmod", "chown", "chgrp") and _recursive(flags) and any(is_critical_path(t) for t in operands):
        return f"recursive {name} on the root, home or a system directory is not allowed"
    if name == "find" and args and is_critical_path(args[0]) and _find_deletes(args):
        return "deleting from the root, home or a system directory with find is not allowed"
    if name == "kill" and _kills_everything(args):
        return "signalling every process (kill -1) is not allowed"
    return None


def _command_reason(command: SimpleCommand) -> str | None:
    words = command.shown
    name = os.path.basename(words[0])
    args = words[1:]
    if name in PRIVILEGE_COMMANDS:
        return f"privilege escalation ({name}) is not allowed"
    if name in POWER_COMMANDS or (name == "systemctl" and set(args) & {"poweroff", "reboot", "halt", "kexec"}):
        return "shutting down or rebooting the machine is not allowed"
    if name in ("init", "telinit") and set(args) & {"0", "6"}:
        return "shutting down or rebooting the machine is not allowed"
    if name.startswith("mkfs") or name in ("mke2fs", "wipefs"):
        return f"formatting a filesystem ({name}) is not allowed"
    if name == "dd" and any(a.startswith("of=") and _BLOCK_DEVICE.match(a[3:]) for a in args):
        return "writing to a block device with dd is not allowed"
    if name in DEVICE_WRITERS and any(_BLOCK_DEVICE.match(a) for a in _split_options(args)[1]):
        return f"writing to a block device ({name}) is not allowed"
    return _destroys(name, args)


def dangerous_reason(command: str) -> str | None:
    """Why ``command`` must never run, or None."""
    if _FORK_BOMB.search(command):
        return "fork bombs are not allowed"
    analysis = analyse(command)
    for redirect in analysis.redirects:
        if ">" in redirect.operator and redirect.target is not None and _BLOCK_DEVICE.match(redirect.target.shown):
            return "redirecting output to a block device is not allowed"
    for simple in analysis.commands:
        reason = _command_reason(simple)
        if reason:
            return reason
    return None


__all__ = ["dangerous_reason", "is_critical_path"]
