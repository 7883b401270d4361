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

# Holes known to be open, by attack id, with the reason (each runs as a strict xfail until it is
# closed). None today: ``alias``/``hash -p`` were the last two (closed in ``permissions/runs.py``).
OPEN_IN_THE_GATE: dict[str, str] = {}


def _expected(attack: Attack) -> Attack:
    if attack.id in OPEN_IN_THE_GATE:
        return dataclasses.replace(attack, expect_failure=OPEN_IN_THE_GATE[attack.id])
    return attack


ATTACKS: tuple[Attack, ...] = tuple(
    _expected(a)
    for a in sorted(
        (
            *git_attacks.ATTACKS,
            *fs_attacks.ATTACKS,
            *shell_attacks.ATTACKS,
            *trust_attacks.ATTACKS,
            *memory_attacks.ATTACKS,
            *env_attacks.ATTACKS,
        ),
        key=lambda attack: attack.klass,
    )
)

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
