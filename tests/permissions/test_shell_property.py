"""A property test: random bash from a small grammar, judged by the gate, then run by real bash.

The generator mixes words, quotes, ``$( )``, backticks, ``${ }``, ``$V``, ``;``, ``&&``, ``||``,
``|``, newlines, comments, heredocs, redirections, line continuations, ``eval`` and ``bash -c``.
Each command is judged against fixed rules, then run by bash in a temp folder with every
external command a stub that logs its arguments and ``xtrace`` on (also in nested shells), so
the test knows every simple command bash really ran. Two properties:

- never allowed on less than bash runs: when the gate allows, every command bash ran is covered
  by an allow rule (checked here independently, not with the gate's matcher);
- deny sees everything: when bash ran ``rm``, the gate said deny (``Bash(rm:*)``).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memagent.permissions import Effect, Policy, declares

ALLOWED_PREFIXES = ("echo", "ls", "cat")  # Bash(echo:*), Bash(ls:*), Bash(cat:*)
POLICY_RULES = dict(allow=[f"Bash({name}:*)" for name in ALLOWED_PREFIXES] + ["Bash(true)"], deny=["Bash(rm:*)"])
STUBS = ("rm", "touch", "cat", "ls", "x", "victim", "grep")
BASH = shutil.which("bash") or "/bin/bash"
STUB_SHELL = shutil.which("dash") or "/bin/sh"  # not bash: xtrace (SHELLOPTS) must not trace the stubs

names = st.sampled_from(["echo", "ls", "cat", "true", "rm", "touch", "x", "printf", "grep"])
plain_words = st.sampled_from(["a", "b", "victim", "-rf", "--", "x", "rm", "ok", "#", "'#'", "1"])


def _quoted(inner: str) -> st.SearchStrategy[str]:
    return st.sampled_from([f"'{inner}'", f'"{inner}"', inner])


@st.composite
def words(draw, commands) -> str:
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        return draw(plain_words)
    if kind == 5:
        return f"$({draw(commands)})"
    if kind == 6:
        return f"`{draw(commands)}`"
    if kind == 7:
        return draw(
            st.sampled_from(
                [
                    "${IFS}",
                    "$V",
                    '"$V"',
                    "${V:-rm}",
                    "rm${IFS}victim",
                    '"$(rm victim)"',
                    "'$(rm victim)'",
                    "<(rm victim)",
                    "$((1+2))",
                    "{a,b}",
                    "*",
                ]
            )
        )
    if kind == 8:
        return draw(_quoted(draw(plain_words)))
    return draw(plain_words) + draw(st.sampled_from(["\\\n", "'x'", '"y"', "\\ "])) + draw(plain_words)


@st.composite
def simple_commands(draw, commands) -> str:
    head = draw(
        st.one_of(
            names,
            names.map(lambda n: "\\" + n),
            names.map(lambda n: f"'{n}'"),
            st.sampled_from(
                [
                    "$V",
                    "rm${IFS}victim",
                    "${V:-rm}",
                    "eval",
                    "bash -c",
                    "V=rm",
                    "r\\\nm",
                    '"r"m',
                    "r''m",
                    "$'\\x72m'",
                    "\\r\\m",
                    "printf -v 'a[$(rm victim)]'",
                    "x=$(rm victim)",
                    "command",
                    "env",
                    "time",
                    "!",
                ]
            ),
        )
    )
    args = draw(st.lists(words(commands), max_size=3))
    tail = draw(
        st.sampled_from(
            [
                "",
                "",
                "",
                " > out",
                " 2>&1",
                " >/dev/null",
                " <<EOF\nrm victim\nEOF\n",
                " <<'EOF'\n$(rm victim)\nEOF\n",
                " # rm victim",
                " #\\",
                " >/dev/null rm victim",
                "\n\\rm victim",
                " 2>&1 rm",
            ]
        )
    )
    return " ".join([head, *args]) + tail


def scripts() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        separator = st.sampled_from(
            [" ; ", " && ", " || ", " | ", "\n", " #c\n", " # rm victim\n", " & ", " |& ", ";#\n"]
        )
        return st.one_of(
            st.tuples(inner, separator, inner).map("".join),
            inner.map(lambda s: f"( {s} )"),
            inner.map(lambda s: f"{{ {s}; }}"),
            inner.map(lambda s: f"eval '{s}'" if "'" not in s else s),
            inner.map(lambda s: f"bash -c '{s}'" if "'" not in s else s),
        )

    base = st.deferred(lambda: simple_commands(st.sampled_from(["rm victim", "echo ok", "ls", "true"])))
    return st.recursive(base, extend, max_leaves=4)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    """A folder with a stub for every external command: each logs its argv (unit-separated)."""
    base = tmp_path_factory.mktemp("bash-property")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    for name in STUBS:
        stub = bin_dir / name
        stub.write_text(f'#!{STUB_SHELL}\nprintf "%s\\037" {name} "$@" >> "$STUB_LOG"; printf "\\n" >> "$STUB_LOG"\n')
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    for shell in ("bash", "sh"):
        (bin_dir / shell).symlink_to(BASH)
    return base


def ran(command: str, base: Path) -> list[list[str]]:
    """Every simple command bash ran for ``command``: xtrace lines and stub logs, as argv."""
    work = base / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    trace, log = base / "trace", base / "stubs"
    for path in (trace, log):
        path.write_bytes(b"")
    env = {
        "PATH": str(base / "bin"),
        "SHELLOPTS": "xtrace",
        "PS4": "+ ",
        "BASH_XTRACEFD": "7",
        "STUB_LOG": str(log),
        "HOME": str(work),
        "LC_ALL": "C",
    }
    with trace.open("wb") as fd7:
        subprocess.run(
            [BASH, "-c", command],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            close_fds=False,
            preexec_fn=lambda: os.dup2(fd7.fileno(), 7),
        )
    commands = [_trace_words(line) for line in trace.read_text(errors="replace").splitlines() if line.startswith("+")]
    commands += [entry.split("\x1f")[:-1] for entry in log.read_text(errors="replace").split("\n") if entry]
    return [c for c in commands if c]


_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")


def _trace_words(line: str) -> list[str]:
    """One xtrace line (``++ echo 'a b'``) as words; bash quotes with '…' and $'…'."""
    body = line.lstrip("+")[1:]
    out, index = [], 0
    word, started = [], False
    while index < len(body):
        ch = body[index]
        if ch == " ":
            if started:
                out.append("".join(word))
            word, started = [], False
            index += 1
        elif ch == "'":
            end = body.index("'", index + 1) if "'" in body[index + 1 :] else len(body)
            word.append(body[index + 1 : end])
            started, index = True, end + 1
        elif body.startswith("$'", index):
            match = _ANSI_C.match(body, index)
            raw = match.group(1) if match else body[index + 2 :]
            word.append(raw.encode("latin-1", "backslashreplace").decode("unicode_escape"))
            started, index = True, (match.end() if match else len(body))
        elif ch == "\\" and index + 1 < len(body):
            word.append(body[index + 1])
            started, index = True, index + 2
        else:
            word.append(ch)
            started, index = True, index + 1
    if started:
        out.append("".join(word))
    return out


def covered(argv: list[str]) -> bool:
    """The allow rules, checked independently of the gate's own matcher."""
    return (argv[0] in ALLOWED_PREFIXES) or argv == ["true"]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(command=scripts())
def test_the_gate_never_judges_a_command_on_less_than_bash_runs(command, sandbox, tmp_path_factory):
    policy = Policy.from_settings("default", root=sandbox, **POLICY_RULES)
    verdict = policy.decide("bash", declares(Effect.RUN, command=command))
    executed = ran(command, sandbox)
    if verdict.action == "allow":
        uncovered = [argv for argv in executed if not covered(argv)]
        assert not uncovered, f"allowed {command!r}, but bash ran {uncovered}"
    if any(os.path.basename(argv[0]) == "rm" for argv in executed):
        assert verdict.action == "deny", (
            f"bash ran rm for {command!r}, the gate said {verdict.action}: {verdict.reason}"
        )


def test_the_trace_reader_reads_what_bash_ran(sandbox):
    assert ran("echo ok #\nrm victim", sandbox) == [["echo", "ok"], ["rm", "victim"], ["rm", "victim"]]
    assert ran("rm${IFS}victim", sandbox) == [["rm", "victim"], ["rm", "victim"]]
    assert ran("echo 'a b'", sandbox) == [["echo", "a b"]]
