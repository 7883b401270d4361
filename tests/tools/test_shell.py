"""The bash tool: running, capping, timeouts, interrupts and the dangerous-command blocklist."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from memagent.tools import shell
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.shell import BashInput, bash_tool, dangerous_reason, split_head_tail


def pids_running(token: str) -> list[int]:
    """Host pids of live processes whose command line holds ``token`` (works across PID namespaces)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmdline and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_gone(token: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not pids_running(token):
            return True
        time.sleep(0.05)
    return False


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_runs_in_project_root_with_exit_code(call, project: Path) -> None:
    out = call("bash", command="pwd; echo err >&2; exit 3")
    assert not out.is_error  # a failing command is a result, not a tool failure
    assert out.content == f"{project.resolve()}\nerr\n[exit code: 3]"


def test_no_output_and_stdin_is_empty(call) -> None:
    assert call("bash", command="true").content == "(no output)\n[exit code: 0]"
    assert call("bash", command="cat").content == "(no output)\n[exit code: 0]"  # would hang on a tty


def test_huge_output_keeps_head_and_tail_and_saves_full(registry: ToolRegistry, project: Path) -> None:
    ctx = ToolContext(root=project, output_cap_chars=2_000)
    out = registry.run("bash", {"command": "seq 1 20000"}, ctx)
    assert not out.is_error
    text = out.content
    assert text.startswith("1\n2\n3\n") and text.endswith("19999\n20000\n[exit code: 0]")
    assert len(text) < 2_300
    head, marker, rest = re.split(r"(\[… \d+ chars omitted; full output saved to \S+\])\n", text)
    tail = rest.removesuffix("[exit code: 0]")
    saved = marker.split("full output saved to ")[1].rstrip("]")
    assert saved.startswith(".transcripts/outputs/bash-") and saved.endswith(".log")
    full = (project / saved).read_text()
    assert full == "".join(f"{i}\n" for i in range(1, 20001))
    assert int(marker.split()[1]) == len(full) - len(head) - len(tail)
    assert full.startswith(head) and full.endswith(tail)
    # the saved file is reachable with read_file even though glob/grep ignore .transcripts
    page = registry.run("read_file", {"path": saved, "offset": 10000, "limit": 2}, ctx)
    assert page.content.startswith(" 10000\t10000\n 10001\t10001")
    assert registry.run("glob", {"pattern": "**/*.log"}, ctx).content.startswith("No files match")


def test_very_large_output_decodes_only_the_ends(registry: ToolRegistry, project: Path, monkeypatch) -> None:
    monkeypatch.setattr(shell, "FULL_DECODE_LIMIT_BYTES", 1_000)
    ctx = ToolContext(root=project, output_cap_chars=400)
    out = registry.run("bash", {"command": "seq 1 5000"}, ctx).content
    assert out.startswith("1\n2\n") and out.endswith("4999\n5000\n[exit code: 0]")
    saved = re.search(r"full output saved to (\S+)\]", out).group(1)
    assert (project / saved).read_text().count("\n") == 5000


def test_outputs_dir_from_context_is_used(registry: ToolRegistry, project: Path) -> None:
    ctx = ToolContext(root=project, output_cap_chars=500, outputs_dir=project / ".transcripts" / "s9" / "outputs")
    out = registry.run("bash", {"command": "seq 1 2000"}, ctx)
    assert "full output saved to .transcripts/s9/outputs/bash-" in out.content


def test_timeout_kills_the_whole_process_group(call, project: Path) -> None:
    started = time.monotonic()
    out = call("bash", command="echo started; sleep 30.0101 & echo $! > child.pid; sleep 30", timeout=1)
    assert time.monotonic() - started < 5
    assert out.is_error
    assert "timed out after 1 s" in out.content and "started" in out.content
    assert (project / "child.pid").exists()
    assert wait_gone("sleep 30.0101"), "background child survived the timeout"


def test_keyboard_interrupt_kills_group_and_reraises(ctx: ToolContext, project: Path, monkeypatch) -> None:
    original_wait = subprocess.Popen.wait

    def interrupted_wait(self, timeout=None):  # the user presses Ctrl-C while we wait for the command
        if timeout is not None and "30.0202" in str(self.args):  # not memagent's own git checks after it
            deadline = time.monotonic() + 3
            while not (project / "child.pid").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            raise KeyboardInterrupt
        return original_wait(self)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        bash_tool().handler(BashInput(command="sleep 30.0202 & echo $! > child.pid; wait"), ctx)
    assert time.monotonic() - started < 5
    assert wait_gone("sleep 30.0202")


def test_background_child_holding_output_does_not_hang(call) -> None:
    started = time.monotonic()
    out = call("bash", command="(sleep 3; echo late) & echo now")
    assert time.monotonic() - started < 2.5
    assert out.content.startswith("now\n") and out.content.endswith("[exit code: 0]")


def test_bad_timeout_and_empty_command(call) -> None:
    assert call("bash", command="true", timeout=0).is_error
    too_long = call("bash", command="true", timeout=120000)
    assert too_long.is_error and "at most 600" in too_long.content
    assert "command is empty" in call("bash", command="   ").content


DANGEROUS = [
    "rm -rf /",
    "rm -rf  / ",
    "rm -fr /*",
    "rm -r -f /",
    "rm -Rf '/'",
    "rm -rf ~",
    "rm -rf ~/",
    "rm -rf $HOME",
    "rm -rf /usr",
    "rm -rf /etc/",
    "rm --recursive --force /",
    "rm -rf --no-preserve-root /",
    "rm -rf -- /",
    "rm -rf //",
    'rm -rf "$HOME/"',
    "s\\udo id",
    "cd /tmp && rm -rf /",
    "echo hi; sudo rm -rf /tmp/x",
    "sudo apt-get install foo",
    "/usr/bin/sudo ls",
    "su - root",
    "doas sh",
    "env FOO=1 sudo ls",
    "timeout 5 sudo ls",
    "ls | xargs sudo rm",
    "echo $(sudo id)",
    "echo `sudo id`",
    "bash -c 'sudo id'",
    'sh -lc "rm -rf /"',
    "eval sudo id",
    ":(){ :|:& };:",
    ":() { : | : & }; :",
    "bomb(){ bomb|bomb& };bomb",
    "mkfs.ext4 /dev/sda1",
    "mkfs -t ext4 /dev/sdb",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "dd if=x.img of=/dev/nvme0n1",
    "echo x > /dev/sda",
    "cat image >/dev/sdb",
    "echo x | tee /dev/sda",
    "chmod -R 777 /",
    "chown -R me /usr",
    "shutdown -h now",
    "reboot",
    "systemctl poweroff",
    "ls\nsudo id",
    "find / -name '*.log' -delete",
    "find ~ -type f -exec rm -f {} +",
    "kill -9 -1",
    "kill -s KILL -1",
    "kill -- -1",
    "kill -1 -1",
    "sleep 1; kill -TERM -1",
]

HARMLESS = [
    "rm -rf build/",
    "rm -rf ./dist /tmp/memagent-test",
    "rm -f /tmp/x.txt",
    "rm -rf node_modules && npm install",
    "grep sudo file.txt",
    "grep -r 'rm -rf /' docs/",
    "echo 'sudo rm -rf /'",
    "git commit -m 'drop sudo usage'",
    "man sudo",
    "command -v sudo",
    "which sudo",
    "chmod -R 755 build",
    "chmod 644 /tmp/x",
    "dd if=/dev/zero of=disk.img bs=1M count=1",
    "ls 2>/dev/null",
    "echo hi > /dev/null",
    "pytest -q --timeout=60",
    "python -c 'print(1)'",
    "cat <<'EOF'\nit's fine\nEOF",
    "docker run --rm image",
    "find . -name '*.pyc' -delete",
    "find / -name '*.conf' -exec grep -l x {} +",
    "find ~ -maxdepth 1 -name '.bashrc'",
    "kill -9 1234",
    "kill -1 1234",
    "kill %1",
    "pkill -f 'sleep 30'",
]


@pytest.mark.parametrize("command", DANGEROUS)
def test_dangerous_commands_are_refused(command: str) -> None:
    assert dangerous_reason(command) is not None


@pytest.mark.parametrize("command", HARMLESS)
def test_harmless_look_alikes_are_allowed(command: str) -> None:
    assert dangerous_reason(command) is None


def test_refusal_is_an_error_result_and_nothing_runs(call, project: Path) -> None:
    out = call("bash", command="touch ran.txt; sudo true")
    assert out.is_error and out.content.startswith("Error: Refused: privilege escalation")
    assert not (project / "ran.txt").exists()


def test_the_gate_asks_for_commands_and_refuses_dangerous_ones(tmp_path) -> None:
    from memagent.permissions import Policy

    bash = bash_tool()
    policy = Policy(root=tmp_path)
    assert policy.decide("bash", bash.declare(BashInput(command="ls"))).action == "ask"
    refused = policy.decide("bash", bash.declare(BashInput(command="sudo ls")))
    assert refused.action == "deny" and "privilege escalation" in refused.reason
    bypass = policy.with_mode("bypassPermissions")
    assert bypass.decide("bash", bash.declare(BashInput(command="echo ok #\nrm -rf /"))).action == "deny"


def test_split_head_tail_prefers_line_boundaries() -> None:
    text = "".join(f"line {i:03d}\n" for i in range(100))
    head, tail, omitted = split_head_tail(text, 200)
    assert head.endswith("\n") and tail.startswith("line ") and text.startswith(head) and text.endswith(tail)
    assert omitted == len(text) - len(head) - len(tail) and len(head) + len(tail) <= 200


def test_environment_disables_pagers(call) -> None:
    assert call("bash", command="echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT").content == "cat cat 0\n[exit code: 0]"


def test_saved_full_output_is_capped_keeping_head_and_tail(project: Path) -> None:
    from memagent.tools.shell import ShellConfig

    registry = ToolRegistry.of([bash_tool(ShellConfig(saved_output_max_bytes=10_000))])
    ctx = ToolContext(root=project, output_cap_chars=1_000)
    out = registry.run("bash", {"command": "seq 1 100000"}, ctx).content  # 588,895 bytes
    marker = re.search(r"full output \((\d+) bytes\) saved to (\S+), its middle cut to keep 10000 bytes\]", out)
    assert marker and int(marker.group(1)) == 588_895
    saved = (project / marker.group(2)).read_text()
    assert saved.startswith("1\n2\n3\n") and saved.endswith("99999\n100000\n")
    assert "bytes omitted here; the command wrote 588895 bytes in all" in saved
    assert len(saved) < 10_200
    small = registry.run("bash", {"command": "seq 1 500"}, ctx).content
    path = re.search(r"full output saved to (\S+)\]", small).group(1)
    assert (project / path).read_text() == "".join(f"{i}\n" for i in range(1, 501))  # under the cap: whole
