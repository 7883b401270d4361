"""The gate reads a command as bash runs it: each class of hiding, as an allow rule, a deny rule
and the dangerous-command guard meet it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memagent.permissions import Effect, Policy, declares
from memagent.permissions.danger import dangerous_reason
from memagent.permissions.shell import analyse

ROOT = Path("/work/project")


def decide(command: str, allow=(), deny=(), ask=(), mode="default") -> str:
    policy = Policy.from_settings(mode, allow, ask, deny, root=ROOT, home=Path("/home/u"))
    return policy.decide("bash", declares(Effect.RUN, command=command)).action


def names(command: str) -> list[list[str]]:
    return [c.shown for c in analyse(command).commands]


# class: a comment or a line break hides a second command
COMMENT_HIDING = ["git status #\ntouch X", "git status #\\\ntouch X", "git status ;#\ntouch X", "git status\n\ntouch X"]
# class: the command name is decided when bash runs it
NAME_HIDING = ["rm${IFS}victim", "$CMD victim", "${V:-rm} victim", "/bin/r? victim", "{rm,victim}", "$'\\x72m' victim"]
# class: bash joins what the parser would split
JOINED = ["r\\\nm victim", "rm\\\n victim"]
# class: a string or another shell runs it
STRINGS = [
    "bash -c 'rm victim'",
    'sh -lc "rm victim"',
    "eval 'rm victim'",
    "eval rm victim",
    "trap 'rm victim' EXIT",
    "watch -n 1 'rm victim'",
    "su -c 'rm victim' me",
    "test -v 'a[$(rm victim)]'",
    "echo rm victim | sh",
    "bash <<EOF\nrm victim\nEOF",
    "python3 - <<'EOF'\nimport os\nEOF",
    "printf -v 'a[$(rm victim)]' x",
    "echo `echo ok` `rm victim`",
]
# class: wrappers and substitutions
WRAPPED = [
    "env FOO=1 rm victim",
    "sudo -u root rm victim",
    "timeout -s KILL 5 rm victim",
    "nice -n 5 rm victim",
    "ls | xargs rm",
    "find . -exec rm {} \\;",
    "echo $(rm victim)",
    "cat <(rm victim)",
    "x=$(rm victim) ls",
    'echo "a$(rm victim)b"',
    "f() { rm victim; }; f",
    "( rm victim )",
    "if true; then rm victim; fi",
    "command rm victim",
    "\\rm victim",
    "'rm' victim",
    "r''m victim",
    "/bin/rm victim",
]


@pytest.mark.parametrize("command", COMMENT_HIDING)
def test_a_hidden_line_is_judged_as_the_command_it_is(command):
    assert ["touch", "X"] in names(command)
    assert decide(command, allow=["Bash(git status:*)"]) == "ask"
    assert decide(command, allow=["Bash(git status:*)", "Bash(touch X)"]) == "allow"


@pytest.mark.parametrize("command", COMMENT_HIDING + NAME_HIDING + JOINED + STRINGS + WRAPPED)
def test_allow_rules_never_approve_what_they_do_not_cover(command):
    assert decide(command, allow=["Bash(git status:*)", "Bash(echo:*)", "Bash(ls:*)", "Bash(cat:*)"]) != "allow"


@pytest.mark.parametrize("command", NAME_HIDING + JOINED + STRINGS + WRAPPED)
def test_a_deny_rule_refuses_every_way_of_running_rm(command):
    assert decide(command, allow=["Bash"], deny=["Bash(rm:*)"], mode="bypassPermissions") == "deny"


@pytest.mark.parametrize("command", ["git status", "ls -la && echo done", "cat a.txt | grep x", "echo '$(rm victim)'"])
def test_a_deny_rule_leaves_other_commands_alone(command):
    assert decide(command, allow=["Bash"], deny=["Bash(rm:*)"]) == "allow"


def test_ask_rules_see_every_command_too():
    assert decide("ls && git push", allow=["Bash"], ask=["Bash(git push:*)"]) == "ask"
    assert decide("git${IFS}push", allow=["Bash"], ask=["Bash(git push:*)"]) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "echo ok #\nrm -rf /",
        "echo ok\nsudo id",
        "true #\\\nrm -rf ~",
        "bash -c 'echo ok #\nrm -rf /'",
        "echo ok | xargs sudo rm",
        "env -i sudo id",
    ],
)
def test_the_guard_uses_the_same_parse(command):
    assert dangerous_reason(command) is not None
    assert decide(command, allow=["Bash"], mode="bypassPermissions") == "deny"


def test_plain_commands_reduce_and_redirections_to_files_do_not():
    assert analyse("npm test && git status | head -3; ls").plain
    assert analyse("ls 2>&1 >/dev/null").plain  # descriptor duplication and /dev/null are harmless
    for command, why in [
        ("echo hi > notes.txt", "a redirection to a file"),
        ("ls &", "a background job (&)"),
        ("FOO=1 npm test", "a variable assignment"),
        ("echo $HOME", "a variable expansion"),
        ("ls *.py", "a glob pattern"),
    ]:
        assert not analyse(command).plain and why in analyse(command).complex, command
    assert decide("echo hi > notes.txt", allow=["Bash(echo:*)"]) == "ask"


def test_a_parse_error_is_hidden():
    assert analyse("echo 'unterminated").hidden
    assert decide("echo 'unterminated", allow=["Bash(echo:*)"]) == "ask"
    assert decide("echo 'unterminated", deny=["Bash(git push:*)"]) == "deny"


def test_the_parser_is_loaded_lazily_and_a_command_costs_little():
    code = (
        "import sys, time; import memagent.permissions, memagent.tools.builtin\n"
        "assert 'tree_sitter' not in sys.modules\n"
        "from memagent.permissions.shell import analyse\n"
        "analyse('true'); t = time.perf_counter()\n"
        "for i in range(200): analyse(f'git status --short {i} && npm test | head -5; echo $(date)')\n"
        "print((time.perf_counter() - t) / 200)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) < 0.005  # seconds per command, on a loaded machine
