"""A command that redefines what a later command name runs (``alias``, ``hash -p``) hides that
command from the rules: ``x victim.txt`` is ``rm victim.txt``. Found by the hostile-repository
attacks 4/deny-alias and 4/deny-hash-p (``tests/e2e/attacks``): such definitions hide what runs
after them, so the gate asks (or refuses where a deny rule exists)."""

from __future__ import annotations

import pytest

from memagent.permissions.shell import analyse


@pytest.mark.parametrize(
    "command",
    [
        "shopt -s expand_aliases\nalias x=rm\nx victim.txt",
        "hash -p /bin/rm x\nx victim.txt",
        "alias x='rm -f'; x victim.txt",
        "hash -dp /bin/rm x; x victim.txt",
        "enable -f ./evil.so x; x",
    ],
    ids=["alias", "hash-p", "alias-quoted", "hash-combined-flags", "enable-f"],
)
def test_a_redefined_command_name_is_hidden(command):
    analysis = analyse(command)
    assert analysis.hidden or any(c.words and c.words[0].literal == "rm" for c in analysis.commands)


def test_a_function_that_runs_rm_is_seen():
    """The variant that holds: a function body is read like any other code."""
    analysis = analyse('x() { rm "$@"; }\nx victim.txt')
    assert analysis.hidden or any(c.words and c.words[0].literal == "rm" for c in analysis.commands)


@pytest.mark.parametrize("command", ["alias", "hash", "hash -r", "shopt -p"])
def test_listing_aliases_or_the_hash_table_hides_nothing(command):
    assert not analyse(command).hidden
