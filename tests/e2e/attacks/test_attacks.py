"""The hostile-repository attack set through the real CLI, the fake Messages API, real
bubblewrap and real git (see ``harness.py``). One test per attack; ``-m attackN`` selects a
class. A test passes when the attack held: its own checks and the harness's (home, victim folder
and other repository unchanged, no payload ran, no canary sent to the API or left on disk)."""

from __future__ import annotations

import pytest

from .harness import run_attack, world_base
from .table import ATTACKS


def _param(attack):
    marks = [getattr(pytest.mark, f"attack{attack.klass}")]
    if attack.expect_failure:
        marks.append(pytest.mark.xfail(strict=True, reason=attack.expect_failure))
    return pytest.param(attack, id=attack.id, marks=marks)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("attack", [_param(a) for a in ATTACKS])
def test_attack_holds(attack, warm_starters):
    verdict = run_attack(attack, world_base(), starters=warm_starters)
    assert verdict.held, f"{attack.id} ({attack.title}) failed:\n  " + "\n  ".join(verdict.findings)
