"""Deterministic essays for cohort-matching tests and the benchmark (no data files needed).

Unrelated essays are built from a small grammar over topic vocabularies with a seeded
``random.Random``, so every run and every machine gets the same corpus, and two essays
share a 5-word phrase about as rarely as two students' real essays do. Planted pairs are
derived from an essay by the edits a student makes: swapping words (light ~3%, heavy ~11%,
which lands the shingle Jaccard near 0.4), copying a section into a longer essay of one's
own, or handing in the same file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TOPICS = {
    "transport": [
        "bus",
        "tram",
        "ferry",
        "taxi",
        "footpath",
        "crossing",
        "signal",
        "platform",
        "ticket",
        "bicycle",
        "lane",
        "commuter",
        "timetable",
        "junction",
        "pavement",
        "traffic",
        "parking",
        "fare",
        "route",
        "depot",
        "rail",
    ],
    "energy": [
        "wind",
        "wiring",
        "retrofit",
        "heating",
        "cooling",
        "substation",
        "cable",
        "solar",
        "panel",
        "grid",
        "turbine",
        "battery",
        "tariff",
        "heat",
        "pump",
        "insulation",
        "boiler",
        "meter",
        "outage",
        "kilowatt",
    ],
    "food": [
        "farm",
        "grocery",
        "fridge",
        "leftovers",
        "recipe",
        "kitchen",
        "vegetable",
        "fruit",
        "harvest",
        "allotment",
        "compost",
        "market",
        "bakery",
        "canteen",
        "menu",
        "orchard",
        "supplier",
        "seed",
        "pantry",
    ],
    "water": [
        "canal",
        "dam",
        "stream",
        "pump",
        "filter",
        "well",
        "river",
        "reservoir",
        "drain",
        "flood",
        "pipe",
        "rainfall",
        "aquifer",
        "tap",
        "leak",
        "basin",
        "wetland",
        "sewer",
    ],
    "housing": [
        "lease",
        "deposit",
        "repair",
        "garden",
        "hallway",
        "neighbour",
        "tenant",
        "landlord",
        "rent",
        "flat",
        "estate",
        "planning",
        "terrace",
        "loft",
        "mortgage",
        "council",
        "block",
        "courtyard",
    ],
    "health": [
        "doctor",
        "therapy",
        "hospital",
        "appointment",
        "pharmacy",
        "check-up",
        "clinic",
        "nurse",
        "patient",
        "ward",
        "vaccine",
        "diet",
        "exercise",
        "sleep",
        "screening",
        "pharmacy",
        "waiting",
        "surgery",
    ],
    "school": [
        "lesson",
        "lecture",
        "essay",
        "canteen",
        "bus-stop",
        "governor",
        "pupil",
        "teacher",
        "classroom",
        "homework",
        "timetable",
        "library",
        "exam",
        "playground",
        "curriculum",
        "tutor",
    ],
    "nature": [
        "beetle",
        "fox",
        "river-bank",
        "moss",
        "oak",
        "hedgerow",
        "meadow",
        "bird",
        "insect",
        "pollinator",
        "tree",
        "park",
        "pond",
        "woodland",
        "species",
        "verge",
    ],
}
SUBJECTS = [
    "residents",
    "students",
    "families",
    "researchers",
    "officials",
    "volunteers",
    "engineers",
    "critics",
    "planners",
    "shopkeepers",
    "commuters",
    "parents",
    "pensioners",
    "landlords",
    "charities",
    "councillors",
    "economists",
    "nurses",
    "teachers",
    "drivers",
    "cyclists",
    "farmers",
    "architects",
    "journalists",
    "activists",
    "tenants",
    "employers",
    "designers",
    "auditors",
    "inspectors",
]
VERBS = [
    "support",
    "question",
    "measure",
    "improve",
    "neglect",
    "fund",
    "redesign",
    "protect",
    "study",
    "share",
    "replace",
    "expand",
    "postpone",
    "defend",
    "audit",
    "subsidise",
    "monitor",
    "restrict",
    "relocate",
    "simplify",
    "promote",
    "ignore",
    "debate",
    "welcome",
    "underestimate",
    "overlook",
    "reconsider",
    "prioritise",
    "regulate",
    "test",
]
ADJECTIVES = [
    "local",
    "cheaper",
    "safer",
    "quieter",
    "older",
    "newer",
    "shared",
    "public",
    "private",
    "modest",
    "ambitious",
    "careful",
    "crowded",
    "neglected",
    "popular",
    "costly",
    "fragile",
    "reliable",
    "temporary",
    "permanent",
    "visible",
    "informal",
    "regional",
    "seasonal",
    "efficient",
    "generous",
    "outdated",
    "flexible",
    "noisy",
]
ADVERBS = [
    "quietly",
    "rarely",
    "often",
    "slowly",
    "openly",
    "carefully",
    "mostly",
    "partly",
    "gradually",
    "suddenly",
    "barely",
    "sharply",
]
PLACES = [
    "town",
    "centre",
    "suburb",
    "village",
    "district",
    "neighbourhood",
    "campus",
    "harbour",
    "riverside",
    "estate",
    "market",
    "square",
    "ring",
    "road",
    "old",
    "quarter",
    "industrial",
    "park",
    "station",
    "area",
    "outskirts",
    "hillside",
]
CONNECTIVES = [
    "because",
    "although",
    "while",
    "since",
    "unless",
    "even when",
    "so that",
    "whereas",
    "and yet",
    "until",
    "once",
    "as long as",
]
OPENERS = [
    "In practice",
    "Over the last decade",
    "According to a recent survey",
    "In my view",
    "For many people",
    "At first sight",
    "On the other hand",
    "In the long run",
    "Perhaps surprisingly",
    "Last winter",
    "Since the pandemic",
    "In our city",
    "To be fair",
    "Put simply",
    "Historically",
]
NUMBERS = [str(n) for n in range(2, 99)]
SYNONYMS = ["thus", "however", "indeed", "also", "often", "rarely", "clearly", "simply", "mostly", "partly"]
PATTERNS = [
    "{O}, {S} {V} the {A} {N} near the {P} {C} {S} {Adv} {V} the {N}.",
    "{S} {Adv} {V} {A} {N} {C} {n} per cent of {N} {V2} {A} {N}.",
    "The {N} of the {P} is {A}, {C} {S} {V} its {N} and {N}.",
    "{O}, the {A} {N} {V2} the {N} more than {S} {V2} the {P}.",
    "Why do {S} {V} a {A} {N} {C} the {N} is {Adv} {A}?",
    "{n} {S} from the {P} {Adv} {V} the {N}, and {S} {V} the {A} {N}.",
    "{C} {A} {N} {V2} {N}, {S} in the {P} {V} {A} {N} {Adv}.",
]
VERBS2 = [
    "depend on",
    "compete with",
    "feed into",
    "rely on",
    "outlast",
    "replace",
    "shape",
    "limit",
    "follow",
    "protect",
    "cost more than",
    "serve",
]


def _sentence(rng: random.Random, topic: list[str]) -> str:
    pattern = rng.choice(PATTERNS)
    out = []
    for piece in pattern.replace("{", "|{").replace("}", "}|").split("|"):
        slot = {
            "{O}": lambda: rng.choice(OPENERS),
            "{S}": lambda: rng.choice(SUBJECTS),
            "{V}": lambda: rng.choice(VERBS),
            "{V2}": lambda: rng.choice(VERBS2),
            "{A}": lambda: rng.choice(ADJECTIVES),
            "{Adv}": lambda: rng.choice(ADVERBS),
            "{N}": lambda: rng.choice(topic),
            "{P}": lambda: rng.choice(PLACES),
            "{C}": lambda: rng.choice(CONNECTIVES),
            "{n}": lambda: rng.choice(NUMBERS),
        }.get(piece)
        out.append(slot() if slot else piece)
    text = "".join(out)
    return text[0].upper() + text[1:]


@dataclass(frozen=True)
class Essay:
    document_id: str
    text: str


def essay(rng: random.Random, words: int = 500, title: str | None = None) -> str:
    """An essay of about ``words`` words on a random topic, in paragraphs."""
    topic_name = rng.choice(sorted(TOPICS))
    topic = TOPICS[topic_name]
    out = [title or f"On {topic_name} in the {rng.choice(PLACES)}"]
    count = 0
    paragraph: list[str] = []
    while count < words:
        s = _sentence(rng, topic)
        paragraph.append(s)
        count += len(s.split())
        if len(paragraph) == 5:
            out.append(" ".join(paragraph))
            paragraph = []
    if paragraph:
        out.append(" ".join(paragraph))
    return "\n\n".join(out)


def edit(rng: random.Random, text: str, rate: float) -> str:
    """Replace, drop or insert words at ``rate`` (a student disguising a copy)."""
    out: list[str] = []
    for word in text.split(" "):
        r = rng.random()
        if r < rate / 3:
            continue  # dropped
        if r < 2 * rate / 3:
            out.append(rng.choice(SYNONYMS))  # replaced
            continue
        out.append(word)
        if r < rate:
            out.append(rng.choice(SYNONYMS))  # inserted
    return " ".join(out)


def copy_section(rng: random.Random, source: str, own: str, fraction: float = 0.25) -> str:
    """``own`` with a contiguous ``fraction`` of ``source``'s words pasted into its middle."""
    words = source.split(" ")
    take = max(1, int(len(words) * fraction))
    start = rng.randrange(0, len(words) - take + 1)
    section = " ".join(words[start : start + take])
    mine = own.split("\n\n")
    mid = len(mine) // 2
    return "\n\n".join(mine[:mid] + [section] + mine[mid:])


@dataclass(frozen=True)
class PlantedCorpus:
    essays: list[Essay]
    pairs: dict[frozenset[str], str]  # {document_id, document_id} → expected kind


def planted_corpus(
    seed: int = 11,
    *,
    unrelated: int = 20,
    per_kind: int = 2,
    words: int = 500,
    template: str | None = None,
    prefix: str = "",
) -> PlantedCorpus:
    """Unrelated essays plus ``per_kind`` planted pairs of each kind, shuffled.

    Kinds planted: ``light`` and ``heavy`` edits (reported as ``near_duplicate``), a copied
    quarter inside a three-times-longer essay (``copied_section``), and the same text
    (``identical``). ``template`` (a prompt) is prepended to every essay when given.
    """
    rng = random.Random(seed)
    items: list[tuple[str, str]] = []
    pairs: dict[frozenset[str], str] = {}
    for i in range(unrelated):
        items.append((f"{prefix}u{i:03d}", essay(rng, words)))
    for k in range(per_kind):
        base = essay(rng, words)
        items += [(f"{prefix}light{k}a", base), (f"{prefix}light{k}b", edit(rng, base, 0.03))]
        pairs[frozenset({f"{prefix}light{k}a", f"{prefix}light{k}b"})] = "near_duplicate"
        base = essay(rng, words)
        items += [(f"{prefix}heavy{k}a", base), (f"{prefix}heavy{k}b", edit(rng, base, 0.11))]
        pairs[frozenset({f"{prefix}heavy{k}a", f"{prefix}heavy{k}b"})] = "near_duplicate"
        base = essay(rng, words)
        items += [(f"{prefix}section{k}a", base),
                  (f"{prefix}section{k}b", copy_section(rng, base, essay(rng, 3 * words)))]  # fmt: skip
        pairs[frozenset({f"{prefix}section{k}a", f"{prefix}section{k}b"})] = "copied_section"
        base = essay(rng, words)
        items += [(f"{prefix}same{k}a", base), (f"{prefix}same{k}b", base)]
        pairs[frozenset({f"{prefix}same{k}a", f"{prefix}same{k}b"})] = "identical"
    rng.shuffle(items)
    if template:
        items = [(d, template + "\n\n" + t) for d, t in items]
    return PlantedCorpus([Essay(d, t) for d, t in items], pairs)


TEMPLATE = (
    "Assignment 3 (Urban Studies 101). Write an essay of about five hundred words on a local policy "
    "question of your choice. State the question in your first paragraph, give evidence from at least "
    "two sources, weigh one counter-argument fairly and end with a recommendation that a city council "
    "could act on within a year. Submit a plain text or Word file before the deadline; late work loses "
    "ten per cent of its mark for each day. Remember to cite every source you use and to write in your "
    "own words, since the course team checks all submissions for similarity with each other."
)
