"""Labelled questions the offline model is meant to handle, asked through the whole engine.

Each was answered wrongly with a confident score (0.90–0.95) by an earlier build: a number
read out of the middle of another ("1e3 + 1" as 3 + 1), words that change the result
ignored ("then doubled"), questions after commas or beside a remark merged or answered as
questions, one of two places dropped, an unknown place given UTC's time, binary rounding
noise shown as the result. An answer must hold the right value; where the model cannot know,
it must say so instead of answering something else.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from reasoning import AdaptiveReasoningLoop, ListSink, ReasoningConfig
from reasoning.llm.offline import OfflineClient
from reasoning.text import keywords, search_hit, stem
from reasoning.tools.builtin import calculator
from reasoning.tools.local import LocalToolProvider, builtin_provider
from reasoning.tools.registry import ToolRegistry


async def answer_to(question: str):
    engine = AdaptiveReasoningLoop(
        OfflineClient(), ToolRegistry([builtin_provider()]), ReasoningConfig.from_env({}, provider="offline")
    )
    result = await engine.run(question, sink=ListSink())
    return result, result.answer.split("\n\n---")[0]


ARITHMETIC = [
    # Asked in words: each was declined ("needs a real language model").
    ("What is seven times eight?", ["**56**"]),
    ("Divide 100 by 8", ["**12.5**"]),
    ("Add 0.1 and 0.2", ["**0.3**"]),
    ("What is the sum of 7 and 8?", ["**15**"]),
    ("Half of 3,478", ["**1739**"]),
    ("What is a third of 99?", ["**33**"]),
    ("What is 9 factorial?", ["**362880**"]),
    ("Calculate 5!", ["**120**"]),
    ("What is 10 to the 3rd power?", ["**1000**"]),
    ("What percentage is 45 of 180?", ["**25**"]),
    ("Increase 80 by 15%", ["**92**"]),
    ("Subtract 7 from 20", ["**13**"]),
    ("What is one hundred and five plus twenty-two?", ["**127**"]),
    ("What is the cube root of 512?", ["**8**"]),
    # A phrase inside another: each was read without its brackets and approved wrong
    # ("3 times the sum of 4 and 5" = 3 * 4 + 5 = 17), or "negative" dropped (-7 * 4 = 28).
    ("What is 3 times the sum of 4 and 5?", ["**27**"]),
    ("What is twice the sum of 3 and 4?", ["**14**"]),
    ("What is 10 minus the sum of 2 and 3?", ["**5**"]),
    ("Subtract 3 from the product of 4 and 5", ["**17**"]),
    ("Triple the sum of 2 and 3", ["**15**"]),
    ("Square the sum of 2 and 3", ["**25**"]),
    ("What is half of the sum of 10 and 20?", ["**15**"]),
    ("What is 7 divided by the sum of 3 and 4?", ["**1**"]),
    ("Divide the sum of 10 and 20 by 5", ["**6**"]),
    ("What is negative seven times four?", ["**-28**"]),
    ("Negative five plus three?", ["**-2**"]),
    # A number's scale word was dropped: "25% of 10k" answered 2.5 and approved at 0.90.
    ("What's 25% of 10k?", ["**2500**"]),
    ("What is 30% of 1.5 million?", ["**450000**"]),
    ("What is 2.5 billion / 1000?", ["**2500000**"]),
    ("What is 1e3 + 1?", ["**1001**"]),
    ("What is 1 000 000 + 1?", ["**1000001**"]),
    ("What is 50% of 50% of 80?", ["**20**"]),
    ("What's 3 plus 4, then doubled?", ["**14**"]),
    ("What is 3/4 as a percentage?", ["**75**"]),
    ("How much is 1/7 rounded to 3 decimals?", ["**0.143**"]),
    ("What is 10 divided by 4, rounded to the nearest whole number?", ["**3**"]),
    ("What is 0.1+0.2?", ["**0.3**"]),
    ("What is 1.1 * 3?", ["**3.3**"]),
    ("What is (-3)^2?", ["**9**"]),
    ("I love pizza. What is 2+2?", ["**4**"]),
    ("What is 1+1, what is 2+2, what is 3+3 and what is 4+4?", ["**2**", "**4**", "**6**", "**8**"]),
    # Found by a reviewer's labelled questions: a percentage added or taken off, a decimal
    # comma, rounding asked for in other words, a product written without its sign.
    ("What is 120 minus 15 percent?", ["**102**"]),
    ("What is 1000 - 10%?", ["**900**"]),
    ("What is 200 plus 15%?", ["**230**"]),
    ("What is 1,5 + 1,5?", ["**3**"]),
    ("What is 2,5 + 1,5?", ["**4**"]),
    ("What is 100 / 7 to 3 decimal places?", ["**14.286**"]),
    ("What is 100 / 3 to two decimal places?", ["**33.33**"]),
    ("What is 15 divided by 4, rounded?", ["**4**"]),
    ("What is 7 divided by 2, rounded down?", ["**3**"]),
    ("What is 7 divided by 2, rounded up?", ["**4**"]),
    ("What is 2(3+4)?", ["**14**"]),
    ("What is 10% of 50 and 20% of 80?", ["**5**", "**16**"]),
    ("What is 3*4 and 5*6?", ["**12**", "**30**"]),
    (
        "Research and compare: what is 12 * 450, what is 15% of 5400, and what time is it in London?",
        ["**5400**", "**810**", "Europe/London"],
    ),
    # A labelled-question review: rounding to a place value left unread (391 for "to the
    # nearest hundred"), an operation after "then" other than the ones read before.
    ("What is 17*23 rounded to the nearest hundred?", ["**400**"]),
    ("What is 1234 + 1 rounded to the nearest ten?", ["**1240**"]),
    ("6 plus 4, then times 3", ["**30**"]),
    # A second review: everyday shares declined as needing a language model, and an average
    # of four numbers written with commas alone.
    ("What's a 15% tip on 84?", ["**12.6**"]),
    ("Add 8% tax to 45", ["**48.6**"]),
    ("Split 240 between 6 people", ["**40**"]),
    ("Split 84 four ways", ["**21**"]),
    ("What is the average of 10, 20, 30, 40?", ["**25**"]),
    # A third review: each was answered wrong, most of them approved ("9 times 9!" as 9 × 9
    # factorial, "-5 squared" as -25, "(-8)^(1/3)" as a complex number, "the square root of
    # the sum of 16 and 9" as garbled code, "log of 100" as the natural log), or read in part
    # under a low-confidence note (a comma before "plus 12" ended the sum).
    ("What is 9 times 9!", ["**81**"]),
    ("What is 100 plus 50!", ["**150**"]),
    ("What is 9 times 9!!!", ["**81**", "calculator"]),
    ("What is 5! / 3!", ["**20**"]),
    ("What is negative five squared?", ["**25**"]),
    ("What is -5 squared?", ["**25**"]),
    ("What is 10 - 5 squared?", ["**-15**"]),
    ("What is (-8)^(1/3)?", ["**-2**"]),
    ("What is the square root of the sum of 16 and 9?", ["**5**"]),
    ("What's the log of 100?", ["**2**"]),
    ("What is log(100)?", ["natural logarithm"]),
    ("What is sin(30)?", ["radians"]),
    ("What is 15% of 80, plus 12?", ["**24**"]),
    ("What is 15% of (80 + 12)?", ["**13.8**"]),
    ("What is the remainder of 17 divided by 5?", ["**2**"]),
    ("What is 17 % 5?", ["**2**"]),
    ("What is the average of 3 and 4 and 5?", ["**4**"]),
    ("What's 2+2, 3+3 and 4+4?", ["**4**", "**6**", "**8**"]),
    ("What is 10% of the sum of 100 and 200?", ["**30**"]),
    ("What's 3 to the power of 4, divided by 9?", ["**9**"]),
    # Amounts in one currency: the result is said in it (each was declined, or shown as a bare
    # number under a low-confidence note). A ratio of amounts is a plain number.
    ("€10 * 3", ["**€30**"]),
    ("What is 18% of 45 dollars?", ["**$8.10**"]),
    ("18% tip on $62.50", ["**$11.25**"]),
    ("Split a $90 bill among 4 friends", ["**$22.50**"]),
    ("Tip of 15% on a $40 bill", ["**$6**"]),
    ("What is 5% of $1,000?", ["**$50**"]),
    ("What percentage is $45 of $180?", ["**25**"]),
    # Finer than a cent: in cents, said to be rounded (was "$33.3333333333333"); under a cent as it is.
    ("Split $100 among 3", ["**about $33.33**"]),
    ("Split 100 euros between 3 people", ["**about €33.33**"]),
    ("What is 0.6% of $1?", ["**$0.006**"]),
    # Phrasings the README's claims cover, each declined.
    ("80 increased by 15%", ["**92**"]),
    ("200 less 15%", ["**170**"]),
    ("120 after a 25% discount", ["**90**"]),
    ("What percent of 80 is 20?", ["**25**"]),
    ("Round 3.14159 to 2 decimal places", ["**3.14**"]),
    ("A fifth of 45", ["**9**"]),
    ("Cube 3", ["**27**"]),
    ("17X23", ["**391**"]),
    ("A dozen times 3", ["**36**"]),
    # A power shown as people write it, not as Python's "**" (a newcomer's review).
    ("What is 5 plus 3, then squared?", ["`(5 + 3)^2`", "**64**"]),
    # A second look at those changes: each of these was approved wrong, or shown wrong under
    # a low-confidence note.
    ("What is the natural log of 10?", ["**2.30258509299405**"]),
    ("What is the binary log of 8?", ["**3**"]),
    ("log100", ["**2**"]),
    ("What is the square of -3?", ["**9**"]),
    ("Square negative 6", ["**36**"]),
    ("What is -3 to the power of 2?", ["**9**"]),
    ("What is -1 to the power of 100?", ["**1**"]),
    ("What is 10 - 3 to the power of 2?", ["**1**"]),
    ("What is the sum of 1 to 100?", ["**5050**"]),
    ("A baker's dozen times 2", ["**26**"]),
    ("What is 2 dozen plus 5?", ["**29**"]),
    ("What is 5 plus 3, squared?", ["**64**"]),
    ("What is 7 plus 3, times 2?", ["**20**"]),
    ("What is 3 times 4! Thanks", ["**12**"]),
    ("Add 3 and 4 and 5", ["**12**"]),
    ("What's the sum of 3 and 4 and 5?", ["**12**"]),
    ("Multiply 3 and 4 and 5", ["**60**"]),
    ("What's the fifth root of -32?", ["**-2**"]),
    ("4th root of 16", ["**2**"]),
    ("5x5x5", ["**125**"]),
    ("5²", ["**25**"]),
    ("What is $10 - $20?", ["**-$10**"]),
    ("What's $0.005 + $0.001?", ["**$0.006**"]),
]


@pytest.mark.parametrize(("question", "expected"), ARITHMETIC, ids=[q for q, _ in ARITHMETIC])
async def test_each_value_asked_for_is_in_the_answer(question, expected):
    result, answer = await answer_to(question)
    assert all(value in answer for value in expected), answer
    assert result.quality is not None and result.quality >= 0.9, (result.quality, answer)
    assert "can't answer" not in answer, "no part of it is a remark answered as a question"


PLACES = [
    ("What time is it in São Paulo?", ["America/Sao_Paulo"]),
    ("What time is it in Kathmandu?", ["Asia/Kathmandu"]),
    ("What time is it in Zurich?", ["Europe/Zurich"]),
    ("What time is it in Paris, Texas?", ["America/Chicago"]),
    ("What time is it in St. John's?", ["America/St_Johns"]),
    ("What time is it in LA?", ["America/Los_Angeles"]),
    # The qualifier names another place of that name: each got the better-known one's time.
    ("What time is it in Sydney, Nova Scotia?", ["America/Halifax"]),
    ("What time is it in London, Ontario?", ["America/Toronto"]),
    ("What time is it in Perth, Scotland?", ["Europe/London"]),
    # Cities the time-zone database does not name: each was "I don't know where".
    ("What time is it in Houston?", ["America/Chicago"]),
    ("What time is it in Bangalore?", ["Asia/Kolkata"]),
    ("What time is it in Munich?", ["Europe/Berlin"]),
    ("What time is it in Salt Lake City?", ["America/Denver"]),
    ("What time is it in ET?", ["America/New_York"]),
    ("What time is it in PT right now?", ["America/Los_Angeles"]),
    ("What time is it in St. Louis?", ["America/Chicago"]),
    ("What time is it in Wellington?", ["Pacific/Auckland"]),
    ("What time is it in Málaga?", ["Europe/Madrid"]),
    ("What is 2+2 and what time is it in Paris and in Tokyo?", ["**4**", "Europe/Paris", "Asia/Tokyo"]),
    # A two-word place after "and": each was "I don't know where "Los" is".
    ("What time is it in New York and Los Angeles?", ["America/New_York", "America/Los_Angeles"]),
    # A list of cities whose second is also a US state: "Tokyo, New York" was Tokyo in New York.
    (
        "What time is it in Tokyo, New York, London and Paris?",
        ["Asia/Tokyo", "America/New_York", "Europe/London", "Europe/Paris"],
    ),
    # A calculation and a time as one list item: the clock ran, its time was never shown.
    ("Tell me 15% of 80, the time in Berlin, and who won the 1998 World Cup", ["**12**", "Europe/Berlin"]),
    (
        "What time is it in Mexico City and Buenos Aires?",
        ["America/Mexico_City", "America/Argentina/Buenos_Aires"],
    ),
]


@pytest.mark.parametrize(("question", "expected"), PLACES, ids=[q for q, _ in PLACES])
async def test_the_time_is_told_for_every_place_named(question, expected):
    _result, answer = await answer_to(question)
    assert all(value in answer for value in expected), answer
    assert " UTC" not in answer


def utc_offset(zone: str) -> str:
    offset = datetime.now(ZoneInfo(zone)).strftime("%z")
    return f"{offset[:3]}:{offset[3:]}"


# An abbreviation names one offset: PDT is UTC-7 whatever the season, and the place it belongs
# to is named beside it when it keeps the other one now. A reviewer found six of them answered
# with the place's current time, an hour off, at 0.9.
ABBREVIATIONS = [
    ("PST", "-08:00", "America/Los_Angeles"),
    ("PDT", "-07:00", "America/Los_Angeles"),
    ("EDT", "-04:00", "America/New_York"),
    ("BST", "+01:00", "Europe/London"),
    ("CEST", "+02:00", "Europe/Paris"),
    ("AEST", "+10:00", "Australia/Sydney"),
    ("NZST", "+12:00", "Pacific/Auckland"),
    ("JST", "+09:00", "Asia/Tokyo"),
]


@pytest.mark.parametrize(
    ("abbreviation", "offset", "place"), ABBREVIATIONS, ids=[a for a, *_ in ABBREVIATIONS]
)
async def test_a_zone_abbreviation_is_its_own_offset(abbreviation, offset, place):
    result, answer = await answer_to(f"What time is it in {abbreviation}?")
    assert f"{offset})" in answer and abbreviation in answer, answer
    assert result.quality is not None and result.quality >= 0.9, (result.quality, answer)
    if utc_offset(place) != offset:
        assert place in answer and f"{utc_offset(place)})" in answer, answer
    else:
        assert place not in answer, answer


@pytest.mark.parametrize(
    ("question", "offset"),
    [
        ("What time is it in UTC+5:30?", "+05:30"),
        ("What's the time in GMT+05:45?", "+05:45"),
        ("What time is it in UTC-3:30?", "-03:30"),
        ("What time is it in UTC+2?", "+02:00"),
        # A Unicode minus (as typed by phones and copied from documents) was read as UTC itself.
        ("what time is it in UTC\u22124", "-04:00"),
        ("what time is it in GMT\u22125", "-05:00"),
        ("What's the time in UTC \u2013 3?", "-03:00"),
        # Other dashes, a fullwidth minus, and the word (a second review found each read as UTC).
        ("what time is it in UTC\u20144", "-04:00"),
        ("what time is it in UTC \u20104", "-04:00"),
        ("what time is it in UTC\u20114", "-04:00"),
        ("what time is it in UTC\uff0d4", "-04:00"),
        ("what time is it in UTC minus 4", "-04:00"),
        ("what time is it in UTC minus four hours", "-04:00"),
        ("What's the time in GMT plus 5:30?", "+05:30"),
    ],
)
async def test_an_offset_with_minutes_is_read_whole(question, offset):
    """An offset with minutes ("UTC+5:30") was answered with UTC's own time (+00:00) at 0.95."""
    result, answer = await answer_to(question)
    assert "(ISO " in answer and f"{offset})" in answer and "+00:00" not in answer, answer
    assert result.quality is not None and result.quality >= 0.9


@pytest.mark.parametrize(
    "question",
    [
        "If it's 9am in London, what time is it in Tokyo?",
        "When it is noon in New York, what time is it in Paris?",
        "What time is it in Sydney when it's 17:00 in Berlin?",
    ],
)
async def test_a_time_asked_for_another_moment_is_not_given_as_now(question):
    """Each was answered with the present time in both places, approved at 0.95."""
    result, answer = await answer_to(question)
    assert "from the clock" not in answer, answer
    assert result.quality is not None and result.quality < 0.9, (result.quality, answer)


async def test_an_instruction_after_the_time_question_names_no_place():
    """ "What time is it in Tokyo? Answer in French." was declined: "French" read as a place."""
    _result, answer = await answer_to("What time is it in Tokyo? Answer in French.")
    assert "Asia/Tokyo" in answer and "from the clock" in answer, answer


async def test_another_moment_in_another_sentence_leaves_the_present_asked():
    """Reading "3pm" anywhere as another moment declined the Tokyo time asked just before it."""
    _result, answer = await answer_to("What time is it in Tokyo? Respond that it is 3pm in Berlin instead.")
    assert "Asia/Tokyo" in answer and "from the clock" in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Thanks!", "welcome"),
        ("Thank you very much", "welcome"),
        # Each was "I can't answer that offline: … needs a real language model".
        ("thanks, that helped a lot", "welcome"),
        ("cheers, that was useful", "welcome"),
        ("thank you, that's really helpful!", "welcome"),
        ("Good morning, how are you?", "Hello"),
        ("bye for now", "Goodbye"),
        ("ok", "Ask me something else"),
        ("lol", "Ask me something else"),
        ("Hi there!", "Hello"),
        ("How are you?", "Hello"),
        ("Bye", "Goodbye"),
        ("thanks a ton", "welcome"),
        ("bye bye!", "Goodbye"),
        ("ok cool", "Ask me something else"),
        ("heyyy", "Hello"),
    ],
)
async def test_small_talk_gets_a_reply_in_kind(question, expected):
    """ "Thanks!" was answered "Hello! I'm Nexus…", and "Hi there!" or "Bye" needed a real
    language model."""
    _result, answer = await answer_to(question)
    assert expected in answer and "can't answer" not in answer, answer


async def test_a_country_or_state_after_a_comma_says_which_place_is_meant():
    """ "Paris, Texas" was given the time in Paris, France, and in Chicago, both unlabelled."""
    _result, answer = await answer_to("What time is it in Paris, Texas?")
    assert "America/Chicago" in answer and "Europe/Paris" not in answer, answer
    _result, answer = await answer_to("What time is it in Tokyo, London and Paris?")
    assert all(zone in answer for zone in ("Asia/Tokyo", "Europe/London", "Europe/Paris")), answer


@pytest.mark.parametrize("place", ["Ft. Myers", "Mt. Fuji"])
async def test_an_abbreviated_word_is_not_the_end_of_a_question(place):
    """ "What time is it in St. Louis?" was split at the full stop: a heading "What time is it
    in St?" over "I don't know where St is", and a second part "Louis". (St. Louis is known
    now: places none is known for show the name is read whole.)"""
    _result, answer = await answer_to(f"What time is it in {place}?")
    assert answer.count("**") == 0 and f"“{place}”" in answer, answer


@pytest.mark.parametrize(
    "question", ["And in London?", "Now add 9 to that", "Double it", "What about the result?"]
)
async def test_a_follow_up_is_told_to_ask_in_full(question):
    """A follow-up was declined as if the question itself needed a model: the offline model
    reads each message on its own, and now says so."""
    _result, answer = await answer_to(question)
    assert "each message is read on its own" in answer and "ask it in full" in answer, answer


@pytest.mark.parametrize(
    "question",
    [
        "Our Celery worker keeps dying with SIGKILL; what could cause it and how do I check?",
        "How do I rotate our API keys safely, and how often should we do it?",
        # Planned DEEP, its last step "How to test it?" was called a follow-up.
        "Design a migration plan from SQLite to PostgreSQL for our production app, including the "
        "risks, a rollback strategy, and how to test it",
    ],
)
async def test_a_question_whose_it_is_in_the_same_message_is_not_called_a_follow_up(question):
    """Found by a review: "it" named in the same message got "each message is read on its own,
    without the earlier ones: ask it in full", which was asked in full."""
    _result, answer = await answer_to(question)
    assert "can't answer that offline" in answer and "read on its own" not in answer, answer


@pytest.mark.parametrize(
    "question",
    [
        "What time is it in Londn?",
        "What's the time in Nowhereville right now?",
        "What time is it in ../../etc/passwd?",  # was given UTC's time
    ],
)
async def test_a_place_no_zone_is_known_for_is_said_plainly_never_given_utc(question):
    result, answer = await answer_to(question)
    assert "I don't know where" in answer and "UTC" not in answer and "from the clock" not in answer
    assert result.escalations == 0 and result.quality == 0.65, "an honest decline, not a wrong time"


@pytest.mark.parametrize("question", ["What time is it in ..?", "What's the time in ~/notes", "Time at ./x?"])
async def test_punctuation_or_a_path_after_in_is_no_place_and_gets_no_utc_time(question):
    """Each was answered with UTC's time, approved, as if no place had been asked about."""
    result, answer = await answer_to(question)
    assert "UTC" not in answer and "from the clock" not in answer, answer
    assert result.escalations == 0 and result.quality < 0.7, "an honest decline"


@pytest.mark.parametrize("question", ["What is 9**9**9?", "What is 2**10000/0?"])
async def test_an_expression_it_cannot_compute_is_quoted_as_code(question):
    """ "I can't compute '9**9**9'" rendered as '9<strong>9</strong>9': the quote was Markdown."""
    _result, answer = await answer_to(question)
    expression = question.removeprefix("What is ").rstrip("?").replace("**", "^")  # shown as people write it
    assert f"`{expression}`" in answer and f"'{expression}'" not in answer, answer


def test_results_leave_out_binary_rounding_noise_and_round_halves_up():
    assert calculator("0.1+0.2") == "0.1+0.2 = 0.3"
    assert calculator("10/3") == "10/3 = 3.33333333333333"
    assert calculator("round(2.5)") == "round(2.5) = 3" and calculator("round(-2.5)") == "round(-2.5) = -3"
    assert calculator("2**0.5").startswith("2**0.5 = 1.41421356237")


HANDBOOK = {
    "Release process": "We release on Tuesdays after the staging checks pass. Rollback: redeploy the "
    "previous tag and tell #ops.",
    "Handbook": "Expenses up to 500 EUR are approved by your manager; above that, by finance.",
}


def documents() -> LocalToolProvider:
    def search_documents(query: str, limit: int = 5) -> str:
        wanted = {stem(word) for word in keywords(query)}
        hits = [
            search_hit(title, True, f"nexus://documents/{number}", text)
            for number, (title, text) in enumerate(HANDBOOK.items(), 1)
            if wanted & {stem(word) for word in keywords(text)}
        ]
        return "\n\n".join(hits[:limit]) or "No documents match."

    provider = LocalToolProvider("nexus")
    provider.add(
        "search_documents",
        search_documents,
        description="Search the team's documents.",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    return provider


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        # /summarize's prompt: the ask's subject is two of its many words.
        (
            "Summarise our release process for a busy teammate: five bullet points at most, the most "
            "important first, and cite the team documents you used.",
            "We release on Tuesdays",
        ),
        ("What is the expense approval limit according to the handbook?", "500 EUR"),
        # Where to look is not what to find: "according to our docs" scored 0.00.
        ("When do we release according to our docs?", "We release on Tuesdays"),
    ],
)
async def test_a_passage_quoted_for_the_ask_is_judged_to_answer_it(question, quoted):
    """Both were answered with the right passage and scored 0.00 with a low-confidence banner:
    the check counted the ask's instructions as words to find, and "expense" missed
    "Expenses"."""
    engine = AdaptiveReasoningLoop(
        OfflineClient(),
        ToolRegistry([builtin_provider(), documents()]),
        ReasoningConfig.from_env({}, provider="offline"),
    )
    result = await engine.run(question, sink=ListSink())
    assert quoted in result.answer
    assert result.quality is not None and result.quality >= 0.9, result.quality


MISREAD = [
    # Read in part, so never approved: the operation or comparison left unread.
    "What's 2 plus 3, all squared?",
    "Which is bigger: 3^4 or 4^3?",
    "What's the square root of 2 times the square root of 8?",
    "What's 2+2 in binary?",
    # A scale or unit apart from its number was left out: "4% of 2.5 M" was 0.1.
    "What is 4% of 2.5 M?",
    "What is 4 percent of 2.5 mm?",
    # A labelled-question review found each answered as a bare number and approved: a unit
    # written out or as a symbol, after a phrase ("half of 10 km"), an operand left unread
    # ("plus the number of days in a week"), a form of the answer asked for ("in words").
    "What is 10% of 200 meters?",
    "Half of 10 km",
    "Double 5 kg",
    "What is 50% of 3 hours?",
    "What is 5*5 plus the number of days in a week?",
    "What is 17*23 in words?",
    "What is 2 + 2 according to Orwell?",
    # A second labelled-question review: a chain of changes whose second step repeats a number
    # the first used ("10% … then by 10% again") was read as its first step and approved.
    "Increase 100 by 10% then by 10% again",
    "Raise 50 by 20% then cut it by 20%",
    # A QA review: "root of" dropped (read as 25 + 11 = 36), and the percent sign of a number a
    # phrase took left unread (10 percent more than 50 percent as a bare 55), each approved at
    # 0.90.
    "Root of 25 + 11",
    "What is 10 percent more than 50 percent?",
    "what is 20 percent less than 50%",
    # The same review: "total" left unread, the tip alone (10) approved as the total.
    "What's the total with a 20% tip on 50?",
    "How much is a 15% tip on 80 altogether?",
    # The same review: a form or a currency the answer was asked in, left unread (€200 for
    # "100 euros times 2 in dollars", 2.5 for "10 / 4 as a fraction").
    "What is 100 euros times 2 in dollars?",
    "What's 10 percent of 200 dollars in euros?",
    "What is 10 / 4 as a fraction?",
    "What's 12 * 12 in scientific notation?",
    # The same review: "the square root of 3 squared plus 4 squared" was sqrt(3)^2 + 4^2 = 19,
    # approved at 0.90; whether the root is of 3 squared alone or of the sum (5) is not said.
    "What is the square root of 3 squared plus 4 squared?",
    "Square root of 9 plus 16",
]


@pytest.mark.parametrize("question", MISREAD)
async def test_a_question_the_reader_gets_only_partly_is_never_approved(question):
    """Each was answered from a misreading ("1/3 of 90" as 1/3, "1000 - 10%" as 1000 - 10)
    and approved at 0.90–0.95: the checks re-read the question the same wrong way. Now a
    calculation that leaves a number or a word of the question unused is not approved."""
    result, _answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, result.answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the time complexity of quicksort?", "can't answer that offline"),
        ("What's the date tomorrow?", "can't answer that offline"),
        ("What time is it on Mars?", "I don't know where “Mars” is"),
        ("What time is it in Narnia and in Paris?", "I don't know where “Narnia” is"),
        ("What time is it in UTC+2?", "+02:00"),
    ],
)
async def test_the_clock_answers_only_what_it_can_tell(question, expected):
    """The clock's present time was given for "the time complexity of quicksort", "the date
    tomorrow", a place on Mars, UTC for "UTC+2", and Paris alone beside an unknown place."""
    _result, answer = await answer_to(question)
    assert expected in answer, answer


# A time word in a question the clock cannot answer: each was answered with the present time
# (or "I don't know where “productivity” is") and approved.
NOT_FOR_THE_CLOCK = [
    "Design a scalable architecture for a real-time multiplayer chess platform with matchmaking.",
    "Design a scheduling system that books meeting rooms across time zones.",
    "What's the difference between a date and a datetime in Python?",
    "Outline a research plan to study the effect of four-day work weeks on productivity.",
    "What time does the sun set in Oslo today?",
    "Which day is Thanksgiving this year?",
    # Work about time, how time works, or a place only the person knows: each got the clock.
    "Write a JavaScript function that returns the current time in Tokyo.",
    "What's the best practice for storing the current time in a database?",
    "What's the current time complexity of Python's sort?",
    "Does London observe daylight saving time right now?",
    "What's the date 100 days from today?",
    "What time is it where I am?",
    "How do I get the current time in Python?",
]


@pytest.mark.parametrize("question", NOT_FOR_THE_CLOCK)
async def test_a_time_word_alone_does_not_ask_the_clock(question):
    _result, answer = await answer_to(question)
    assert "from the clock" not in answer and "I don't know where" not in answer, answer
    assert "can't answer that offline" in answer


# "The Eastern time zone" and "the US" fell back to UTC, approved at 0.90.
US_ZONES = [
    ("What time is it in the Eastern time zone?", "America/New_York"),
    ("what's the time on the US East Coast", "America/New_York"),
    ("What time is it in Pacific time?", "America/Los_Angeles"),
    ("Tell us the time in Paris", "Europe/Paris"),
]


@pytest.mark.parametrize(("question", "zone"), US_ZONES)
async def test_a_named_zone_or_coast_is_told_its_own_time(question, zone):
    _result, answer = await answer_to(question)
    assert zone in answer and "UTC" not in answer, answer


@pytest.mark.parametrize(
    ("question", "zone"),
    [
        # "Washington" after a city is the state (Pacific), not the capital: two clocks, one
        # of them New York's.
        ("What time is it in Vancouver, Washington?", "America/Los_Angeles"),
        ("What time is it in Seattle, Washington?", "America/Los_Angeles"),
        # A state that keeps one zone tells the time of any city in it; these were declined.
        ("What time is it in Portland, Maine?", "America/New_York"),
        ("What time is it in Kansas City, Missouri?", "America/Chicago"),
        ("What time is it in Atlanta, Georgia?", "America/New_York"),
        ("What time is it in Washington, D.C.?", "America/New_York"),
        ("What time is it in Tbilisi, Georgia?", "Asia/Tbilisi"),
    ],
)
async def test_a_us_state_after_a_city_says_which_zone(question, zone):
    _result, answer = await answer_to(question)
    assert f" {zone} " in answer and answer.count("from the clock") == 1, answer


@pytest.mark.parametrize(
    ("question", "offset"),
    [
        # Decimal hours were cut to whole ones: UTC+9.5 told as +09:00, half an hour off.
        ("What time is it at UTC+9.5?", "+09:30"),
        ("What time is it at GMT+5.75?", "+05:45"),
        ("What time is it at UTC-2.5?", "-02:30"),
    ],
)
async def test_an_offset_in_decimal_hours_keeps_its_minutes(question, offset):
    _result, answer = await answer_to(question)
    assert f"{offset})" in answer, answer


@pytest.mark.parametrize("offset", ["UTC+5.3", "UTC+.5", "UTC+5.333"])
async def test_an_offset_no_zone_keeps_is_not_told_as_utc(offset):
    _result, answer = await answer_to(f"What time is it at {offset}?")
    assert "from the clock" not in answer and offset in answer, answer


async def test_an_offset_past_any_place_is_refused_in_plain_words():
    """ "UTC+25" was refused as "ValueError: 'UTC+25:00' is not an offset…": a Python class
    name is not words for the person asking."""
    _result, answer = await answer_to("What time is it in UTC+25?")
    assert "is not an offset any place keeps" in answer and "Error" not in answer, answer


@pytest.mark.parametrize(
    ("question", "zone"),
    [
        ("What time is it in Köln?", "Europe/Berlin"),
        ("What time is it in Kraków?", "Europe/Warsaw"),
        ("What time is it in Genève?", "Europe/Zurich"),
        ("What time is it in Porto Alegre?", "America/Sao_Paulo"),
        ("What time is it in Nepal?", "Asia/Kathmandu"),
        ("What is Zulu time now?", "UTC"),
        ("What's the current Eastern time?", "America/New_York"),
        ("What's the Zulu time?", "UTC"),
        ("What time is it in St. John's, Newfoundland?", "America/St_Johns"),
    ],
)
async def test_names_people_write_for_a_place_or_zone_are_known(question, zone):
    _result, answer = await answer_to(question)
    assert f" {zone} " in answer and "from the clock" in answer, answer


async def test_a_zone_word_no_place_knows_is_not_told_as_utc():
    """ "the current Atlantic time" matched "current … time" while no place is "Atlantic
    time": the clock told UTC's. (A third review made "Atlantic time" a name: Halifax's.)"""
    _result, answer = await answer_to("What's the current Atlantic time?")
    assert "UTC (ISO" not in answer and "America/Halifax" in answer, answer


async def test_a_message_with_no_part_it_can_answer_gets_one_decline():
    """Each fragment got a made-up heading and the same decline under it."""
    _result, answer = await answer_to("A shirt costs 40 and is 25% off. What's the sale price?")
    assert answer.count("can't answer that offline") == 1 and "**" not in answer, answer


async def test_a_calculation_without_a_real_value_is_said_in_words():
    _result, answer = await answer_to("What is the square root of -16?")
    assert "has no real value" in answer and "math domain error" not in answer, answer


async def test_a_number_named_in_the_question_is_not_a_follow_up():
    _result, answer = await answer_to("What's the story behind the number 666?")
    assert "ask it in full" not in answer, answer


async def test_a_unit_after_a_number_is_not_computed_as_a_scale():
    _result, answer = await answer_to("What is 100m / 9.58s?")
    assert "10438413" not in answer and "from the calculator" not in answer, answer


async def test_a_qualifier_it_does_not_know_is_not_ignored():
    """ "Paris, Kentucky" got Paris, France's time."""
    _result, answer = await answer_to("What time is it in Paris, Kentucky?")
    assert "from the clock" not in answer and "Paris, Kentucky" in answer, answer


@pytest.mark.parametrize("question", ["What time is it in the US?", "What time is it in Canada?"])
async def test_a_country_of_several_zones_is_asked_which(question):
    result, answer = await answer_to(question)
    assert "keeps several time zones" in answer and "from the clock" not in answer, answer
    assert result.quality is not None and result.quality >= 0.6  # an honest answer, not a failure


async def test_a_word_problem_is_one_question_not_two_headed_halves():
    """ "If a shirt costs $40 and is 25% off, what is the sale price?" came back as two
    headed parts, "If a shirt costs $40." and "Is 25% off, what is the sale price?"."""
    _result, answer = await answer_to("If a shirt costs $40 and is 25% off, what is the sale price?")
    assert "**Is 25% off" not in answer and 'If a shirt costs $40"' not in answer, answer


async def test_the_request_after_a_remark_is_what_is_answered():
    """Only the context sentence ("Our API latency doubled…") was answered; the request after
    it was dropped."""
    _result, answer = await answer_to(
        "Our API latency doubled after last week's deploy. Walk me through how to investigate the root cause."
    )
    assert "Walk me through how to investigate the root cause" in answer, answer
    assert "latency doubled" not in answer, answer


async def test_asking_for_help_with_work_is_not_answered_with_the_capabilities():
    """ "Help me plan the architecture…" got the offline model's list of what it can do,
    approved at 0.95."""
    _result, answer = await answer_to("Help me plan the architecture for our new payments platform.")
    assert "Offline I can" not in answer and "can't answer that offline" in answer, answer
    _result, answer = await answer_to("What can you do?")
    assert "Offline I can" in answer


def test_the_aspects_an_ask_lists_after_its_colon_are_not_asks_of_their_own():
    """/compare's prompt came back in three headed parts, one of them "Where it is weaker?"."""
    from reasoning.llm.offline_text import question_parts
    from reasoning.routing.features import split_asks

    compare = (
        "Compare trunk-based development and git flow: where each is stronger, where it is weaker, "
        "and which you recommend for our team, with the reason."
    )
    assert len(question_parts(compare)) == 1 and len(split_asks(compare)) == 1
    # Questions after a colon still are: each is answered.
    listed = "Research and compare: what is 12 * 450, and what time is it in London?"
    assert len(question_parts(listed)) == 2 and len(split_asks(listed)) >= 2


# Numbers in a name, a date, a range, a score or a rule's name: each was computed and approved
# at 0.95 ("CVE-2021-44228" = -42207, "the 80/20 rule" = 4, "on 9/11" = 0.818).
NOT_ARITHMETIC = [
    "What is CVE-2021-44228?",
    "What is ISO-8859-1?",
    "What's the 80/20 rule?",
    "What is the 3-2-1 backup rule?",
    "What happened on 9/11?",
    "Tell me about the Boeing 737-800",
    "What is a 3/4 time signature?",
    "Summarize WWII (1939-1945)",
    "Who was US president 2009-2017?",
    "Did Spain win 2-1 last night?",
    "Whose number is 555-1234?",
    "What is 1-800-FLOWERS?",
    "What is the ISO 27001-2022 standard?",
    "What holiday is on 12/25?",
    # A QA review: a date asked "what is" was computed and approved (1/2/2024 as 0.000247).
    "what is 1/2/2024",
    "What's 2024/03/15?",
    # What a language makes of it, code asked for, or a statement to check.
    "In C, what is 7/2 with int operands?",
    "In Python, what does 2 ^ 3 evaluate to?",
    "What is 5 ^ 3 in JavaScript?",
    "Write a Python function that returns 2**10",
    "Create a JavaScript snippet that logs 10/4",
    "True or false: 0.1+0.2 == 0.3",
    "Prove that 1+1=2",
]


@pytest.mark.parametrize("question", NOT_ARITHMETIC)
async def test_numbers_that_are_not_a_calculation_are_not_computed(question):
    _result, answer = await answer_to(question)
    assert "computed with the calculator" not in answer and "can't answer that offline" in answer, answer


CALCULATIONS = [
    # Asked as a calculation and nothing else, joined numbers are arithmetic still.
    ("What is 10-4?", "**6**"),
    ("Calculate 365-12", "**353**"),
    ("How much is 350/7?", "**50**"),
    ("What's 100/7 rounded to 2 decimals?", "**14.29**"),
    # Each was approved wrong: log10(1000) as log(10)*1000, a Unicode minus dropped, the second
    # of two percentages added as a number, degrees taken as radians, "point five" dropped.
    ("log10(1000)?", "**3**"),
    ("What is log2(8)?", "**3**"),
    ("What's \u221212 + 5?", "**-7**"),
    ("How much is \u2212100 / 4?", "**-25**"),
    ("100 + 10% + 10% = ?", "**121**"),
    ("What is 200 - 10% - 10%?", "**162**"),
    ("What is sin(90 degrees)?", "**1**"),
    ("What is cos 60\u00b0?", "**0.5**"),
    ("What's two point five times four?", "**10**"),
    # Decimals in words: the digits after "point" were added up ("seven five" as 12), and a
    # "point five" with no number before it lost its point.
    ("what is zero point seven five times eight", "**6**"),
    ("zero point two five times four", "**1**"),
    ("one point seven five plus one", "**2.75**"),
    ("what is point five times ten", "**5**"),
    ("three point one four times two", "**6.28**"),
    # Phrasings a team uses that were declined ("needs a real language model").
    ("what is the difference between 100 and 64", "**36**"),
    ("what is the difference between 64 and 100", "**36**"),  # was -36
    ("2 raised to the 20th power", "**1048576**"),
    ("What is 3 raised to the power of 4?", "**81**"),
    ("45 is what percentage of 180", "**25**"),
    ("what's 60 as a percentage of 240", "**25**"),
    ("what is the percentage change from 50 to 65", "**30**"),
]


async def test_an_honest_decline_is_not_flagged_as_low_confidence_whatever_the_strategy():
    """Found by a review: the same "I can't answer that offline" passed under DIRECT (0.65 over
    its 0.60) and carried a red "Low confidence, check it before relying on it" under LIGHT."""
    result, answer = await answer_to("Write a python function that reverses a string, in a code block")
    assert "can't answer that offline" in answer
    assert result.final_strategy.value == "light_planning"
    assert result.quality is not None and result.quality >= 0.7 and result.kind != "low_confidence"


# A labelled-question review's wrong answers, each approved at 0.9–0.95: a million's "m" and a
# digit's "hundred" dropped ("4% of 2.5m" = 0.1), "then squared" left out; and phrasings it
# declined although it reads their like (a list's average, "2/3 of", "20% off").
CALCULATIONS += [
    ("What's 4 percent of 2.5m?", "**100000**"),
    ("What's 250k + 1.2m?", "**1450000**"),
    ("What is 5 million plus 2.5M?", "**7500000**"),
    ("What is 1 thousand plus 1 hundred?", "**1100**"),
    ("What is 5 hundred thousand divided by 4?", "**125000**"),
    ("What is five plus three, then squared?", "**64**"),
    ("Add 3 and 4, then multiply by 10", "**70**"),
    ("What is 10 - 2, then add 5?", "**13**"),
    ("What is the average of 4, 8 and 15?", "**9**"),
    ("What is the sum of 2, 3 and 4?", "**9**"),
    ("What is 1/3 of 90?", "**30**"),
    ("What is 2/3 of 900?", "**600**"),
    ("What is three quarters of 48?", "**36**"),
    ("What is 20% off 150?", "**120**"),
    ("What is 20 percent more than 60?", "**72**"),
    ("What is 30% less than 200?", "**140**"),
    ("What is a hundred minus thirty-seven?", "**63**"),
    ("What is 7/8 as a decimal?", "**0.875**"),
    # A re-check's: a grouped number before a scale lost its thousands, a decimal comma in a
    # list was read half, and "then add 10%" added 10.
    ("What is 1,500m + 1?", "**1500000001**"),
    ("What is the sum of 1,5, 2,5 and 3?", "**7**"),
    ("What is 20% off 150, then add 10%?", "**132**"),
]


@pytest.mark.parametrize(("question", "expected"), CALCULATIONS)
async def test_a_calculation_is_read_whole(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer, answer
    assert result.quality is not None and result.quality >= 0.9, (result.quality, answer)


# "The time of sunset", "the date of Easter": each got the present time from the clock.
NOT_NOW = [
    "What is the date of Easter 2025?",
    "What's the time of sunset in Oslo?",
    "What's the time limit for the bar exam?",
    "What is the Day of the Dead?",
    "What's the time in seconds for a 4-minute mile?",
    "What's the time in the movie Paris, Texas?",
    "What's the date of Chinese New Year in Beijing?",
]


@pytest.mark.parametrize("question", NOT_NOW)
async def test_the_time_or_date_of_something_is_not_the_present(question):
    _result, answer = await answer_to(question)
    assert "from the clock" not in answer, answer


ZONES = [
    # Declined: "current UTC time", "what time it is" (as asked within a question).
    ("What's the current UTC time?", "UTC"),
    ("Do you know what time it is in Karachi?", "Asia/Karachi"),
    # A name the database gives a less likely place: Samoa was American Samoa, a day behind.
    ("What time is it in Samoa?", "Pacific/Apia"),
    ("What time is it in San Juan?", "America/Puerto_Rico"),
    ("What's the time in Santiago de Compostela?", "Europe/Madrid"),
    # A city in the country named after it keeps its own zone (it got the country's main one).
    ("What time is it in Manaus, Brazil?", "America/Manaus"),
    ("What time is it in Jayapura, Indonesia?", "Asia/Jayapura"),
    ("What time is it in Adak, Alaska?", "America/Adak"),
    ("What time is it in Broken Hill, New South Wales?", "Australia/Broken_Hill"),
    # The country alone was "I don't know where “Sydney, Australia” is".
    ("What time is it in Sydney, Australia?", "Australia/Sydney"),
    ("What time is it in New York, USA?", "America/New_York"),
    # A zone's own name, which the decline told people to give, was declined.
    ("What time is it in Europe/London?", "Europe/London"),
    ("what time is it in europe/amsterdam", "Europe/Amsterdam"),
    ("What time is it in America/Argentina/Ushuaia?", "America/Argentina/Ushuaia"),
]


@pytest.mark.parametrize(("question", "zone"), ZONES)
async def test_the_place_meant_gets_its_own_zone(question, zone):
    _result, answer = await answer_to(question)
    assert answer.count("from the clock") == 1 and zone in answer, answer


@pytest.mark.parametrize(
    ("question", "zone", "other"),
    [
        ("What's the time in Shanghai CST?", "Asia/Shanghai", "UTC-06:00"),
        ("What time is it in Dublin (IST)?", "Europe/Dublin", "UTC+05:30"),
        ("What time is it in Dhaka (BST)?", "Asia/Dhaka", "BST"),
    ],
)
async def test_an_abbreviation_after_a_place_is_that_places_own(question, zone, other):
    """Each added a second clock for another zone of that abbreviation (US Central, India)."""
    _result, answer = await answer_to(question)
    assert zone in answer and other not in answer, answer


async def test_a_place_in_another_country_than_the_one_named_is_not_known():
    _result, answer = await answer_to("What time is it in Paris, USA?")
    assert "from the clock" not in answer and "Paris, USA" in answer, answer


async def test_asks_written_without_apostrophes_are_each_answered():
    """ "Whats 7*6, whats the time in Cairo" was one part headed so: the time was never told."""
    _result, answer = await answer_to("Whats 7*6, whats the time in Cairo, and who wrote Hamlet?")
    assert "**42**" in answer and "Africa/Cairo" in answer and "Who wrote Hamlet" in answer, answer


LISTS = [
    # A list bullet was read as a minus sign (-100 for 25% of 400), and list items were merged
    # into one calculation or left out.
    ("- 25% of 400", ["**100**"]),
    ("- 5 * 5", ["**25**"]),
    ("> - 40 + 2", ["**42**"]),
    ("- 100 - 30\n- 50 + 5", ["**70**", "**55**"]),
    ("1) 12*12\n2) 15% of 60", ["**144**", "**9**"]),
]


@pytest.mark.parametrize(("question", "expected"), LISTS)
async def test_each_list_item_is_an_ask_of_its_own(question, expected):
    result, answer = await answer_to(question)
    assert all(value in answer for value in expected) and "**-" not in answer, answer
    assert result.quality is not None and result.quality >= 0.9, (result.quality, answer)


async def test_a_list_item_the_model_cannot_answer_is_not_dropped_from_an_approved_answer():
    """The CEO item was left out, and the rest approved at 0.90."""
    _result, answer = await answer_to("- time in Denver\n- 12.5% of 640\n- who is the CEO of Apple")
    assert "America/Denver" in answer and "**80**" in answer and "CEO of Apple" in answer, answer


@pytest.mark.parametrize(
    ("question", "named"),
    [
        # Each got UTC's time.
        ("what time is it for Sarah?", "“Sarah”"),
        ("What time is it for my manager?", "can't answer that offline"),
        ("the server is in us-east-1, what time is it there?", "“there”"),
        # The unknown place beside a known one was left out.
        ("what time is it in London and Nowhereville", "“Nowhereville”"),
        ("What is the time in Berlin and at HQ?", "“HQ”"),
        # One zone was given for a country that keeps several.
        ("What time is it in Brazil?", "“Brazil” keeps several time zones"),
        ("What time is it in Indonesia?", "“Indonesia” keeps several time zones"),
    ],
)
async def test_a_place_the_clock_cannot_know_is_named_not_given_utc(question, named):
    _result, answer = await answer_to(question)
    assert named in answer and "from the clock" not in answer, answer


async def test_a_comparison_answered_with_one_side_is_not_approved():
    result, _answer = await answer_to("what's 3^4 vs 4^3")
    assert result.quality is not None and result.quality < 0.7


@pytest.mark.parametrize(
    "question", ["What is 2+2 and the time in Atlantis?", "3 times 4, also time in Atlantis"]
)
async def test_a_place_it_cannot_tell_beside_a_calculation_is_said_not_dropped(question):
    """Found by a labelled-question review: read as one part, the calculation was answered and
    approved at 0.95, and the place it could not tell was left out without a word."""
    _result, answer = await answer_to(question)
    assert "I don't know where “Atlantis”" in answer and "= **" in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # A third review: the first was read as Petersburg, Indiana; Etc/GMT+5 (five hours
        # behind UTC, as the database writes it) as UTC+05:00; a bare offset as UTC itself.
        ("What time is it in Saint Petersburg?", "Europe/Moscow"),
        ("What time is it in Etc/GMT+5?", "-05:00)"),
        ("What time is it at +03:00?", "UTC+03:00"),
        ("What time is it in -08:00?", "UTC-08:00"),
        ("What's the time in Iceland?", "Atlantic/Reykjavik"),
    ],
)
async def test_a_place_or_offset_is_read_as_it_is_written(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


async def test_a_place_and_its_state_are_told_once():
    """ "Sydney NSW" told the same time twice, once as Australia/NSW."""
    _result, answer = await answer_to("What's the time in Sydney NSW?")
    assert answer.count("(from the clock)") == 1 and "Australia/Sydney" in answer, answer


@pytest.mark.parametrize(
    "question", ["What time is it in Tokyo plus 3 hours?", "London minus 2 hours", "Paris + 1 hour"]
)
async def test_a_time_shifted_from_now_is_not_given_as_now(question):
    """Each was answered with the present time, the shift ignored."""
    result, answer = await answer_to(question)
    assert "(from the clock)" not in answer and result.quality < 0.9, answer


def test_a_negative_number_has_a_real_odd_root_and_no_even_one():
    assert calculator("(-27)**(1/3)") == "(-27)**(1/3) = -3"
    with pytest.raises(ValueError, match="no real value"):
        calculator("(-16)**(1/4)")
    with pytest.raises(ValueError, match="more than 1000 digits"):
        calculator("10**1000")  # 1001 digits, as 2**3322 is


async def test_a_ratio_of_amounts_is_not_given_a_currency():
    _result, answer = await answer_to("What percentage is $45 of $180?")
    assert "$25" not in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Eastern time?", "America/New_York"),
        ("Tokyo time", "Asia/Tokyo"),
        ("time tokyo", "Asia/Tokyo"),
        ("What time is in Toronto?", "America/Toronto"),
        ("What time is it in EAT?", "UTC+03:00"),
        ("What time is it in Birmingham, England?", "Europe/London"),
    ],
)
async def test_short_and_abbreviated_time_questions_are_answered(question, expected):
    """Each was declined, "Eastern time" although the README names it."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What time is it in Kentucky?", "keeps several time zones"),
        ("What time is it in Birmingham?", "do you mean Birmingham, England or Birmingham, Alabama?"),
        ("What model are you?", "no internet access"),
        ("Lunch time?", "can't answer that offline"),
    ],
)
async def test_a_place_of_several_zones_or_names_is_asked_about_not_unknown(question, expected):
    """Kentucky and Birmingham were "I don't know where"; "what model are you" was declined."""
    _result, answer = await answer_to(question)
    assert expected in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What time is it at +5?", "UTC+05:00"),
        ("What's the time at -0800?", "UTC-08:00"),
        ("What time is it in Etc/GMT-5?", "+05:00)"),
        ("What time is it in Seattle, WA?", "America/Los_Angeles"),
        ("What time is it in Birmingham, AL?", "America/Chicago"),
        ("What time is it in Victoria, BC?", "America/Vancouver"),
        ("Tokyo time please", "Asia/Tokyo"),
    ],
)
async def test_offsets_postal_codes_and_short_asks_name_the_right_zone(question, expected):
    """Bare offsets gave UTC's own time; "Seattle, WA" was an unknown place."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    "question",
    [
        "I had a great time in Berlin",
        "Lunch time in Rome?",
        "What time is it here?",
        "Split a $120 bill among 4 friends with a 20% tip",
        "What's the square root of $16?",
    ],
)
async def test_what_the_offline_model_cannot_read_is_not_answered_as_if_it_could(question):
    """Each got the clock's time (no one asked it), a bill split without its tip, or a
    square root in dollars."""
    _result, answer = await answer_to(question)
    assert "(from the clock)" not in answer and "$" not in answer.split("---")[0].replace(question, ""), (
        answer
    )


@pytest.mark.parametrize(
    ("question", "zone", "value"),
    [
        ("Can you tell me the time in Chicago and split 120 between 4 people?", "America/Chicago", "**30**"),
        ("What time is it in Oslo and double 21?", "Europe/Oslo", "**42**"),
        ("what time is it in Paris and multiply 3 by 4", "Europe/Paris", "**12**"),
    ],
)
async def test_a_calculation_after_a_place_is_not_read_as_a_second_place(question, zone, value):
    """A QA review: "split" (or "double", "multiply") after "Chicago and" was read as a place;
    the answer said "I don't know where “split” is", left Chicago's time out, and was approved
    at 0.95."""
    result, answer = await answer_to(question)
    assert "I don't know where" not in answer, answer
    assert zone in answer and value in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # A state of several zones: each was told one of its zones' time, approved at 0.90
        # (El Paso keeps Mountain time, the Florida panhandle Central, eastern Oregon Mountain).
        ("What time is it in Texas?", "“Texas” keeps several time zones"),
        ("what time is it in Florida", "“Florida” keeps several time zones"),
        ("Time in Oregon?", "“Oregon” keeps several time zones"),
        # Its country after it says nothing new: each was told as before, approved at 0.90.
        ("What time is it in Texas, USA?", "“Texas” keeps several time zones"),
        ("What time is it in Washington, USA?", "do you mean Washington, D.C. or Washington state?"),
        # A name of two places: "Washington" was told as D.C.'s time.
        ("What time is it in Washington?", "do you mean Washington, D.C. or Washington state?"),
        ("what time is it in Georgia", "do you mean Georgia the country or Georgia, USA?"),
        # A state that keeps one zone: each was "I don't know where “Ohio” is".
        ("what time is it in Ohio", " America/New_York "),
        ("What time is it in Utah?", " America/Denver "),
        ("time in Minnesota please", " America/Chicago "),
    ],
)
async def test_a_us_state_alone_is_told_only_when_it_keeps_one_zone(question, expected):
    """A QA review's labelled questions; the README promises that a US state of several
    zones is asked about, and a state names its time."""
    _result, answer = await answer_to(question)
    assert expected in answer, answer
    assert ("(from the clock)" in answer) == expected.startswith(" America/"), answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is 2 cubed squared?", "**64**"),
        ("what is 2^3 squared", "**64**"),
        ("3 squared squared", "**81**"),
    ],
)
async def test_a_power_of_a_power_in_words_is_read_left_to_right(question, expected):
    """A QA review: "2 cubed squared" was read as 2**3**2, the exponent squared (512),
    and approved at 0.95; (2³)² is 64."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is half of 9 squared?", "**40.5**"),
        ("twice 3 squared", "**18**"),
        ("a third of 3 cubed", "**9**"),
    ],
)
async def test_a_power_binds_to_its_number_before_a_phrase_takes_it(question, expected):
    """A QA review: "half of 9 squared" was read as (9 / 2) ** 2 = 20.25 and approved at 0.95,
    while "10 percent of 10 squared" squared the 10 alone."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    "question", ["Add 5 to 3 times 4", "Divide 20 by 4 times 5", "What is the sum of 4 and 5 times 3?"]
)
async def test_an_operation_after_a_phrase_of_two_operands_is_not_guessed(question):
    """A QA review: each was read as the phrase's result times the next number ((5 + 3) * 4 =
    32, (20 / 4) * 5 = 25, (4 + 5) * 3 = 27) and approved at 0.90; which operand the
    operation takes is not said."""
    result, _answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, result.answer)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # A fraction with a hyphen: "one-third of 120" was 1 - 40 = -39, approved at 0.95.
        ("What's one-third of 120?", "**40**"),
        ("three-quarters of 60", "**45**"),
        # A currency's code before the amount: a bare 100 was approved.
        ("What is USD 50 * 2?", "**$100**"),
        ("GBP 30 + GBP 20", "**£50**"),
    ],
)
async def test_hyphenated_fractions_and_currency_codes_are_read(question, expected):
    """A QA review's labelled questions."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    "question", ["What is nineteen eighty four plus one?", "five six plus one", "What is one two three?"]
)
async def test_number_words_that_make_no_one_number_are_not_added_up(question):
    """A QA review: "nineteen eighty four" was read as 19 + 80 + 4 (103 + 1 = 104, approved at
    0.95)."""
    result, answer = await answer_to(question)
    assert "computed with the calculator" not in answer and result.quality < 0.7, answer


@pytest.mark.parametrize(
    "question", ["What's 5+5 and the capital of Spain?", "What's 5+5 and 6+6 and the capital of Spain"]
)
async def test_an_ask_joined_after_a_calculation_is_not_dropped_from_an_approved_answer(question):
    """A QA review: the capital was left out without a word and the sum approved at 0.95."""
    result, _answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, result.answer)


@pytest.mark.parametrize("question", ["What is 50% plus 10%?", "50% - 20%"])
async def test_a_percent_sign_is_not_computed_as_modulo(question):
    """A QA review: "50% + 10%" was shown as `50% + 10` = **0** (50 modulo 10), the last
    percent sign dropped and the first read as the remainder operator."""
    _result, answer = await answer_to(question)
    assert "computed with the calculator" not in answer and "can't answer that offline" in answer, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # Variants of phrasings the README promises, each declined ("needs a real language model").
        ("What is 2 to the power 20?", "**1048576**"),
        ("what % of 80 is 20", "**25**"),
        ("pls calculate 64/8", "**8**"),
        ("How much is a 15% tip on a $64 bill?", "**$9.60**"),
        ("Split $90 evenly among 3 people", "**$30**"),
        ("what's 6·7", "**42**"),
        ("What time is it in NY?", " America/New_York "),
    ],
)
async def test_everyday_variants_of_promised_phrasings_are_answered(question, expected):
    """A QA review's labelled questions: each was declined."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [("Quick one: 250 * 4?", "**1000**"), ("3 plus 4 equals?", "**7**"), ("This one: 12 * 12", "**144**")],
)
async def test_a_right_answer_is_not_flagged_for_a_word_that_changes_nothing(question, expected):
    """A QA review: each was answered right but shown with a low-confidence note (quality 0.0):
    "one" in "Quick one" read as a number left unused, "equals?" as a comparison."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # A country of one time: each was "I don't know where “Finland” is".
        ("What time is it in Finland?", " Europe/Helsinki "),
        ("time in Malaysia", "+08:00)"),
        ("What's the time in Taiwan?", " Asia/Taipei "),
        # A country of several: asked about, as the README promises, not "I don't know where".
        ("What time is it in Mongolia?", "“Mongolia” keeps several time zones"),
        ("What time is it in Chile?", "“Chile” keeps several time zones"),
    ],
)
async def test_a_country_is_told_its_time_or_asked_about_from_the_time_zone_database(question, expected):
    """A QA review: some fifty countries the time-zone database names were unknown places."""
    _result, answer = await answer_to(question)
    assert expected in answer, answer
    assert ("(from the clock)" in answer) != ("keeps several" in expected), answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # Each was declined: a tax asked as a tip is, a tip "at" a rate, a percent increase, a
        # share "out of" a whole as a percent.
        ("What is 7% sales tax on $250?", "**$17.50**"),
        ("what's the tip at 20% on 75", "**15**"),
        ("What is the percent increase from 80 to 100?", "**25**"),
        ("What's 3 out of 4 as a percent?", "**75**"),
    ],
)
async def test_taxes_increases_and_shares_are_read_as_tips_and_changes_are(question, expected):
    """A QA review's labelled questions."""
    result, answer = await answer_to(question)
    assert expected in answer and result.quality >= 0.9, answer


async def test_an_operation_after_a_tip_is_not_guessed():
    """A QA review: "a 15% tip on 84 plus 10" was (15% of 84) + 10 = 22.6, approved at 0.90;
    whether the tip is on 84 or on 94 is not said."""
    result, _answer = await answer_to("a 15% tip on 84 plus 10")
    assert result.quality is not None and result.quality < 0.7, (result.quality, result.answer)


# How to answer, or how politely, said before the question: "Think very carefully" was read as
# a part of its own (LIGHT, a heading and "I can't answer 'Think very carefully' offline"), and
# "Could you please tell me, if it isn't too much trouble" as a part left unanswered (the
# correct 12 flagged as low confidence at 0.45).
COURTEOUS = [
    ("Please think very carefully and explain step by step: what is 17*23?", "**391**"),
    (
        "Could you please tell me, if it isn't too much trouble, what 144 divided by 12 is? Thanks so much!",
        "**12**",
    ),
    ("Take your time and be precise: what is 3*3?", "**9**"),
    ("Be concise - what is 6*7?", "**42**"),
]


@pytest.mark.parametrize(("question", "expected"), COURTEOUS, ids=[q for q, _ in COURTEOUS])
async def test_how_to_answer_said_before_the_question_is_not_a_part_of_it(question, expected):
    result, answer = await answer_to(question)
    assert result.final_strategy.value == "direct" and result.quality >= 0.8, (result.final_strategy, answer)
    assert expected in answer and "offline" not in answer.split(expected)[0], answer


# Places that keep one zone: "Houston and Dallas" was answered with one line naming
# America/Chicago and neither city; Osaka beside Tokyo and Seoul was never mentioned.
SHARED_ZONES = [
    ("What time is it in Houston and Dallas?", "In Houston and Dallas it is"),
    ("Whats the time in tokyo, osaka and seoul", "In Tokyo and Osaka it is"),
]


@pytest.mark.parametrize(("question", "expected"), SHARED_ZONES, ids=[q for q, _ in SHARED_ZONES])
async def test_places_that_keep_one_zone_are_each_named(question, expected):
    _result, answer = await answer_to(question)
    assert expected in answer, answer


def test_a_tool_error_is_said_in_the_tools_own_words():
    """The built-in server's SDK puts "Error executing tool clock:" before the tool's words,
    and the answer showed it: "The clock tool could not help: Error executing tool clock: …"."""
    from reasoning.llm.offline_text import answer_from_results

    said = answer_from_results(
        "what time is it in UTC+25",
        [
            (
                "nexus__clock",
                {},
                "Error executing tool clock: 'UTC+25:00' is not an offset any place keeps",
                True,
            )
        ],
    )
    assert said == "The clock tool could not help: 'UTC+25:00' is not an offset any place keeps"


# Computed right and flagged "Low confidence, quality 0.00": the currency the result is asked in
# ("in euros", the question's only currency) and a "total" that the expression sums were taken
# for words the calculation left unread. A conversion, and a tip alone called a total, still are.
READ_WHOLE = [
    ("whats 20% of 150 in euros", "**€30**"),
    ("whats 10% of 80 in dollars", "**$8**"),
    ("£250 plus 20% VAT, what's the total?", "**£300**"),
]


@pytest.mark.parametrize(("question", "expected"), READ_WHOLE, ids=[q for q, _ in READ_WHOLE])
async def test_a_currency_asked_for_and_a_summed_total_are_read(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality is not None and result.quality >= 0.9, (
        result.quality,
        answer,
    )


@pytest.mark.parametrize(
    "question",
    [
        "what is 30 dollars in euros",
        "what's the total with a 20% tip on 50",
        "What is 1250 + 300 in words, in dollars?",
    ],
)
async def test_a_conversion_or_a_part_called_a_total_is_still_not_approved(question):
    result, answer = await answer_to(question)
    assert result.quality is not None and result.quality < 0.7, (result.quality, answer)


# A step after "then" that takes a share of the result or splits it: "10 + 10 and then 50% of
# that" was answered 20 (flagged, but the number shown was the first step's).
THEN_STEPS = [
    ("what is 10 + 10 and then 50% of that", "**10**"),
    ("what is 80 plus 20, then split it between 4 people", "**25**"),
]


@pytest.mark.parametrize(("question", "expected"), THEN_STEPS, ids=[q for q, _ in THEN_STEPS])
async def test_a_share_or_a_split_of_the_result_is_computed(question, expected):
    result, answer = await answer_to(question)
    assert expected in answer and result.quality is not None and result.quality >= 0.9, (
        result.quality,
        answer,
    )


def test_a_tool_failure_is_learnt_with_its_server_and_fitting_advice():
    """A third-party server's `calculator` that timed out became "The calculator tool can fail
    (…timed out…); check its input before calling it": read by later planners as Nexus's own
    calculator, with advice no input can follow for a server that is down."""
    from reasoning.llm.offline_structured import structured_answer

    def lessons(tool: str, error: str) -> list[str]:
        hints = {"quality": 0.3, "tools": [{"tool": tool, "success": False, "error": error}]}
        return structured_answer("record_reflection", hints)["lessons"]

    (down,) = lessons("h_hang__calculator", "calculator on h_hang timed out after 60s")
    assert down.startswith("Calculator (H Hang) may be unavailable or slow") and "check its input" not in down
    (bad,) = lessons("nexus__calculator", "unsupported expression: 2 ** 'x'")
    assert bad.startswith("Calculator (Nexus) can fail") and "check its input" in bad
    (gone,) = lessons("remote__search", "tool server remote is unavailable")
    assert "may be unavailable or slow" in gone
    for tool, error in [
        ("github__close_issue", "Issue #12 is already closed"),
        ("db__query", "invalid connection string: missing host"),
        ("shell__run", "command 'foo' could not run"),
    ]:
        (lesson,) = lessons(tool, error)
        assert "check its input" in lesson, lesson


@pytest.mark.parametrize(
    "question",
    [
        "What should I do if it's not okay to return the item?",
        "Can I cancel if it's too much trouble for them?",
        "If it is possible to travel to Mars, how long would it take?",
        "Is it rude to leave early if you don't mind me asking?",
        "Keep it short-term: what stocks to buy?",
        "Think hard-boiled eggs: how long?",
        "Please tell me if 17 is prime",
        "What is 2 , 3?",
    ],
)
def test_a_condition_or_a_word_that_looks_like_manner_is_kept(question):
    """Found by a diff review: the courtesy reader took real conditions ("if it's not okay to
    return the item") and words ("short-term", "hard-boiled") for manner, and changed what
    was asked."""
    from reasoning.text import courtesy_removed

    assert courtesy_removed(question) == question
