"""Text helpers the engine and the web side share: steps, mentions and document paragraphs."""

import pytest

from reasoning.text import MENTION, as_ask, mention_quote, mention_title, paragraphs


@pytest.mark.parametrize(
    ("part", "step"),
    [
        (
            "design a disaster recovery strategy for our database",
            "Design a disaster recovery strategy for our database.",
        ),
        ("what is 2+2", "What is 2+2?"),
        ("how do we roll back", "How do we roll back?"),
        ("Summarise the notes!", "Summarise the notes!"),
    ],
)
def test_a_request_is_not_turned_into_a_question(part, step):
    """ "Design a disaster recovery strategy for our database?" read oddly in a reviewer's plan."""
    assert as_ask(part) == step


@pytest.mark.parametrize("title", ['The "Q4" roadmap', "C:\\temp\\notes", "plain"])
def test_any_title_survives_a_mention(title):
    ((quoted, bare, number),) = MENTION.findall(f"ask @{mention_quote(title)}#12 now")
    assert (mention_title(quoted) or bare, number) == (title, "12")


def test_a_heading_stays_with_the_paragraph_under_it():
    content = "# Release\n\nWe ship on Fridays.\n\n## Rollback\n\nRoll back within 30 minutes.\n\nTell #ops."
    assert paragraphs(content) == [
        "# Release\nWe ship on Fridays.",
        "## Rollback\nRoll back within 30 minutes.",
        "## Rollback\nTell #ops.",
    ]
    assert paragraphs("# Only a heading") == ["# Only a heading"]
    long = paragraphs("# H\n\n" + "word " * 100, limit=120)
    assert len(long) > 1 and all(piece.startswith("# H\n") and len(piece) <= 130 for piece in long)


async def test_a_sentence_pasted_several_times_is_answered_once():
    """A reviewer's long message held one sentence six times: the answer had six identical
    sections."""
    from reasoning import AdaptiveReasoningLoop, ReasoningConfig
    from reasoning.llm.offline import OfflineClient
    from reasoning.tools.local import builtin_provider
    from reasoning.tools.registry import ToolRegistry
    from tests.reasoning.helpers import run

    loop = AdaptiveReasoningLoop(
        OfflineClient(), ToolRegistry([builtin_provider()]), ReasoningConfig.from_env({}, provider="offline")
    )
    result, _ = await run(loop, "What is 17*23? " * 4 + "What is 2+2? what is 17*23?")
    assert result.answer.count("391") == 1 and result.answer.count("**4**") == 1


def test_a_long_heading_is_cut_before_it_is_repeated_over_each_passage():
    parts = paragraphs("# " + "wombat " * 600 + "\n\nfirst.\n\nsecond.")
    assert [len(part) <= 230 for part in parts] == [True, True] and parts[1].endswith("second.")
