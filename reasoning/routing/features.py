"""What a question asks for, as numbers a router can weigh.

Each feature means something a person would use to judge how much work a question is: how
many separate asks it makes, whether it wants research, a design or a plan, a comparison, a
lookup; how broad its scope is; whether it builds a deliverable over several aspects. The
word lists are general English, not the words of any test set. All values are in [0, 1].
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from reasoning.foresight import calculation_in_steps, split_calculations
from reasoning.text import (
    CONDITION,
    CONDITIONAL,
    LEAD_IN,
    MENTION,
    NOT_A_SENTENCE_END,
    courtesy_removed,
    joined_lines,
)

# --- vocabulary -------------------------------------------------------------------------------

_WH = r"what|what's|whats|when|where|who|whom|whose|why|how|which"
_AUX = r"is|are|was|were|do|does|did|can|could|should|would|will|shall|has|have|may|might"
# Verbs that open a separate ask ("... and explain each part", "... then recommend one").
_TASK_VERBS = (
    r"list|give|tell|explain|describe|compare|contrast|summari[sz]e|calculate|compute|convert|find|show|"
    r"write|draft|create|design|plan|propose|recommend|suggest|estimate|evaluate|analy[sz]e|review|check|"
    r"translate|outline|identify|investigate|research|assess|prioriti[sz]e|rank|build|develop|produce|"
    r"prepare|define|map|audit|name|pick|choose|say|decide|forecast|model|quantify|weigh|categori[sz]e|"
    r"determine|study|survey|synthesi[sz]e|document|measure|predict|justify|discuss|verify|test|"
    r"implement|get|look|dig|figure|work|come|put|go|read|use|address|fix|improve|make|draft|sketch|"
    r"point|flag|highlight|recap|break|walk|help|add|run|install|configure|deploy|enable|send|schedule|"
    r"update|remove|rate|score|reconcile|trace|combine|merge|extract|rewrite|shorten"
)
_ASK_START = re.compile(rf"^(?:{_WH}|{_AUX}|{_TASK_VERBS})\b", re.IGNORECASE)
_SPLIT_JOIN = re.compile(
    rf"(?:,\s*|\s+)(?:and\s+then|and\s+also|and|then|also|plus|as well as|after that|finally)\s+"
    # Not a capitalised word mid-sentence: "comparing Python and Go" names a language.
    rf"(?=(?-i:(?![A-Z][a-z]))(?:{_WH}|{_AUX}|{_TASK_VERBS})\b)",
    re.IGNORECASE,
)
# "then" after a pause, and "and also", open a new ask whatever follows ("..., and also the
# nearest station"); so does a new imperative after a comma ("review this, tell me why").
_SEQUENCE = re.compile(
    rf"\s*(?:[,;:]|\s[-–—]+)\s*(?:and\s+)?then\s+|,?\s+and\s+also\s+|,\s+(?=(?:{_TASK_VERBS})\s+(?:me|us)\b)|,\s+and\s+(?=(?:about|for|on|regarding)\s)",
    re.IGNORECASE,
)
# "What is 1+1, what is 2+2 …": after a comma, another question word starts another ask once
# the text before it asked something ("If it rains, what should I do?" is one ask).
_COMMA_QUESTION = re.compile(r",\s+(?=(?:what|how|when|where|who)(?:'s|s)?\s)", re.IGNORECASE)
_ASKS_SOMETHING = re.compile(rf"\b(?:{_WH})\b", re.IGNORECASE)
_SENTENCES = re.compile(rf"(?:(?<=[?!;])|(?<=\.){NOT_A_SENTENCE_END})\s+(?=\S)|\n+")
# What comes before the question proper: a greeting, thanks, an apology, a filler.
PREAMBLE = re.compile(
    r"^\W*(?:(?:hi|hello|hey|yo|ok|okay|um+|uh+|ehm+|erm+|hmm+|"
    r"(?:many )?(?:thanks|thank you)(?: (?:so|very) much| a lot| a bunch| again| in advance)?|cheers|"
    r"good (?:morning|afternoon|evening)|sorry(?: to bother(?: you)?)?|quick q(?:uestion)?|"
    r"one more thing)\b(?:[\s,.:;!?]|\s[—–-]+\s)*|(?:please|pls|plz|kindly|and|also|so)\s+|"
    r"(?:could|can|would|will) (?:you|u)(?: please| kindly)?\s+)+",
    re.IGNORECASE,
)
# Something changed, or happens at a given time: "jumped 60%", "used to take 10", "since the
# release", "every day at noon", "in the last two weeks". With a "why", a diagnosis to make.
CHANGE = re.compile(
    r"\b(used to|went (up|down|from)|(jump|spike|drop|dropp|fall|fell|rise|rose|grow|grew|doubl|halv|tripl|"
    r"increas|decreas|declin|slow|degrad|regress|surg|plummet|climb|dip|stall|crash)\w*|"
    r"\d+\s*%\s*(higher|lower|more|less|up|down)|"
    r"(higher|lower|worse|slower|longer|more|fewer|less) than (before|usual|last|it was|expected)|"
    r"(since|after) (the |our )?(last|latest|new|recent|yesterday|update|migration|release|redesign|launch)|"
    r"(last|past|this) (\w+ )?(days?|weeks?|months?|quarters?|years?|nights?|releases?|sprints?)|"
    r"every (day|night|morning|afternoon|evening|week|hour|time)|yesterday|lately|recently|suddenly|"
    r"anymore|keeps? \w+ing|from \d+\S* to \d+)",
    re.IGNORECASE,
)
# Asking for the cause: together with a change, a diagnosis to make.
WHY = re.compile(
    r"\b(why|what (changed|happened|went wrong|is wrong|is going on)|understand why|the cause|"
    r"what'?s (making|causing))\b",
    re.IGNORECASE,
)
# One ask over parallel targets: "to euros and to yen", "on Windows and on Mac".
PARALLEL = re.compile(r"\b(to|in|on|for|into|about|from|at) \S.{0,40}?\band \1\b", re.IGNORECASE)
# A /command names its task: "/research X" asks to research X.
COMMAND = re.compile(r"^\s*/([A-Za-z][\w-]*)\b")

RESEARCH = re.compile(
    r"\b(research|investigat\w*|stud(y|ies)|survey\w*|explor\w*|look into|dig into|figure out|find out why|"
    r"root[- ]caus\w*|diagnos\w*|audit\w*|analy[sz](e|es|ed|ing|is)|assess\w*|benchmark\w*|evaluat\w*|"
    r"review (all|every|our|the last|the past|everything)|go through|read through|synthesi[sz]\w*|"
    r"(identify|find|spot|uncover) (the |any |all )?"
    r"(patterns|trends|gaps|bottlenecks|causes?|root causes?|drivers|risks|themes|regressions|weak spots|"
    r"single points? of failure|failure modes)|what (\w+ )?(drives|is driving|causes|caused|is causing)|"
    r"reconcil\w*|trace (where|why|how|what)|pinpoint|track down|combin\w* (the|all|our|everything)|"
    r"consolidat\w*|collat\w*|pull together|work out (why|which|what|how|whether)|"
    r"gather\w*|literature|best practices|what (do|did|are) other|other (companies|teams|organi[sz]ations)|"
    r"competitors?|rivals?|competitive (landscape|analysis|teardown)|state of the art|"
    r"why (did|do|does|is|are|has|have|we|our)\b.*\b(drop|dropp\w*|increas\w*|decreas\w*|fall|fell|rise|"
    r"rose|slow\w*|fail\w*|doubl\w*|went up|go up|spik\w*|miss\w*|grow\w*|churn\w*))\b",
    re.IGNORECASE,
)
DESIGN = re.compile(
    r"\b(design\w*|architect\w*|strateg\w*|roadmap\w*|plan(s|ning)?|proposal|curricul\w*|framework|"
    r"playbook|blueprint|restructur\w*|reorgani[sz]\w*|migrat\w*|go-to-market|launch\w*|"
    r"from scratch|remediat\w*|forecast\w*|financial model|capacity|"
    r"scal(?:e|ing) (?:\w+ )?(?:to |by )?\d+x|"
    r"build(?:ing)? (?:an?|our|the) (?:[\w-]+ ){0,3}"
    r"(?:system|platform|service|engine|pipeline|infrastructure))\b",
    re.IGNORECASE,
)
_DELIVERABLES = (
    r"plan|strategy|roadmap|report|proposal|design doc\w*|technical design|framework|curriculum|timeline|"
    r"program(?:me)?|policy|process|model|runbook|playbook|analysis|pipeline|platform|architecture|schema|"
    r"specification|action plan|recommendations|assessment|review|audit|study|forecast|budget|"
    r"system|approach|structure|schedule|program|guide|handbook|documentation"
)
_MAKE = (
    r"design|create|write|draft|propose|develop|build|put together|come up with|produce|prepare|plan|"
    r"work out|define|establish|set up|devise|outline|sketch|formulate|map out|"
    r"do(?!\s+(?:we|you|i|they|our|us)\b)|suggest|recommend|need|"
    r"want|give me"
)
# Asks that open with research or design work: whatever their length, never a direct answer.
WORK_LEAD = re.compile(
    r"^(research|investigat\w*|root[- ]caus\w*|diagnos\w*|troubleshoot|audit|analy[sz]e|assess|evaluate|"
    r"benchmark|study|survey|explore|synthesi[sz]e|design|architect|plan|devise|strategi[sz]e|map out|"
    r"figure out|find out|dig into|look into|work out (why|which|what|how|whether))\b",
    re.IGNORECASE,
)
# Producing a substantial artefact: "draft a three-year strategy", "write a design document".
DELIVERABLE = re.compile(rf"\b(?:{_MAKE})\b(?:\W+[\w'-]+){{0,6}}?\W+(?:{_DELIVERABLES})\b", re.IGNORECASE)
COMPARE = re.compile(
    r"\b(compar\w*|versus|(?-i:vs)\.?|contrast\w*|pros ?(and|&|/) ?cons|pros,? cons|trade-?offs?|"
    r"(advantages|upsides|benefits) and (disadvantages|downsides|drawbacks)|strengths and weaknesses|"
    r"better (for|fit|choice|option)|(is it|would it be) (better|cheaper|smarter|wiser|worth)|"
    r"which\b[^.?!]{0,60}\b(better|best|worse|cheaper|faster|safer|easier|simpler|preferable)|"
    r"which (one |of (these|them|the two) )?(should|would|to)|which (one|of these)|weigh\w*|"
    r"(buy|rent|lease|build|hire|outsource|make) or (buy|rent|lease|build|hire|outsource|make))\b",
    re.IGNORECASE,
)
DIFFERENCE = re.compile(r"\b(differen(ce|ces|t) (between|from)|differ\w*|\w+ or \w+\?)", re.IGNORECASE)
BRIEF = re.compile(
    r"\b(in (one|a|two|three) (sentence|line|paragraph|word)s?|briefly|in short|in a nutshell|tl;?dr|"
    r"quick(ly)?|short|one-liner|simply|simple terms)\b",
    re.IGNORECASE,
)
IMPROVE = re.compile(
    r"\b(improve|make (our|the|it)\b.*\bbetter|optimi[sz]e|reduce|cut|halve|lower|increase|grow|boost|"
    r"fix (our|the way))\b",
    re.IGNORECASE,
)
RECOMMEND = re.compile(
    r"\b(recommend\w*|suggest\w*|advis\w*|should (we|i|our)|(we|i) should|prioriti[sz]\w*|pick (one|the)|"
    r"choose|decid\w*|which to|rank\w*)\b",
    re.IGNORECASE,
)
SUMMARY = re.compile(
    r"\b(summar\w*|list|outline|key points|bullet\w*|checklist|enumerat\w*|top \d+|top (three|five|ten)|"
    r"recap)\b",
    re.IGNORECASE,
)
EXPLAIN = re.compile(
    r"^(explain|describe|what is|what are|what's|whats|how does|how do(es)? .* work|why|define|tell me "
    r"(what|about|how))\b",
    re.IGNORECASE,
)
LOOKUP = re.compile(
    rf"^(?:(?:please|hey|hi|yo|ok|so|quick question|could you|can you|would you)[\s,:!]+)*"
    rf"(?:{_WH}|define|convert|calculate|compute|translate|spell|round|is|are|does|do|can|did|was|were|"
    rf"give me (a|an|the)|tell me (the|what|who|when|where|how much|how many))\b",
    re.IGNORECASE,
)
HOW_TO = re.compile(r"\b(how (do|can|should) (i|you|we)|how to)\b", re.IGNORECASE)
WRITE = re.compile(
    r"^(?:(?:please|could you|can you)\s+)?(write|draft|rewrite|fix|translate|spell|rephrase|shorten|"
    r"proofread|format)\b",
    re.IGNORECASE,
)
SCOPE = re.compile(
    r"\b(comprehensive\w*|thorough\w*|in[- ]depth|detailed|complete|end[- ]to[- ]end|holistic\w*|entire|"
    r"whole|every(thing)?|all (our|of|the|my)|across|overall|long[- ]term|from scratch|deep[- ]dive|"
    r"exhaustive\w*|full|systematic\w*|company-wide|organi[sz]ation-wide)\b",
    re.IGNORECASE,
)
SOURCES = re.compile(
    r"\b(tickets?|logs?|metrics|data|dataset|analytics|surveys?|survey results|interviews?|feedback|"
    r"retros(pectives)?|post-?mortems?|incidents?|reports?|dashboards?|heap dumps?|funnel|history|"
    r"sources|documents|docs|records|transcripts|reviews|usage)\b",
    re.IGNORECASE,
)
HORIZON = re.compile(
    r"\b(next (year|quarter|\d+ (months|years|weeks))|(last|past|previous) (quarter|year|\d+ "
    r"(months|years|weeks|releases)|(two|three|four|five|six|twelve) (months|years|weeks|releases))|this "
    r"year|\d+[- ]day|\d+ months|three[- ]year|five[- ]year|q[1-4]|over (the next )?\w+ (months|years))\b",
    re.IGNORECASE,
)
CONSTRAINTS = re.compile(
    r"\b(consider\w*|taking into account|given (that|our)|covering|including|against|without|while|"
    r"with (a |an )?(timeline|risks|costs?|owners?|success criteria|phases|milestones|estimates|"
    r"measurements|migration path|rollback)|under (\w+ )?(scenarios|constraints)|aligned with|"
    r"based on|using (our|the))\b",
    re.IGNORECASE,
)
ARITHMETIC = re.compile(
    r"\d\s*(?:[-+*/^×÷]|\*\*)\s*\d|\d\s*%|\bsqrt\b|\bsquare root\b|\bpercent\b|"
    r"\d\s*(?:times|plus|minus|divided by|to the power of)\s*\d",
    re.IGNORECASE,
)
TIME = re.compile(r"\b(time|date|today|now|tonight|weekday|week number|o'clock|timezone)\b", re.IGNORECASE)
CHITCHAT = re.compile(
    r"^\W*(hi|hello|hey|yo|thanks|thank you|ok|okay|cool|great|good (morning|afternoon|evening|night)|"
    r"bye|cheers|tell me a joke|what can you do|who are you)\b",
    re.IGNORECASE,
)
FOLLOW_UP = re.compile(r"^\W*(and|what about|how about|same|also|or)\b", re.IGNORECASE)
# Single quotes only at word edges: the apostrophes in "what's ... what's" quote nothing.
QUOTED = re.compile(r"\"[^\"\n]{1,400}\"|“[^”\n]{1,400}”|(?<!\w)'[^'\n]{12,400}'(?!\w)")
CODE = re.compile(r"`[^`]+`|\b(select|insert|update|delete)\b .*\b(from|into|set|where)\b", re.IGNORECASE)
ENUMERATION = re.compile(r"(?:^|\n)\s*(?:\d+[.)]|[-*•])\s+", re.MULTILINE)

FEATURE_NAMES = (
    "words",
    "long",
    "two_asks",
    "many_asks",
    "sentences",
    "questions",
    "commas",
    "enumerated",
    "research",
    "research_strong",
    "design",
    "deliverable",
    "compare",
    "difference",
    "recommend",
    "summary",
    "brief",
    "improve",
    "explain",
    "lookup_start",
    "how_to",
    "write_task",
    "scope",
    "sources",
    "aspects",
    "constraints",
    "arithmetic",
    "time",
    "chitchat",
    "follow_up",
    "attachments",
    "code",
    "short",
    "our",
    "imperative",
    "research_x_sources",
    "design_x_aspects",
    "horizon_x_work",
    "compare_x_recommend",
    "asks_x_work",
    "single_write",
    "work_lead",
    "command",
    "parallel",
    "diagnosis",
)


@dataclass(frozen=True)
class Reading:
    """A question read for routing: its separate asks and its features."""

    asks: tuple[str, ...]
    values: dict[str, float]

    def vector(self) -> list[float]:
        return [self.values[name] for name in FEATURE_NAMES]


def _cap(count: float, top: float) -> float:
    return min(count, top) / top


def clean(question: str) -> str:
    """The question's own words: mentions, quoted material and code stand in as one word each."""
    return joined_lines(_stand_ins(question))


def _stand_ins(question: str) -> str:
    """clean's text with its lines as written (the list items on lines of their own)."""
    text = MENTION.sub(" the document ", question or "")
    text = QUOTED.sub(" the text ", text)
    text = re.sub(r"```.*?```", " the code ", text, flags=re.DOTALL)
    return COMMAND.sub(lambda m: m.group(1).replace("-", " ").replace("_", " "), text)


def _comma_questions(piece: str) -> list[str]:
    head, *rest = _COMMA_QUESTION.split(piece)
    return [head, *rest] if rest and _ASKS_SOMETHING.search(head) and not CONDITION.match(head) else [piece]


def aspects_listed(sentence: str) -> bool:
    """ "Compare A and B: where each is stronger, where it is weaker, and which to pick": one
    ask, with the aspects it wants after its colon (split, the aspects read as asks of their
    own, and a plan step was headed "Where it is weaker?"). Questions after the colon ("Research
    and compare: what is 12 * 450, and what time is it in London?") are asks of their own."""
    head, colon, tail = sentence.partition(":")
    return bool(colon) and bool(_ASK_START.match(head)) and "," in tail and not tail.rstrip().endswith("?")


def split_asks(text: str) -> list[str]:
    """The separate requests in a question ("Compare A and B, then recommend one" has two).
    Each list item, or line that starts a question, is read on its own: "- time in Denver" is
    an ask, not a remark before the next line's."""
    lines = [courtesy_removed(line) for line in joined_lines(text).split("\n")]
    # "Calculate:" before the items it introduces asks nothing of its own.
    lines = [line for number, line in enumerate(lines) if number == len(lines) - 1 or not LEAD_IN.match(line)]
    return [ask for line in lines for ask in _asks_in_line(line)]


def _asks_in_line(text: str) -> list[str]:
    asks: list[str] = []
    remarks: list[str] = []  # statements before the first ask ("I love pizza. What is 2+2?")
    for sentence in _SENTENCES.split(text):
        sentence = PREAMBLE.sub("", sentence).strip(" .;:!")
        if not sentence.strip("?"):
            continue
        if CONDITIONAL.match(sentence) or aspects_listed(sentence) or calculation_in_steps(sentence):
            pieces = [sentence.strip(" ,.;:!?")]
        else:
            pieces = [
                p.strip(" ,.;:!?")
                for sequenced in _SEQUENCE.split(sentence)
                for joined in _SPLIT_JOIN.split(sequenced)
                for calculation in split_calculations(joined)
                for p in _comma_questions(calculation)
            ]
        for index, piece in enumerate(pieces):
            if not re.search(r"\w", piece):
                continue
            statement = index == 0 and not _ASK_START.match(piece) and not sentence.endswith("?")
            # A sentence that starts no ask of its own (the list after a colon, a short
            # fragment) continues the previous ask, unless it is a question of its own.
            if asks and statement:
                asks[-1] = f"{asks[-1]}: {piece}"
                continue
            # A statement before any ask is context, whatever "and" joins in it ("A shirt costs
            # $40 and is 25% off. What do I pay?" asks one thing).
            if statement and not asks:
                remarks.extend(p for p in pieces if re.search(r"\w", p))
                break
            asks.append(piece)
    # Remarks are context for the asks after them, not asks; a message of remarks alone is
    # what is asked.
    return asks or remarks


def read(question: str, *, attachments: int = 0, conversation: int = 0) -> Reading:
    raw = question or ""
    text = clean(raw)
    words = re.findall(r"[\w'’-]+", text)
    # Split from the lines as written: clean's text has its list items' markers taken off, and
    # read again ("- 5+5" then "5+5") they were one ask with the lines around them.
    asks = split_asks(_stand_ins(raw))
    sentences = [s for s in _SENTENCES.split(text) if re.search(r"\w", s)]
    mentions = len(MENTION.findall(raw))
    first = asks[0] if asks else text
    research = len(set(m.group(0).lower() for m in RESEARCH.finditer(text)))
    design = bool(DESIGN.search(text))
    deliverable = bool(DELIVERABLE.search(text))
    sources = len(SOURCES.findall(text))
    # Aspects to cover: "covering A, B, C and D" / "against X, Y and Z".
    aspects = text.count(",") + len(re.findall(r"\band\b", text, re.IGNORECASE))
    work = research > 0 or design or deliverable
    values = {
        "words": _cap(math.log1p(len(words)), math.log1p(60)),
        "long": 1.0 if len(words) >= 25 else 0.0,
        "two_asks": 1.0 if len(asks) >= 2 else 0.0,
        "many_asks": 1.0 if len(asks) >= 3 else 0.0,
        "sentences": _cap(max(0, len(sentences) - 1), 2),
        "questions": _cap(max(0, raw.count("?") - 1), 2),
        "commas": _cap(text.count(","), 4),
        "enumerated": _cap(len(ENUMERATION.findall(raw)), 4),
        "research": 1.0 if research else 0.0,
        "research_strong": 1.0 if research >= 2 else 0.0,
        "design": 1.0 if design else 0.0,
        "deliverable": 1.0 if deliverable else 0.0,
        "compare": 1.0 if COMPARE.search(text) else 0.0,
        "difference": 1.0 if DIFFERENCE.search(text) else 0.0,
        "recommend": 1.0 if RECOMMEND.search(text) else 0.0,
        "summary": 1.0 if SUMMARY.search(text) else 0.0,
        "brief": 1.0 if BRIEF.search(text) else 0.0,
        "improve": 1.0 if IMPROVE.search(text) else 0.0,
        "explain": 1.0 if EXPLAIN.match(first) else 0.0,
        "lookup_start": 1.0 if LOOKUP.match(first) else 0.0,
        "how_to": 1.0 if HOW_TO.search(text) else 0.0,
        "write_task": 1.0 if WRITE.match(first) else 0.0,
        "scope": _cap(len(SCOPE.findall(text)), 2),
        "sources": _cap(sources, 3),
        "aspects": _cap(aspects, 5),
        "constraints": 1.0 if CONSTRAINTS.search(text) else 0.0,
        "arithmetic": 1.0 if ARITHMETIC.search(text) else 0.0,
        "time": 1.0 if TIME.search(text) else 0.0,
        "chitchat": 1.0 if CHITCHAT.match(text) else 0.0,
        "follow_up": 1.0 if FOLLOW_UP.match(text) and len(words) <= 6 else 0.0,
        "attachments": _cap(max(attachments, mentions), 2),
        "code": 1.0 if CODE.search(raw) else 0.0,
        "short": 1.0 if len(words) <= 6 else 0.0,
        "our": _cap(len(re.findall(r"\b(our|we|us)\b", text, re.IGNORECASE)), 3),
        "imperative": 1.0 if re.match(rf"^(?:{_TASK_VERBS})\b", first, re.IGNORECASE) else 0.0,
    }
    values["research_x_sources"] = values["research"] * values["sources"]
    values["design_x_aspects"] = max(values["design"], values["deliverable"]) * values["aspects"]
    values["horizon_x_work"] = 1.0 if HORIZON.search(text) and work else 0.0
    values["compare_x_recommend"] = values["compare"] * values["recommend"]
    values["asks_x_work"] = values["two_asks"] * (1.0 if work else 0.0)
    values["single_write"] = values["write_task"] * (1.0 - values["two_asks"])
    values["work_lead"] = 1.0 if any(WORK_LEAD.match(ask) for ask in asks) else 0.0
    values["command"] = 1.0 if COMMAND.match(raw) else 0.0
    values["parallel"] = 1.0 if PARALLEL.search(text) else 0.0
    values["diagnosis"] = 1.0 if WHY.search(text) and CHANGE.search(text) else 0.0
    return Reading(tuple(asks), values)
