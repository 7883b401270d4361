"""Trivial-turn pre-filter and vague-query expansion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memagent.memory.query import build_query, is_trivial, is_vague, query_time_range


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "Hello!",
        "hey there",
        "thanks",
        "Thank you so much!",
        "thx",
        "ok",
        "OK.",
        "okay 👍",
        "🎉🎉🎉",
        "👍",
        "   ",
        "",
        "Sounds good",
        "got it, thanks",
        "lgtm",
        "cool",
        "yes please",
        "go ahead",
        "continue",
        "fix it",
    ],
)
def test_trivial_turns_are_skipped(text):
    assert is_trivial(text)


@pytest.mark.parametrize(
    "text",
    [
        "how much?",
        "why?",
        "What port does the API use?",
        "deploy staging",
        "pytest.ini",
        "E501",
        "Thanks, and which database do we use?",
        "ok so how do I run the tests?",
        "hi, where is the config file?",
        "--no-deps",
    ],
)
def test_real_requests_are_not_trivial(text):
    assert not is_trivial(text)


def test_vague_message_gets_recent_context_appended_in_order():
    recent = [
        "old turn that should not be included",
        "We looked at the AWS bill for the staging cluster.",
        "Mostly EC2.",
    ]
    query = build_query("how much?", recent)
    assert query == "We looked at the AWS bill for the staging cluster. Mostly EC2. how much?"
    assert "old turn" not in query


@pytest.mark.parametrize("text", ["and that one?", "Why does it fail?", "what about the other one?", "how much?"])
def test_pronoun_heavy_or_short_questions_are_vague(text):
    assert is_vague(text)


def test_self_contained_message_is_left_alone():
    text = "Where is the config for the billing service?"
    assert not is_vague(text)
    assert build_query(text, ["something earlier"]) == text
    assert build_query("  how   much? ", []) == "how much?"


def test_context_is_bounded():
    huge = "x" * 5000
    query = build_query("and that one?", [huge, huge])
    assert query.endswith("and that one?") and len(query) < 800


NOW = datetime(2023, 10, 1, tzinfo=UTC)


def _month(year: int, month: int) -> datetime:
    return datetime(year, month, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    "text,inside,outside",
    [
        ("Where did Joanna travel to in July 2022?", _month(2022, 7), _month(2023, 7)),
        ("When did Melanie go camping in June?", _month(2023, 6), _month(2022, 6)),  # latest June
        ("What happened on 31 October, 2022?", _month(2022, 11), _month(2022, 5)),  # slack after
        ("Which bugs did we fix in 2021?", _month(2021, 3), _month(2022, 6)),
        ("what did we decide last week?", NOW - timedelta(days=9), NOW - timedelta(days=60)),
    ],
)
def test_time_range_of_query(text, inside, outside):
    start, end = query_time_range(text, NOW)
    assert start <= inside < end
    assert not start <= outside < end


@pytest.mark.parametrize("text", ["May I ask something?", "How do I run the tests?", "mar is not a month here"])
def test_no_time_range_without_a_period(text):
    assert query_time_range(text, NOW) is None
