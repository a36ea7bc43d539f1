"""Checks what ``mkdocs build --strict`` cannot: after ``make docs``, every public name the API pages
document has a docstring, and the Prefect blocks' documentation URL names a page that was built.

Why: mkdocstrings renders an undocumented function as a bare signature without a warning, and the
blocks' URL is shown in the Prefect UI, where a dead link is the first thing a user clicks.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import griffe
import yaml

ROOT = Path(__file__).resolve().parents[2]
DIRECTIVE = re.compile(r"^::: (?P<module>[\w.]+)(?P<options>(?:\n    .*)*)", re.MULTILINE)
MEMBERS = re.compile(r"members: \[(?P<names>[^\]]*)\]")


def documented_objects() -> Iterator[tuple[str, griffe.Object | griffe.Alias]]:
    """Every object the API pages render: the listed members of a directive, else its public members."""
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    packages: dict[str, griffe.Object | griffe.Alias] = {}  # each package loaded once: a load visits all its modules
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            top, _, rest = match["module"].partition(".")
            if top not in packages:
                packages[top] = loader.load(top)
            module = packages[top][rest] if rest else packages[top]
            listed = MEMBERS.search(match["options"])
            if listed:
                names = [name.strip() for name in listed["names"].split(",") if name.strip()]
                missing = [name for name in names if name not in module.all_members]
                if missing:
                    raise SystemExit(f"{page.name}: {match['module']} has no {', '.join(missing)}")
                members = [(name, module[name]) for name in names]
            else:
                members = [
                    (name, member)
                    for name, member in module.members.items()
                    if not name.startswith("_") and not member.is_alias and (member.is_function or member.is_class)
                ]
            for name, member in members:
                yield f"{match['module']}.{name}", member
                if member.is_class:
                    for method_name, method in member.members.items():
                        if method.is_function and not method_name.startswith("_") and not method.is_alias:
                            yield f"{match['module']}.{name}.{method_name}", method


def undocumented() -> list[str]:
    return sorted({path for path, obj in documented_objects() if not (obj.docstring and obj.docstring.value.strip())})


def documentation_url_page() -> Path:
    """The built page that the blocks' documentation URL points at (site_url + a path under it)."""
    sys.path.insert(0, str(ROOT))
    from prefect_doccheck.credentials import DOCUMENTATION_URL

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    site_url: str = config["site_url"]
    if not DOCUMENTATION_URL.startswith(site_url):
        raise SystemExit(f"DOCUMENTATION_URL {DOCUMENTATION_URL} is not under mkdocs.yml's site_url {site_url}")
    relative = urlsplit(DOCUMENTATION_URL).path[len(urlsplit(site_url).path) :]
    return ROOT / config.get("site_dir", "site") / relative / "index.html"


def main() -> int:
    problems = [f"no docstring: {name}" for name in undocumented()]
    page = documentation_url_page()
    if not page.is_file():
        problems.append(f"the blocks' documentation URL names {page.relative_to(ROOT)}, which the build did not make")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
