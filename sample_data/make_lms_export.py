"""Make ``sample_data/lms/C101-Essay 1-42.zip``: a small Moodle "Download all submissions" export.

Every name and every text is invented (seeded, so the zip is the same each time it is made);
no real student's work is in it. It shows the forms doccheck reads (docs/lms.md): a file in a
participant's folder, a second file in a subfolder, an online-text entry, a near copy between
two students, and a student's own .zip that is refused.

    python sample_data/make_lms_export.py && doccheck run "sample_data/lms/C101-Essay 1-42.zip" --dry-run
"""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = [
    "river",
    "flood",
    "city",
    "water",
    "bank",
    "rain",
    "levee",
    "delta",
    "silt",
    "tide",
    "storm",
    "drain",
    "pump",
    "canal",
    "barrier",
    "map",
]


def essay(seed: int, words: int = 160) -> str:
    """An invented essay of ``words`` words (deterministic for one seed)."""
    rnd = random.Random(seed)
    return " ".join(rnd.choice(WORDS) + ("." if i % 12 == 11 else "") for i in range(words))


def members() -> dict[str, str]:
    """The export's members, as Moodle names them (folders, current form)."""
    copied = essay(3)
    return {
        "Ada Example_1101_assignsubmission_file/essay.txt": essay(1),
        "Ada Example_1101_assignsubmission_file/sources/bibliography.txt": essay(11, 40),
        "Ben Sample_1102_assignsubmission_onlinetext/onlinetext.html": f"<p>{essay(2)}</p>",
        "Cleo Invented_1103_assignsubmission_file/essay.txt": copied,
        "Dan Madeup_1104_assignsubmission_file/essay.txt": copied + " a closing sentence of my own.",
        "Dan Madeup_1104_assignsubmission_file/everything.zip": "PK not opened",
    }


def main() -> Path:
    out = HERE / "lms" / "C101-Essay 1-42.zip"
    out.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, text in members().items():
            info = zipfile.ZipInfo(name, date_time=(2026, 3, 1, 12, 0, 0))  # fixed: the zip is byte-stable
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, text)
    return out


if __name__ == "__main__":
    print(main())
