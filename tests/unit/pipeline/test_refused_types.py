"""Issue 41: a type the service refused is remembered for the next process, by the service's
base URL, in the ledger (``doccheck.ledger._refused_types``), adopted before sending
(``doccheck.pipeline._learnt_types``) and shown by ``doccheck probe``
(``tests/unit/commands/test_probe_types.py``)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from doccheck.client import current_profile, refused_in_process
from doccheck.ledger import Ledger, refused_types, remember_refused_type, service_key
from doccheck.pipeline._learnt_types import adopt_learnt_refusals, remember_refusal

SERVICE = "http://127.0.0.1:8080/api/v1"

pytestmark = pytest.mark.usefixtures("fresh_service_profile")


def test_one_service_one_key() -> None:
    assert service_key("HTTP://Service.Example/api/v1/") == "http://service.example/api/v1"
    assert service_key(" https://a.example/API/v1 ") == "https://a.example/API/v1"  # the path as given
    assert service_key("not a url/") == "not a url"


def test_a_refusal_is_kept_once_per_service_and_type(ledger: Ledger) -> None:
    with ledger.engine.begin() as conn:
        assert remember_refused_type(conn, SERVICE, ".ODT", "emulator")
        assert not remember_refused_type(conn, SERVICE + "/", ".odt")  # the same service, already known
        assert remember_refused_type(conn, SERVICE, ".pages")
    with ledger.engine.connect() as conn:
        found = refused_types(conn, SERVICE)
        assert list(found) == [".odt", ".pages"] and all(t.tzinfo is not None for t in found.values())
        assert refused_types(conn, "http://other.example/api/v1") == {}


def test_the_next_process_adopts_what_the_ledger_learnt(ledger: Ledger) -> None:
    assert current_profile().accepts_file("essay.odt")
    remember_refusal(ledger, SERVICE, ".odt", "emulator")
    assert current_profile().accepts_file("essay.odt")  # kept, not yet adopted here
    assert adopt_learnt_refusals(ledger, "http://other.example/api/v1") == frozenset()
    assert adopt_learnt_refusals(ledger, SERVICE) == {".odt"}
    profile = current_profile()
    assert not profile.accepts_file("essay.odt") and not profile.accepts_file("template.ott")  # its alias too
    assert profile.accepts_file("essay.docx")
    assert refused_in_process() == {".odt"}


def test_a_dry_run_plans_a_learnt_type_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from doccheck.pipeline import dry_run
    from tests import generated_documents as gen
    from tests.factories import essay

    (tmp_path / "e.odt").write_bytes(gen.odt_paragraphs([essay(1)]))
    (tmp_path / "m.csv").write_text("document_id,path\no,e.odt\n")
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with closing(Ledger(url)) as ledger:
        remember_refusal(ledger, SERVICE, ".odt", "emulator")
    assert (
        dry_run(tmp_path / "m.csv", database_url=url, base_url="http://other.example/api/v1", match=False).as_text == 0
    )
    monkeypatch.setenv("DOCCHECK_BASE_URL", SERVICE)
    assert dry_run(tmp_path / "m.csv", database_url=url, match=False).as_text == 1  # the settings' service
