"""memagent's own ``git`` calls, with nothing a repository configures allowed to run.

A repository is untrusted input, and git runs programs its configuration names: an
``fsmonitor`` on every ``git status``, hooks, a pager, an ``ssh`` command, diff and merge
drivers, clean/smudge filters, credential helpers — and ``include``/``includeIf`` pull more
configuration in from elsewhere. Anything that wrote ``.git/config`` (a command, an edit, a
clone of a crafted repository) would run code with memagent's full power the next time
memagent itself called git. So every git memagent runs goes through :func:`run_git`, which:

* starts git with a clean environment: only ``PATH`` and the locale are inherited (no API key,
  no ``GIT_*`` variable of the caller), the system and global configuration are not read
  (``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``), no terminal prompt is possible;
* overrides, on the command line (which wins over every configuration file, included ones too),
  every setting that names a program: :data:`FIXED_OVERRIDES`, plus one empty override per
  filter/diff/merge driver the repository's configuration defines (found by listing the
  configuration's *names*, which runs nothing); a driver name git could not override safely
  refuses the call;
* takes no optional lock (``--no-optional-locks``), so a read never rewrites the index.

Leaf module: it imports nothing of memagent.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

FIXED_OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=",
    "core.gitProxy=",
    "core.askPass=",
    "core.pager=cat",
    "core.editor=:",
    "sequence.editor=:",
    "diff.external=",
    "credential.helper=",
    "gpg.program=",
    "gpg.ssh.program=",
    "gpg.x509.program=",
    "uploadpack.packObjectsHook=",
    "core.alternateRefsCommand=",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
)
INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
CLEAN_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
}
DEFAULT_TIMEOUT_SECONDS = 10.0
# Configuration keys (section.subsection.key, as ``git config --list`` prints them) that name a
# program: each gets an empty override.
_PROGRAM_KEY = re.compile(
    r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(command|textconv)|merge\..+\.driver|"
    r"credential\..+\.helper|remote\..+\.(uploadpack|receivepack)|"
    r"man\..+\.(cmd|path)|difftool\..+\.(cmd|path)|mergetool\..+\.(cmd|path))$",
    re.IGNORECASE,
)


class GitError(Exception):
    """git could not be run safely (or at all); ``str()`` is one line."""


def git_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The clean environment git runs with (see the module docstring)."""
    source = os.environ if env is None else env
    clean = {name: source[name] for name in INHERITED if source.get(name)}
    clean.setdefault("PATH", os.defpath)
    return {**clean, **CLEAN_ENV}


def _run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise GitError(f"git cannot run: {exc.strerror or exc}") from None


def driver_overrides(repo: Path, env: dict[str, str], timeout: float = DEFAULT_TIMEOUT_SECONDS) -> list[str]:
    """``-c KEY=`` arguments that switch off every program the repository's configuration (and
    what it includes) names. Raises :class:`GitError` for a name that cannot be overridden."""
    listing = _run(
        ["git", "-C", str(repo), *_fixed(), "config", "--includes", "--name-only", "--list", "-z"], env, timeout
    )
    overrides: list[str] = []
    for name in dict.fromkeys(listing.stdout.split("\0")):
        name = name.strip("\n")
        if not name or not _PROGRAM_KEY.match(name):
            continue
        if "=" in name or "\n" in name:
            raise GitError("the repository's git configuration names a program git cannot switch off safely")
        overrides += ["-c", f"{name}="]
    return overrides


# Names (lower case, as git prints them) that run a program or pull configuration from
# elsewhere, beyond the driver keys: what makes a repository's configuration "armed".
_FIXED_NAMES = frozenset(item.split("=", 1)[0].lower() for item in FIXED_OVERRIDES) - {
    "protocol.ext.allow",
    "submodule.recurse",
}
_PULLS_OR_RUNS = re.compile(
    r"^(include\.path|includeif\..+\.path|pager\..+|interactive\.difffilter|"
    r"core\.worktree|alias\..+)$",
    re.IGNORECASE,
)


def names_a_program(name: str) -> bool:
    """True for a configuration name that makes git run a program (a hook folder, an fsmonitor,
    a pager, a driver, an alias …) or read configuration from elsewhere (``include``)."""
    lowered = name.lower()
    return lowered in _FIXED_NAMES or bool(_PROGRAM_KEY.match(name) or _PULLS_OR_RUNS.match(name))


def config_names(config_file: Path, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> list[str]:
    """The names set in one configuration file (not what it includes); reading runs nothing.
    An absent file has none; :class:`GitError` when git cannot read it."""
    if not config_file.exists():
        return []
    done = _run(
        ["git", *_fixed(), "config", "--file", str(config_file), "--name-only", "--list", "-z"],
        git_environment(),
        timeout,
    )
    if done.returncode != 0:
        raise GitError(f"{config_file}: git cannot read it")
    return [name.strip("\n") for name in done.stdout.split("\0") if name.strip("\n")]


def _fixed() -> list[str]:
    return [arg for item in FIXED_OVERRIDES for arg in ("-c", item)]


def config_value(repo: Path, key: str, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> str | None:
    """The repository's value of ``key`` (its own configuration and what it includes; not the
    system's or the user's), or None. Reading configuration runs no program."""
    done = _run(
        ["git", "--no-pager", "-C", str(repo), *_fixed(), "config", "--local", "--includes", "--get", key],
        git_environment(),
        timeout,
    )
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def run_git(
    args: Sequence[str],
    repo: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``git -C repo ARGS`` with nothing repository-configured allowed to run.

    The result is returned whatever git's exit code; :class:`GitError` when git cannot run
    (missing, timed out, or a configuration it cannot neutralise)."""
    clean = git_environment(env)
    argv = ["git", "--no-pager", "--no-optional-locks", "-C", str(repo), *_fixed()]
    argv += driver_overrides(repo, clean, timeout)
    return _run([*argv, *args], clean, timeout)


__all__ = [
    "FIXED_OVERRIDES",
    "GitError",
    "config_names",
    "config_value",
    "driver_overrides",
    "git_environment",
    "names_a_program",
    "run_git",
]
