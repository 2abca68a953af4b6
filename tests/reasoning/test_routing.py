"""The local router: right on the questions the issue found misrouted, honest about its data."""

import pytest

from reasoning.routing import Router
from reasoning.routing.dataset import load, load_unseen, score, split_for
from reasoning.routing.features import read, split_asks
from reasoning.routing.model import LEVELS
from reasoning.routing.train import main as train_main
from reasoning.routing.train import train


@pytest.mark.parametrize(
    ("question", "level"),
    [
        # Complex work the old heuristic sent DIRECT or LIGHT.
        ("Design a migration plan for moving our user accounts to the new identity provider.", "complex"),
        ("Study last quarter's support tickets and explain what made customers unhappy.", "complex"),
        ("Comprehensively review our backup procedures and tell us what to fix first.", "complex"),
        # Two parts without a "research word" used to score 0.26 and go DIRECT.
        ("What is 12*12 and what is the capital of Peru?", "medium"),
        ("Compare Terraform and Pulumi for our infrastructure.", "medium"),
        ('Summarize @"Q2 review" and list the action items.', "medium"),
        # A question about an attached document is as simple as the question.
        ('What does @"Deploy guide" say about feature flags?', "simple"),
        ("What is the capital of Peru?", "simple"),
    ],
)
def test_questions_are_routed_by_what_they_ask(question, level):
    decision = Router().route(question)
    assert decision.level.value == level, decision.to_dict()


def test_the_router_reads_separate_asks_not_the_mentioned_titles():
    assert split_asks("Compare SQLite and PostgreSQL for a small team, then recommend one") == [
        "Compare SQLite and PostgreSQL for a small team",
        "recommend one",
    ]
    # "Go" is a language here, not a second ask ("Go, with a code block." got a heading).
    assert split_asks("Write me a markdown table comparing Python and Go, with a code block.") == [
        "Write me a markdown table comparing Python and Go, with a code block"
    ]
    assert split_asks("Summarise the doc and list its open questions") == [
        "Summarise the doc",
        "list its open questions",
    ]
    assert split_asks("What does this error mean: ECONNREFUSED 127.0.0.1:5432?") == [
        "What does this error mean: ECONNREFUSED 127.0.0.1:5432"
    ]
    planning_title = read('What does @"Migration plan" say about rollback?')
    assert planning_title.values["design"] == 0, "a document's title is not the question's intent"
    assert planning_title.values["attachments"] > 0


def test_a_decision_explains_itself_in_words_and_is_deterministic():
    first = Router().route("Compare SQLite and PostgreSQL for a small team and recommend one.")
    second = Router().route("Compare SQLite and PostgreSQL for a small team and recommend one.")
    assert first.to_dict() == second.to_dict()
    rationale = first.analysis().rationale
    assert "comparison" in rationale and "light plan" in rationale and "score" not in rationale


def test_routing_on_the_held_out_split_meets_the_goal():
    """A regression guard on questions the router was never trained or tuned on."""
    router = Router()
    held_out = load("heldout")
    scores = score(held_out, lambda question: router.route(question).level.value)
    assert len(held_out) >= 60 and {row.level for row in held_out} == set(LEVELS)
    assert scores.accuracy >= 0.85, "\n".join(scores.lines())
    assert scores.complex_as_simple == 0, "no complex question is ever routed DIRECT"


def test_the_labelled_set_is_varied_and_its_split_is_fixed_by_a_hash():
    rows = load()
    assert len(rows) >= 200 and len({row.question for row in rows}) == len(rows)
    kinds = {row.kind for row in rows}
    assert {
        "lookup",
        "comparison",
        "multipart",
        "document",
        "planning",
        "investigation",
        "ambiguous",
    } <= kinds
    assert all(row.split == split_for(row.question) for row in rows), "no question moved between splits"


def test_training_never_sees_the_held_out_split_and_reproduces_the_shipped_weights():
    with pytest.raises(ValueError, match="training split only"):
        train(load("heldout")[:5])
    assert train_main(["--check", "--no-cv"]) == 0, "weights.json is what training on the shipped data gives"


def test_punctuation_and_names_are_not_mistaken_for_what_a_question_asks():
    """Misreadings found on the unseen sets: an apostrophe opened a "quote" that swallowed the
    second ask, "VS Code" read as a comparison, "analyst" as analysis, "which is the default"
    as a choice between options."""
    two = read("What's 12% of 900, and what's that per week over a year?").asks
    assert two == ("What's 12% of 900", "what's that per week over a year")
    assert read("How do I split the editor in VS Code?").values["compare"] == 0
    assert read("Write a job ad for a senior data analyst.").values["research"] == 0
    assert read("Which is the default port for Redis?").values["compare"] == 0
    assert read("Which is cheaper for us, Heroku or Render?").values["compare"] == 1


def test_greetings_polite_wrappers_and_sequences_are_read_as_such():
    assert split_asks("Thanks! and what is 9 factorial?") == ["what is 9 factorial"]
    assert split_asks("Hi, could you please tell me the capital of Chile?") == [
        "tell me the capital of Chile"
    ]
    assert split_asks("Sum 10, 20 and 30 — then divide the total by 3") == [
        "Sum 10, 20 and 30",
        "divide the total by 3",
    ]
    assert len(split_asks("Find me the office address and the parking rules, and also the wifi name")) == 2
    assert Router().route("Good morning!").level.value == "simple"


@pytest.mark.parametrize(
    "question",
    [
        "Root-cause yesterday's checkout errors.",
        "/investigate the login timeouts",
        "Why did our signup emails bounce so much this week?",
        "What's making the nightly job fail every night since Tuesday?",
        "How do we cut our build time in half? Need a realistic plan.",
    ],
)
def test_short_requests_for_work_are_never_answered_directly(question):
    """Complex work in few words (a diagnosis, a plan, a /command naming research) once went
    DIRECT; asking for work now rules DIRECT out, whatever the model's lean."""
    decision = Router().route(question)
    assert decision.level.value != "simple", decision.to_dict()


def test_work_about_us_beyond_one_finding_is_complex():
    decision = Router().route(
        "Why is our support backlog 30% longer than last month? Find the cause and what we should change."
    )
    assert decision.level.value == "complex", decision.to_dict()


def test_the_unseen_sets_are_never_trained_on_and_meet_the_goal():
    """Questions written apart from the training data: the goal the project is judged on."""
    unseen = load_unseen()
    training = {row.question.lower() for row in load()}
    assert len(unseen) >= 120 and not [row for row in unseen if row.question.lower() in training]
    with pytest.raises(ValueError, match="training split only"):
        train(unseen[:5])
    router = Router()
    scores = score(unseen, lambda question: router.route(question).level.value)
    assert scores.accuracy >= 0.85, "\n".join(scores.lines())
    assert scores.complex_as_simple == 0, "no complex question is ever routed DIRECT"


@pytest.mark.parametrize(
    "question",
    ["Evaluate 3*(4+5) - 2**3", "Evaluate 7*2 + 5", "Analyze: what is 3*4?", "Solve 12 divided by 4"],
)
def test_a_bare_calculation_is_answered_directly_whatever_verb_asks_it(question):
    """ "Evaluate" or "Analyze" in front of a calculation read as research: DEEP, three model
    calls and a plan for 7*2 + 5."""
    from reasoning.routing.router import Router

    assert Router().route(question).level.value == "simple"
    assert Router().route("Evaluate the risk of migrating 3 services to Kubernetes").level.value == "complex"


@pytest.mark.parametrize(
    "question",
    ["How would you build a search engine for 1 billion documents?", "How can we scale Postgres 100x?"],
)
def test_building_or_scaling_a_system_is_never_answered_directly(question):
    """Asked as a how-to, each was routed DIRECT with 90%+ confidence."""
    from reasoning.routing.router import Router

    assert Router().route(question).level.value != "simple"
