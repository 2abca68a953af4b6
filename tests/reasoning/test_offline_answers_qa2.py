"""A second QA review's labelled questions, asked through the whole engine.

Each was answered wrongly and approved by the build before its fix, or declined where the
README promises an answer.
"""

from __future__ import annotations

import re
from datetime import date

import pytest

from tests.reasoning.test_offline_answers import answer_to


@pytest.mark.parametrize(
    "question",
    [
        "what's 5 plus 3 minus tax",
        "what's 50 times 2 plus fees",
        "what's 10 percent of 50 plus 5 percent of 20 minus tax",
        "12 * 4 + shipping?",
    ],
)
async def test_an_operation_on_a_word_is_not_dropped_from_an_approved_answer(question):
    """Each was read without its last operand ("5 plus 3 minus tax" as 5 + 3 = 8) and approved
    at 0.90-0.95."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("twelve times twelve", "**144**"),
        ("what is 10 plus twenty", "**30**"),
        ("whats 9 plus 10 lol", "**19**"),
    ],
)
async def test_number_words_and_remarks_after_a_calculation_still_approve(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    "question", ["time in 90210", "what time is it in 221B Baker Street", "what's the time at 10001?"]
)
async def test_a_place_named_by_its_number_gets_no_utc_time(question):
    """Each was answered with UTC's time, approved at 0.90-0.95, as if no place had been named."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)
    assert "UTC (ISO" not in answer, answer


async def test_a_format_after_a_place_is_no_numbered_place():
    result, answer = await answer_to("what's the time in london in 24h format")
    assert "Europe/London" in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize("question", ["what week number is it", "what week is it"])
async def test_the_week_asked_is_said_not_only_the_date(question):
    """Each was answered with the clock's date alone, no week in it, and approved at 0.95."""
    _result, answer = await answer_to(question)
    iso = re.search(r"ISO (\d{4}-\d\d-\d\d)T", answer)
    assert iso, answer
    year, week, _ = date.fromisoformat(iso[1]).isocalendar()
    assert f"ISO week {week} of {year}" in answer, answer


@pytest.mark.parametrize(
    "question", ["version 2.0 - 1.9", "version 3 + 1", "Python 3.12 - 3.11", "room 101 + 1"]
)
async def test_a_number_in_a_name_is_not_computed(question):
    """A version, a room: "version 2.0 - 1.9" was computed as 0.1 and approved at 0.90."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)
    assert "calculator" not in answer, answer


async def test_the_same_numbers_asked_as_a_calculation_are_computed():
    result, answer = await answer_to("what is 2.0 - 1.9")
    assert "**0.1**" in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "zone"),
    [
        ("time in Portland ME", "America/New_York"),
        ("time in London ON", "America/Toronto"),
        ("time in London, ON", "America/Toronto"),
        ("time in Sydney NS", "America/Halifax"),
        ("time in Winnipeg MB", "America/Winnipeg"),
        ("time in Perth WA", "Australia/Perth"),
        ("what time is it in LA", "America/Los_Angeles"),
    ],
)
async def test_a_state_or_province_code_after_a_city_says_which_place(question, zone):
    """ "Portland ME" was told Portland, Oregon's time, "London ON" London, England's and
    "Sydney NS" Sydney, Australia's, each approved at 0.90: the code without a comma was
    dropped."""
    result, answer = await answer_to(question)
    assert zone in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    "question", ["sqrt of 3 squared + 4 squared", "cube root of 27 + 5", "Cube root of 64 plus 1"]
)
async def test_a_root_of_a_sum_or_of_its_first_number_is_not_guessed(question):
    """ "sqrt of 3 squared + 4 squared" was sqrt(3^2) + 4^2 = 19 and "cube root of 27 + 5" was
    3 + 5, each approved at 0.90; whether the root is of the sum is not said."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"), [("(cube root of 27) + 5", "**8**"), ("What is the cube root of 512?", "**8**")]
)
async def test_a_root_said_in_full_is_still_approved(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


async def test_sum_of_a_range_without_of_is_the_range():
    """ "sum 1 to 10" was 1 + 10 = 11, approved at 0.90."""
    result, answer = await answer_to("sum 1 to 10")
    assert "**55**" in answer and result.quality >= 0.9, (result.quality, answer)
    result, answer = await answer_to("add 3 to 5")
    assert "**8**" in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize("question", ["what's 3 plus 4 times", "what's 6 minus 2 divided by"])
async def test_an_operation_with_nothing_after_it_is_not_approved(question):
    """ "what's 3 plus 4 times" was read as 3 + 4 = 7 and approved at 0.90."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize("question", ["time in tokyo at 3:30", "what time is it in Tokyo at 17:00"])
async def test_the_time_at_another_moment_is_not_the_present_time(question):
    """ "time in tokyo at 3:30" was told Tokyo's present time, approved at 0.95."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    "question", ["time?", "whats the time", "got the time?", "the time pls", "whats the date"]
)
async def test_the_time_asked_in_passing_is_told(question):
    """Each was declined ("needs a real language model"), though the README promises the time."""
    result, answer = await answer_to(question)
    assert "UTC (ISO" in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize("question", ["whats the time complexity of quicksort", "time flies"])
async def test_time_in_other_senses_is_not_told(question):
    _result, answer = await answer_to(question)
    assert "from the clock" not in answer, answer


@pytest.mark.parametrize("question", ["yo", "g'day mate", "hey there 👋", "namaste"])
async def test_everyday_greetings_are_greeted(question):
    """Each was declined as needing a language model."""
    result, answer = await answer_to(question)
    assert answer.startswith("Hello!") and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("₹2,50,000 / 5", "**50000**"),
        ("what's 15% of 2,50,000", "**37500**"),
        ("what's 12,34,567 + 1", "**1234568**"),
        ("what's 1 lakh times 3", "**300000**"),
        ("25% of 1 crore", "**2500000**"),
        ("√49", "**7**"),
        ("what's √(16+9)", "**5**"),
        ("what's 1,5 + 2,5 + 3", "**7**"),
        ("average of 2,3,4", "**3**"),
    ],
)
async def test_indian_digit_groups_lakh_crore_and_the_root_sign_are_read(question, expected):
    """ "25% of 1 crore" was 0.25 and "√(16+9)" was 25, each approved at 0.90; "₹2,50,000 / 5"
    was 50000 / 5 (shown under a note); "1 lakh" and "√49" were declined."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    "question", ["10% of 5 grand", "25% of 2 mil", "half of 2 score", "20% of 3 gazillion"]
)
async def test_a_word_after_the_number_a_share_is_of_is_not_dropped(question):
    """Each was read without the word after its last number ("10% of 5 grand" as 0.5) and
    approved at 0.90-0.95."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("split the bill of 250 between 8", "**31.25**"),
        ("what's 10% of 4 thousand", "**400**"),
        ("18% of 45 dollars", "**8.1**"),
        ("What percentage is 45 of 180?", "**25**"),
    ],
)
async def test_a_known_word_after_the_number_still_approves(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("¥1,200 split between 4", "**300**"),
        ("tip on 60 at 18 percent", "**10.8**"),
        ("whats 1/2", "**0.5**"),
    ],
)
async def test_splits_and_tips_with_the_amount_first_and_whats_are_read(question, expected):
    """Each was declined as needing a language model, though the README promises splits, tips
    and arithmetic in symbols."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


async def test_a_split_with_more_after_it_is_still_not_guessed():
    result, answer = await answer_to("600 split between 3 with a 10% tip")
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"), [("what is 10 percent of -50", "**-5**"), ("10% of -50", "**-5**")]
)
async def test_a_share_of_a_negative_number_is_read(question, expected):
    """Each was declined as needing a language model."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"), [("what's UTC+5:30 now", "+05:30"), ("UTC-3 time", "-03:00")]
)
async def test_an_offset_asked_before_time_or_now_is_told(question, expected):
    """Each was declined as needing a language model, though the README promises offsets."""
    result, answer = await answer_to(question)
    assert f"{expected})" in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [("percent decrease from 200 to 150", "**25**"), ("what % is 7 of 28", "**25**")],
)
async def test_a_percent_decrease_and_a_percent_sign_in_what_percent_are_read(question, expected):
    """Each was declined as needing a language model."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)
