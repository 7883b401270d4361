"""Every attack of the set, in class order: the one table the tests and the bench both run."""

from __future__ import annotations

import dataclasses

from . import (
    env_attacks,
    fs_attacks,
    git_attacks,
    memory_attacks,
    shell_attacks,
    trust_attacks,
)
from .harness import Attack

# Holes that the one gate (tools' declared effects, the tree-sitter shell parse, trust pinned to
# content, memory writes through the gate) closes; open on main until that branch lands.
AWAITING_THE_GATE = frozenset({
    "4/ask-comment-newline", "4/ask-echo-comment-newline", "4/deny-comment-newline", "4/deny-ifs",
    "4/deny-ansi-c", "4/deny-backticks-name", "4/deny-param-default", "4/deny-find-exec", "4/deny-alias",
    "4/deny-eval", "4/deny-bash-c",
    "5/changed-hooks", "5/changed-sandbox", "5/added-mcp-json", "5/config-appears",
    "8/save-user-default", "8/delete-user-default", "8/save-user-accept", "8/delete-user-accept",
    "8/mcp-serve-user",
})


def _expected(attack: Attack) -> Attack:
    if attack.id in AWAITING_THE_GATE:
        return dataclasses.replace(attack, expect_failure="open until the one gate lands on main")
    return attack


ATTACKS: tuple[Attack, ...] = tuple(_expected(a) for a in sorted(
    (*git_attacks.ATTACKS, *fs_attacks.ATTACKS, *shell_attacks.ATTACKS, *trust_attacks.ATTACKS,
     *memory_attacks.ATTACKS, *env_attacks.ATTACKS),
    key=lambda attack: attack.klass,
))

CLASSES = {
    1: "the sandbox opened from inside",
    2: "repository code run on the host",
    3: "files deleted or written outside the project",
    4: "rules judged on another command than bash runs",
    5: "trust pinned to a path, not to content",
    6: "files memagent reads by itself, unconfined",
    7: "repository memory passing as the user's words",
    8: "memory tools skipping the gate",
    9: "secrets and the environment",
    10: "the smaller defects",
}
