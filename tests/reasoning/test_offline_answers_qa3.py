"""A third QA review's labelled questions, asked through the whole engine.

Each was answered wrongly and approved by the build before its fix, or declined where the
README promises an answer.
"""

from __future__ import annotations

import pytest

from reasoning.llm.offline import covers
from tests.reasoning.test_offline_answers import answer_to


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("whats 100/4 and the time in tokyo", ["**25**", "Asia/Tokyo"]),
        ("100/4 and the time in Paris", ["**25**", "Europe/Paris"]),
    ],
)
async def test_a_calculation_beside_the_time_is_answered_not_dropped(question, expected):
    """Answered with Tokyo's time alone ("100/4" was taken for a date) and approved at 0.95."""
    result, answer = await answer_to(question)
    assert all(value in answer for value in expected) and result.quality >= 0.9, (result.quality, answer)


async def test_a_time_answer_that_leaves_out_written_arithmetic_is_not_approved():
    result, answer = await answer_to("what is 2024-03-15 and the time in Paris")
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "zone", "other"),
    [
        ("what time is it in Paris Texas", "America/Chicago", "Europe/Paris"),
        ("what time is it in Portland Maine", "America/New_York", "America/Los_Angeles"),
        ("what time is it in salt lake city utah", "America/Denver", None),
    ],
)
async def test_a_state_after_a_place_without_a_comma_says_which_place(question, zone, other):
    """ "Paris Texas" was told Paris, France's time and Chicago's, approved at 0.9."""
    result, answer = await answer_to(question)
    assert zone in answer and result.quality >= 0.9, (result.quality, answer)
    assert other is None or other not in answer, answer


@pytest.mark.parametrize(
    "question",
    ["what time is it in the morning", "what time is it in Tokyo in the evening", "what time is it at night"],
)
async def test_a_time_of_day_is_no_place_and_gets_no_present_time(question):
    """ "In the morning" was no place, so UTC's present time was given, approved at 0.9."""
    _result, answer = await answer_to(question)
    assert "(from the clock)" not in answer and "can't answer that offline" in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what time is it in pacific standard time", "PST (UTC-08:00)"),
        ("what time is it in eastern standard time", "EST (UTC-05:00)"),
        ("what time is it in british summer time", "BST (UTC+01:00)"),
        ("what time is it in central european time", "CET (UTC+01:00)"),
        ("time in Japan Standard Time", "JST (UTC+09:00)"),
        ("what time is it in Atlantic time", "America/Halifax"),
    ],
)
async def test_a_zone_written_out_in_full_is_told_its_time(question, expected):
    """Each was "I don't know where “pacific standard time” is", though "PST" and "Eastern time"
    are told."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "zone"),
    [("what time is it in DC", "America/New_York"), ("what hour is it in Paris", "Europe/Paris")],
)
async def test_short_names_and_asking_the_hour_are_told_the_time(question, zone):
    """Each was declined ("I don't know where “DC” is", "needs a real language model")."""
    result, answer = await answer_to(question)
    assert zone in answer and result.quality >= 0.9, (result.quality, answer)


async def test_an_hour_asked_for_another_moment_is_not_the_present():
    _result, answer = await answer_to("what hour does the bank open")
    assert "(from the clock)" not in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("round 123.456 to the nearest ten", "**120**"),
        ("round 2.5 to the nearest whole number", "**3**"),
        ("what is 7.5 rounded", "**8**"),
        ("what is 1234 rounded to the nearest hundred", "**1200**"),
        ("what is 0.125 rounded to 2 decimals", "**0.13**"),
        ("round 7.2 up", "**8**"),
        ("round 7.8 down", "**7**"),
    ],
)
async def test_one_number_rounded_is_computed(question, expected):
    """Each was declined: the reader looked for an operator, and one number has none."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"), [("what is 17 * 23 rounded", "**391**"), ("what is 5 - 2.5 rounded", "**3**")]
)
async def test_a_calculation_rounded_is_rounded_whole_not_its_last_number(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("5 times the difference of 10 and 4", "**30**"),
        ("average of 10, 20", "**15**"),
        ("split a $250 bill 4 ways", "**$62.50**"),
        ("add 7% sales tax to $200", "**$214**"),
        ("what's 0.45 as a percentage", "**45**"),
        ("what's 0.125 in percent", "**12.5**"),
    ],
)
async def test_everyday_variants_of_promised_phrasings_are_computed(question, expected):
    """Each was declined, though "the difference between", "the average of 4, 8 and 15",
    "split 84 four ways", "add 8% tax to 45" and "3/4 as a percentage" are read."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize("question", ["average of 10,20", "what is 5 in percent of 20"])
async def test_a_reading_that_would_be_a_guess_is_left_unread(question):
    """ "10,20" may be a decimal comma; "5 in percent of 20" is no share of 5."""
    _result, answer = await answer_to(question)
    assert "computed with the calculator" not in answer, answer


@pytest.mark.parametrize(
    "question", ["what time is it in Pensacola Florida", "what time is it in Lubbock Texas"]
)
async def test_a_state_of_several_zones_after_an_unknown_city_is_no_guess(question):
    """ "Pensacola Florida" was told New York's time (Pensacola keeps Central), approved at 0.95;
    "Pensacola, Florida" was already "I don't know where"."""
    result, answer = await answer_to(question)
    assert "(from the clock)" not in answer and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "zone"),
    [
        ("what time is it in El Paso Texas", "America/Denver"),
        ("what time is it in Tulsa Oklahoma", "America/Chicago"),
    ],
)
async def test_a_known_city_or_a_state_of_one_zone_is_still_told(question, zone):
    result, answer = await answer_to(question)
    assert zone in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("round 12345 to the nearest thousand", "**12000**"),
        ("what's 17*230 rounded to the nearest thousand", "**4000**"),
        ("what hour is it in Tokyo now", "Asia/Tokyo"),
    ],
)
async def test_right_answers_are_approved_whatever_word_says_the_place_or_the_hour(question, expected):
    """Each was right but scored 0: "the nearest thousand" was read as unread words (only
    "ten" and "hundred" were known there), and "what hour" was no time question to the check."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(("question", "offset"), [("gmt+8 time", "+08:00)"), ("GMT +5.5 time", "+05:30)")])
async def test_an_offset_asked_before_time_is_approved(question, offset):
    """Told right but scored 0: without "what time" the check judged it by its words, and "gmt"
    is not in "UTC+08:00"."""
    result, answer = await answer_to(question)
    assert offset in answer and result.quality >= 0.9, (result.quality, answer)


async def test_a_calculation_among_three_asks_is_answered_not_dropped():
    """ "3+3" (one word) was left out of the light plan, and the answer approved at 0.95: the
    check found its 6 inside "2026"."""
    result, answer = await answer_to("what's 2+2 and 3+3 and what time is it in Paris")
    assert all(v in answer for v in ("**4**", "**6**", "Europe/Paris")) and result.quality >= 0.9, answer


def test_a_value_inside_another_number_does_not_cover_a_calculation():
    told = "It is Saturday 28 November 2026, 12:04:16 Europe/Paris (ISO 2026-11-28T12:04:16+01:00)."
    assert not covers("3+3", told)
    assert covers("3+3", "`3+3` = **6**.") and not covers("3+3", "`3.5+3` = **6.5**.")


async def test_three_percentages_in_a_list_are_each_answered():
    """ "20% of 300" was left out (the answer scored 0.45): a comma split only before an operator."""
    result, answer = await answer_to("what's 10% of 200, 20% of 300 and 30% of 400")
    assert all(v in answer for v in ("**20**", "**60**", "**120**")) and result.quality >= 0.9, answer


async def test_a_number_of_a_phrase_is_not_read_alone():
    """ "1 in 3 as a percentage" was read as 3 as a percentage: 300 (not approved, but shown)."""
    _result, answer = await answer_to("what's 1 in 3 as a percentage")
    assert "computed with the calculator" not in answer, answer


async def test_two_numbers_before_a_percent_sign_are_no_average():
    result, answer = await answer_to("what's the average of 10, 20% of 50")
    assert "**15**" not in answer and result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize("question", ["what time is it in Tokyo +2", "what time is it in Tokyo + 2"])
async def test_a_number_added_to_a_place_is_not_answered_with_its_present_time(question):
    """Tokyo's present time was given, the "+2" left out, approved at 0.95."""
    _result, answer = await answer_to(question)
    assert "(from the clock)" not in answer, answer


@pytest.mark.parametrize(
    ("question", "offset"),
    [("What time is it at +03:00?", "+03:00)"), ("what's the time in UTC +3", "+03:00)")],
)
async def test_an_offset_written_with_a_plus_is_still_told(question, offset):
    result, answer = await answer_to(question)
    assert offset in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what's three fourths of twelve", "**9**"),
        ("what is 3 tenths of 50", "**15**"),
        ("what is 5 less than 20", "**15**"),
        ("what is 5 more than 20", "**25**"),
    ],
)
async def test_parts_and_differences_in_words_are_computed(question, expected):
    """Each was declined, though "three quarters of 48" and "20 percent more than 60" are read."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


async def test_a_comparison_asked_yes_or_no_is_not_computed():
    _result, answer = await answer_to("is 5 less than 20?")
    assert "computed with the calculator" not in answer, answer


async def test_a_place_left_untold_is_not_approved():
    """Four times were told and New York's left out (four calls are foreseen at most), approved at 0.95."""
    result, answer = await answer_to("what time is it in Paris, London, Tokyo, Sydney and New York")
    assert "America/New_York" in answer or result.quality < 0.7, (result.quality, answer)


async def test_a_factorial_before_more_of_the_sentence_is_read_whole():
    """ "what's 5! in binary" was cut at "5!" into "what's 5", answered 120 and approved at 0.95."""
    result, answer = await answer_to("what's 5! in binary")
    assert result.quality < 0.7, (result.quality, answer)


@pytest.mark.parametrize(
    "question", ["what time is it in Tokyo in 2 years", "what time is it in London during summer"]
)
async def test_a_time_in_years_or_a_season_is_not_the_present(question):
    """Each was told the present time, approved at 0.9-0.95."""
    _result, answer = await answer_to(question)
    assert "(from the clock)" not in answer, answer
