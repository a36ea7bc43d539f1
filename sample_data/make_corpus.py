"""Regenerate the binary and derived files of the sample corpus (they are committed).

Run from anywhere: ``.venv/bin/python sample_data/make_corpus.py``. It writes

- ``submissions/essay_03_food_waste.docx``, ``essay_06_fast_fashion.docx`` (python-docx),
- ``submissions/essay_04_community_gardens.pdf``, ``essay_09_sponge_cities.pdf`` (fpdf2),
- ``submissions/appendix_traffic_counts_large.txt``: a ~4.1 MiB plain-text survey log, over
  the 4 MiB multipart limit so that the upload flow is exercised; generated from a fixed
  linear congruential sequence, so it is byte-identical on every machine and Python version
  (a unit test regenerates it in memory and compares hashes),
- ``submissions/diagram_cycle_network.png``: a tiny valid PNG: an image without machine-readable text,
- ``manifest.jsonl`` and ``manifest.parquet``: the same rows as the hand-written
  ``manifest.csv``, so tests can check the three formats give the same plan.

Nothing at run time depends on this script: CI and the demo use the committed files.
"""

from __future__ import annotations

import csv
import json
import struct
import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUBMISSIONS = HERE / "submissions"
LARGE_NAME = "appendix_traffic_counts_large.txt"
LARGE_TARGET_BYTES = 4_300_000  # > 4 MiB (4,194,304), well under 50 MiB

FIXED_DATE = datetime(2026, 10, 5, 9, 0, 0, tzinfo=UTC)

ESSAY_03 = (
    "Food Waste Starts at Home",
    [
        "Every week my flatmates and I throw away a bag of food that we bought with good intentions: "
        "half a cabbage, yoghurt past its date, bread that went hard before anyone finished it. We are "
        "not unusual. Households are responsible for more than half of the food wasted in Europe, more "
        "than farms, factories or supermarkets. This essay asks why waste is so stubborn at home and "
        "what a city can realistically do about it.",
        "The first reason is planning. Most of us shop for the week we imagine, full of home-cooked "
        "dinners, rather than the week we actually live, with late lectures and takeaway on Friday. "
        "Supermarket offers make this worse: three for two sounds like a saving until the third packet "
        "goes mouldy in the fridge.",
        "The second reason is confusion about dates. Many people treat a best-before date as a deadline, "
        "although it only describes quality. Food that is perfectly safe is binned because a label "
        "looks stern. Several retailers have started removing best-before dates from fruit and "
        "vegetables, and early results suggest that customers simply use their eyes and noses instead.",
        "The third reason is that waste is invisible. Once the bin is collected, the problem disappears "
        "from view. Cities that introduced separate food-waste collection found that residents began "
        "to notice how much they threw away, and some reduced it without any further campaign. "
        "Seeing a full caddy every week is a small, daily lesson.",
        "A city cannot plan its residents' meals, but it can make waste visible, support community "
        "fridges where surplus food can be shared, and work with schools to teach basic storage and "
        "cooking skills. None of these measures is dramatic. Together they treat food waste as what it "
        "is: a habit, and habits change when the easy choice becomes the better one.",
    ],
)

ESSAY_06 = (
    "The Real Cost of a Five-Pound T-Shirt",
    [
        "The cheapest T-shirt in the shop where I worked last summer cost five pounds. It was made of "
        "cotton grown in one country, spun in another, sewn in a third and shipped to us in a container "
        "with thousands of identical shirts. Many of them were never sold. This essay looks at fast "
        "fashion as a problem of cities as well as of factories, because the waste ends up in our "
        "streets, charity shops and landfill sites.",
        "Clothing production has roughly doubled since the early 2000s, while the number of times an "
        "item is worn before it is thrown away has fallen sharply. Charity shops receive far more "
        "donations than they can sell, and much of the surplus is exported and eventually dumped. "
        "Textiles made from synthetic fibres shed microplastics in every wash and do not rot in landfill.",
        "Cities have more influence here than it seems. Repair cafes, clothing libraries and swap events "
        "are cheap to support and make reuse social rather than embarrassing. Textile collection points "
        "that sort by quality can direct good items to resale and worn-out ones to recycling. Public "
        "procurement matters too: uniforms for staff, schools and hospitals can be bought to last.",
        "The limits are real. Recycling fibres back into new clothing is still difficult, especially for "
        "blends, and most recycled textiles become insulation or rags. The most effective measure is "
        "simply to buy fewer, better clothes and to wear them for longer, which is a message that no "
        "retailer wants to advertise.",
        "A five-pound shirt is cheap only because its costs are paid by someone else: the worker, the "
        "river near the dye works, and the city that collects what we throw away. Making those costs "
        "visible is the first step towards paying them fairly.",
    ],
)

ESSAY_04 = (
    "Community Gardens as Social Infrastructure",
    [
        "On Saturday mornings the garden behind the old tram depot is the busiest place on our street. "
        "Retired neighbours trade seedlings, children dig for worms, and a student from the flats "
        "opposite teaches anyone who asks how to build a compost heap. The garden produces some "
        "vegetables, but its real harvest is something harder to measure: people who would otherwise "
        "never meet now know each other by name.",
        "Urban planners sometimes describe parks, libraries and gardens as social infrastructure, the "
        "physical places where relationships form. Research on heatwaves in Chicago found that "
        "neighbourhoods with active shared spaces had fewer deaths, partly because people checked on "
        "each other. A garden is not only a place to grow food; it is a place where someone notices "
        "that the man from number twelve has not come out for three days.",
        "Gardens also change how residents see their environment. People who grow food start to notice "
        "soil, rain and the seasons. Several members of our garden now collect rainwater and have asked "
        "the council for more trees on the street. Environmental concern grows most easily from "
        "direct experience.",
        "The difficulty is security of land. Many community gardens sit on plots that are waiting for "
        "development, and they can be cleared with a few weeks of notice once prices rise. Cities that "
        "value these spaces should protect some of them permanently in their plans, and offer long "
        "leases rather than temporary permissions.",
        "Community gardens will never feed a city. They are not meant to. They are meant to make a city "
        "a place where people know each other, and in a crisis that may matter more than any harvest.",
    ],
)

ESSAY_09 = (
    "Sponge Cities: Designing for Water Instead of Against It",
    [
        "For most of the twentieth century, cities treated rainwater as waste. Roofs, roads and car parks "
        "sent it into pipes as quickly as possible, and the pipes sent it into rivers. This worked until "
        "storms grew heavier than the pipes were designed for. Today many cities flood not because "
        "rivers overflow but because rain has nowhere to go.",
        "The sponge city approach, developed most visibly in China after 2013, reverses this logic. "
        "Instead of removing water quickly, the city is designed to absorb, store and slowly release it. "
        "Permeable paving lets rain soak into the ground. Green roofs hold water and release it over "
        "hours. Parks are shaped so that they can flood safely for a day or two, protecting homes nearby.",
        "These measures have benefits beyond flood control. Water that soaks into the ground recharges "
        "aquifers. Green spaces cool the surrounding streets in summer. Wetland parks support birds and "
        "insects. A basketball court that doubles as a storm basin on two days a year is still a "
        "basketball court on the other three hundred and sixty-three.",
        "The approach has limits. Sponge measures work well for frequent, moderate storms, but the most "
        "extreme events can overwhelm any landscape, and some Chinese pilot cities still flooded badly "
        "after record rainfall. Sponge design must therefore complement, not replace, warnings, "
        "evacuation plans and careful decisions about where to build.",
        "What I find most persuasive is the change of attitude. A sponge city accepts that water will "
        "come and asks where it should go. That is a more honest starting point than the old promise "
        "that pipes could make the rain disappear.",
    ],
)


def make_docx(path: Path, title: str, paragraphs: list[str], *, table: bool = False) -> None:
    import docx

    document = docx.Document()
    document.core_properties.author = "sample student"
    document.core_properties.created = FIXED_DATE.replace(tzinfo=None)
    document.core_properties.modified = FIXED_DATE.replace(tzinfo=None)
    document.add_heading(title, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        rows = [("Item", "Times worn"), ("T-shirt", "7"), ("Jeans", "40"), ("Coat", "120")]
        grid = document.add_table(rows=len(rows), cols=2)
        for r, (a, b) in enumerate(rows):
            grid.cell(r, 0).text = a
            grid.cell(r, 1).text = b
    document.save(str(path))


def make_pdf(path: Path, title: str, paragraphs: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=15)
    pdf.multi_cell(0, 9, title)
    pdf.ln(3)
    pdf.set_font("Helvetica", size=11)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 6, paragraph)
        pdf.ln(3)
    pdf.output(str(path))


STREETS = ["Harbour Street", "Mill Road", "Station Avenue", "Canal Walk", "Market Square", "Depot Lane",
           "University Road", "North Bridge"]  # fmt: skip
WEATHER = ["dry", "light rain", "overcast", "sunny", "windy", "drizzle"]
REMARKS = [
    "Delivery van parked in the lane for most of the interval.",
    "Several riders used the footway where the lane ends near the junction.",
    "Signal phase for cyclists felt short; two riders crossed on amber.",
    "School run peak clearly visible in the second half of the interval.",
    "A bus stopped across the lane entrance twice.",
    "No conflicts observed.",
    "Group of students riding two abreast, no issue for other users.",
    "Planters at the kerb had been moved, narrowing the lane slightly.",
]


def large_text() -> bytes:
    """The survey log: deterministic (a fixed LCG, no ``random``), ~4.1 MiB of plain words."""
    state = 20261005
    out = [
        "Appendix B: Manual traffic counts, autumn term\n",
        "Each entry records a fifteen minute count at one location by one observer.\n\n",
    ]
    size = sum(len(s) for s in out)
    entry = 0

    def nxt(n: int) -> int:
        nonlocal state
        state = (state * 1103515245 + 12345) % 2**31
        return state % n

    while size < LARGE_TARGET_BYTES:
        entry += 1
        day, hour, minute = 1 + nxt(28), 6 + nxt(14), 15 * nxt(4)
        line = (
            f"Entry {entry:06d}. Day {day}, {hour:02d}:{minute:02d}, {STREETS[nxt(len(STREETS))]}, "
            f"weather {WEATHER[nxt(len(WEATHER))]}. Cyclists {nxt(90)}, pedestrians {nxt(200)}, "
            f"cars {nxt(300)}, buses {nxt(12)}, scooters {nxt(25)}. {REMARKS[nxt(len(REMARKS))]}\n"
        )
        out.append(line)
        size += len(line)
    return "".join(out).encode("utf-8")


def tiny_png() -> bytes:
    """A valid 4×4 grey PNG (an image without machine-readable text: its row says so)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x80" * 4 for _ in range(4))
    header = struct.pack(">IIBBBBB", 4, 4, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def derived_manifests() -> None:
    """manifest.jsonl and manifest.parquet with exactly the rows of manifest.csv (as strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(HERE / "manifest.csv", newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = list(reader.fieldnames or [])
        rows = list(reader)
    with open(HERE / "manifest.jsonl", "w", encoding="utf-8") as out:
        for row in rows:
            # Empty cells are left out in JSONL, as a person writing JSON would do.
            out.write(json.dumps({k: v for k, v in row.items() if v != ""}, ensure_ascii=False) + "\n")
    table = pa.table({c: pa.array([row[c] or None for row in rows], pa.string()) for c in columns})
    pq.write_table(table, HERE / "manifest.parquet")


def main() -> int:
    SUBMISSIONS.mkdir(exist_ok=True)
    make_docx(SUBMISSIONS / "essay_03_food_waste.docx", *ESSAY_03)
    make_docx(SUBMISSIONS / "essay_06_fast_fashion.docx", *ESSAY_06, table=True)
    make_pdf(SUBMISSIONS / "essay_04_community_gardens.pdf", *ESSAY_04)
    make_pdf(SUBMISSIONS / "essay_09_sponge_cities.pdf", *ESSAY_09)
    (SUBMISSIONS / LARGE_NAME).write_bytes(large_text())
    (SUBMISSIONS / "diagram_cycle_network.png").write_bytes(tiny_png())
    derived_manifests()
    print(f"sample corpus written to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
