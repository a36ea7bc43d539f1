"""``doccheck config``'s words are the docs': the reference page is what ``doccheck config --markdown``
writes, and the README's table gives each setting the default the command shows."""

from __future__ import annotations

import re
from pathlib import Path

from doccheck.commands._show_settings import configuration_markdown, default_text
from doccheck.config import fields

ROOT = Path(__file__).resolve().parents[3]


def test_the_reference_page_is_generated_from_the_model() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert page == configuration_markdown(), "run: doccheck config --markdown > docs/configuration.md"
    assert "configuration.md" in (ROOT / "mkdocs.yml").read_text()


def test_the_readme_table_agrees_with_the_model() -> None:
    by_env = {f.env: f for f in fields()}
    rows = re.findall(r"^\| `(DOCCHECK_\w+)` \| [^|]+ \| ([^|]+) \|$", (ROOT / "README.md").read_text(), re.M)
    assert len(rows) >= 5
    for env, default in rows:
        assert env in by_env, f"README names {env}, which no setting reads"
        assert default.strip().startswith(default_text(by_env[env].default)), (env, default)
