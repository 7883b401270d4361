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

# Holes still open in the gate's shell parse: ``alias`` and ``hash -p`` are read as shell builtins
# that only make a command complex (no allow rule applies), not as hiding what a later command
# name runs, so a deny rule never sees the ``rm`` behind ``x``.
OPEN_IN_THE_GATE = {
    "4/deny-alias": "the gate does not see that an alias defined in the command decides what a later name runs",
    "4/deny-hash-p": "the gate does not see that hash -p decides what a later command name runs",
}


def _expected(attack: Attack) -> Attack:
    if attack.id in OPEN_IN_THE_GATE:
        return dataclasses.replace(attack, expect_failure=OPEN_IN_THE_GATE[attack.id])
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
