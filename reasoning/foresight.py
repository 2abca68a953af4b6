"""Foresight: the tool calls a simple question needs, known before any model is asked.

A simple question answered with a tool would cost three model calls: one to ask for the
tool, one to answer from its result, one to check the answer. When the call can be read off
the question deterministically (the arithmetic in "What's 15% of 86.40?", the clock for
"What time is it in Tokyo?", the team's documents for "What does our handbook say about
rollback?"), the engine makes it first and hands the result to the answer call, so the tool
costs no model call. Only the tools named here are foreseen; only their need is judged here.
A question the reading gets wrong is answered without the tool, and the quality check sees
what is missing (and escalates to a strategy with the full tool loop when that can help).
"""

from __future__ import annotations

import functools
import re
import unicodedata
import zoneinfo
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

from reasoning.llm.base import ToolCall
from reasoning.text import LIST_ITEM, inline_items_apart, sentences
from reasoning.tools.builtin import ZONE_ABBREVIATIONS as CLOCK_ABBREVIATIONS
from reasoning.tools.builtin import CalculatorError, calculate, offset_name

# The tools whose need foresight judges, by their base name (a server may prefix it).
FORESEEN_TOOLS = ("calculator", "clock", "search_documents")
MAX_FORESEEN = 4

# A few common places, so "what time is it in Tokyo" works without an IANA name.
CITY_ZONES = {
    "tokyo": "Asia/Tokyo",
    "japan": "Asia/Tokyo",
    "london": "Europe/London",
    "uk": "Europe/London",
    "paris": "Europe/Paris",
    "france": "Europe/Paris",
    "berlin": "Europe/Berlin",
    "germany": "Europe/Berlin",
    "madrid": "Europe/Madrid",
    "rome": "Europe/Rome",
    "amsterdam": "Europe/Amsterdam",
    "new york": "America/New_York",
    "nyc": "America/New_York",
    "boston": "America/New_York",
    "chicago": "America/Chicago",
    "denver": "America/Denver",
    "los angeles": "America/Los_Angeles",
    "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "toronto": "America/Toronto",
    "mexico city": "America/Mexico_City",
    "sao paulo": "America/Sao_Paulo",
    "sydney": "Australia/Sydney",
    "melbourne": "Australia/Melbourne",
    "auckland": "Pacific/Auckland",
    "singapore": "Asia/Singapore",
    "hong kong": "Asia/Hong_Kong",
    "shanghai": "Asia/Shanghai",
    "beijing": "Asia/Shanghai",
    "seoul": "Asia/Seoul",
    "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "dubai": "Asia/Dubai",
    "moscow": "Europe/Moscow",
    "istanbul": "Europe/Istanbul",
    "cairo": "Africa/Cairo",
    "johannesburg": "Africa/Johannesburg",
    "lagos": "Africa/Lagos",
    "california": "America/Los_Angeles",
    "texas": "America/Chicago",
    "florida": "America/New_York",
    "new jersey": "America/New_York",
    "washington dc": "America/New_York",
    "hawaii": "Pacific/Honolulu",
    "alaska": "America/Anchorage",
    "spain": "Europe/Madrid",
    "italy": "Europe/Rome",
    "netherlands": "Europe/Amsterdam",
    "ireland": "Europe/Dublin",
    "portugal": "Europe/Lisbon",
    "switzerland": "Europe/Zurich",
    "sweden": "Europe/Stockholm",
    "norway": "Europe/Oslo",
    "poland": "Europe/Warsaw",
    "greece": "Europe/Athens",
    "turkey": "Europe/Istanbul",
    "israel": "Asia/Jerusalem",
    "egypt": "Africa/Cairo",
    "nigeria": "Africa/Lagos",
    "kenya": "Africa/Nairobi",
    "south africa": "Africa/Johannesburg",
    "china": "Asia/Shanghai",
    "south korea": "Asia/Seoul",
    "korea": "Asia/Seoul",
    "thailand": "Asia/Bangkok",
    "vietnam": "Asia/Ho_Chi_Minh",
    "philippines": "Asia/Manila",
    "pakistan": "Asia/Karachi",
    "argentina": "America/Argentina/Buenos_Aires",
    "colombia": "America/Bogota",
    "peru": "America/Lima",
    "new zealand": "Pacific/Auckland",
    "utc": "UTC",
    "gmt": "UTC",
    "eastern time": "America/New_York",
    "central time": "America/Chicago",
    "mountain time": "America/Denver",
    "pacific time": "America/Los_Angeles",
    "atlantic time": "America/Halifax",
    "alaska time": "America/Anchorage",
    "east coast": "America/New_York",
    "west coast": "America/Los_Angeles",
    # Cities the time-zone database does not name, by the zone they keep.
    "houston": "America/Chicago", "dallas": "America/Chicago", "austin": "America/Chicago",
    "miami": "America/New_York", "atlanta": "America/New_York", "philadelphia": "America/New_York",
    "philly": "America/New_York", "washington": "America/New_York", "las vegas": "America/Los_Angeles",
    "san diego": "America/Los_Angeles", "portland": "America/Los_Angeles", "ottawa": "America/Toronto",
    "montreal": "America/Toronto", "calgary": "America/Edmonton", "rio de janeiro": "America/Sao_Paulo",
    "munich": "Europe/Berlin", "frankfurt": "Europe/Berlin", "hamburg": "Europe/Berlin",
    "barcelona": "Europe/Madrid", "milan": "Europe/Rome", "geneva": "Europe/Zurich",
    "edinburgh": "Europe/London", "manchester": "Europe/London", "st petersburg": "Europe/Moscow",
    "saint petersburg": "Europe/Moscow", "valencia": "Europe/Madrid",
    # The places AMBIGUOUS_PLACES offers, as it writes them.
    "birmingham, england": "Europe/London", "birmingham, uk": "Europe/London",
    "san jose, costa rica": "America/Costa_Rica", "richmond, british columbia": "America/Vancouver",
    "valencia, venezuela": "America/Caracas", "victoria, british columbia": "America/Vancouver",
    "victoria, australia": "Australia/Melbourne", "victoria, bc": "America/Vancouver",
    "nsw": "Australia/Sydney", "iceland": "Atlantic/Reykjavik",
    "osaka": "Asia/Tokyo", "kyoto": "Asia/Tokyo", "shenzhen": "Asia/Shanghai",
    "guangzhou": "Asia/Shanghai", "bombay": "Asia/Kolkata", "bangalore": "Asia/Kolkata",
    "bengaluru": "Asia/Kolkata", "chennai": "Asia/Kolkata", "hyderabad": "Asia/Kolkata",
    "lahore": "Asia/Karachi", "tel aviv": "Asia/Jerusalem", "abu dhabi": "Asia/Dubai",
    "hanoi": "Asia/Bangkok", "cape town": "Africa/Johannesburg", "sf": "America/Los_Angeles",
    # More that a labelled-question review asked about and found declined ("I don't know where").
    # Only names with one likely zone: not Birmingham (England or Alabama), San Jose or Richmond.
    "salt lake city": "America/Denver", "salt lake": "America/Denver", "albuquerque": "America/Denver",
    "el paso": "America/Denver", "tucson": "America/Phoenix", "minneapolis": "America/Chicago",
    "nashville": "America/Chicago", "new orleans": "America/Chicago", "kansas city": "America/Chicago",
    "st louis": "America/Chicago", "saint louis": "America/Chicago", "san antonio": "America/Chicago",
    "memphis": "America/Chicago", "milwaukee": "America/Chicago", "oklahoma city": "America/Chicago",
    "omaha": "America/Chicago", "fort worth": "America/Chicago", "pittsburgh": "America/New_York",
    "cleveland": "America/New_York", "cincinnati": "America/New_York", "columbus": "America/New_York",
    "baltimore": "America/New_York", "charlotte": "America/New_York", "raleigh": "America/New_York",
    "orlando": "America/New_York", "tampa": "America/New_York", "jacksonville": "America/New_York",
    "charleston": "America/New_York", "newark": "America/New_York", "hartford": "America/New_York",
    "providence": "America/New_York", "buffalo": "America/New_York", "sacramento": "America/Los_Angeles",
    "oakland": "America/Los_Angeles", "guadalajara": "America/Mexico_City", "quito": "America/Guayaquil",
    "brasilia": "America/Sao_Paulo", "glasgow": "Europe/London", "liverpool": "Europe/London",
    "malaga": "Europe/Madrid", "ankara": "Europe/Istanbul", "marrakesh": "Africa/Casablanca",
    "marrakech": "Africa/Casablanca", "pretoria": "Africa/Johannesburg", "durban": "Africa/Johannesburg",
    "doha": "Asia/Qatar", "islamabad": "Asia/Karachi", "pune": "Asia/Kolkata", "ahmedabad": "Asia/Kolkata",
    "busan": "Asia/Seoul", "sapporo": "Asia/Tokyo", "bali": "Asia/Makassar", "wellington": "Pacific/Auckland",
    "christchurch": "Pacific/Auckland", "suva": "Pacific/Fiji", "abuja": "Africa/Lagos",
    "chengdu": "Asia/Shanghai", "wuhan": "Asia/Shanghai", "hangzhou": "Asia/Shanghai",
    "nanjing": "Asia/Shanghai", "xian": "Asia/Shanghai", "medellin": "America/Bogota",
    "bay area": "America/Los_Angeles", "silicon valley": "America/Los_Angeles",
    # Names the database gives a less likely place (its "Pacific/Samoa" is American Samoa, a
    # day behind Samoa; its San Juan is in Argentina).
    "samoa": "Pacific/Apia", "san juan": "America/Puerto_Rico", "puerto rico": "America/Puerto_Rico",
    "santiago de compostela": "Europe/Madrid",
    # Cities as their own people write them, and English names the database does not use.
    "koln": "Europe/Berlin", "cologne": "Europe/Berlin", "munchen": "Europe/Berlin",
    "dusseldorf": "Europe/Berlin", "stuttgart": "Europe/Berlin", "leipzig": "Europe/Berlin",
    "dresden": "Europe/Berlin", "nuremberg": "Europe/Berlin", "nurnberg": "Europe/Berlin",
    "wien": "Europe/Vienna", "salzburg": "Europe/Vienna", "geneve": "Europe/Zurich",
    "genf": "Europe/Zurich", "basel": "Europe/Zurich", "bern": "Europe/Zurich",
    "krakow": "Europe/Warsaw", "cracow": "Europe/Warsaw", "warszawa": "Europe/Warsaw",
    "gdansk": "Europe/Warsaw", "wroclaw": "Europe/Warsaw", "praha": "Europe/Prague",
    "roma": "Europe/Rome", "milano": "Europe/Rome", "napoli": "Europe/Rome", "naples": "Europe/Rome",
    "florence": "Europe/Rome", "firenze": "Europe/Rome", "venice": "Europe/Rome",
    "venezia": "Europe/Rome", "turin": "Europe/Rome", "torino": "Europe/Rome",
    "lisboa": "Europe/Lisbon", "porto": "Europe/Lisbon", "porto alegre": "America/Sao_Paulo",
    "sevilla": "Europe/Madrid",
    "seville": "Europe/Madrid", "bruxelles": "Europe/Brussels", "brussel": "Europe/Brussels",
    "antwerp": "Europe/Brussels", "antwerpen": "Europe/Brussels", "rotterdam": "Europe/Amsterdam",
    "the hague": "Europe/Amsterdam", "kobenhavn": "Europe/Copenhagen", "goteborg": "Europe/Stockholm",
    "gothenburg": "Europe/Stockholm", "moskva": "Europe/Moscow", "lyon": "Europe/Paris",
    "marseille": "Europe/Paris", "toulouse": "Europe/Paris", "bordeaux": "Europe/Paris",
    "newfoundland": "America/St_Johns", "nepal": "Asia/Kathmandu", "bhutan": "Asia/Thimphu",
    "sri lanka": "Asia/Colombo",
    "bangladesh": "Asia/Dhaka", "zulu time": "UTC",
    # Regions that keep one zone (also what a place after a comma means: "Perth, Scotland").
    "scotland": "Europe/London", "england": "Europe/London", "wales": "Europe/London",
    "ontario": "America/Toronto", "quebec": "America/Toronto", "nova scotia": "America/Halifax",
    "british columbia": "America/Vancouver", "alberta": "America/Edmonton",
    "manitoba": "America/Winnipeg", "saskatchewan": "America/Regina", "new brunswick": "America/Moncton",
    "prince edward island": "America/Halifax",
    "arizona": "America/Phoenix", "illinois": "America/Chicago", "massachusetts": "America/New_York",
    "oregon": "America/Los_Angeles", "nevada": "America/Los_Angeles", "colorado": "America/Denver",
    "washington state": "America/Los_Angeles", "bavaria": "Europe/Berlin",
    "new south wales": "Australia/Sydney", "queensland": "Australia/Brisbane",
    "western australia": "Australia/Perth",
}  # fmt: skip
# US states after a comma ("Portland, Maine", "Vancouver, Washington"): which place of that
# name is meant, and, for a state that keeps one zone, its time, whether or not the city is
# known. A state of several zones (None) settles only a city the list knows in the US.
_ET, _CT, _MT, _PT = "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles"
US_STATES = {
    "alabama": _CT, "arizona": "America/Phoenix", "arkansas": _CT, "california": _PT, "colorado": _MT,
    "connecticut": _ET, "delaware": _ET, "georgia": _ET, "hawaii": "Pacific/Honolulu", "illinois": _CT,
    "iowa": _CT, "louisiana": _CT, "maine": _ET, "maryland": _ET, "massachusetts": _ET,
    "minnesota": _CT, "mississippi": _CT, "missouri": _CT, "montana": _MT, "nevada": _PT,
    "new hampshire": _ET, "new jersey": _ET, "new mexico": _MT, "new york": _ET,
    "north carolina": _ET, "ohio": _ET, "oklahoma": _CT, "pennsylvania": _ET, "rhode island": _ET,
    "south carolina": _ET, "utah": _MT, "vermont": _ET, "virginia": _ET, "washington": _PT,
    "west virginia": _ET, "wisconsin": _CT, "wyoming": _MT,
    "alaska": None, "florida": None, "idaho": None, "indiana": None, "kansas": None, "kentucky": None,
    "michigan": None, "nebraska": None, "north dakota": None, "oregon": None, "south dakota": None,
    "tennessee": None, "texas": None,
}  # fmt: skip
# "Austin, TX": a state by its postal code, read in capitals after a comma only ("OK", "IN" and
# "ME" are words too).
_POSTAL_CODES = {
    "AL": "alabama", "AK": "alaska", "AZ": "arizona", "AR": "arkansas", "CA": "california",
    "CO": "colorado", "CT": "connecticut", "DE": "delaware", "FL": "florida", "GA": "georgia",
    "HI": "hawaii", "ID": "idaho", "IL": "illinois", "IN": "indiana", "IA": "iowa", "KS": "kansas",
    "KY": "kentucky", "LA": "louisiana", "ME": "maine", "MD": "maryland", "MA": "massachusetts",
    "MI": "michigan", "MN": "minnesota", "MS": "mississippi", "MO": "missouri", "MT": "montana",
    "NE": "nebraska", "NV": "nevada", "NH": "new hampshire", "NJ": "new jersey", "NM": "new mexico",
    "NY": "new york", "NC": "north carolina", "ND": "north dakota", "OH": "ohio", "OK": "oklahoma",
    "OR": "oregon", "PA": "pennsylvania", "RI": "rhode island", "SC": "south carolina",
    "SD": "south dakota", "TN": "tennessee", "TX": "texas", "UT": "utah", "VT": "vermont",
    "VA": "virginia", "WA": "washington", "WV": "west virginia", "WI": "wisconsin", "WY": "wyoming",
}  # fmt: skip
_POSTAL_AFTER_COMMA = re.compile(rf",\s*({'|'.join(_POSTAL_CODES)})\b(?![.'’]?\w)")
# Canada's provinces by their codes ("London, ON"): spelled as the qualifiers the readers know.
_PROVINCE_CODES = {
    "ON": "Ontario", "QC": "Quebec", "BC": "British Columbia", "AB": "Alberta", "NS": "Nova Scotia",
    "MB": "Manitoba", "SK": "Saskatchewan", "NB": "New Brunswick", "NL": "Newfoundland",
    "PE": "Prince Edward Island",
}  # fmt: skip
_PROVINCE_AFTER_COMMA = re.compile(rf",\s*({'|'.join(_PROVINCE_CODES)})\b(?![.'’]?\w)")
# "Portland ME", "London ON": a code in capitals straight after a place's name, with no comma
# (WA is left out: "Perth WA" is as often Western Australia).
_CODE_AFTER_NAME = re.compile(
    rf"\b([A-Z][a-z][\w'’.-]*)\s+({'|'.join(c for c in [*_POSTAL_CODES, *_PROVINCE_CODES] if c != 'WA')})"
    r"\b(?![.'’]?\w)"
)


# Time zones by their full names, as the names the clock reads: "Eastern Standard Time" is EST
# (its own offset whatever the season, as the abbreviation is).
_ZONES_SPELLED = {
    "eastern standard time": "EST", "eastern daylight time": "EDT", "central standard time": "CST",
    "central daylight time": "CDT", "mountain standard time": "MST", "mountain daylight time": "MDT",
    "pacific standard time": "PST", "pacific daylight time": "PDT", "alaska standard time": "AKST",
    "hawaii standard time": "HST", "hawaii-aleutian standard time": "HST",
    "atlantic standard time": "UTC-4", "atlantic daylight time": "ADT", "british summer time": "BST",
    "greenwich mean time": "UTC", "coordinated universal time": "UTC", "western european time": "WET",
    "central european time": "CET", "central european summer time": "CEST",
    "eastern european time": "EET", "eastern european summer time": "EEST", "moscow standard time": "MSK",
    "india standard time": "IST", "indian standard time": "IST", "japan standard time": "JST",
    "korea standard time": "KST", "korean standard time": "KST", "singapore time": "SGT",
    "singapore standard time": "SGT", "hong kong time": "HKT", "china standard time": "UTC+8",
    "australian eastern standard time": "AEST", "australian eastern daylight time": "AEDT",
    "australian central standard time": "ACST", "australian western standard time": "AWST",
    "new zealand standard time": "NZST", "new zealand daylight time": "NZDT",
}  # fmt: skip
_ZONE_SPELLED = re.compile(rf"\b({'|'.join(sorted(_ZONES_SPELLED, key=len, reverse=True))})\b", re.IGNORECASE)


def states_spelled(text: str) -> str:
    """ "Austin, TX" as "Austin, texas", "London ON" as "London, Ontario", "Central European
    Time" as CET: names the place readers know."""
    text = _ZONE_SPELLED.sub(lambda m: _ZONES_SPELLED[m[1].lower()], text)
    text = _CODE_AFTER_NAME.sub(lambda m: f"{m[1]}, {m[2]}", text)
    text = _PROVINCE_AFTER_COMMA.sub(lambda m: f", {_PROVINCE_CODES[m[1]]}", text)
    text = _POSTAL_AFTER_COMMA.sub(lambda m: f", {_POSTAL_CODES[m[1]]}", text)
    # "Paris Texas", "Salt Lake City Utah": a state or country straight after a place says
    # which place is meant, as after a comma; it is no second place to tell the time of.
    return _REGION_AFTER_SPACE.sub(
        lambda m: f", {m[1]}" if _names_place(m.string[: m.start()]) else m.group(), text
    )


_STATE_AFTER_COMMA = re.compile(
    rf",\s*({'|'.join(sorted(US_STATES, key=len, reverse=True))})\b(?!\s*,?\s*d\s*c\b)"
)


def state_zone(city_zone: str | None, state: str) -> str | None:
    """The zone "<city>, <state>" names (`city_zone`: the city's own, if known), None when the
    state does not settle it: a state of several zones and a city it does not place there, or
    a state's name that is the city's country ("Tbilisi, Georgia")."""
    state = fold(state).strip()
    if state not in US_STATES:
        return None
    city_country = country_of(city_zone) if city_zone else None
    if city_country and city_country != "US" and city_country == country_named(state):
        return None
    return US_STATES[state] or (city_zone if city_country == "US" else None)


# Countries that keep several time zones: the answer names some places instead of one time.
_US_CITIES = "New York, Chicago, Denver or Los Angeles"
SEVERAL_ZONES = {
    "us": _US_CITIES,
    "usa": _US_CITIES,
    "united states": _US_CITIES,
    "america": _US_CITIES,
    "canada": "Toronto, Winnipeg, Edmonton or Vancouver",
    "australia": "Sydney, Brisbane, Adelaide or Perth",
    "russia": "Moscow, Yekaterinburg, Novosibirsk or Vladivostok",
    "mexico": "Mexico City, Cancun or Tijuana",
    "brazil": "São Paulo, Manaus or Rio Branco",
    "indonesia": "Jakarta, Makassar or Jayapura",
    # US states split between two zones.
    "kentucky": "Louisville for Eastern time, Chicago for Central",
    "tennessee": "New York for Eastern time, Nashville for Central",
    "michigan": "Detroit for Eastern time, Chicago for Central",
    "indiana": "Indianapolis for Eastern time, Chicago for Central",
    "idaho": "Boise for Mountain time, Los Angeles for Pacific",
    "nebraska": "Omaha for Central time, Denver for Mountain",
    "kansas": "Kansas City for Central time, Denver for Mountain",
    "north dakota": "Chicago for Central time, Denver for Mountain",
    "south dakota": "Chicago for Central time, Denver for Mountain",
    "alaska": "Anchorage or Adak",
    "texas": "Houston for Central time, El Paso for Mountain",
    "florida": "Miami for Eastern time, Chicago for Central",
    "oregon": "Portland for Pacific time, Boise for Mountain",
}
# Names of more than one well-known place: which one is meant is asked, not guessed.
AMBIGUOUS_PLACES = {
    "birmingham": "Birmingham, England or Birmingham, Alabama",
    "san jose": "San Jose, California or San José, Costa Rica",
    "richmond": "Richmond, Virginia or Richmond, British Columbia",
    "victoria": "Victoria, British Columbia or Victoria, Australia",
    "washington": "Washington, D.C. or Washington state",
    "georgia": "Georgia the country or Georgia, USA",
}
# Countries and states: after a comma they say which place of that name is meant ("Paris,
# Texas"), and are not a second place to tell the time of.
_REGIONS = frozenset({
    "alaska", "argentina", "brazil", "california", "china", "colombia", "egypt", "florida", "france",
    "germany", "greece", "hawaii", "india", "indonesia", "ireland", "israel", "italy", "japan", "kenya",
    "korea", "netherlands", "new jersey", "new zealand", "nigeria", "norway", "pakistan", "peru",
    "philippines", "poland", "portugal", "south africa", "south korea", "spain", "sweden", "switzerland",
    "texas", "thailand", "turkey", "uk", "vietnam",
    "scotland", "england", "wales", "ontario", "quebec", "nova scotia", "british columbia", "alberta",
    "arizona", "illinois", "massachusetts", "oregon", "nevada", "colorado", "washington state",
    "bavaria", "new south wales", "queensland", "western australia", "newfoundland",
    "manitoba", "saskatchewan", "new brunswick", "prince edward island",
})  # fmt: skip
_REGION_AFTER_SPACE = re.compile(
    rf"(?<=[^\W\d_])\s+({'|'.join(sorted({*US_STATES, *_REGIONS}, key=len, reverse=True))})\b", re.IGNORECASE
)
# "Europe/London", "america/new_york": a zone's own name, as the clock takes it.
_IANA = re.compile(
    r"\b([a-z]+(?:_[a-z]+)*/[a-z](?:[a-z_]|-(?=[a-z]))*(?:/[a-z](?:[a-z_]|-(?=[a-z]))*)?(?:[+-]\d{1,2}\b)?)",
    re.IGNORECASE,
)
# Abbreviations people write for a place, read in capitals only ("la" is a word); a time
# zone's abbreviation (PST, CEST) goes to the clock as it is: it names one offset.
PLACE_ABBREVIATIONS = {
    "LA": "America/Los_Angeles",
    "SF": "America/Los_Angeles",
    "NYC": "America/New_York",
    "NY": "America/New_York",
    "UK": "Europe/London",
    "UAE": "Asia/Dubai",
    # "10am ET", "what time is it in PT": the US coasts' time whatever the season (not CT or MT,
    # which are also Connecticut and Montana).
    "ET": "America/New_York",
    "PT": "America/Los_Angeles",
    "DC": "America/New_York",
}
ZONE_ABBREVIATIONS = {**{name: name for name in CLOCK_ABBREVIATIONS}, **PLACE_ABBREVIATIONS}
_ABBREVIATION = re.compile(rf"\b({'|'.join(ZONE_ABBREVIATIONS)})\b")
# The IANA database's cities ("Asia/Kathmandu": Kathmandu) are places too, except its legacy
# regions and the ones that are also ordinary words ("Pacific/Wake", "America/Resolute").
# fmt: off
_NOT_PLACES = frozenset({
    "north", "south", "east", "west", "central", "eastern", "western", "mountain", "pacific",
    "atlantic", "center", "general", "jersey", "universal", "zulu", "easter", "midway", "wake",
    "christmas", "reunion", "virgin", "yap", "truk", "resolute", "canary", "stanley", "regina", "victoria",
    "dawson", "casey", "davis", "palmer", "troll", "vostok",
})
# fmt: on
_LEGACY_REGIONS = ("Etc/", "SystemV/", "US/", "Canada/", "Mexico/", "Brazil/", "Chile/", "Antarctica/")


def fold(text: str) -> str:
    """Lower case without accents: "São Paulo" and "Zürich" as people also type them."""
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@functools.cache
def _places() -> tuple[dict[str, str], PlaceFinder]:
    """Every place name known, folded, with its zone, and what finds them in a text."""
    places: dict[str, str] = {}
    for zone in sorted(zoneinfo.available_timezones()):
        if "/" not in zone or zone.startswith(_LEGACY_REGIONS):
            continue
        city = fold(zone.rsplit("/", 1)[1].replace("_", " "))
        if city not in _NOT_PLACES:
            places.setdefault(city, zone)
    places.update(CITY_ZONES)  # the list above decides where a name is ambiguous
    # A US state that keeps one zone ("Ohio", "Utah") is a place of its own; a name also
    # another place's ("Georgia", "Washington") is asked about instead (AMBIGUOUS_PLACES).
    for state, zone in US_STATES.items():
        if zone and state not in AMBIGUOUS_PLACES:
            places.setdefault(state, zone)
    # A country the time-zone database gives one time ("Finland", "Malaysia", "Taiwan").
    for country, zones in _country_zones().items():
        if (
            country not in AMBIGUOUS_PLACES
            and country not in _NOT_PLACES  # "jersey": New Jersey as often as the island
            and re.fullmatch(r"[a-z]+(?:[ '-][a-z]+)*", country)
            and _one_time(zones)
        ):
            places.setdefault(country, zones[0])
    return places, PlaceFinder(places)


_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class PlaceMatch:
    """A place name found in a text, read as a regular expression's match of it is."""

    string: str
    begin: int
    finish: int

    def start(self, group: int = 0) -> int:
        return self.begin

    def end(self, group: int = 0) -> int:
        return self.finish

    def group(self, group: int = 0) -> str:
        return self.string[self.begin : self.finish]


class PlaceFinder:
    """Finds the place names of a text as `\\b(name|…)\\b` does with the longest names first
    (left to right, the longest name at each word, no overlaps), by looking up each word's
    names that start with it: the pattern of 671 names tried every one at every word, 60 µs a
    question, and a run reads its question's places dozens of times (routing, foresight, the
    answer and its checks), most of a worker's CPU outside the database."""

    def __init__(self, places: dict[str, str]) -> None:
        self.by_first: dict[str, list[str]] = {}
        for name in sorted(places, key=len, reverse=True):
            if first := _WORD.match(name):
                self.by_first.setdefault(first.group(), []).append(name)

    def finditer(self, text: str) -> Iterator[PlaceMatch]:
        free = 0  # where the last match ended: matches never overlap
        for word in _WORD.finditer(text):
            if word.start() < free:
                continue
            for name in self.by_first.get(word.group(), ()):
                end = word.start() + len(name)
                if text.startswith(name, word.start()) and (end == len(text) or not _WORD.match(text, end)):
                    yield PlaceMatch(text, word.start(), end)
                    free = end
                    break


@functools.cache
def _zone_names() -> dict[str, str]:
    return {zone.lower(): zone for zone in zoneinfo.available_timezones() if "/" in zone}


def _zone_names_out(text: str) -> tuple[str, list[tuple[int, str]]]:
    """The zone names a text writes out, in any case ("europe/london"), with where each starts;
    and the text with them blanked out, so "America/Argentina/Ushuaia" names no "Argentina"."""
    names, found = _zone_names(), []
    for match in _IANA.finditer(text):
        if (zone := names.get(match.group(1).lower())) is not None:
            found.append((match.start(), zone))
            text = text[: match.start()] + " " * len(match.group()) + text[match.end() :]
    return text, found


# Country names (and the common short ones), for reading "Manaus, Brazil": the city is in that
# country, so its own zone is meant, not the country's main one.
_COUNTRY_ALIASES = {
    "usa": "US", "us": "US", "united states": "US", "america": "US", "uk": "GB", "england": "GB",
    "scotland": "GB", "wales": "GB", "britain": "GB", "great britain": "GB", "korea": "KR",
    "south korea": "KR", "russia": "RU", "vietnam": "VN", "holland": "NL",
}  # fmt: skip


@functools.cache
def _countries() -> tuple[dict[str, str], dict[str, str]]:
    """Each zone's country, and each country name's code, from the time-zone database's
    tables; empty where the system has none (a qualifier then always wins, as before)."""
    zones: dict[str, str] = {}
    names: dict[str, str] = dict(_COUNTRY_ALIASES)
    for root in zoneinfo.TZPATH:
        try:
            with open(f"{root}/zone.tab", encoding="utf-8") as table:
                for line in table:
                    if not line.startswith("#") and len(fields := line.split("\t")) >= 3:
                        zones[fields[2].strip()] = fields[0]
            with open(f"{root}/iso3166.tab", encoding="utf-8") as table:
                for line in table:
                    if not line.startswith("#") and len(fields := line.rstrip("\n").split("\t")) == 2:
                        names.setdefault(fold(fields[1]), fields[0])
        except OSError:
            continue
        break
    return zones, names


@functools.cache
def _country_zones() -> dict[str, tuple[str, ...]]:
    """Each country's zones, by its folded name, from the time-zone database's tables."""
    zones, names = _countries()
    by_code: dict[str, list[str]] = {}
    for zone, code in zones.items():
        by_code.setdefault(code, []).append(zone)
    return {name: tuple(by_code[code]) for name, code in names.items() if code in by_code}


def _one_time(zones: Iterable[str]) -> bool:
    """Whether zones keep one time all year (their offsets in January and July alike)."""
    year = datetime.now(UTC).year
    moments = (datetime(year, 1, 15, tzinfo=UTC), datetime(year, 7, 15, tzinfo=UTC))
    return (
        len(
            {
                tuple(moment.astimezone(zoneinfo.ZoneInfo(zone)).utcoffset() for moment in moments)
                for zone in zones
            }
        )
        == 1
    )


def several_zones_of(place: str) -> tuple[str, ...] | None:
    """The zones of a country that keeps several times ("Mongolia", "Chile"); None otherwise."""
    zones = _country_zones().get(fold(place).strip(" ."))
    return zones if zones and not _one_time(zones) else None


def country_of(zone: str) -> str | None:
    zones, _ = _countries()
    return zones.get(zone)


def country_named(name: str) -> str | None:
    """The country a place name is or lies in: "Brazil", "USA", "Texas" (one zone's country)."""
    folded = fold(name).strip(" .")
    _, names = _countries()
    if folded in names:
        return names[folded]
    zone = _places()[0].get(folded)
    return country_of(zone) if zone else None


# Digit groups: "1,234" and "1 000 000" (spaces, narrow or not) are one number.
# India's digit groups: "2,50,000" (two lakh), "1,00,00,000" (one crore), read as one number (it
# was "2" and "50000").
_INDIAN_GROUPS = re.compile(r"(?<![\d.,])\d{1,2}(?:,\d\d)+,\d{3}(?![\d,]|\.\d*,)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # "1,500m" too
_SPACED_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d|\.\d)")
# "15% of 2400": a share of an amount; the innermost first in "50% of 50% of 80".
_PERCENT_OF = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:%|percent)\s+of\s+(-?\d+(?:\.\d+)?(?!\d|\.\d|\s*(?:%|percent))|\([^()]*\))"
)
# What the question does to the result afterwards: "3 plus 4, then doubled", "1/7 rounded to
# 3 decimals", "3/4 as a percentage" (number words are operators by then).
_THEN_NUMBER = r"(?P<{}>\d+(?:\.\d+)?)"
_RESULT = r"(?:\s+(?:it|that|the result))?"
_THEN = re.compile(
    r"\s*,?\s*(?:and\s+)?then\s*(?:"
    rf"(?P<word>double|triple|quadruple|halve|square|cube)(?:d|s|ed)?{_RESULT}(?![\w\s]*\broot)|"
    rf"(?P<verb>multipl(?:y|ied)|divided?){_RESULT}\s+by\s+{_THEN_NUMBER.format('by')}|"
    rf"times\s+{_THEN_NUMBER.format('times')}|"
    rf"(?P<add>add(?:ed)?|plus)\s+{_THEN_NUMBER.format('added')}(?P<add_share>\s*(?:%|percent\b))?"
    rf"(?:\s+to{_RESULT})?|"
    rf"(?P<take>subtract(?:ed)?|take\s+away|minus)\s+{_THEN_NUMBER.format('taken')}"
    rf"(?P<take_share>\s*(?:%|percent\b))?(?:\s+from{_RESULT})?|"
    # "and then 50% of that", "then split it between 3 (people)".
    rf"(?:take\s+)?{_THEN_NUMBER.format('share')}\s*(?:%|percent\b)\s+of\s+(?:it|that|the\s+result)|"
    rf"(?:split|share|divide)(?:\s+(?:it|that|the\s+result))?\s+(?:between|among|amongst|by)\s+"
    rf"{_THEN_NUMBER.format('split')}(?:\s+(?:people|persons|ways|of\s+us|friends))?|"
    r"(?P<op>\*\*|[-+*/%])\s*(?P<number>\d+(?:\.\d+)?)(?P<op_share>\s*(?:%|percent\b))?)(?!\w)",
    re.IGNORECASE,
)
_THEN_WORDS = {
    "double": "*2",
    "triple": "*3",
    "quadruple": "*4",
    "halve": "/2",
    "square": "**2",
    "cube": "**3",
}


def _then_operation(step: re.Match[str]) -> str:
    """What a "then …" phrase does to the result before it, as an operator and its operand."""
    if step["word"]:
        return _THEN_WORDS[step["word"].lower()]
    if step["verb"]:
        return f"{'*' if step['verb'].lower().startswith('multipl') else '/'}{step['by']}"
    if step["times"]:
        return f"*{step['times']}"
    # "then add 10%": the result changed by a share of itself, as "200 + 15%" is.
    if step["add"]:
        return f"*(1+{step['added']}/100)" if step["add_share"] else f"+{step['added']}"
    if step["take"]:
        return f"*(1-{step['taken']}/100)" if step["take_share"] else f"-{step['taken']}"
    if step["share"]:
        return f"*({step['share']}/100)"
    if step["split"]:
        return f"/{step['split']}"
    if step["op_share"] and step["op"] in "+-":
        return f"*(1{step['op']}{step['number']}/100)"
    if step["op_share"]:
        return f"{step['op']}({step['number']}/100)"
    return f"{step['op']}{step['number']}"


_PLACES_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6"}
_PLACE_VALUES = {"ten": -1, "hundred": -2, "thousand": -3, "million": -6}
_PLACE_VALUES |= {str(10**-places): places for places in _PLACE_VALUES.values()}
_NEAREST = re.compile(r"\bthe nearest (10|100|1000|1000000|ten|hundred|thousand|million)\b")


# "3 decimal places", "two decimals", "2 dp" (named `group`: the pattern is used twice).
def _places_pattern(group: str) -> str:
    return (
        rf"(?P<{group}>\d+|one|two|three|four|five|six)\s*(?:decimal(?:\s+places?|s)?|dp|places?|"
        r"digits? after the (?:decimal )?point)"
    )


# "rounded", "rounded down", "round it to 3 decimals", "to two decimal places", "rounded to the
# nearest whole number".
_ROUNDED = re.compile(
    r"\s*,?\s*(?:and\s+)?(?:then\s+)?(?:round(?:ed)?(?:\s+it)?\s*(?:(?P<way>down|up)\b|(?:to\s+)?"
    rf"(?:{_places_pattern('places')}|the nearest (?:whole )?(?:number|integer)|"
    r"the nearest (?P<value>ten|hundred|thousand|million|10|100|1000|1000000)\b))?|"
    rf"(?:to|with|at)\s+{_places_pattern('places2')})",
    re.IGNORECASE,
)
# "200 + 15%", "120 minus 15 percent": the amount changed by a share of itself, as on a
# calculator (not 200 + 15).
# "100 + 10% + 10%": the second share changes the first change's result (121, not 120).
_PERCENT_CHANGE = re.compile(
    r"(\d+(?:\.\d+)?|\))\s*([-+])\s*(\d+(?:\.\d+)?)\s*(?:%|percent\b)(?!\s*(?:of\b|[\d(]))"
)
# "2(3+4)", "(1+2)(3+4)": a product written without its sign ("log10(100)" is a function).
_IMPLIED_PRODUCT = re.compile(r"(?<=[\d)])(?<!log10)(?<!log2)\s*(?=\()|(?<=\))\s*(?=[\d(])")
_AS_PERCENT = re.compile(r"\s*,?\s*(?:as|in|into)\s+(?:a\s+)?percent(?:age)?\b", re.IGNORECASE)
_NUMBER_WORDS = [
    (r"\bmultiplied by\b|\btimes\b|\bx\b(?=\s*\d)", "*"),
    (r"\bdivided by\b|\bover\b(?=\s*\d)", "/"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\bto the power(?: of)?(?=\s*-?\d)|\braised to\b", "**"),
    (r"\bmod(?:ulo)?\b", "%"),
]
# "log10(1000)", "sin 30°": an angle in degrees is converted (the calculator works in radians).
_FUNCTIONS = "sqrt|log10|log2|log|ln|sin|cos|tan|exp|factorial"
_FUNCTION_WORDS = re.compile(
    # "log100" is log of 100, not log10 of 0; "natural log", "binary log" name their base.
    r"\b(square root|natural log(?:arithm)?|binary log(?:arithm)?|log(?:10|2)(?=\s*\()|sqrt|"
    r"log(?:arithm)?|ln|sin|cos|tan|exp|factorial)\s*(?P<of>of\s*)?"
    r"(?:(?P<inner>\([\d.\s*/%^+-]*[*/%^+-][\d.\s*/%^+-]*\))|\(?\s*"
    r"(?P<number>-?\d+(?:\.\d+)?)\s*(?P<degrees>°|degrees?\b|deg\b)?\s*\)?)",
    re.IGNORECASE,
)
# A number: digits, decimals, an exponent ("1e3"). An expression never starts inside a word,
# a number or a time of day ("1e3" is not "3", "12:30" not "30").
_NUM = r"\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_EXPRESSION = re.compile(
    rf"(?<![\w.:])(?:(?:[a-z]+\()?[-+(]*\s*{_NUM}\)*(?:\s*(?:\*\*|[-+*/%^×÷])\s*[-+(]*\s*(?:[a-z]+\()?{_NUM}\)*)+"
    rf"|(?:{_FUNCTIONS})\(\s*(?:radians\(\s*-?{_NUM}\s*\)|-?{_NUM})\s*\)|(?:round|floor|ceil)\(\s*-?{_NUM}\s*(?:,\s*-?\d+\s*)?\))",
    re.IGNORECASE,
)


_ASKED = re.compile(
    r"\b(?:what(?:'s| is| are)|calculate|compute|evaluate|how much is|solve)\b[^.?!\n]{0,12}$"
)


# "1,5": a decimal comma, as much of Europe writes it (a group of thousands has three digits).
_DECIMAL_COMMA = re.compile(r"(?<![\d.,])(\d+),(\d{1,2})(?!\d|,\d)")  # "1,5, 2,5 and 3" too


# "10k", "3 million", "2.5bn", "1.2m", "5 hundred thousand": a number with its scale, read as
# the number it is ("25% of 10k" was 25% of 10; "4% of 2.5m" was 4% of 2.5). A letter after a
# number that is not a scale (a unit: "100m / 9.58s") leaves the calculation unread.
_SCALE_WORD = r"hundred|thousand|lakhs?|crores?|million|billion|trillion"
_SCALED = re.compile(
    rf"(?<![\w.])(\d+(?:\.\d+)?)(?:(k|mn|m|bn|b)\b|((?:\s*(?:{_SCALE_WORD})\b)+))", re.IGNORECASE
)
_SCALES = {
    "k": 3, "m": 6, "mn": 6, "b": 9, "bn": 9,
    "hundred": 2, "thousand": 3, "million": 6, "billion": 9, "trillion": 12,
    "lakh": 5, "lakhs": 5, "crore": 7, "crores": 7,
}  # fmt: skip


def _scaled(match: re.Match[str]) -> str:
    words = match.group(3).lower().split() if match.group(3) else [match.group(2).lower()]
    value = Decimal(match.group(1)).scaleb(sum(_SCALES[word] for word in words))
    return format(value.quantize(Decimal(1)) if value == value.to_integral() else value.normalize(), "f")


# Numbers written in words ("seven times eight", "one hundred and five"), read as digits.
# fmt: off
_UNITS = {word: value for value, word in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
))}
_TENS = {word: 10 * value for value, word in enumerate((
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
), 2)}
# fmt: on
_NUMBER_WORD = rf"(?:{'|'.join([*_TENS, *_UNITS])})"
_SPELLED = re.compile(
    rf"\b{_NUMBER_WORD}(?:(?:[\s-]+|\s+and\s+)(?:{_NUMBER_WORD}|hundred|thousand)\b)*\b"
    r"(?:\s+(?:hundred|thousand)\b)*"
)


# "two point five": a decimal, once its words are digits. The words after "point" are digits
# each ("point seven five" is .75, not .12), read before the whole numbers are; "point five"
# alone is 0.5.
_DIGIT_WORD = rf"(?:{'|'.join(list(_UNITS)[:10])})"
_FRACTION_WORDS = re.compile(rf"\bpoint((?:[\s-]+{_DIGIT_WORD}\b)+)")
_SPELLED_DECIMAL = re.compile(r"(?<![\d.])(\d+)\s+point\s+(\d+)(?![\d.])")
_BARE_DECIMAL = re.compile(r"(?<![\d.])\bpoint\s+(\d+)(?![\d.])")


def _fraction_words(match: re.Match[str]) -> str:
    return "point " + "".join(str(_UNITS[word]) for word in re.findall(r"[a-z]+", match.group(1)))


def _decimals_in_words(text: str) -> str:
    text = _SPELLED.sub(_spelled, _FRACTION_WORDS.sub(_fraction_words, text))
    return _BARE_DECIMAL.sub(r"0.\1", _SPELLED_DECIMAL.sub(r"\1.\2", text))


def _one_number(words: list[str]) -> bool:
    """Whether number words make one number: "twenty-one", "one hundred and five", not
    "nineteen eighty four" (a year said in pairs) or "five six" (two numbers)."""
    before = None  # the last word's kind: unit (0-9), teen (10-19), tens, or a scale word
    for word in words:
        if word == "and":
            continue
        kind = (
            "tens"
            if word in _TENS
            else (("unit" if _UNITS[word] < 10 else "teen") if word in _UNITS else word)
        )
        numbers = ("unit", "teen", "tens")
        if (
            before in numbers
            and kind in numbers
            and not (before == "tens" and kind == "unit" and word != "zero")
        ):
            return False
        before = kind
    return True


def _spelled(match: re.Match[str]) -> str:
    if not _one_number(re.findall(r"[a-z]+", match.group())):
        return match.group()  # left in words: a reading of it would be a guess
    total = current = 0
    for word in re.findall(r"[a-z]+", match.group()):
        if word in _UNITS or word in _TENS:
            current += _UNITS.get(word, 0) + _TENS.get(word, 0)
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total, current = total + max(current, 1) * 1000, 0
    return str(total + current)


# Arithmetic asked in words, rewritten as the expression it asks for ("divide 100 by 8").
# An operand: a number, or a phrase already read into brackets ("twice the sum of 3 and 4").
_N = r"(?:the\s+)?(-?\d+(?:\.\d+)?|\([^()]*\))"
_ITEM = r"(?:-?\d+(?:\.\d+)?|\([^()]*\))"
# "4, 8 and 15", or three or more with commas alone ("10, 20, 30, 40").
_LIST = (
    rf"{_ITEM}(?:\s+(?:and|&)\s+{_ITEM}){{2,}}|"  # "3 and 4 and 5"
    rf"{_ITEM}(?:\s*,\s*{_ITEM})*\s*,?\s+(?:and|&)\s+{_ITEM}|{_ITEM}(?:\s*,\s*{_ITEM}){{2,}}(?![\d.])|"
    # Two with a comma and a space ("the average of 10, 20"); "10,20" may be a decimal comma.
    rf"{_ITEM}\s*,\s+{_ITEM}(?![\d.])(?!\s*[,%])(?!\s*percent)"
)
# An operation on the last operand ("add 5 to 3 times 4", "divide 20 by 4 times 5"): which
# operand it takes is not said (17 or 32, 1 or 25), so the phrase is not read.
_NO_OPERATION_AFTER = r"(?![\d.]|\s*(?:times|plus|minus|divided|multiplied|over|[-+*/^×x÷])\s*[-(]?\d)"
# A split with more to it ("… among 4 friends with a 20% tip") is not read as the split alone.
_NOTHING_ADDED = r"(?!\s+(?:with|plus|including|and|after|before)\b)"
# A number that is no exponent already: "2^3 squared" is (2^3) squared, read by _powers_in_words.
_NOT_AN_EXPONENT = r"(?<![\w.)^*-])(?<!\^ )(?<!\*\* )(?<!power of )(?<!raised to )"
# "three quarters of 48", "two fifths of 100": a number of parts of something.
_PARTS = {"quarter": 4, "fourth": 4, "third": 3, "fifth": 5, "sixth": 6, "eighth": 8, "tenth": 10}
# Words for a change from one amount to another; those of a fall give the drop as a positive
# share ("the percent drop from 200 to 150" is 25), as "decrease by 25%" says it.
_RISE_WORDS = (
    r"grow|grew|grown|growth|increase[ds]?|rise|rose|risen|gain(?:ed)?|jump(?:ed)?|climb(?:ed)?|"
    r"go\s+up|went\s+up|gone\s+up"
)
_FALL_WORDS = (
    r"drop(?:ped)?|decrease[ds]?|fall|fell|fallen|decline[ds]?|shr[iau]nk|reduction|loss|lost|"
    r"go\s+down|went\s+down|gone\s+down|cut"
)
_CHANGE_WORDS = f"{_RISE_WORDS}|{_FALL_WORDS}"


def _change(way: str, start: str, end: str) -> str:
    """The percentage change from `start` to `end`, a fall's as a positive drop."""
    if re.fullmatch(_FALL_WORDS, way.lower()):
        return f"(({start} - {end}) / {start} * 100)"
    return f"(({end} - {start}) / {start} * 100)"


_PHRASES = [
    # "negative seven": the sign, before anything reads the number.
    (r"\bnegative\s+(\d+(?:\.\d+)?)", r"-\1"),
    # "half of 9 squared" is half of 81: a power binds to its number before a phrase takes it
    # (it was (9 / 2) ** 2). Not a signed number: "-3 squared" is read below as (-3) ** 2.
    (rf"{_NOT_AN_EXPONENT}(\d+(?:\.\d+)?)\s+squared\b", r"(\1 ** 2)"),
    (rf"{_NOT_AN_EXPONENT}(\d+(?:\.\d+)?)\s+cubed\b", r"(\1 ** 3)"),
    # "the sum of 2, 3 and 4", "add 3 and 4 and 5", "the product of 2, 3 and 4": a list, read
    # whole (before the phrases of two numbers, which would take its first two).
    (
        rf"\b(?:(?:the\s+)?(?P<kind>sum|total|average|avg|mean|product)\s+of|(?P<verb>add|multiply)(?:\s+up)?)\s+"
        rf"(?P<items>{_LIST}){_NO_OPERATION_AFTER}",
        None,
    ),
    (  # "the sum of 1 to 100": every whole number between
        # "sum 1 to 10" too (it was 1 + 10 = 11, approved); "add 3 to 5" is an addition.
        r"\b(?:the\s+)?sum(?:\s+of)?\s+(?:the\s+)?(?:numbers\s+|integers\s+)?(?:from\s+)?(\d+)\s+"
        r"(?:to|through|thru)\s+(\d+)\b",
        r"((\2 - \1 + 1) * (\1 + \2) / 2)",
    ),
    # Each phrase's result in brackets: "3 times the sum of 4 and 5" is 3 * (4 + 5).
    (rf"\bdivide\s+{_N}\s+by\s+{_N}{_NO_OPERATION_AFTER}", r"(\1 / \2)"),
    (
        rf"\b(?:add|sum(?:\s+up)?|(?:the\s+)?sum\s+of)\s+{_N}\s+(?:and|to|plus)\s+{_N}{_NO_OPERATION_AFTER}",
        r"(\1 + \2)",
    ),
    (rf"\bmultiply\s+{_N}\s+(?:by|and|with)\s+{_N}{_NO_OPERATION_AFTER}", r"(\1 * \2)"),
    (rf"\b(?:the\s+)?product\s+of\s+{_N}\s+and\s+{_N}", r"(\1 * \2)"),
    # "subtract 15% from 80", "deduct 20% from 1500": the amount less that share of it.
    (
        rf"\b(?:subtract|deduct|take(?:\s+away)?)\s+{_N}\s*(?:%|percent\b)\s+from\s+{_N}{_NO_OPERATION_AFTER}",
        r"(\2 * (1 - \1/100))",
    ),
    (rf"\bsubtract\s+{_N}\s+from\s+{_N}{_NO_OPERATION_AFTER}", r"(\2 - \1)"),
    (rf"\b(?:the\s+)?difference\s+(?:between|of)\s+{_N}\s+and\s+{_N}", r"abs(\1 - \2)"),
    (rf"\bpercent(?:age)?\s+(?:change|increase)\s+from\s+{_N}\s+to\s+{_N}", r"((\2 - \1) / \1 * 100)"),
    # "the percent decrease from 200 to 150" is 25 (a decrease of 25%), as "decrease by 25%" says.
    (
        rf"\bpercent(?:age)?\s+(?:decrease|drop|fall|reduction)\s+from\s+{_N}\s+to\s+{_N}",
        r"((\1 - \2) / \1 * 100)",
    ),
    # "By what percent did revenue grow from 1.2m to 1.5m?", "it went from 200k to 150k, what's
    # the percent drop?", "the % increase from 40 to 50": a change from one amount to another.
    (
        rf"\b(?:by\s+)?(?:what|how\s+many)\s+(?:percent(?:age)?|%)\s+(?:(?:did|does|has|have|had|was|is|were|will)"
        rf"\s+)?(?:[a-z']+\s+){{0,4}}?(?P<way>{_CHANGE_WORDS})\s+(?:by\s+)?from\s+{_N}\s+to\s+{_N}",
        lambda m: _change(m["way"], m.groups()[-2], m.groups()[-1]),
    ),
    (
        rf"\bfrom\s+{_N}\s+to\s+{_N}\s*[,;:\-–—]?\s*(?:so\s+|and\s+)?(?:what(?:'s|’s|s|\s+is|\s+was)\s+)?(?:the\s+|that\s+)?"
        rf"(?:percent(?:age)?|%)\s+(?P<way>{_CHANGE_WORDS}|change|difference)\b",
        lambda m: _change(m["way"], m.groups()[0], m.groups()[1]),
    ),
    (
        rf"(?:%|\bpercent(?:age)?)\s+(?P<way>{_CHANGE_WORDS}|change)\s+from\s+{_N}\s+to\s+{_N}",
        lambda m: _change(m["way"], m.groups()[-2], m.groups()[-1]),
    ),
    (rf"{_N}\s+is\s+what\s+percent(?:age)?\s+of\s+{_N}", r"(\1 / \2 * 100)"),
    (rf"\bremainder\s+(?:of|when)\s+{_N}\s+(?:is\s+)?divided\s+by\s+{_N}", r"(\1 % \2)"),
    (rf"{_N}\s+as\s+a\s+percent(?:age)?\s+of\s+{_N}", r"(\1 / \2 * 100)"),
    # "3 out of 4 as a percent", "45 out of 60 in percent".
    (rf"{_N}\s+out\s+of\s+{_N}\s*,?\s+(?:as|in)\s+(?:a\s+)?percent(?:age)?\b", r"(\1 / \2 * 100)"),
    (
        rf"{_N}\s+raised\s+to\s+(?:the\s+)?(?:power\s+of\s+)?{_N}(?:st|nd|rd|th)?(?:\s+power)?\b",
        r"(\1 ** \2)",
    ),
    (rf"\b(?:increase|raise)\s+{_N}\s+by\s+{_N}\s*(?:%|percent\b)", r"(\1 * (1 + \2/100))"),
    (rf"\b(?:decrease|reduce|lower)\s+{_N}\s+by\s+{_N}\s*(?:%|percent\b)", r"(\1 * (1 - \2/100))"),
    (
        rf"\bwhat\s+(?:percent(?:age)?|%)\s+(?:is|of)\s+{_N}\s+(?:is\s+)?(?:of|in)\s+{_N}",
        r"what is (\1 / \2 * 100)",
    ),
    # Everyday shares: "a 15% tip on 84", "add 8% tax to 45", "split 240 between 6 people".
    (
        rf"{_N}\s*(?:%|percent)\s+(?:tip|(?:sales\s+)?tax|vat)\s+(?:on|for)\s+(?:a\s+|the\s+)?{_N}"
        rf"(?:\s+(?:bill|check|cheque|meal))?{_NO_OPERATION_AFTER}",
        r"(\1/100*\2)",
    ),
    (
        rf"\badd\s+(?:a\s+)?{_N}\s*(?:%|percent)\s*(?:(?:sales\s+)?tax|vat|tip)?\s+(?:to|on)\s+{_N}",
        r"(\2 * (1 + \1/100))",
    ),
    (
        rf"\b(?:split|divide|share)\s+{_N}\s+(?:(?:evenly|equally)\s+)?(?:between|among|across)\s+{_N}"
        rf"(?:\s+(?:people|persons|friends|of us))?+{_NOTHING_ADDED}",
        r"(\1 / \2)",
    ),
    (  # "split 84 four ways", "split a 250 bill 4 ways"
        rf"\bsplit\s+(?:(?:a|the)\s+(?:(?:bill|check|cheque|total)\s+of\s+)?)?{_N}(?:\s+(?:bill|check|cheque))?"
        rf"\s+{_N}\s+ways\b|(?<![\w.]){_N}\s+split\s+{_N}\s+ways\b",
        None,
    ),
    # The amount first: "1200 split between 4" (it was declined).
    (
        rf"^\W*(?:what(?:'s|’s|s| is)\s+)?{_N}\s+split\s+(?:(?:evenly|equally)\s+)?"
        rf"(?:between|among|across)\s+{_N}"
        rf"(?:\s+(?:people|persons|friends|of us))?+{_NOTHING_ADDED}",
        r"(\1 / \2)",
    ),
    # The tip's amount first: "tip on 60 at 18 percent" (it was declined).
    (
        rf"\b(?:a\s+|the\s+)?tip\s+(?:on|for)\s+(?:a\s+|the\s+)?{_N}(?:\s+(?:bill|check|cheque|meal))?\s+at\s+{_N}\s*"
        rf"(?:%|percent){_NO_OPERATION_AFTER}",
        r"(\2/100*\1)",
    ),
    # "split a 90 bill among 4 friends", "split the bill of 87.60 between 4", "a tip of 15% on
    # a 40 bill" (a currency read off already).
    (
        rf"\bsplit\s+(?:a|the)\s+(?:(?:bill|check|cheque|total)\s+of\s+)?{_N}(?:\s+(?:bill|check|cheque))?"
        rf"\s+(?:between|among|across|by)\s+{_N}(?:\s+(?:people|persons|friends|ways|of us))?+"
        rf"{_NOTHING_ADDED}",
        r"(\1 / \2)",
    ),
    (
        rf"\btip\s+(?:of\s+|at\s+)?{_N}\s*(?:%|percent)\s+(?:on|for)\s+(?:a\s+|the\s+)?{_N}"
        rf"(?:\s+(?:bill|check|cheque|meal))?{_NO_OPERATION_AFTER}",
        r"(\1/100*\2)",
    ),
    (rf"{_N}\s+(?:increased|raised)\s+by\s+{_N}\s*(?:%|percent\b)", r"(\1 * (1 + \2/100))"),
    (rf"{_N}\s+(?:decreased|reduced|lowered)\s+by\s+{_N}\s*(?:%|percent\b)", r"(\1 * (1 - \2/100))"),
    (rf"{_N}\s+less\s+{_N}\s*(?:%|percent\b)", r"(\1 * (1 - \2/100))"),
    (rf"{_N}\s+after\s+(?:a\s+)?{_N}\s*(?:%|percent)\s+(?:discount|reduction|cut)", r"(\1 * (1 - \2/100))"),
    (rf"\bwhat\s+(?:percent(?:age)?|%)\s+of\s+{_N}\s+is\s+{_N}", r"what is (\2 / \1 * 100)"),
    (rf"\bround\s+{_N}\s+to\s+(\d+)\s+decimal(?:\s+places?|s)?", r"round(\1, \2)"),
    (rf"\bround\s+{_N}(?![\d.])(?!\s*(?:to|up|down)\b)", r"round(\1)"),
    (rf"{_N}\s*(?:%|percent)\s+off(?:\s+of)?\s+{_N}", r"(\2 * (1 - \1/100))"),
    (rf"{_N}\s*(?:%|percent)\s+(?:more|higher|greater|larger|bigger)\s+than\s+{_N}", r"(\2 * (1 + \1/100))"),
    # "what is 5 more than 20" (asked for a value: "is 5 less than 20?" is a yes or no).
    (rf"\b(what(?:'s|’s|s| is)\s+){_N}\s+more\s+than\s+{_N}{_NO_OPERATION_AFTER}", r"\1(\3 + \2)"),
    (rf"\b(what(?:'s|’s|s| is)\s+){_N}\s+less\s+than\s+{_N}{_NO_OPERATION_AFTER}", r"\1(\3 - \2)"),
    (rf"{_N}\s*(?:%|percent)\s+(?:less|lower|smaller|fewer)\s+than\s+{_N}", r"(\2 * (1 - \1/100))"),
    # "2/3 of 900", "three quarters of 48" (the number words are digits by then).
    (rf"(?<![\d.])(\d+)\s*/\s*(\d+)\s+of\s+{_N}", r"(\1 / \2 * \3)"),
    (rf"(?<![\d.])(\d+)\s+(?P<part>{'|'.join(_PARTS)})s\s+of\s+{_N}", None),
    (rf"\bhalf\s+(?:of\s+)?{_N}", r"(\1 / 2)"),
    (rf"\b(?:a\s+|one\s+)?third\s+of\s+{_N}", r"(\1 / 3)"),
    (rf"\b(?:a\s+|one\s+)?quarter\s+of\s+{_N}", r"(\1 / 4)"),
    (rf"\b(?:a\s+|one\s+)?fifth\s+of\s+{_N}", r"(\1 / 5)"),
    (rf"\b(?:a\s+|one\s+)?tenth\s+of\s+{_N}", r"(\1 / 10)"),
    (rf"\b(?:double|twice)\s+{_N}", r"(2 * \1)"),
    (rf"\btriple\s+{_N}", r"(3 * \1)"),
    (rf"\bquadruple\s+{_N}", r"(4 * \1)"),
    (rf"\bhalve\s+{_N}", r"(\1 / 2)"),
    # "48 doubled", "77 halved": the verb after a number alone ("then doubled" is read as a
    # step; "6 * 7 halved" is 21 or 24, so it is left unread and the answer is not approved).
    (rf"(?<![\w.*/+^%(-]){_N}\s*,?\s+(?P<scaled>doubled|tripled|quadrupled|halved)\b", None),
    (rf"\bsquare(?!\s+root)\s+(?:of\s+)?{_N}", r"(\1 ** 2)"),
    (rf"\bcube(?!\s+root)\s+(?:of\s+)?{_N}", r"(\1 ** 3)"),
    (rf"\bcube\s+root\s+of\s+{_N}", r"(\1 ** (1/3))"),
    (
        rf"\b(?:the\s+)?(?P<degree>fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))\s+root\s+of\s+{_N}",
        lambda m: f"({m.groups()[-1]} ** (1/{_DEGREES.get(m['degree'].lower()) or m['degree'][:-2]}))",
    ),
    (rf"{_N}\s+factorial\b|\b(?:the\s+)?factorial\s+of\s+{_N}|(?<![\d.]){_N}!(?!=)", None),
    (rf"{_N}\s+to\s+the\s+(\d+)(?:st|nd|rd|th)(?:\s+power)?\b", r"(\1 ** \2)"),
]
_PHRASED = [(re.compile(pattern, re.IGNORECASE), replacement) for pattern, replacement in _PHRASES]
_DEGREES = {"fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}


_SCALED_BY = {"doubled": "* 2", "tripled": "* 3", "quadrupled": "* 4", "halved": "/ 2"}
# An operation just before a number: "6 * 7 halved", "10 plus 5 doubled", "then 5 doubled".
_OPERATION_BEFORE = re.compile(
    r"(?:[-+*/^%(x×÷]|\b(?:plus|minus|times|by|over|of|and|then|less|more|than))\s*$", re.IGNORECASE
)


def _phrase(match: re.Match[str]) -> str:
    """The phrases whose expression is not a template: a list's sum or mean, a number of
    quarters of something, a factorial."""
    named = match.groupdict()
    if named.get("items"):
        items = re.findall(_ITEM, named["items"])
        kind = (named["kind"] or named["verb"]).lower()
        if kind in ("product", "multiply"):
            return f"({' * '.join(items)})"
        total = f"({' + '.join(items)})"
        return total if kind in ("sum", "total", "add") else f"({total} / {len(items)})"
    if "ways" in match.group().lower():  # "split 84 four ways"
        first, second = (group for group in match.groups() if group)
        return f"({first} / {second})"
    if named.get("scaled"):
        if _OPERATION_BEFORE.search(match.string, 0, match.start()):
            return match.group()
        return f"({match.group(1)} {_SCALED_BY[named['scaled'].lower()]})"
    if named.get("part"):
        return f"({match.group(1)} * {match.groups()[-1]} / {_PARTS[named['part'].lower()]})"
    return f"factorial({next(group for group in match.groups() if group)})"


# "What is 9 times 9!": an exclamation, not 9 factorial, when the sum is asked in words; and
# "!!!" anywhere. "Calculate 5!" and "5! / 3!" stay factorials.
def _exclaimed(text: str) -> str:
    text = re.sub(r"(?<=\d)!{2,}", "", text)
    return re.sub(r"(\b(?:times|plus|minus|by|over|and)\s+\d+(?:\.\d+)?)!+(?=\s*$|\s+[a-z])", r"\1", text)


_COMMA_THEN = re.compile(
    # "…, and that times 3" / "… and the result plus 5" too: the result so far, named.
    r"(?<=\d)(?:\s*,\s*(?:and\s+(?:that|it|the result)\s+)?|\s+and\s+(?:that|the result)\s+)"
    r"(?=(?:plus|minus|times|divided by|multiplied by)\s+\d|(?:squared|cubed|doubled|tripled|halved)\b)"
)
# A negative number raised to a power by words: in brackets, so the power is the number's
# ("-5 squared" is 25; not after a number: "10 - 5 squared" is -15).
_NEGATIVE_BASE = re.compile(
    r"(?:(?<=\()|(?<![\d.)]\s)(?<![\w.)]))(-\d+(?:\.\d+)?)"
    r"(?=\s*(?:\*\*|to the power of\b|raised to\b|squared\b|cubed\b))"
)


_ONE_AS_PRONOUN = re.compile(
    r"\b(quick|this|that|which|another|last|next|each|every)\s+one\b"
    r"(?!\s*(?:hundred|thousand|million|billion|point|and|plus|minus|times|divided|multiplied|over|[-+*/^x]))"
)
_HYPHENATED_FRACTION = re.compile(
    rf"\b({'|'.join(list(_UNITS)[1:11])}|an?|\d+)-"
    r"(?=(?:halves|half|thirds?|quarters?|fourths?|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?)\b)"
)


# An operator's word misspelled between two numbers ("100 devided by 4", "12 tims 12", "15
# precent of 200"): one letter wrong, missing, extra or two swapped.
_OPERATOR_WORDS = ("plus", "minus", "times", "divided", "multiplied", "percent", "multiply", "divide")
_OPERATOR_TYPO = re.compile(r"(?<=\d)(\s+)([a-z]{4,11})(?=\s+(?:by\s+|of\s+)?[-$€£¥₹]?\d)")


_PER_CENT = re.compile(r"(?<=\d)\s*per[\s-]cent\b")


def _one_slip(word: str, target: str) -> bool:
    """Whether `word` is `target` with one letter wrong, missing or extra, or two swapped."""
    if word == target or abs(len(word) - len(target)) > 1:
        return False
    if len(word) == len(target):
        wrong = [index for index, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        return len(wrong) == 1 or (
            len(wrong) == 2
            and wrong[1] == wrong[0] + 1
            and word[wrong[0]] == target[wrong[1]]
            and word[wrong[1]] == target[wrong[0]]
        )
    short, long = sorted((word, target), key=len)
    return any(long[:index] + long[index + 1 :] == short for index in range(len(long)))


# Words one slip from an operator's that mean something else ("10 tiles 5 cm wide").
_NOT_A_SLIP = frozenset({
    "tiles", "tides", "tines", "timer", "tomes", "dimes", "limes", "mimes", "tames", "mines", "mimus",
    "plum", "plug", "plums", "plugs", "plush", "divides", "divider", "divine",
})  # fmt: skip


def _operator_spelled(match: re.Match[str]) -> str:
    word = match[2]
    if word in _NOT_A_SLIP or word in _OPERATOR_WORDS:
        return match.group()
    right = next((target for target in _OPERATOR_WORDS if _one_slip(word, target)), None)
    return f"{match[1]}{right}" if right else match.group()


@functools.lru_cache(maxsize=256)
def _grouped_digits_joined(text: str) -> str:
    """The text with its numbers as digits and its arithmetic phrases as expressions. Cached:
    one run reads the same question and its parts a dozen times (routing, foresight, the
    answer and its check), and the phrases cost about 60 µs a reading."""
    # "- 5 * 5" in a list is the item 5 * 5, not -5 * 5.
    text = LIST_ITEM.sub("", inline_items_apart(text).lower().replace("\u2212", "-"))
    text = _exclaimed(text)
    text = _PER_CENT.sub(" percent", text)  # "50 per cent of 90", as British English writes it
    text = _OPERATOR_TYPO.sub(_operator_spelled, text)
    if money_in(text) is not None:  # one currency: its amounts are read as numbers
        text = _MONEY.sub("", text)
    # "15% of 80, plus 12", "7 plus 3, times 2", "5 plus 3, squared": done to the result so far.
    text = _COMMA_THEN.sub(", then ", text)
    text = text.replace("\u00b2", "**2").replace("\u00b3", "**3")  # "5²"
    text = re.sub(r"(?<=[\d)])\s*[\u00b7\u22c5]\s*(?=[\d(])", " * ", text)  # "6·7", a product's dot
    text = _INDIAN_GROUPS.sub(lambda m: m.group().replace(",", ""), text)  # "2,50,000" is 250000
    text = _DECIMAL_COMMA.sub(r"\1.\2", _THOUSANDS.sub("", text))
    text = re.sub(r"\u221a\s*(\d+(?:\.\d+)?|\([^()]*\))", r"sqrt(\1)", text)  # "√49"
    text = _SPACED_THOUSANDS.sub(lambda m: re.sub(r"\D", "", m.group()), text)
    text = re.sub(rf"\ba\s+(?=(?:{_SCALE_WORD})\b)", "one ", text)  # "a hundred minus 37"
    # "Quick one: 250 * 4", "this one": a pronoun, no number to compute with.
    text = _ONE_AS_PRONOUN.sub(r"\1", text)
    # "one-third of 120", "three-quarters of 60": a fraction as "one third" is (it was 1 - 40).
    text = _HYPHENATED_FRACTION.sub(r"\1 ", text)
    text = _SCALED.sub(_scaled, _decimals_in_words(text))
    # "a dozen times 3", "2 dozen", "a baker's dozen" (not "dozens of").
    text = re.sub(r"\b(?:a\s+)?baker'?s\s+dozen\b", "13", text)
    text = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)\s+dozen\b(?!\s+of\b)", r"(\1 * 12)", text)
    text = re.sub(r"\b(?:a\s+)?dozen\b(?!\s+of\b)", "12", text)
    for _ in range(2):  # "17x23", "5x5x5" (not "0x1f")
        text = re.sub(r"(?<![\w.])([1-9]\d*(?:\.\d+)?)x(?=\d)", r"\1 * ", text)
    for _ in range(4):  # a phrase may hold another ("divide the sum of 10 and 20 by 5")
        before = text
        for pattern, replacement in _PHRASED:
            text = pattern.sub(replacement or _phrase, text)
        if text == before:
            break
    # "the square of -3", "-3 to the power of 2": a negative number's own power (9, not -9).
    return _NEGATIVE_BASE.sub(r"(\1)", text)


_NUMBERS = re.compile(rf"(?<![\w.]){_NUM}")
# (Not "17 % 5": a remainder.)
_PERCENTAGE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:%(?!\s*[\d(])|percent)")
# Words that change what is asked which the expression reader cannot apply (beyond the ones
# it does: "x% of y", "rounded to N decimals", "then doubled").
_UNREAD_QUANTITY = re.compile(
    r"\b(?:million|billion|thousand|trillion|binary(?!\s+log)|hex(?:adecimal)?|octal|roman|half|third|quarter|"
    # Operations the phrases above did not read ("the sum of 2, 3 and 4", "3 more than twice
    # 5", "all squared"), and comparisons ("Which is bigger: 3^4 or 4^3?"), which one
    # expression's value does not answer.
    r"sum|product|difference|quotient|negative|double|twice|triple|square(?!\s+root)|cube(?!\s+root)|"
    r"doubled|tripled|quadrupled|halved|"
    r"less|more|all|then\s+(?:take\s+)?(?:the\s+)?(?:square\s+)?root|"
    r"average|mean|remainder|bigger|greater|smaller|larger|equals?(?!\s*(?:to\s*)?[?=]*\s*$)|vs|versus|"
    # "the total with a 20% tip on 50" read as the tip alone (10, not 60).
    r"total|altogether|"
    # The answer in another form, or by another's count ("2 + 2 according to Orwell"), or in
    # another currency ("100 euros times 2 in dollars" was €200).
    r"in\s+words|spelled|according|fractions?|scientific\s+notation|standard\s+form|significant\s+figures?|"
    r"sig\s+figs|in\s+(?:us\s+)?(?:dollars?|euros?|pounds?|sterling|yen|rupees?|usd|eur|gbp|jpy|inr))\b",
    re.I,
)


def _unread_quantity(asked: str, question: str, expression: str) -> bool:
    """Whether `asked` says something that changes the result which `expression` does not do.
    Two words are read when the expression does what they say: a "total" that is a sum ("£250
    plus 20% VAT, what's the total?" as 250*(1+20/100); a tip alone, 15/100*84, is no total),
    and the currency the result is asked in when it is the question's only one ("20% of 150 in
    euros"; "100 euros times 2 in dollars" is a conversion)."""
    for found in _UNREAD_QUANTITY.finditer(asked):
        word = found.group().lower()
        if word in ("total", "altogether") and "+" in expression:
            continue
        currency = word.startswith("in") and word.split()[-1] in _CURRENCY_WORDS  # not "in words"
        if currency and _IN_CURRENCY.search(question) and money_in(question) is not None:
            continue
        return True
    return False


# A unit or a scale written apart from its number ("2.5 m", "10 k", "3 kg", "half of 10 km",
# "45 dollars"): the expression reader leaves it out, so a calculation that has one is not all
# read (its answer would be a bare number).
_SPACED_UNIT = re.compile(
    r"[\d)]\s+(?:k|m|mm|cm|km|mn|b|bn|g|kg|mg|lbs?|oz|s|ms|h|hrs?|mins?|mb|gb|tb|kb|ft|mi|mph|l|ml|"
    r"(?:(?:kilo|centi|milli)?met(?:er|re)s?|miles?|feet|foot|inch(?:es)?|yards?|(?:kilo)?grams?|"
    r"kilos?|pounds?|ounces?|tons?|tonnes?|lit(?:er|re)s?|gallons?|cups?|hours?|minutes?|seconds?|"
    r"days?|weeks?|months?|years?|dollars?|euros?|cents?|yen|rupees?|bucks|(?:kilo|mega|giga)?bytes?))\b"
)
# An amount of money: the answer must say the currency too ("€10 * 3" is €30, not 30).
_SYMBOLS = "$\u20ac\u00a3\u00a5\u20b9"
_CURRENCY = re.compile(rf"([{_SYMBOLS}])\s*\d|\d\s*([{_SYMBOLS[1:]}])")
_CURRENCY_WORDS = {
    "dollar": "$", "dollars": "$", "bucks": "$", "usd": "$", "euro": "\u20ac", "euros": "\u20ac",
    "eur": "\u20ac", "gbp": "\u00a3", "yen": "\u00a5", "rupee": "\u20b9", "rupees": "\u20b9",
}  # fmt: skip
_CURRENCY_WORD = rf"(?:{'|'.join(_CURRENCY_WORDS)})\b"
_MONEY = re.compile(
    rf"([{_SYMBOLS}])\s*(?=\d)|(?<=\d)\s*([{_SYMBOLS[1:]}])|(?<=\d)\s+({_CURRENCY_WORD})|"
    # "USD 50": a currency's code before the amount.
    r"\b(usd|eur|gbp)\s*(?=\d)",
    re.IGNORECASE,
)
# A share of one amount in another, a ratio: a number, whatever the amounts were in.
_RATIO = re.compile(
    r"\b(?:what|which)\s+(?:percent(?:age)?|fraction|share)\b|\bas\s+a\s+(?:percent(?:age)?|fraction)\b|"
    r"\bpercent(?:age)?\s+change\b|\bhow\s+many\s+times\b|\bratio\b",
    re.IGNORECASE,
)


_POWERED = re.compile(
    r"\*\*|\^|\b(?:squared?|cubed?|root|power|log|ln|sqrt|sin|cos|tan|exp|factorial)\b|!", re.IGNORECASE
)


@dataclass(frozen=True)
class Money:
    symbol: str  # the one currency the question's amounts are in
    ratio: bool  # what it asks is a ratio of amounts: a plain number


# "…in euros" at the end of a calculation: the currency its result is asked in.
_IN_CURRENCY = re.compile(rf"\bin\s+(?:us\s+)?({_CURRENCY_WORD})[\s?.!]*$", re.IGNORECASE)


def money_in(question: str) -> Money | None:
    """The currency a calculation's amounts are in ("a 15% tip on $84", "20% of 50 dollars"),
    when they are all in one; its result is in it too, unless the question asks a ratio
    ("what percentage is $45 of $180", "$120 / $40"). An amount asked "in euros" with no other
    currency in the question is in euros ("20% of 150 in euros"); asked in another than its
    amounts', it is a conversion, which no calculation here answers."""
    found = list(_MONEY.finditer(question or ""))
    symbols = {m[1] or m[2] or _CURRENCY_WORDS[(m[3] or m[4]).lower()] for m in found}
    if (asked_in := _IN_CURRENCY.search(question or "")) is not None:
        symbols.add(_CURRENCY_WORDS[asked_in[1].lower()])
    if len(symbols) != 1:
        return None
    # $120 / $40 is 3; $3 times $4 and the square root of $16 are no amount of dollars.
    between = r"/|\bdivided\s+by\b|\bover\b|\*|\btimes\b|\bmultipl"
    combined = len(found) >= 2 and re.search(between, question, re.IGNORECASE)
    powered = _POWERED.search(question)
    return Money(symbols.pop(), ratio=bool(_RATIO.search(question) or combined or powered))


def money_amount(money: Money, value: str) -> str:
    """A result as an amount: "$12.60" (cents shown whole), "€30", "about $33.33" (a third of
    $100: no one pays $33.3333333333333), "$0.006" (under a cent, as it is)."""
    try:
        amount = Decimal(value)
    except ArithmeticError:
        return f"{money.symbol}{value}"
    sign, amount = ("-" if amount < 0 else ""), abs(amount)
    if amount == amount.to_integral_value():
        return f"{sign}{money.symbol}{amount:,.0f}"
    cents = amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    if amount == cents:
        return f"{sign}{money.symbol}{amount:,.2f}"
    if amount < Decimal("0.01"):
        return f"{sign}{money.symbol}{amount.normalize():,f}"
    return f"about {sign}{money.symbol}{cents:,.2f}"


def leaves_out_currency(question: str, answer: str) -> bool:
    """Whether `question` prices something in a currency that `answer` does not name (a
    ratio of amounts in one currency is a plain number)."""
    money = money_in(question)
    if money is not None:
        return not money.ratio and money.symbol not in answer
    written = _CURRENCY.search(question)
    return written is not None and (written[1] or written[2]) not in answer


# An operation whose operand is words the reader does not compute: "5*5 plus the number of days
# in a week" read as 5*5.
_UNREAD_OPERAND = re.compile(
    r"(?:\b(?:plus|minus|times|multiplied\s+by|divided\s+by|over)|[-+*/])\s+"
    r"(?:the|a|an|my|our|your|their|his|her|its)\s+[a-z]|"
    # Another ask after a calculation: "6+6 and the capital of Spain" answered with 12 alone (the
    # time somewhere is the clock's, read beside it).
    r"[\d)]\s+and\s+(?:the|a|an|my|our|your|their|his|her|its)\s+"
    r"(?!(?:current\s+|local\s+)?(?:time|date|day)\b)[a-z]|"
    # An operation whose last operand is a word, not a number: "5 plus 3 minus tax", "50 times 2
    # plus fees" were read as 5 + 3 and 50 * 2 and approved.
    r"(?i:(?:\b(?:plus|minus|times|over|less)|[-+*/×÷])\s+"
    rf"(?!(?:{_NUMBER_WORD}|hundred|thousand|million|billion|dozen|half|negative|minus|pi)\b)"
    r"[a-z][a-z'’-]*[\s?.!]*$)|"
    # An operation with nothing after it: "what's 3 plus 4 times" was read as 3 + 4.
    r"(?i:(?:\b(?:plus|minus|times|over|less|divided\s+by|multiplied\s+by)|[-+*/×÷^])[\s?.!]*$)",
)


_FUNCTION_OF_MORE = re.compile(
    r"\b(?:(?:square|cube)\s+root|sqrt|(?:natural\s+)?log(?:arithm)?|ln)\s+of\s+(?:the\s+)?(?:\d+(?:\.\d+)?|\([^()]*\))\s*"
    # "the sqrt of 3 squared + 4 squared": a power on the first number changes nothing.
    r"(?:(?:squared|cubed|(?:\^|\*\*)\s*\d+)\s*)?"
    r"(?:plus|minus|times|divided\s+by|multiplied\s+by|over|[-+*/x×÷])\s*[-(]?\d"
)


# A word after the number a share or part is "of" that the reader does not know: "10% of 5
# grand" (0.5), "25% of 2 mil" (0.5), "half of 2 score" (1) were approved with it left unread.
_OF_NUMBER_THEN = (
    r"people|persons|friends|guys|colleagues|us|them|ways|each|please|pls|plz|thanks|lol|and|or|then|plus|"
    r"minus|times|divided|multiplied|over|to|by|out|percent|per|squared|cubed|factorial|hundred|thousand|"
    r"lakhs?|crores?|million|billion|trillion|k|m|mn|bn|b|dollars?|bucks|euros?|pounds?|quid|rupees?|yen|"
    r"cents?|usd|eur|gbp|inr|jpy|aud|cad|dozen|is|are|was|as|in|into|rounded|round|what|how|for|with|less|"
    r"more|off|a|an|the|i|we|you|then|also|again|now|exactly|approx|approximately|roughly|right|between|"
    r"among|amongst|across|on|at|from|if|when|so|but|equally|evenly"
)
# The number ends at its last digit: "of 80, can you help?" and "25% of 80, doubled" are 80 and
# another clause, not 80 of some unit (the comma was read into the number, and the word as its unit).
_OF_NUMBER_WORD = re.compile(
    rf"\bof\s+[-−]?[$€£¥₹]?\d(?:[\d,.]*\d)?\s+(?!(?:{_OF_NUMBER_THEN})\b)[a-z]",
    re.IGNORECASE,
)


def accounts_for(question: str, expression: str) -> bool:
    """Whether `expression` is all `question` asks to compute: every number the question
    gives is in it, and no word that changes the result went unread ("1/3 of 90" read as 1/3,
    "1000 - 10%" as 1000 - 10, "rounded" with nothing rounded). A check on the reader, so that
    a misreading is not approved by the same misreading."""
    # A share the phrases wrote as "15/100*84" ("a 15% tip on 84") is the percentage asked: a
    # model may compute it as 84*0.15.
    asked = re.sub(r"(?<![\d.])(\d+(?:\.\d+)?)/100\b", r"\1%", _grouped_digits_joined(question))
    # "then double it" was read when the expression does it: its word changes nothing unread.
    done = expression.replace(" ", "")
    asked = _THEN.sub(lambda step: " " if f"){_then_operation(step)}" in done else step.group(), asked)
    # "to the nearest ten" (its number word a digit by now) was read when the expression rounds there.
    asked = _NEAREST.sub(lambda m: " " if f",{_PLACE_VALUES[m[1]]})" in done else m.group(), asked)
    # Each number the question gives is used once for each time it is given: "increase 100 by
    # 10% then by 10% again" read as 100 * 1.1 used one 10 and left the other unread.
    used = Counter(round(float(n), 12) for n in _NUMBERS.findall(expression.lower()))
    numbers = set(used)
    # A percentage may be computed as its fraction: "15% of 86.40" as 86.40*0.15.
    shares = {round(float(n) / 100, 12) for n in _PERCENTAGE.findall(asked)}
    for number in _NUMBERS.findall(asked):
        value, share = round(float(number), 12), round(float(number) / 100, 12)
        if used[value] > 0:
            used[value] -= 1
        elif share in shares and used[share] > 0:
            used[share] -= 1
        else:
            return False
    if (
        _unread_quantity(asked, question, done)
        or _SPACED_UNIT.search(asked)
        or _UNREAD_OPERAND.search(asked)
        or _OF_NUMBER_WORD.search(question)
    ):
        return False
    # "half of 50%" read as (50 / 2), "10 percent more than 50 percent" as 55: a phrase took the
    # number and left its percent sign unread (the answer would be a bare 25, not 25%).
    if re.search(r"\)\s*(?:%|percent\b)", asked):
        return False
    # "the square root of 9 plus 16": of 9 alone (19) or of their sum (5) is not said.
    # "the cube root of 27 + 5", which a phrase has already bracketed one way: asked as written.
    if _FUNCTION_OF_MORE.search(asked) or _FUNCTION_OF_MORE.search(question.lower()):
        return False
    # "root of 25 + 11" read as 25 + 11: a root asked that the expression does not take.
    if re.search(r"\broots?\b", asked) and not re.search(r"sqrt\(|(?:\*\*|\^)\s*\(1\s*/", expression):
        return False
    if re.search(r"%(?!\s*[\d(])|\bpercent", asked) and not (
        re.search(r"/100\b|\*100\b", expression) or numbers & shares
    ):
        return False
    rounding = re.search(r"\bround|\bdecimal places?\b|\bdecimals\b|\bdp\b", asked)
    return not (rounding and not re.search(r"\b(?:round|floor|ceil)\(", expression))


_POWER_WORD = re.compile(r"\s*\b(squared|cubed)\b", re.IGNORECASE)
_POWER_BEFORE = re.compile(r"(?:\d+(?:\.\d+)?|\([^()]*\))\s*(?:\*\*|\^)\s*(?:\d+(?:\.\d+)?|\([^()]*\))$")


def _powers_in_words(text: str) -> str:
    """ "5 squared" as 5**2; a power of a power as written left to right: "2 cubed squared" and
    "2^3 squared" are (2³)² = 64 (read as 2**3**2, the exponent was squared: 512)."""
    while match := _POWER_WORD.search(text):
        before = text[: match.start()]
        if power := _POWER_BEFORE.search(before):
            before = f"{before[: power.start()]}({power.group()})"
        text = f"{before}**{2 if match[1].lower() == 'squared' else 3}{text[match.end() :]}"
    return text


def expression_in(text: str) -> str | None:
    """An arithmetic expression in a question, with number words turned into operators."""
    candidate = _grouped_digits_joined(text)
    for _ in range(5):
        candidate, changed = _PERCENT_OF.subn(r"\1/100*\2", candidate, count=1)
        if not changed:
            break
    if _ABOUT_CODE.search(candidate) or _STATED.search(candidate):
        return None
    candidate = _FUNCTION_WORDS.sub(_function, candidate)
    for pattern, operator in _NUMBER_WORDS:
        candidate = re.sub(pattern, operator, candidate)
    candidate = _powers_in_words(candidate)
    candidate = _one_number_rounded(candidate)
    for _ in range(5):
        candidate, changed = _PERCENT_CHANGE.subn(r"\1*(1\2\3/100)", candidate, count=1)
        if not changed:
            break
    candidate = _IMPLIED_PRODUCT.sub("*", candidate)
    matches = [m for m in _EXPRESSION.finditer(candidate) if _calculation(candidate, m)]
    # The expression the question asks about ("What is 5*5?") before any other it quotes (a
    # template's "{{ 7*7 }}" pasted above it), then the longest: "2+3*4" over its "3*4".
    ranked = sorted(
        matches,
        key=lambda m: (
            bool(_ASKED.search(candidate, max(0, m.start() - 40), m.start())),
            len(m.group().strip()),
        ),
        reverse=True,
    )
    for match in ranked:
        expression = _then(match.group().strip(), candidate[match.end() :])
        try:
            calculate(expression)
        except CalculatorError:
            continue
        return expression
    return _then(ranked[0].group().strip(), candidate[ranked[0].end() :]) if ranked else None


# "round 123.456 to the nearest ten", "what is 7.5 rounded", "0.45 as a percentage": one number
# rounded or made a percentage, which the expression reader (it looks for an operator) passed over.
_ROUND_ONE = re.compile(
    rf"\bround\s+(?:off\s+)?(?P<round>-?{_NUM})(?=\s+(?:to|up|down)\b)|"
    rf"(?<![\w.])(?P<rounded>-?{_NUM})(?=\s*,?\s*(?:rounded\b|(?:as|in|into)\s+(?:a\s+)?percent(?:age)?\b(?!\s+of\b)))",
    re.IGNORECASE,
)


def _one_number_rounded(text: str) -> str:
    """`text` with a number it rounds or makes a percentage written as the calculator would
    take it: round(), floor(), ceil(), or times 100."""
    for match in _ROUND_ONE.finditer(text):
        if re.search(r"(?:[-+*/^%×÷)]|\d)\s*$|\d[^.?!;\d]*$", text[: match.start()]):
            # "17 * 23 rounded": the rounding is the expression's, read after it; "1 in 3 as a
            # percentage": another number in the clause, which the one number would leave out.
            continue
        number = match["round"] or match["rounded"]
        rest = text[match.end() :] if match["rounded"] else f" rounded{text[match.end() :]}"
        expression, left = _applied(number, rest)
        if expression != number:
            return f"{text[: match.start()]}{expression}{left}"
    return text


def _function(match: re.Match[str]) -> str:
    name = match.group(1).lower()
    name = {"square root": "sqrt", "logarithm": "log"}.get(name, name)
    name = "ln" if name.startswith("natural") else "log2" if name.startswith("binary") else name
    if name == "log" and (match["of"] or not match.group().rstrip().endswith(")")):
        name = "log10"  # "the log of 100", "log 1000": the common logarithm, as on a calculator
    # The spaces the match took after its number stay: "the square root of 2 to 3 decimal
    # places" became "sqrt(2)to 3 …", which no reading took for a calculation.
    after = match.group()[len(match.group().rstrip()) :]
    if match["inner"]:
        return f"{name}{match['inner']}{after}"
    argument = f"radians({match['number']})" if match["degrees"] else match["number"]
    return f"{name}({argument}){after}"


# What a language or a program makes of it ("In C, what is 7/2?" is 3; "5 ^ 3 in JavaScript" is
# 6) is not what the calculator says, nor is code asked for ("a function that returns 2**10").
_LANGUAGES = (
    r"c|c\+\+|c#|java|javascript|js|typescript|python|ruby|go|golang|rust|php|bash|shell|sql|perl|"
    r"lua|kotlin|swift|scala|haskell|excel|matlab|fortran|cobol|elixir|erlang|dart|julia"
)
_ABOUT_CODE = re.compile(
    rf"\b(?:in|using|with|for)\s+(?:{_LANGUAGES})(?![\w+#])|"
    r"\b(?:function|evaluates? to|returns?|logs|prints?|operands?|"
    r"integer division|ints|floating[- ]point|bitwise|xor|overflow)\b|"
    r"^\W*(?:please\s+)?(?:write|create|implement|generate|fix|debug)\b"
)
# A statement to check, not a value to compute: "0.1 + 0.2 == 0.3", "prove that 1+1=2",
# "explain why 1/0 fails".
_STATED = re.compile(
    r"(?:==|!=|<=|>=|(?<![<>!=])=(?!=))\s*[-+(]?\s*\d|\btrue or false\b|\bprove\b|\b(?:explain )?why\b|"
    # Two amounts compared ("Which is bigger, 2^10 or 10^3?", "is 7*8 greater than 50?"): one
    # expression's value does not answer it (it was the first side's, alone).
    r"\b(?:which|what)(?:'s|’s|\s+is|\s+one\s+is)?\s+(?:bigger|larger|greater|smaller|higher|lower)\b|"
    r"\b(?:bigger|larger|greater|smaller|higher|lower)\s+than\b"
)
# Numbers joined by "-" or "/" alone, without spaces: a date (9/11, 2000-01-01), a range
# (2009-2017), a score (2-1), a rule's name (80/20, 3-2-1), a phone number. Arithmetic only
# when asked as a calculation and nothing else ("What is 10-4?").
_JOINED = re.compile(r"\d+(?:\.\d+)?(?:[-/]\d+(?:\.\d+)?)+")
# A day, a month and a year (or a year first): "1/2/2024", "15-03-2024", "2024/3/15".
_YEAR = r"(?:1[6-9]|20)\d\d"
_DATE_JOINED = re.compile(rf"\d{{1,2}}([-/])\d{{1,2}}\1{_YEAR}|{_YEAR}([-/])\d{{1,2}}\2\d{{1,2}}")
_CALCULATION_BEFORE = re.compile(
    r"(?:^|[.?!:;]\s)\W*(?:(?:hey|hi|ok|so|quick(?: one)?|please|pls|plz|nexus)[\s,:]+)*"
    r"(?:(?:what(?:'s|’s| is|s)|how much is|calculate|compute|evaluate|solve|work out)\s*:?\s*)?$"
)
_CALCULATION_AFTER = re.compile(
    r"\s*(?:=\s*)?(?:,?\s*(?:as|in(?:to)?)\s+(?:a\s+)?decimals?(?:\s+(?:number|form))?\s*)?(?:please\s*)?(?:[?!.]|$)"
)


# A word that makes the number after it part of a name: a version, a chapter, a room, a flight.
_LABELLED = re.compile(
    r"\b(?:versions?|ver|v|release|build|python|node|java|ios|android|windows|chapter|section|room|flat|apt|"
    r"apartment|suite|route|gate|platform|flight|season|episode|rfc|iso)\s*$",
    re.IGNORECASE,
)


def _calculation(text: str, match: re.Match[str]) -> bool:
    """Whether the expression `match` found is arithmetic asked, not numbers inside a name
    ("CVE-2021-44228", "ISO-8859-1", "1-800-FLOWERS") or joined as in a date or a score."""
    before, after = text[: match.start()], text[match.end() :]
    if re.search(r"%\s*(?:[-+*/^)]|$)", match.group()):
        return False  # "50% + 10%": a percent sign, which the calculator would take for modulo (0)
    if re.search(r"[a-z][-/]$", before) or re.match(r"[-/]?[a-z]", after):
        return False  # also a unit after the last number: "100m / 9.58s"
    if _LABELLED.search(before):
        return False  # "version 2.0 - 1.9", "Python 3.12 - 3.11", "room 101 + 1": a name's number
    if not _JOINED.fullmatch(match.group().strip(" ()")):
        return True
    if _DATE_JOINED.fullmatch(match.group().strip(" ()")):
        return False  # "what is 1/2/2024": a date, even asked as a calculation
    _, rest = _applied(match.group().strip(), after)
    if not _CALCULATION_BEFORE.search(before):
        return False
    # "What's 100/4 and the time in Tokyo?": a second ask after it, for the clock, leaves it asked.
    joined = re.match(r"\s*,?\s*and\s+", rest)
    return bool(_CALCULATION_AFTER.match(rest) or (joined and asks_now(rest[joined.end() :])))


_AND_NUMBER = re.compile(
    r"\s*,?\s+and\s+(?=[-+(]?\s*\d)|\s*,\s+(?=[-+(]?\s*\d[\d.]*\s*(?:[-+*/x^]|%\s*of\b))", re.IGNORECASE
)


def split_calculations(text: str) -> list[str]:
    """ "What is 10% of 50 and 20% of 80": two calculations, each asked in full, where the
    expression reader would take the first alone. One piece when either side has none."""
    pieces = _AND_NUMBER.split(text)
    if len(pieces) < 2 or not all(expression_in(piece) for piece in pieces):
        return [text]
    return pieces


# "…and what is 2,340 minus that?", "what is that times 10": the result of the part before,
# beside an operation (not "what is it used for").
_RESULT_OPERATION = (
    r"(?:\b(?:plus|minus|times|divided\s+by|multiplied\s+by|over|from|to|of|by)\s+|[-+*/×÷]\s*)"
)
_REFERENCE = r"\b(?:that\s+number|that|it|the\s+result|the\s+answer)\b"
_EARLIER_RESULT = re.compile(
    rf"(?P<before>{_RESULT_OPERATION}){_REFERENCE}|{_REFERENCE}(?=\s*(?:{_RESULT_OPERATION}|(?:squared|cubed|doubled|tripled|halved)\b))",
    re.IGNORECASE,
)


def earlier_results_in(parts: list[str]) -> list[str]:
    """`parts` with a part that computes with the result of the calculation before it ("What is
    15% of 2,340 and what is 2,340 minus that?") written with that calculation in brackets, so
    it is computed, not declined."""
    out: list[str] = []
    previous: str | None = None
    for part in parts:
        expression = expression_in(part)
        found_at = _EARLIER_RESULT.search(part) if expression is None and previous is not None else None
        if found_at is not None:
            before = found_at["before"] or ""
            written = f"{part[: found_at.start()]}{before} ({previous}) {part[found_at.end() :]}"
            written = " ".join(written.split())
            if (found := expression_in(written)) and accounts_for(written, found):
                part, expression = written, found
        out.append(part)
        previous = expression
    return out


def calculation_in_steps(text: str) -> bool:
    """Whether `text` is one calculation done in steps ("What is 10 - 2, then add 5?"): one
    ask, although ", then" usually opens another."""
    if "then" not in text.lower():  # most sentences: no need to read an expression
        return False
    expression = expression_in(text)
    return bool(expression and _THEN.search(_grouped_digits_joined(text)) and accounts_for(text, expression))


def _then(expression: str, rest: str) -> str:
    """`expression` with what the words after it do to its result ("then doubled", "rounded
    to 3 decimals", "as a percentage"): an answer that left them out would be wrong."""
    return _applied(expression, rest)[0]


def _applied(expression: str, rest: str) -> tuple[str, str]:
    """`_then`'s expression, and what is left of `rest` after the words it read."""
    for _ in range(5):
        step = _THEN.match(rest)
        if step is None:
            break
        expression, rest = f"({expression}){_then_operation(step)}", rest[step.end() :]
    if percent := _AS_PERCENT.match(rest):
        expression, rest = f"({expression})*100", rest[percent.end() :]
    if rounded := _ROUNDED.match(rest):
        rest = rest[rounded.end() :]
        if way := rounded["way"]:
            return f"{'floor' if way.lower() == 'down' else 'ceil'}({expression})", rest
        places = rounded["places"] or rounded["places2"]
        places = f", {_PLACES_WORDS.get(places.lower(), places)}" if places else ""
        if value := rounded["value"]:  # "to the nearest hundred": places before the point
            places = f", {_PLACE_VALUES[value.lower()]}"
        expression = f"round({expression}{places})"
    return expression, rest


# "UTC+2", "GMT-05:30": a fixed offset, which the clock reads as it is.
# The sign as typed: a hyphen, a minus or any dash that phones and documents put there, or
# the word.
_MINUS = "\u2212\u2010\u2011\u2012\u2013\u2014\ufe63\uff0d"
# "Etc/GMT+5" is a zone's name (five hours behind UTC); "at +03:00" an offset without "UTC".
_BARE_OFFSET = rf"(?=[+\-{_MINUS}]\d{{1,2}}(?::?\d\d)?(?![\d:.,]))"
_OFFSET_SIGN = (
    rf"(?:(?<!/)\b(?:UTC|GMT)\s*|(?<=\bin\s){_BARE_OFFSET}|(?<=\bat\s){_BARE_OFFSET})"
    rf"([+\-{_MINUS}]|\b(?:plus|minus)\b)\s*"
)
_UTC_OFFSET = re.compile(
    rf"{_OFFSET_SIGN}(\d{{1,2}})(?::?(\d{{2}})|[.,](\d{{1,2}}))?(?![\d:]|[.,]\d)(?:\s*hours?\b)?",
    re.IGNORECASE,
)


# Whatever is written as an offset, read or not ("UTC+.5").
_OFFSET_WRITTEN = re.compile(rf"{_OFFSET_SIGN}[\d.,:]*\d", re.IGNORECASE)
# Numbers joined by an operator sign: "100/4", "3 * 7" (an offset's sign is read first).
_ARITHMETIC_WRITTEN = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:\*\*|[-+*/×÷^])\s*\(?\d[\d.]*")


def arithmetic_written(text: str) -> list[str]:
    """The arithmetic a text writes in signs, offsets aside ("100/4 and the time in Tokyo":
    "100/4", which the expression reader may take for a date there, but an answer must not
    leave out)."""
    return _ARITHMETIC_WRITTEN.findall(_UTC_OFFSET.sub(" ", text or ""))


# "UTC minus four": the hours in words, read as digits first.
_SPELLED_OFFSET = re.compile(
    rf"(?P<sign>{_OFFSET_SIGN})(?P<hours>{'|'.join(list(_UNITS)[:15])})\b", re.IGNORECASE
)


def _offset_zone(match: re.Match[str]) -> str | None:
    """The zone of an offset: "+5:30", "+0530", or in decimal hours "+5.5" (+05:30) and
    "+5.75" (+05:45); None for a fraction that is no quarter of an hour ("+5.3"): no zone keeps it."""
    minutes = int(match.group(2)) * 60
    if match.group(4):
        fraction = Decimal(f"0.{match.group(4)}") * 60
        if fraction % 15:  # offsets are whole quarters of an hour
            return None
        minutes += int(fraction)
    else:
        minutes += int(match.group(3) or 0)
    ahead = match.group(1).lower() in ("+", "plus")
    return "UTC" if minutes == 0 else offset_name(minutes if ahead else -minutes)


def zone_in(text: str) -> str | None:
    """The first time zone a text names."""
    zones = zones_in(text)
    return zones[0] if zones else None


def zones_in(text: str) -> list[str]:
    """Every time zone a text names, in the order it names them ("Berlin and Tokyo": two):
    IANA names, places (accents optional), and abbreviations in capitals (PST, LA)."""
    return list(_zones_in(text or ""))


def _place_text(text: str) -> str:
    """`text` as place names are looked up: folded, and "St. John's" as the database writes it
    ("St Johns")."""
    return re.sub(r"[.'’]", "", fold(text))


def places_kept_by(text: str, zone: str) -> list[str]:
    """The places `text` names whose time `zone` keeps, as names ("Houston", "Dallas" for
    America/Chicago): a clock's answer names its zone, and several places asked about that
    share one (Tokyo and Osaka) were answered with one line naming neither."""
    places, finder = _places()
    folded = _place_text(states_spelled(text or ""))
    names = [m.group(1) for m in finder.finditer(folded) if places.get(m.group(1)) == zone]
    return [name.title() for name in dict.fromkeys(names)]


@functools.lru_cache(maxsize=512)
def _zones_in(text: str) -> tuple[str, ...]:
    """zones_in's reading, cached: one run reads its question and parts' places dozens of times."""
    text = states_spelled(text or "")
    # "the UTC offset of Mumbai" names Mumbai, not UTC.
    text = _OFFSET_OF.sub(lambda m: " " * len(m.group()), text)
    text = _SPELLED_OFFSET.sub(lambda m: m["sign"] + str(_UNITS[m["hours"].lower()]), text or "")
    places, pattern = _places()
    found = [(m.start(), zone) for m in _UTC_OFFSET.finditer(text) if (zone := _offset_zone(m))]
    text = _UTC_OFFSET.sub(lambda m: " " * len(m.group()), text)  # not "UTC" itself as well
    text, written = _zone_names_out(text)
    found += written
    found += [
        (m.start(), ZONE_ABBREVIATIONS[m.group(1)])
        for m in _ABBREVIATION.finditer(text)
        if not _names_place(text[: m.start()])
    ]
    folded = _place_text(text)
    named = list(pattern.finditer(folded))
    qualified: set[int] = set()  # the regions that only say which place is meant
    for state in _STATE_AFTER_COMMA.finditer(folded):
        city = next((m for m in named if folded[m.end() : state.start()].strip() == ""), None)
        city_zone = places[city.group(1)] if city else None
        if (
            city_zone
            and fold(state.group(1)).strip() in places
            and country_of(city_zone) not in (None, "US")
            and re.match(r"\s*(?:,|and\b)", folded[state.end() :])
        ):
            continue  # "Tokyo, New York, London": a list of cities, not Tokyo in New York state
        if zone := state_zone(city_zone, state.group(1)):
            found.append((state.start(), zone))
            qualified |= {m.start() for m in named if m is city or m.start() == state.start(1)}
    for m, after in zip(named, [*named[1:], None], strict=False):
        if (
            after
            and after.group(1) in _REGIONS
            and re.fullmatch(r"\s*,\s*", m.string[m.end() : after.start()])
        ):
            zone = places[m.group(1)]
            if (country := country_of(zone)) and country == country_named(after.group(1)):
                qualified.add(after.start())  # "Manaus, Brazil": Manaus's own zone
            else:
                continue  # "Paris, Texas": the region's zone
        if m.start() not in qualified:
            found.append((m.start(), places[m.group(1)]))
    return tuple(dict.fromkeys(zone for _, zone in sorted(found, key=lambda item: item[0])))


def _names_place(before: str) -> bool:
    """Whether `before` ends with a place: an abbreviation after it ("Shanghai CST", "Dublin
    (IST)") is that place's own, often another zone's too (CST, IST, BST)."""
    tail = fold(re.sub(r"[.'’]", "", re.sub(r"[\s(,]*$", "", before)))[-40:]
    return any(m.end() == len(tail) for m in _places()[1].finditer(tail))


# "What time is it in Londn?": a place after the time question that no zone is known for.
# Up to eight words: "in Mexico City and Buenos Aires" is five (with four, the second place was
# "Buenos", which no zone is known for).
_PLACE_ASKED = re.compile(
    r"\b(?:in|at|on)\s+(?P<place>[^\W\d_][\w'’.-]*(?:\s+[^\W\d_][\w'’.-]*){0,7})",
    re.IGNORECASE,
)
# A "place" of punctuation, a path or a share ("in ..", "in ~/x", "in \\host"), not a number (".5").
_ODD_PLACE = re.compile(r"\b(?:in|at)\s+(?P<place>[./\\~](?![\d])[^\s?!,;]*)")
# A place by its number ("in 90210", "at 221B Baker Street"), not a span or a moment ("in 5
# minutes", "in 24h format", "at 3:30").
_NUMBERED_PLACE = re.compile(
    r"\b(?:in|at)\s+(?!\d+\s*(?:h|hrs?|hours?|mins?|minutes?|secs?|seconds?|days?|weeks?|months?|years?|"
    r"am|pm|a\.m|p\.m|o'clock|format|digits?)\b)(?!\d+[:.]\d)(?P<place>\d+[a-z]?\b(?:\s+[A-Z][\w'’-]*){0,3})",
    re.IGNORECASE,
)
_TIME_ASKED = re.compile(r"\b(?:time|date|day|clock|hour)\b", re.IGNORECASE)
# fmt: off
_NOT_A_PLACE = frozenset({
    "the", "a", "an", "this", "that", "here", "there", "and", "or",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekend",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "utc", "gmt", "zone", "clock",
    "it", "iso", "words", "format", "figures", "digits", "numbers", "seconds", "minutes", "hours",
    "days", "weeks", "months", "years", "total", "general", "morning", "afternoon", "evening",
    "night", "now", "today", "tonight", "currently", "right", "moment", "am", "pm", "o'clock",
    # Languages: "the time in Tokyo, in French".
    "english", "french", "spanish", "german", "italian", "portuguese", "dutch", "japanese",
    "chinese", "korean", "russian", "arabic", "hindi", "polish", "swedish", "turkish", "greek",
})
# fmt: on


def unknown_place(text: str) -> str | None:
    """A place a time question asks about that no time zone is known for (so the answer says
    so instead of giving another place's time, or leaving it out beside a known one); None
    when it names none, or only known ones."""
    # Only the sentences that ask the time: "What time is it in Tokyo? Answer in French."
    # named no unknown place "French".
    for sentence in sentences(text):
        if place := _unknown_place_in(zone_asked_as_time(sentence) or sentence):
            return place
    return None


# ", Nova Scotia" after a place: which place of that name is meant.
_QUALIFIER = re.compile(r",\s+([A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,2})")


def _unknown_place_in(text: str) -> str | None:
    text = states_spelled(text)
    text, _ = _zone_names_out(text)  # "in Europe/London" names no place "Europe"
    asked = _TIME_ASKED.search(text)
    if not asked:
        return None
    for attempt in _OFFSET_WRITTEN.finditer(text):
        # "UTC+5.3", "UTC+.5", "UTC+5.333": an offset it cannot read, or no zone keeps, is no
        # reason to tell UTC's time.
        offset = _UTC_OFFSET.match(text, attempt.start())
        if offset is None or offset.end() < attempt.end() or _offset_zone(offset) is None:
            return attempt.group().strip()
    if odd := _ODD_PLACE.search(text, asked.end()):
        return odd.group("place")  # "in ../../etc/passwd": no place, and no reason for UTC's time
    if numbered := _NUMBERED_PLACE.search(text, asked.end()):
        return numbered.group("place")  # "in 90210", "at 221B": a postcode or an address, not UTC
    for named in _PLACE_ASKED.finditer(text, asked.end()):
        # Each of "London and Nowhereville", "Berlin and at HQ": one unknown beside a known one
        # was left out.
        pieces = re.split(r"\s+(?:and|or|in|at|on)\b", named.group("place"), flags=re.I)
        if len(pieces) > 1 and re.match(r"\s+[^\W\d_]", text[named.end() :]):
            pieces.pop()  # cut off by the word limit: maybe half a name
        elif (
            len(pieces) > 1
            and re.match(r"\s*[-−(]?[$€£¥]?\d", text[named.end() :])
            and expression_in(text[named.end() - len(pieces[-1]) :]) is not None
        ):
            # "the time in Chicago and split 120 between 4 people": the words before a number
            # start a calculation ("split", "add", "double"), a second ask, not a place.
            pieces.pop()
        # "Kansas City, Missouri": a state that keeps one zone tells its time.
        state = _STATE_AFTER_COMMA.match(fold(text[named.end() :]))
        qualifier = _QUALIFIER.match(text, named.end())
        settled = (bool(state) and state_zone(zone_in(pieces[-1]), state.group(1)) is not None) or bool(
            # "Birmingham, England": a name of several places, known with its qualifier.
            qualifier and _known_name(f"{pieces[-1]}, {qualifier[1]}")
        )
        for index, piece in enumerate(pieces[:-1] if settled else pieces):
            if index < len(pieces) - 1 and _POSSESSIVE.match(piece):
                continue  # "at our office in Oslo": where in the place that follows
            if (place := _place_name(piece)) and (
                not zones_in(place)
                or _unknown_before_state(place)
                # "Texas", "Washington": a place of several zones, or a name several places
                # share, has no one time to give, unless a qualifier after it says which (its
                # country does not: "Texas, USA").
                or (
                    _no_one_zone(place)
                    and (
                        index < len(pieces) - 1
                        or not (
                            state or settled or (qualifier and not _country_of_place(qualifier[1], place))
                        )
                    )
                )
            ):
                return place
        if settled:
            continue
        place = _place_name(pieces[0])
        if place is None:
            continue
        # "Sydney, Nova Scotia", "London, Ontario": a qualifier it does not know says another
        # place of that name is meant, whose time it would get wrong.
        if qualifier and re.sub(r"[.\s]", "", fold(qualifier[1])) == "dc":
            continue  # "Washington, D.C."
        if qualifier and fold(qualifier[1]) not in _NOT_A_PLACE and not zones_in(qualifier[1]):
            # "Sydney, Australia": the country it is in says nothing new.
            country = country_named(qualifier[1])
            if country and country in map(country_of, zones_in(place)):
                continue
            return f"{place}, {qualifier[1]}"
    if not zones_in(text) and (other := _ELSEWHERE.search(text)):
        # "for Sarah", "for the client", "there": a place the clock cannot know, not UTC's time.
        return other.group("place") or other.group(0)
    return None


def _unknown_before_state(place: str) -> bool:
    """ "Pensacola Florida": a state of several zones after a name the places do not know settles
    nothing, as after a comma; the state's main zone would be a guess (Pensacola is Central)."""
    words = fold(place).split()
    for size in (2, 1):
        if len(words) > size and US_STATES.get(" ".join(words[-size:]), "") is None:
            return not zones_in(" ".join(words[:-size]))
    return False


def _country_of_place(name: str, place: str) -> bool:
    """Whether `name` is only the country `place` lies in ("Texas, USA"), which says nothing new."""
    country = country_named(name)
    return bool(country) and country in map(country_of, zones_in(place))


def _no_one_zone(place: str) -> bool:
    """Whether a place the places know by one zone keeps several, or names several places."""
    name = fold(place).replace(".", "").strip()
    return name in SEVERAL_ZONES or name in AMBIGUOUS_PLACES


_POSSESSIVE = re.compile(r"\s*(?:our|my|your|their)\b", re.IGNORECASE)


def _place_name(piece: str) -> str | None:
    """`piece` (words after "in") as a place name, None if it names none ("in words")."""
    words = piece.strip(" .’'").split()
    while words and fold(words[-1]) in _NOT_A_PLACE:
        words.pop()
    if words and fold(words[0]) == "the":  # "in the US", "in the Eastern time zone"
        words.pop(0)
    if not words or fold(words[0]) in _NOT_A_PLACE:
        return None
    return " ".join(words)


# Somewhere the clock cannot know: a person ("for Sarah", "for my manager") or a place named
# earlier ("there").
_ELSEWHERE = re.compile(
    r"\bfor\s+(?P<place>(?:(?:my|our|the|your)\s+)?[^\W\d_][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)|\bthere\b",
    re.IGNORECASE,
)


# "What time is it", "today's date", "what week number is it", "what year is it now": the
# present moment, which only a clock knows. "How many seconds in a day" or "the time
# difference between Lisbon and Warsaw" ask for no present moment.
# "the time in Oslo", not "the time in seconds" or "the time in the film".
_IN_A_PLACE = (
    r"(?:in|at|for|on)\b(?! (?:seconds|minutes|hours|days|weeks|months|years|history|winter|summer|spring|"
    r"autumn|fall|the (?:movie|film|book|novel|song|show|series|game|play|story|past|future))\b)"
)
# "What is the date?", "what's the time in Oslo": not "the date of Easter", "the time limit",
# "the day rate", "the time of sunset".
# A zone named before "time" ("the current Eastern time"), each one the places know as "… time".
_ZONE_WORD = r"(?:(?:utc|gmt|zulu|eastern|central|mountain|pacific) )?"
_THE_TIME = (
    rf"what(?:'s|’s| is|s)? the (?:current )?{_ZONE_WORD}(?:time|date|day|weekday)"
    rf"(?=\s*(?:$|[?.!,;:]|(?:right )?now\b|today\b|currently\b|here\b|there\b|please\b|"
    rf"at the moment\b|(?:over )?{_IN_A_PLACE}))"
)
_NOW = re.compile(
    rf"\b({_THE_TIME}|"
    # Not the time something happens ("what time does the sun set today").
    r"what (?:time|hour|date|day|year|month|week(?: number)?)\b"
    r"(?! (?:does|do|did|will|would|should|shall|can|could|are|were|was|has|have|had)\b)"
    r"[^?.!]{0,30}\b(?:is it|it is|it's|today|now)\b|"
    r"(?:time|date|day|year|month) (?:is it|today|now|right now)\b|"
    rf"(?:current|today'?s|local) {_ZONE_WORD}(?:time|date|day|weekday|week number)\b|"
    rf"\b(?:time|date) {_IN_A_PLACE}|"
    rf"\bwhat time (?:is )?(?:now )?{_IN_A_PLACE}|"
    # The time alone, as people ask it in passing: "time?", "got the time?", "the time pls".
    r"^\W*(?:(?:have you |you |do you have |(?:do )?you know )?got |do you have |(?:do )?you know )?"
    r"(?:the )?(?:current )?time(?: (?:now|right now|rn|please|pls|plz))?\W*$)",
    re.IGNORECASE,
)
# A place and "time" alone: "Tokyo time?", "time in tokyo", "time tokyo", "Eastern time".
_PLACE_TIME = re.compile(
    r"^\W*(?:what(?:'s|’s|s| is)\s+)?(?:the\s+)?(?:current\s+)?(?:(?P<before>[^\d?.!]{2,40}?|"
    # An offset before "time" or "now": "GMT +5.5 time", "what's UTC+5:30 now".
    r"(?:utc|gmt)\s*[+\-\u2212]\s*\d{1,2}(?:[:.]\d{1,2})?)\s+(?:time|(?=now\b))|"
    r"time\s+(?:(?:now|right now)\s+)?(?:in\s+|at\s+)?(?P<after>[^\d?.!]{2,40}?))\s*(?:now|right now)?"
    r"(?:\s*,?\s*(?:please|pls|plz|thanks|thx|thank\s+you|ty)\b)?\W*$",
    re.IGNORECASE,
)


# Another moment than now: the clock tells the present only.
_OTHER_MOMENT = re.compile(
    r"\b(?:tomorrow|yesterday|next|last|ago|from now|from today|later|earlier|until|till)\b|"
    r"\b(?:days?|weeks?|months?|years?|hours?) (?:from|after|before)\b|"
    r"\bin \d+\s*(?:minutes?|hours?|days?|weeks?|months?|years?)\b|"
    # A season: "the time in London during summer" (its clocks keep another offset then).
    r"\b(?:in|during)\s+(?:the\s+)?(?:summer|winter|spring|autumn|fall)\b|"
    # A shift: "the time in Tokyo plus 3 hours", "London - 2 hours".
    r"(?<!utc)(?<!gmt)(?<!utc )(?<!gmt )(?:\b(?:plus|minus|add|subtract)|[-+])\s*"
    r"(?:\d+(?:\.\d+)?|an?|one|two|three|four|five|six|half an?)\s*"
    r"(?:minutes?|mins?|hours?|hrs?|h)\b|"
    # A number added to a place: "the time in Tokyo +2" (hours later, or a second offset).
    r"(?<=[a-z])(?<!\bin)(?<!\bat)(?<!utc)(?<!gmt)\s+\+\s*\d+(?:\.\d+)?\b(?!\s*(?:%|percent))|"
    # A conversion: "if it's 9am in London", "when it is noon in New York".
    r"\b(?:if|when|once) it(?:'s|’s| is| was| were)\b|\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)|"
    r"\b(?:noon|midday|midnight)\b|"
    # A time of day: "what time is it in the morning" asks no place's present time.
    r"\b(?:in|during) the (?:morning|afternoon|evening|night)\b|\bat (?:night|dawn|dusk)\b|"
    # "the time in Tokyo at 3:30", "at 17:00": the time at another moment, not now.
    r"\bat\s+\d{1,2}[:.h]\d{2}\b",
    re.IGNORECASE,
)


# Not a question for the clock, though it names the current time: work about time ("Write a
# function that returns the current time in Tokyo", "Design a scheduler … local time"), how
# time works ("time complexity", "how NTP keeps the current time"), or a place only the
# person knows ("where I am").
_ABOUT_TIME = re.compile(
    r"^\W*(?:please\s+)?(?:write|build|design|create|implement|make|explain|describe|code|develop|"
    r"generate|show me how|teach)\b|\bhow (?:do|can|should|would) (?:i|we|you)\b|\bhow to\b|"
    r"\b(?:time|date) (?:complexity|value|format|stamp|library|type)\b|\bbest practices?\b|"
    r"\b(?:function|script|program|snippet|widget|api|library|database|ntp|daylight saving|dst)\b|"
    r"\bwhere (?:i am|i'm|i live|you are)\b|\bmy (?:local )?time\b|\bhere\b(?!\s+in\b)|"
    # A time of day or of life, not the clock's: "lunch time in Rome?", "a great time in Berlin".
    r"\b(?:lunch|dinner|breakfast|supper|bed|night|tea|party|play|nap|great|good|nice|fun|lovely|"
    r"wonderful|amazing|hard|tough|bad|rough|best|first|last|long|short|spare|free)[\s-]*time\b",
    re.IGNORECASE,
)


# A place's time zone or offset asked ("What time zone is Tokyo in?", "which timezone does
# Chicago use", "the UTC offset of Mumbai"), which the clock's reading of its present names;
# not "how many time zones does Russia have" or "is Tokyo in the same time zone as Seoul".
_ZONE_ASKED = re.compile(
    r"\b(?:what|which)(?:'s|’s|s| is)?(?: the)?(?: current)?\s+(?:(?:utc|gmt)\s+)?"
    r"(?:time\s*zone|tz|offset)\b(?!s)"
    r"(?:\s+(?:is|are|does|do|for|of|in)\b(?!\s+(?:i|we|you|they|it)\b)|'s|’s)",
    re.IGNORECASE,
)
_OFFSET_OF = re.compile(r"\b(?:utc|gmt)(?=\s+offset\b)", re.IGNORECASE)


# What follows the place in "What time zone is Tokyo in?", "which timezone does Chicago use".
_ZONE_ASK_END = re.compile(
    r"(?:\s+(?:in|on|use|uses|keep|keeps|follow|follows|observe|observes|have|has|now|currently|"
    r"right now|today|please|pls))+\s*$|^\s*(?:the\s+)?",
    re.IGNORECASE,
)


def zone_asked_as_time(sentence: str) -> str | None:
    """A question for a place's time zone written as the question for its time ("What time
    zone is Texas in?" as "what time is it in Texas"), so that a place of several zones or one
    the clock does not know is said, as it is for its time; None when it asks no zone."""
    asked = _ZONE_ASKED.search(sentence)
    if asked is None or _ABOUT_TIME.search(sentence) or _OTHER_MOMENT.search(sentence):
        return None
    place = _ZONE_ASK_END.sub("", sentence[asked.end() :].strip(" ?.!")).strip(" ,")
    if not place or re.match(r"(?:it|this|that|there|here)\b", place, re.IGNORECASE):
        return None
    return f"what time is it in {place}"


def asks_zone(text: str) -> bool:
    """Whether a text asks which time zone (or offset) a place keeps."""
    return any(zone_asked_as_time(sentence) is not None for sentence in sentences(text))


def asks_now(text: str) -> bool:
    """Whether a text asks for the present moment (the time, today's date), which only a clock
    knows; "how many seconds in a day" or "the date tomorrow" does not. A place's time zone is
    asked of the clock too: its reading of the present names the zone and its offset."""
    if asks_zone(text):
        return True
    # Per sentence: "What time is it in Tokyo? Then say it is 3pm." still asks for now.
    return any(
        (_NOW.search(sentence) or _place_and_time(sentence))
        and not _OTHER_MOMENT.search(sentence)
        and not _ABOUT_TIME.search(sentence)
        for sentence in sentences(text)
    )


def _place_and_time(sentence: str) -> bool:
    """ "Tokyo time?", "time tokyo": a place the clock knows and the word "time", nothing else."""
    found = _PLACE_TIME.match(sentence)
    if found is None:
        return False
    if found["before"]:
        if re.match(r"(?:utc|gmt)\s*[+\-\u2212]", found["before"], re.IGNORECASE):
            return bool(zones_in(found["before"]))  # "GMT +5.5 time": an offset the clock keeps
        return _known_name(found["before"]) or _known_name(f"{found['before']} time")
    return _known_name(found["after"])


def _known_name(text: str) -> bool:
    """Whether `text` is, whole, a name the clock knows: a place, a zone or an abbreviation."""
    text = text.strip()
    return _place_text(text) in _places()[0] or text.lower() in _zone_names() or text in ZONE_ABBREVIATIONS


# The team's own matters, which its documents hold even when a question names no document
# and says no "our": "When are expense reports due?" (the offline model reads the same words).
TEAM_SUBJECTS = (
    r"employees?|staff|vacation|holidays?|payroll|expenses?|office|on[- ]?call|standup|offsite|vpn|"
    r"staging|deploy\w*|releases?|incidents?|colleagues?|procedure"
)
# The team's own knowledge, which its documents may hold: a document named with @, or the
# team's policies, handbooks, processes and matters.
_TEAM = re.compile(
    r'(?<![\w@])@(?:"[^"\n]{1,200}"|\w[\w.\-/]{0,199})|'
    r"\b(our|we|us|team'?s|company'?s|handbook|policy|policies|runbook|wiki|onboarding|"
    rf"internal|docs?|documents?|{TEAM_SUBJECTS})\b",
    re.IGNORECASE,
)
# "the US", "USA": a country, not "us" the team.
COUNTRY_US = re.compile(r"\b(?:the\s+)?U\.?S\.?(?:A\.?)?(?!\w)")
# Something the person tells, to be kept ("Remember that our staging database is db-2"), and
# asks nothing with (no "?"): nothing to look up. Searched, its answer was whichever team
# document shared a word with it.
_TELLING = re.compile(r"^\W*(?:please\s+)?(?:remember|note|keep in mind|for the record)\b", re.IGNORECASE)
_WRITING = re.compile(
    r"^\W*(?:please\s+)?(?:write|draft|rewrite|rephrase|shorten|translate|correct|fix|proofread|"
    r"suggest|give me|make|come up with|name|compose|polish)\b",
    re.IGNORECASE,
)


def tool_named(tools: Iterable[str], base: str) -> str | None:
    """The first of `tools` that is `base` on some server ("nexus__calculator"): the host lists
    its own server's tools first, so another server's "calculator" never stands in for it."""
    for name in tools:
        if name == base or name.endswith((f"__{base}", f".{base}")):
            return name
    return None


def foreseen_among(tools: Iterable[str]) -> set[str]:
    """The tools of `tools` whose need foresight judges (they are then not offered to a
    one-call answer): the one of each foreseen name it runs, never another server's tool of
    that name (a docs server's own search_documents was never offered)."""
    tools = list(tools)
    return {name for base in FORESEEN_TOOLS if (name := tool_named(tools, base))}


def foresee(part: str, tools: Iterable[str], *, attached: bool = False) -> list[ToolCall]:
    """The tool calls `part` (one ask) needs, among `tools`, read from its words alone.

    `attached`: the person attached documents, so the documents need no search."""
    tools = list(tools)
    calls: list[tuple[str, dict[str, str]]] = []
    expression = expression_in(part)
    if expression is not None and (name := tool_named(tools, "calculator")):
        try:
            calculate(expression)
        except CalculatorError:
            expression = None
        if expression is not None:
            calls.append((name, {"expression": expression}))
    if asks_now(part) and (name := tool_named(tools, "clock")) and not unknown_place(part):
        calls += [(name, {"timezone": zone}) for zone in zones_in(part) or ["UTC"]]
    wants_documents = (
        not calls
        and not attached
        and not _WRITING.match(part)
        and not (_TELLING.match(part) and "?" not in part)
        and _TEAM.search(COUNTRY_US.sub(" ", part))
    )
    if wants_documents and (name := tool_named(tools, "search_documents")):
        calls.append((name, {"query": " ".join(part.split()).strip(" ,.;:!?")}))
    return [
        ToolCall(f"foreseen_{index}", name, args) for index, (name, args) in enumerate(calls[:MAX_FORESEEN])
    ]
