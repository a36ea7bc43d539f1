"""``report.html`` in a REAL headless browser (Debian's chromium + chromedriver, driven by
selenium): sorting by a column header, the "flagged only" filter, a manifest value holding
``<script>`` shown as text and never run, and not one network request made by the page.

Skipped cleanly when chromium or its driver is absent (``.ci/run`` installs them).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doccheck.outputs import ReportTables, rejection_rows, write_reports
from doccheck.outputs.instructor import PairTexts, write_instructor_files
from doccheck.sources.manifest import Rejection

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
EVIL = '<script>window.__pwned = true</script><img src=x onerror="window.__pwned=true">'


def _tables() -> ReportTables:
    subs, ai, sim, sources = [], [], [], []
    scores = {
        "d1": (0.10, "human", 3.0),
        "d2": (0.95, "ai", 12.0),
        "d3": (0.40, "mixed", 70.0),
        "d4": (0.05, "human", 1.0),
    }
    for i, (doc, (ai_score, label, sim_score)) in enumerate(scores.items(), start=1):
        check = f"chk_{doc}"
        subs.append(
            {
                "document_id": doc,
                "row_number": i,
                "mode": "text",
                "check_id": check,
                "products": ["ai", "similarity"],
                "status": "submitted",
                "words": 200 if doc == "d4" else 400,  # d4: too short to judge
                "cost_cents": 6,
            }
        )
        ai.append({"document_id": doc, "check_id": check, "status": "completed", "score": ai_score, "label": label})
        sim.append({"document_id": doc, "check_id": check, "status": "completed", "score": sim_score})
    sources.append({"document_id": "d3", "check_id": "chk_d3", "source_id": "chk_d1", "title": "submission",
                    "kind": "submission", "matched_words": 140, "percent": 70.0})  # fmt: skip
    subs += rejection_rows([Rejection(5, "d5", "path", "file_not_found", "row 5, field 'path': no such file")])
    return ReportTables(subs, ai, sim, sources)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM and DRIVER):
        pytest.skip("chromium and chromium-driver are not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--no-first-run", "--window-size=1400,1000"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def report(tmp_path: Path) -> Path:
    metadata = {"d1": {"student": EVIL}, "d2": {"student": "Bea"}, "d3": {"student": "Cai"}, "d4": {"student": "Dee"}}
    paths = write_reports(tmp_path, "run-1", _tables(), metadata=metadata)
    written = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="course", run_id="r1",
                                     names={"d1": f"essay {EVIL}.docx"})  # fmt: skip
    return written.report_html


def _column(driver: Any, key: str) -> list[str]:
    from selenium.webdriver.common.by import By

    headers = driver.find_elements(By.CSS_SELECTOR, "#documents thead th")
    index = [h.get_attribute("data-column") for h in headers].index(key)
    rows = driver.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
    return [r.find_elements(By.TAG_NAME, "td")[index].text for r in rows if r.is_displayed()]


def _network_requests(driver: Any) -> list[str]:
    """URLs of every request the page made (Chrome DevTools performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_sort_filter_escape_and_no_network(browser: Any, report: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get_log("performance")  # drop what came before
    browser.get(report.as_uri())
    assert browser.title.startswith("doccheck report")

    # Sorting: one click ascending, a second descending (numbers as numbers).
    header = browser.find_element(By.CSS_SELECTOR, '#documents th[data-column="similarity_score"] button')
    header.click()
    assert _column(browser, "similarity_score") == ["1.0", "3.0", "12.0", "70.0"]
    header.click()
    assert _column(browser, "similarity_score") == ["70.0", "12.0", "3.0", "1.0"]
    # The AI column shows bands (in order of concern), never the raw score; the gate says why.
    band = browser.find_element(By.CSS_SELECTOR, '#documents th[data-column="ai_band"] button')
    band.click()
    bands = _column(browser, "ai_band")
    assert bands[0] == "too short to judge\ntoo short to judge (200 words < 300)"
    assert bands[1:] == ["low", "low", "high"]
    band.click()
    assert _column(browser, "ai_band")[0] == "high"
    assert "0.95" not in browser.find_element(By.ID, "documents").text
    browser.find_element(By.CSS_SELECTOR, '#documents th[data-column="document_id"] button').click()
    assert _column(browser, "document_id") == ["d1", "d2", "d3", "d4"]

    # Filter: flagged only (AI label ai/mixed, or similarity >= 25) keeps d2 and d3.
    browser.find_element(By.ID, "flagged-only").click()
    assert _column(browser, "document_id") == ["d2", "d3"]
    assert browser.find_element(By.ID, "shown").text == "showing 2 of 4"
    browser.find_element(By.ID, "flagged-only").click()
    assert len(_column(browser, "document_id")) == 4

    # The manifest's <script> is text on the page, and nothing of it ran.
    assert EVIL in _column(browser, "meta_student")[0]
    assert f"essay {EVIL}.docx" in _column(browser, "name")[0]
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.find_elements(By.CSS_SELECTOR, "#documents img") == []
    # The top source of d3 is the cohort member d1; the rejected row is listed with its reason.
    assert "cohort: d1" in browser.find_element(By.CSS_SELECTOR, 'tr[data-document-id="d3"]').text
    assert "no such file" in browser.find_element(By.ID, "rejected").text

    # No request but the page itself; no CSP violation (our own style and script are allowed).
    requests = _network_requests(browser)
    assert requests and all(url == report.as_uri() for url in requests), requests
    console = [e["message"] for e in browser.get_log("browser")]
    assert not [m for m in console if "Content Security Policy" in m], console


def test_a_large_table_pages_and_sorts_and_filters_every_row(browser: Any, tmp_path: Path) -> None:
    """250 rows: one page of 100 in the DOM; a sort and the flagged filter act on all 250."""
    from selenium.webdriver.common.by import By

    subs, ai, sim = [], [], []
    for i in range(250):
        doc, check = f"d{i:03d}", f"chk_{i:03d}"
        subs.append({"document_id": doc, "row_number": i + 1, "mode": "text", "check_id": check,
                     "products": ["ai", "similarity"], "status": "submitted", "words": 400, "cost_cents": 6})  # fmt: skip
        ai.append({"document_id": doc, "check_id": check, "status": "completed", "score": 0.1, "label": "human"})
        sim.append({"document_id": doc, "check_id": check, "status": "completed", "score": float((i * 7) % 250) / 10})
    paths = write_reports(tmp_path, "run-1", ReportTables(subs, ai, sim, []))
    page = write_instructor_files(paths.run_dir, None, campaign="course").report_html
    browser.get(page.as_uri())
    assert len(_column(browser, "document_id")) == 100
    assert not browser.find_element(By.ID, "static-note").is_displayed()  # the script shows every row
    header = browser.find_element(By.CSS_SELECTOR, '#documents th[data-column="similarity_score"] button')
    header.click()
    assert _column(browser, "similarity_score")[:2] == ["0.0", "0.1"]  # the smallest of all 250 rows
    header.click()
    assert _column(browser, "similarity_score")[0] == "24.9"
    browser.find_element(By.ID, "page-next").click()
    assert browser.find_element(By.ID, "page-info").text == "rows 101–200 · page 2 of 3"
    browser.find_element(By.ID, "flagged-only").click()  # similarity >= 25 never: 24.9 is the most
    assert browser.find_element(By.ID, "shown").text == "showing 0 of 250"
    browser.find_element(By.ID, "flagged-only").click()
    search = browser.find_element(By.ID, "search")
    search.send_keys("d24")
    assert sorted(_column(browser, "document_id")) == [f"d24{i}" for i in range(10)]


def test_grouped_pages_link_escape_and_load_nothing(browser: Any, tmp_path: Path) -> None:
    """The entry page links each group's page; a hostile group name is text on both; no request."""
    from selenium.webdriver.common.by import By

    metadata = {"d1": {"course": EVIL}, "d2": {"course": "BIO"}, "d3": {"course": EVIL}, "d4": {"course": "BIO"}}
    paths = write_reports(tmp_path, "run-1", _tables(), metadata=metadata)
    entry = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="course", group_by="course").report_html
    browser.get_log("performance")
    browser.get(entry.as_uri())
    links = browser.find_elements(By.CSS_SELECTOR, "#groups a")
    assert sorted(a.text for a in links) == sorted(["BIO", EVIL, "(none)"])  # (none): the rejected row
    next(a for a in links if a.text == EVIL).click()
    assert browser.current_url.startswith((paths.run_dir / "groups").as_uri())
    assert sorted(_column(browser, "document_id")) == ["d1", "d3"]
    assert browser.execute_script("return window.__pwned === undefined")
    requests = _network_requests(browser)
    assert requests and all(url.startswith(paths.run_dir.as_uri()) for url in requests), requests


SHARED = (
    "the factory clock replaced the rhythm of the seasons as the measure of a working day "
    + EVIL
    + " and the workers learned to sell their time rather than their labour"
)


@pytest.fixture
def report_with_pair(tmp_path: Path) -> Path:
    texts = {"d1": f"My essay opens with cities. {SHARED}. Then I argue otherwise.",
             "d3": f"Historians disagree, yet {SHARED}; this is the view I defend."}  # fmt: skip
    paths = write_reports(tmp_path, "run-1", _tables())
    pair = {"document_id": "d3", "matched_document_id": "d1", "kind": "copied_section", "percent": 70.0,
            "matched_percent": 60.0, "matched_words": 40, "jaccard": 0.4, "matched_run_id": None}  # fmt: skip
    written = write_instructor_files(paths.run_dir, paths.latest_dir, campaign="course", run_id="r1",
                                     cohort_matches=[pair],
                                     texts_for=lambda pairs: PairTexts(lambda doc, run: texts.get(doc)))  # fmt: skip
    return written.latest_report_html or written.report_html


def test_cohort_pair_passages_are_highlighted_and_markup_stays_text(browser: Any, report_with_pair: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(report_with_pair.as_uri())
    evidence = browser.find_element(By.CSS_SELECTOR, '#cohort-evidence article[data-pair="d3 d1"]')
    marks = evidence.find_elements(By.TAG_NAME, "mark")
    assert len(marks) == 2 and all(m.is_displayed() for m in marks)  # one per side, side by side
    assert marks[0].location["y"] == marks[1].location["y"] and marks[0].location["x"] < marks[1].location["x"]
    assert marks[0].value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"  # highlighted
    assert "the factory clock replaced the rhythm" in marks[0].text and EVIL in marks[0].text
    assert EVIL in marks[1].text
    assert browser.execute_script("return window.__pwned === undefined")
    assert evidence.find_elements(By.TAG_NAME, "img") == []
    console = [e["message"] for e in browser.get_log("browser")]
    assert not [m for m in console if "Content Security Policy" in m], console
