"""A card forgotten here whose file came back is asked about where the user is: before an
interactive session starts, and in `memagent memory review`, both in a real pty."""

from __future__ import annotations

import json

import pexpect
import pytest

from fakeapi import text
from repl_kit import PROMPT, expect_text

SECRET = "The vault codename is Quetzal-lantern-5521"


def returned_card(run_cli, project, cli_env) -> str:
    """A card added, forgotten, and put back as a checkout of an older commit would."""
    cli_env.update(MEMAGENT_EMBEDDER="lexical", MEMAGENT_AUTO_EXTRACT="false")
    added = run_cli("-C", str(project), "memory", "add", SECRET, "--json")
    assert added.returncode == 0, added.stderr
    card_id = json.loads(added.stdout)["card"]["id"]
    card_file = project / ".memory" / "cards" / f"{card_id}.md"
    saved = card_file.read_bytes()
    assert run_cli("-C", str(project), "memory", "forget", card_id, "--yes").returncode == 0
    card_file.write_bytes(saved)
    return card_id


@pytest.mark.timeout(300)
def test_the_repl_asks_before_it_starts_and_a_kept_card_is_used_again(spawn, run_cli, project, cli_env, fake):
    card_id = returned_card(run_cli, project, cli_env)
    fake.add(text("Noted."))
    child = spawn(memory=True)
    expect_text(child, "came back")
    expect_text(child, card_id)
    expect_text(child, "[e]rase again, [k]eep, [s]kip")
    child.sendline("k")
    expect_text(child, "kept: it is used again")
    expect_text(child, PROMPT)
    child.sendline("/exit")
    child.expect(pexpect.EOF, timeout=60)
    listed = run_cli("-C", str(project), "memory", "list", "--json")
    assert card_id in {c["id"] for c in json.loads(listed.stdout)}
    assert card_id not in (project / ".memory" / "local" / "tombstones.jsonl").read_text()


@pytest.mark.timeout(300)
def test_memory_review_in_a_terminal_erases_it_again(spawn, run_cli, project, cli_env):
    card_id = returned_card(run_cli, project, cli_env)
    child = spawn("memory", "review", memory=True)
    expect_text(child, "[e]rase again, [k]eep, [s]kip")
    child.sendline("e")
    expect_text(child, "erased (commit the deletion")
    child.expect(pexpect.EOF, timeout=60)
    assert not (project / ".memory" / "cards" / f"{card_id}.md").exists()
    assert card_id in (project / ".memory" / "local" / "tombstones.jsonl").read_text()
