"""The exit recap names the cards a session wrote, shortened, and stops after a few."""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent.ui.recap import learned_items


@dataclass
class Candidate:
    content: str
    memory_type: str = "fact"


@dataclass
class Decision:
    candidate: Candidate
    action: str
    card_id: str | None
    pending: bool = False


@dataclass
class Report:
    decisions: list = field(default_factory=list)


def test_learned_items_name_each_stored_card_shortened_and_capped():
    long = "The staging database is reset every night at 02:00 UTC, so fixtures must be reloaded " * 3
    report = Report(
        [
            Decision(Candidate("Use pytest -q to run the tests.", "procedure"), "ADD", "m_1"),
            Decision(Candidate("Already known"), "NOOP", "m_0"),
            Decision(Candidate(long), "UPDATE", "m_2"),
            Decision(Candidate("Prefers tabs"), "ADD", "m_3", pending=True),
            Decision(Candidate("refused by the gate"), "REFUSED", None),
        ]
    )
    lines = learned_items([report, object()])
    assert lines[0] == "  + Use pytest -q to run the tests. (procedure m_1)"
    assert lines[1].startswith("  ~ The staging database is reset") and lines[1].endswith("(fact m_2)")
    assert len(lines[1]) < 130 and "…" in lines[1]
    assert lines[2] == "  ? Prefers tabs (fact m_3)" and len(lines) == 3
    many = Report([Decision(Candidate(f"fact {n}"), "ADD", f"m_{n}") for n in range(8)])
    capped = learned_items([many])
    assert len(capped) == 6 and capped[-1] == "  … and 3 more (`memagent memory list`)"


def test_learned_counts_take_what_reports_count_and_leave_out_the_rest():
    from memagent.ui.recap import learned_counts

    class Counted:
        def __init__(self, **counts):
            self.counts = counts

        def count(self, action):
            return self.counts.get(action, 0)

    class Broken:
        count = "not a method"

    reports = [Counted(ADD=2, UPDATE=1), Counted(CONTRADICT=1, PENDING=3), Counted(ADD="two"), Broken(), object()]
    assert learned_counts(reports) == {"saved": 2, "updated": 2, "pending": 3}
