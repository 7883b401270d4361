"""Dates and periods read from text (memory.timeline): card content relative to when it was
written, questions relative to now; only what names a date counts."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from memagent.memory.query import query_window, time_windows
from memagent.memory.timeline import asked_period, mentions_time, periods_in

WRITTEN = datetime(2026, 9, 30, tzinfo=UTC)
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def _days(periods):
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in periods]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("On 12 March 2026 the collab server dropped edits.", [("2026-03-12", "2026-03-13")]),
        ("Since April the import runs at 04:30 UTC instead of 02:00.", [("2026-04-01", "2026-05-01")]),
        ("Since mid-April the import runs later.", [("2026-04-11", "2026-04-21")]),
        ("In Q2 the pipeline gained a second feed format.", [("2026-04-01", "2026-07-01")]),
        ("During Q2 2025 the table plugin was rewritten.", [("2025-04-01", "2025-07-01")]),
        ("Last spring the builds moved to BuildKit.", [("2026-03-01", "2026-06-01")]),
        ("Over the December 2025 holidays the feed doubled.", [("2025-12-01", "2026-01-01")]),
        ("In early September 2026 the late-data alert fired.", [("2026-09-01", "2026-09-11")]),
        ("Dates written as digits: 2026-03-14.", [("2026-03-14", "2026-03-15")]),
        ("The queue was drained yesterday.", [("2026-09-29", "2026-09-30")]),
    ],
)
def test_periods_named_in_a_card_relative_to_when_it_was_written(text, expected):
    assert _days(periods_in(text, WRITTEN)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The import runs every night at 02:00 UTC.",
        "Beacon caps SMS at 5 messages per user per hour.",
        "Retries wait a second, then thirty seconds.",
        "May I suggest we run it in the ingest-east group?",
        "mar is not a month here",
        "He rotates the keys every quarter.",
    ],
)
def test_times_durations_and_look_alike_words_are_not_dates(text):
    assert periods_in(text, WRITTEN) == []


@pytest.mark.parametrize(
    "question, start, end",
    [
        ("What happened in mid-March?", "2026-03-11", "2026-03-21"),
        ("What was the January outage about?", "2026-01-01", "2026-02-01"),
        ("What changed this spring?", "2026-03-01", "2026-06-01"),
        ("What shipped last week?", "2026-11-09", "2026-11-16"),
        ("Anything from late April?", "2026-04-21", "2026-05-01"),
        ("What did John do the week before August 3, 2023?", "2023-08-03", "2023-08-04"),
    ],
)
def test_questions_are_read_relative_to_now(question, start, end):
    window = query_window(question, NOW)
    assert window is not None and _days([window]) == [(start, end)]


def test_a_period_counted_back_from_now_may_be_written_about_until_now():
    window, written = time_windows("What did we fix last year?", NOW)
    assert _days([window]) == [("2025-01-01", "2026-01-01")] and written[1] >= NOW
    stated, stated_written = time_windows("What did we fix in March 2026?", NOW)
    assert stated_written[1] < NOW  # a named month is written about within weeks, not forever
    assert asked_period("What did we fix?", NOW) is None and not mentions_time("What did we fix?")


def test_dateparser_stays_off_the_light_commands(tmp_path):
    probe = (
        "import sys\n"
        "from memagent.cli.main import run\n"
        "for argv in (['memagent', '--help'], ['memagent', 'tasks', 'list']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        run()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('DATEPARSER' if 'dateparser' in sys.modules else 'CLEAN', file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.stderr.strip().endswith("CLEAN"), result.stderr[-500:]


def test_a_card_made_of_dates_costs_a_bounded_number_of_parses(monkeypatch):
    """A hostile card full of date phrases: only the first MAX_PHRASES are parsed (a parse costs
    milliseconds; a card is parsed on every import and rebuild)."""
    from dateparser.date import DateDataParser

    from memagent.memory import timeline

    calls = []
    real = DateDataParser.get_date_data
    monkeypatch.setattr(
        DateDataParser, "get_date_data", lambda self, text, *a, **k: calls.append(text) or real(self, text, *a, **k)
    )
    hostile = " ".join(f"on {day} March 2026," for day in range(1, 29)) * 3
    found = periods_in(hostile, WRITTEN)
    assert 0 < len(calls) <= 2 * timeline.MAX_PHRASES
    assert found[0][0] == datetime(2026, 3, 1, tzinfo=UTC)  # the first ones still count
