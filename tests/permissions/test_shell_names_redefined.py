"""A command that redefines what a later command name runs (``alias``, ``hash -p``) hides that
command from the rules: ``x victim.txt`` is ``rm victim.txt``. Found by the hostile-repository
attacks 4/deny-alias and 4/deny-hash-p (``tests/e2e/attacks``); open in the gate until it reads
such definitions as hiding what runs."""

from __future__ import annotations

import pytest

from memagent.permissions.shell import analyse

OPEN = "the gate reads alias and hash -p as plain builtins, not as hiding what a later name runs"


@pytest.mark.xfail(strict=True, reason=OPEN)
@pytest.mark.parametrize(
    "command",
    ["shopt -s expand_aliases\nalias x=rm\nx victim.txt", "hash -p /bin/rm x\nx victim.txt"],
    ids=["alias", "hash-p"],
)
def test_a_redefined_command_name_is_hidden(command):
    analysis = analyse(command)
    assert analysis.hidden or any(c.words and c.words[0].literal == "rm" for c in analysis.commands)


def test_a_function_that_runs_rm_is_seen():
    """The variant that holds: a function body is read like any other code."""
    analysis = analyse('x() { rm "$@"; }\nx victim.txt')
    assert analysis.hidden or any(c.words and c.words[0].literal == "rm" for c in analysis.commands)
