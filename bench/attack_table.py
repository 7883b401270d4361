"""The attack table: every hostile-repository attack of ``tests/e2e/attacks`` run against the
real CLI, the fake Messages API, real bubblewrap and real git, counted per class.

Usage: python bench/attack_table.py [--class N ...] [--only ID-PREFIX ...] [--jobs 2] [--json out.json]

Prints, per class: attempts, held, failed, data lost (an attack whose failure lost or leaked
data: a canary read, a file outside the project changed, a payload run, a secret on disk), then
every failure with its findings. Exit status 1 when any attack failed. The attacks are imported
from the test package, not copied.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from e2e.attacks.harness import Attack, Verdict, run_attack, world_base
from e2e.attacks.table import ATTACKS, CLASSES


def run_all(attacks: list[Attack], jobs: int) -> list[Verdict]:
    base = world_base()

    def one(attack: Attack) -> Verdict:
        try:
            return run_attack(attack, base)
        except Exception as exc:  # noqa: BLE001 - a broken attack is reported, never counted as held
            return Verdict(attack, (f"the attack itself broke: {type(exc).__name__}: {exc}",))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, attacks))


def table(verdicts: list[Verdict]) -> list[dict]:
    rows = []
    for klass, title in CLASSES.items():
        mine = [v for v in verdicts if v.attack.klass == klass]
        if mine:
            rows.append(
                {
                    "class": klass,
                    "title": title,
                    "attempts": len(mine),
                    "named": sum(v.attack.named for v in mine),
                    "held": sum(v.held for v in mine),
                    "failed": sum(not v.held for v in mine),
                    "data_lost": sum(v.data_lost for v in mine),
                }
            )
    return rows


def render(rows: list[dict], verdicts: list[Verdict], seconds: float) -> str:
    lines = [f"{'class':<52} {'attempts':>8} {'held':>5} {'failed':>6} {'data lost':>9}"]
    for r in rows:
        lines.append(
            f"{r['class']:>2}. {r['title']:<48} {r['attempts']:>8} {r['held']:>5} {r['failed']:>6} {r['data_lost']:>9}"
        )
    total = {k: sum(r[k] for r in rows) for k in ("attempts", "held", "failed", "data_lost")}
    lines.append(
        f"{'total':<52} {total['attempts']:>8} {total['held']:>5} {total['failed']:>6} {total['data_lost']:>9}"
    )
    failures = [v for v in verdicts if not v.held]
    lines.append(f"\n{len(failures)} failure(s) ({seconds:.0f} s)")
    for v in failures:
        known = f"  [known: {v.attack.expect_failure}]" if v.attack.expect_failure else ""
        lines.append(f"- {v.attack.id}: {v.attack.title}{known}")
        lines += [f"    {finding}" for finding in v.findings]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class", dest="classes", type=int, action="append", help="only this class (repeatable)")
    parser.add_argument("--only", action="append", help="only attacks whose id starts with this (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="attacks run side by side (default 2)")
    parser.add_argument("--json", dest="json_path", help="also write the table and failures as JSON here")
    args = parser.parse_args()
    attacks = [
        a
        for a in ATTACKS
        if (not args.classes or a.klass in args.classes) and (not args.only or a.id.startswith(tuple(args.only)))
    ]
    started = time.monotonic()
    verdicts = run_all(attacks, max(1, args.jobs))
    seconds = time.monotonic() - started
    rows = table(verdicts)
    print(render(rows, verdicts, seconds))
    if args.json_path:
        report = {
            "table": rows,
            "seconds": round(seconds, 1),
            "failures": [
                {
                    "id": v.attack.id,
                    "class": v.attack.klass,
                    "title": v.attack.title,
                    "data_lost": v.data_lost,
                    "known": v.attack.expect_failure,
                    "findings": list(v.findings),
                }
                for v in verdicts
                if not v.held
            ],
        }
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 1 if any(not v.held for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
