"""``doccheck probe`` says which file types are sent as files and where that list comes from: the
service profile or the default, and the types the ledger learnt the service refuses."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import pytest

from doccheck.client import ServiceProfile
from doccheck.commands._probe_service import _keeping_types, file_type_lines, learnt_refusals
from doccheck.ledger import Ledger, remember_refused_type

SERVICE = "http://127.0.0.1:8080/api/v1"

pytestmark = pytest.mark.usefixtures("fresh_service_profile")


def test_probe_says_where_the_types_come_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    assert learnt_refusals(SERVICE, url) is None and not (tmp_path / "l.db").exists()  # no ledger: none made
    lines = file_type_lines(SERVICE, url)
    assert "the default (the emulator's list" in lines[0] and "publishes no list" in lines[0]
    assert lines[1].startswith("learned: no ledger to read")
    with closing(Ledger(url)) as ledger, ledger.engine.begin() as conn:
        remember_refused_type(conn, SERVICE, ".odt", "emulator")
    profile_file = tmp_path / "profile.json"
    profile_file.write_text(json.dumps({"name": "mine", "accepted_types": ["pdf", "DOCX", ".txt"]}))
    monkeypatch.setenv("DOCCHECK_SERVICE_PROFILE", str(profile_file))
    lines = file_type_lines(SERVICE, url)
    assert lines[0].startswith("file types sent as files: .docx .pdf .txt; from the service profile's accepted_types")
    assert len(lines) == 2 and lines[1].startswith("learned: service refuses .odt (since 20")
    assert "UTC)" in lines[1]
    learnt = ServiceProfile(name="probed", list_max_page=50)
    kept = _keeping_types(learnt)
    assert kept.accepted_types == {".pdf", ".docx", ".txt"} and kept.list_max_page == 50  # the user's list kept


def test_an_empty_ledger_says_nothing_was_learnt(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger(url).close()
    assert file_type_lines(SERVICE, url)[1] == "learned: no refused type kept for this service in the ledger"
