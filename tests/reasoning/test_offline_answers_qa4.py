"""A fourth QA review's labelled questions, asked through the whole engine.

Each was declined where the README promises an answer, or answered wrongly and approved, by
the build before its fix. Each class is tested on questions beyond the ones the fix was made
from.
"""

from __future__ import annotations

import re

import pytest

from reasoning.routing.router import Router
from reasoning.text import joined_lines
from tests.reasoning.test_offline_answers import answer_to


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("halve 77", "**38.5**"),
        ("Halve 3,478", "**1739**"),
        ("quadruple 12", "**48**"),
        ("what is 77 halved", "**38.5**"),
        ("what's 48 doubled", "**96**"),
        ("What's 12 tripled?", "**36**"),
        ("What is 1,200 halved?", "**600**"),
        ("Quadruple 2.5", "**10**"),
    ],
)
async def test_a_number_scaled_by_a_verb_is_computed(question, expected):
    """ "halve 77" and "48 doubled" were declined, though "double 48" and "half of 77" are
    answered."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    "question", ["10 + 5 doubled", "what is 6 * 7 halved", "10 plus 5 doubled", "what's 9 - 3 tripled"]
)
async def test_a_scaling_verb_after_a_calculation_is_never_approved_unread(question):
    """ "6 * 7 halved" was answered 42 and approved at 0.9: the verb was not read at all (the
    result, or the last number, halved is 21 or 24, and which is not said)."""
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.6, (result.quality, answer)


@pytest.mark.parametrize("question", ["Halve 3,478", "quadruple 2,500", "What is 1,250 halved?"])
def test_a_bare_calculation_with_a_scaling_verb_is_routed_direct(question):
    """ "Halve 3,478" was lifted to LIGHT (medium, 13% sure) by the complex guard."""
    decision = Router().route(question)
    assert decision.level.value == "simple" and decision.confidence >= 0.8, decision


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("By what percent did revenue grow from 1.2m to 1.5m?", "**25**"),
        ("revenue went from 200k to 150k, what's the percent drop?", "**25**"),
        ("what's the % increase from 40 to 50", "**25**"),
        ("By how many percent did the price rise from 80 to 92?", "**15**"),
        ("What percentage did our costs drop from $1,000 to $850?", "**15**"),
        ("Users went from 1,000 to 1,300 - what is the percentage growth?", "**30**"),
        ("By what percentage did headcount increase from 40 to 46?", "**15**"),
        ("traffic fell from 8k to 6k, what's the percentage decrease?", "**25**"),
    ],
)
async def test_a_percentage_change_in_other_words_is_computed(question, expected):
    """Each was declined ("needs a real language model"), though "the percentage increase
    from 80 to 100" is answered."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "zone"),
    [
        ("What time is it for our team in Bangalore?", "Asia/Kolkata"),
        ("What time is it at our office in Oslo?", "Europe/Oslo"),
        ("what time is it now for our colleagues in Manila", "Asia/Manila"),
        ("What's the time at our warehouse in Rotterdam?", "Europe/Amsterdam"),
    ],
)
async def test_the_time_where_the_team_works_is_told_and_approved(question, zone):
    """ "For our team in Bangalore" was told the right time and not approved (0.0: "our" made
    it a question for the team's documents); "at our office in Oslo" was "I don't know where
    “our office” is"."""
    result, answer = await answer_to(question)
    assert zone in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "zone"),
    [
        ("Tokyo time pls", "Asia/Tokyo"),
        ("time in Lisbon thx", "Europe/Lisbon"),
        ("Time in Seoul plz", "Asia/Seoul"),
        ("Paris time thank you", "Europe/Paris"),
    ],
)
async def test_a_short_time_ask_with_thanks_is_told(question, zone):
    """ "Tokyo time pls" was declined, though "Tokyo time please" is told."""
    result, answer = await answer_to(question)
    assert zone in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What time zone is Tokyo in?", "Asia/Tokyo, at UTC+09:00"),
        ("Which timezone does Chicago use?", "America/Chicago, at UTC-0"),
        ("What's the UTC offset of Mumbai?", "Asia/Kolkata, at UTC+05:30"),
        ("what is the time zone of Kathmandu", "Asia/Kathmandu, at UTC+05:45"),
        ("Which time zone is Reykjavik in?", "Atlantic/Reykjavik, at UTC+00:00"),
        # Where the team works: its city's zone (the documents are not needed for it).
        ("Which timezone is our Singapore office in?", "Asia/Singapore, at UTC+08:00"),
        ("What time zone are our Denver colleagues in?", "America/Denver, at UTC-0"),
    ],
)
async def test_a_places_time_zone_is_told_from_the_clock(question, expected):
    """Each was declined, though the clock names a place's zone and offset with its time."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("What time zone is Texas in?", "“Texas” keeps several time zones"),
        ("Which timezone does Birmingham use?", "“Birmingham” names more than one place"),
        ("what time zone is Atlantis in", "I don't know where “Atlantis” is"),
        ("What timezone should I store timestamps in?", "can't answer that offline"),
        ("How many time zones does Russia have?", "can't answer that offline"),
        ("Is Tokyo in the same time zone as Seoul?", "can't answer that offline"),
    ],
)
async def test_a_time_zone_the_clock_cannot_settle_is_not_guessed(question, said):
    """Once a place's time zone is told, a place of several zones, a name several places share
    or a place it does not know is said, as it is for the place's time (the first reading gave
    Texas Chicago's zone); a question about time zones in general names no place's zone."""
    _result, answer = await answer_to(question)
    assert said in answer and "from the clock" not in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Can you calculate 45*12 and also summarize our Q3 roadmap?", ["**540**"]),
        ("calculate 45*12 and then tell me the time in Paris", ["**540**", "Europe/Paris"]),
        ("what's 9*7 and also what time is it in Oslo", ["**63**", "Europe/Oslo"]),
        ("Work out 15% of 60 and also give me the time in Madrid", ["**9**", "Europe/Madrid"]),
    ],
)
async def test_a_part_before_and_also_keeps_no_dangling_and(question, expected):
    """ "Can you calculate 45*12 and also summarize…" was headed "**Can you calculate 45\\*12
    and?**": the split took "also" and left "and" on the part before it."""
    _result, answer = await answer_to(question)
    assert all(value in answer for value in expected), answer
    assert not re.search(r"\b(?:and|also|then)[?.]\*\*", answer), answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Calculate: 1) 5+5 2) 6*6 3) 100/4", ["**10**", "**36**", "**25**"]),
        ("Calculate:\n1) 5+5\n2) 6*6\n3) 100/4", ["**10**", "**36**", "**25**"]),
        ("Two things: (1) 12*12, (2) the time in Lima", ["**144**", "America/Lima"]),
        ("a) 3+4 b) 9*9", ["**7**", "**81**"]),
        ("1. What is 5+5? 2. What is 6*6?", ["**10**", "**36**"]),
        ("Quick questions: 1) what's 15% of 80 2) what time is it in Denver", ["**12**", "America/Denver"]),
        ("Please compute the following:\n1. 12*12\n2. 7*8", ["**144**", "**56**"]),
    ],
)
async def test_items_listed_inside_a_line_are_asks_of_their_own(question, expected):
    """ "Calculate: 1) 5+5 2) 6*6 3) 100/4" was answered "I can't compute `1)*5+5`"; "(1) 12*12"
    was computed as (1)*12*12; "1. What is 5+5? 2. …" was headed "What is 5+5: 2?"; and the
    list's lead-in ("Calculate:") was a part no answer covered, so right answers scored 0.68."""
    result, answer = await answer_to(question)
    assert all(value in answer for value in expected) and result.quality >= 0.9, (result.quality, answer)
    assert not re.search(r"\(\d\)|\b\d\)|: \d\?", answer), answer


@pytest.mark.parametrize(
    "question",
    ["Calculate: 1) 5+5 2) 6*6 3) 100/4", "a) 3+4 b) 9*9", "Two things: (1) 12*12, (2) the time in Lima"],
)
def test_items_listed_inside_a_line_are_routed_as_several_asks(question):
    decision = Router().route(question)
    assert decision.level.value == "medium" and "Calculate" not in decision.reading.asks, decision


@pytest.mark.parametrize("question", ["It costs 1. Then 2. okay", "What is 1.5 + 2.5?", "I have 2) apples"])
def test_numbers_that_are_no_list_markers_stay_in_the_text(question):
    assert joined_lines(question) == question


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is 15% of 2,340 and what is 2,340 minus that?", ["**351**", "**1989**"]),
        ("what's 3+4, and what is that times 10?", ["**7**", "**70**"]),
        ("What's 12*12? And what's that divided by 4?", ["**144**", "**36**"]),
        ("what is 100/4, and what is the result squared?", ["**25**", "**625**"]),
        ("What is 20% of 150? What's 150 minus that?", ["**30**", "**120**"]),
        ("What is 250 divided by 5, and what is that plus 8?", ["**50**", "**58**"]),
        ("What's 9 squared? What's 100 minus the result?", ["**81**", "**19**"]),
    ],
)
async def test_a_part_that_computes_with_the_result_before_it_is_computed(question, expected):
    """ "…and what is 2,340 minus that?" was declined ("needs a real language model") beside
    the first part's answer, and approved at 0.7."""
    result, answer = await answer_to(question)
    assert all(value in answer for value in expected) and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    "question",
    ["What is 5+5 and what is it used for?", "What is 6*7, and why is that the answer to everything?"],
)
async def test_it_or_that_without_an_operation_is_not_the_result_before(question):
    _result, answer = await answer_to(question)
    assert "can't answer that offline" in answer and answer.count("(computed with the calculator)") == 1, (
        answer
    )


@pytest.mark.parametrize(
    "question",
    [
        "What time is it in Cairo and Istanbul?",
        "time in Tokyo, Seoul and Manila",
        "What's the time in Nairobi and in Lagos right now?",
        "Current time in Denver and Phoenix?",
    ],
)
def test_the_time_of_several_places_is_routed_as_several_lookups(question):
    """ "What time is it in Cairo and Istanbul?" was routed DIRECT (simple, 83% sure), while two
    calculations ("What's 15% of 200 and 20% of 300?") route LIGHT: a clock call per place."""
    assert Router().route(question).level.value == "medium"


@pytest.mark.parametrize(
    "question",
    [
        "What's the time difference between Lisbon and Warsaw?",
        "How many hours ahead is Tokyo of London right now?",
        "What time is it in Tokyo?",
        "what time is it in Paris Texas",
    ],
)
def test_one_places_time_or_a_difference_between_two_stays_direct(question):
    assert Router().route(question).level.value == "simple"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what is the square root of 2 to 3 decimal places", "**1.414**"),
        ("square root of 2 rounded to 3 decimals", "**1.414**"),
        ("what's the natural log of 10 to 4 decimal places", "**2.3026**"),
        ("What is the square root of 7 rounded to 1 decimal place?", "**2.6**"),
    ],
)
async def test_a_function_of_a_number_then_rounded_is_computed(question, expected):
    """ "The square root of 2 to 3 decimal places" was declined, though "the square root of 10,
    to 2 decimal places" (with a comma) was answered: the reading wrote "sqrt(2)to 3 …"."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("waht is 12 tims 12", "**144**"),
        ("what is 100 devided by 4", "**25**"),
        ("5 multipled by 3", "**15**"),
        ("10 minsu 2", "**8**"),
        ("whats 15 precent of 200", "**30**"),
        ("what is 9 multiplyed by 9", "**81**"),
        ("what is 3 pluss 4", "**7**"),
        ("How much is 64 divded by 8?", "**8**"),
    ],
)
async def test_an_operator_word_with_a_typo_between_numbers_is_read(question, expected):
    """Each was declined ("needs a real language model"): one letter wrong, missing, extra or
    two swapped in the operator's word between two numbers."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, (result.quality, answer)


@pytest.mark.parametrize(
    "question",
    ["I have 10 tiles 5 cm wide", "We sold 10 plums 5 days ago", "What is 15 divided by 4, rounded?"],
)
async def test_a_word_that_only_looks_like_a_slip_is_not_an_operator(question):
    _result, answer = await answer_to(question)
    assert "`10 * 5`" not in answer and "`10 + 5`" not in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("I need 15% of 80, can you help?", "**12**"),
        ("What's 20% of 50, do you know?", "**10**"),
        ("Work out 10% of 250, thanks", "**25**"),
        ("What is a quarter of 200, quickly?", "**50**"),
    ],
)
async def test_a_clause_after_the_number_is_not_read_as_its_unit(question, expected):
    """A web review's: "I need 15% of 80, can you help?" was answered 12 and flagged "Low
    confidence (quality 0.00)": the check read "80, can" as 80 of some unit it had not
    computed. A comma ends the number; the words after it are another clause."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9 and result.kind != "low_confidence", (
        result.quality,
        answer,
    )


@pytest.mark.parametrize(
    "question",
    [
        "what did you just say?",
        "Why?",
        "Are you sure?",
        "explain your answer",
        "What do you mean by your last reply?",
        "how so?",
    ],
)
async def test_a_question_about_the_last_answer_is_told_to_ask_in_full(question):
    """A web review's: "what did you just say?", "Why?" or "Are you sure?" after an answer got
    only "needs a real language model", while "can you repeat that?" was told that offline each
    message is read on its own. They lean on the last answer just the same."""
    _result, answer = await answer_to(question)
    assert "each message is read on its own" in answer and "ask it in full" in answer, answer


@pytest.mark.parametrize(
    "question",
    [
        "Why is the sky blue?",
        "Are you sure the VPN password rotates every 90 days?",
        "Explain recursion",
        "What do you mean by recursion?",
    ],
)
async def test_a_whole_question_with_why_or_explain_is_not_a_follow_up(question):
    _result, answer = await answer_to(question)
    assert "read on its own" not in answer, answer


PASTED_EMAIL = (
    "Summarize this email for me:\n\nHi team,\nThe migration to the new billing system is "
    "scheduled for next Tuesday. Please make sure all invoices are closed by Monday evening. "
    "Support will be on standby from 6am.\nThanks, Dana"
)


@pytest.mark.parametrize(
    "question",
    [
        PASTED_EMAIL,
        "Summarize this:\n\n" + "The quarterly report shows revenue rising in every region. " * 40,
    ],
)
async def test_pasted_text_the_offline_model_cannot_work_on_gets_one_plain_decline(question):
    """A web review's: a pasted email to summarise was planned DEEP and answered sentence by
    sentence, each a bold heading over "I can't answer that offline: 'Please make sure all
    invoices are closed…' needs a real language model", as if each line of the email were a
    question; pasted text alone got its first sentence as a heading over the same decline."""
    _result, answer = await answer_to(question)
    assert "**" not in answer, answer
    assert answer.count("can't answer that offline") == 1, answer
    assert "invoices" not in answer, answer
