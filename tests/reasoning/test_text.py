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
