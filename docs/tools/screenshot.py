"""Make the README's screenshots of the Prefect UI run page with headless Chromium.

Why a script: the pictures in the docs should come from the project's own tooling and
be reproducible, not be hand-made. It starts everything it needs on free local ports —
a Prefect server WITH its UI (temporary PREFECT_HOME), the service emulator — runs the
``bulk_check`` flow on ``sample_data/manifest.csv`` (ai + similarity), then points
headless Chromium at the flow run's page and its Artifacts tab, and stops everything.

    python docs/tools/screenshot.py            # writes docs/images/prefect-run*.png (+ report.png)
    python docs/tools/screenshot.py report     # only docs/images/report.png (no Prefect server)

``report`` runs ``doccheck run --no-prefect`` on the same manifest against the emulator (cohort
matching included), downloads the service's files, and shoots the run's ``report.html`` (a file:// page).

Needs ``chromium`` (Debian: ``apt-get install chromium``); nothing in the test suite or CI
does. Only 127.0.0.1 is contacted; Chromium runs with networking features off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from doccheck.commands import doccheck_command, free_port, prefect_command, start_service  # noqa: E402

OUT_DIR = ROOT / "docs" / "images"
CAMPAIGN = "course-essays-week-12"
API_KEY = "screenshot-key"


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("no chromium found: apt-get install -y chromium")


def shoot(url: str, target: Path, *, width: int = 1440, height: int = 1500) -> None:
    """One PNG of ``url`` once its JavaScript has had time to render (virtual time budget)."""
    profile = tempfile.mkdtemp(prefix="doccheck-chromium-")
    try:
        subprocess.run(
            [
                chromium_binary(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--mute-audio",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=20000",
                f"--screenshot={target}",
                url,
            ],  # fmt: skip
            check=True,
            timeout=120,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    print(f"wrote {target.relative_to(ROOT)}")


def make_report(work: Path, base_url: str) -> Path:
    """Check ``sample_data/manifest.csv`` with ``doccheck run`` (no Prefect server: in its own
    process, cohort matching included, so the page shows a pair's shared passages); the run's
    report.html."""
    data = work / "sample_data"
    if not data.exists():
        shutil.copytree(ROOT / "sample_data", data)
    env = {**os.environ, "DOCCHECK_BASE_URL": base_url, "DOCCHECK_API_KEY": API_KEY,
           "DOCCHECK_DATABASE_URL": f"sqlite:///{work / 'report-ledger.db'}", "PREFECT_API_URL": ""}  # fmt: skip
    subprocess.run(
        doccheck_command("run", str(data / "manifest.csv"), "--campaign", CAMPAIGN, "--products", "ai,similarity",
                         "--metadata-columns", "section", "--out", str(work / "reports"), "--wait",
                         "--wait-timeout", "120", "--download", "similarity_pdf,pdf", "--no-prefect",
                         "--no-progress"),  # fmt: skip
        check=True, env=env, cwd=work, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return work / "reports" / "latest" / "report.html"


def shoot_element(url: str, selector: str, target: Path) -> None:
    """One PNG of the element ``selector`` of ``url`` (selenium + chromedriver, no telemetry)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    os.environ["SE_AVOID_STATS"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1200",
                "--disable-background-networking", "--no-first-run"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    try:
        driver.get(url)
        driver.find_element(By.CSS_SELECTOR, selector).screenshot(str(target))
    finally:
        driver.quit()
    print(f"wrote {target.relative_to(ROOT)}")


def start_emulator(work: Path):  # type: ignore[no-untyped-def]
    eport, sport = free_port(), free_port()
    return start_service(
        "emulator",
        doccheck_command("emulator", "--host", "127.0.0.1", "--port", str(eport), "--storage-port", str(sport),
                         "--api-key", API_KEY, "--offline"),  # fmt: skip
        health_url=f"http://127.0.0.1:{eport}/_emulator/health", url=f"http://127.0.0.1:{eport}/api/v1",
        log_path=work / "emulator.log",
    )  # fmt: skip


def report_only() -> None:
    """Only ``docs/images/report.png``: emulator + library pipeline + report.html."""
    work = Path(tempfile.mkdtemp(prefix="doccheck-screenshot-"))
    emulator = start_emulator(work)
    try:
        page = make_report(work, emulator.url)
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        shoot(page.as_uri(), OUT_DIR / "report.png", width=1400, height=1700)
        shoot_element(page.as_uri(), "#cohort-evidence", OUT_DIR / "report-evidence.png")
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="doccheck-screenshot-"))
    services = []
    try:
        port = free_port()
        api_url = f"http://127.0.0.1:{port}/api"
        prefect_env = {
            "PREFECT_HOME": str(work / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_API_URL": "",
            "PREFECT_UI_API_URL": api_url,
        }
        services.append(
            start_service(
                "prefect server",
                prefect_command("server", "start", "--host", "127.0.0.1", "--port", str(port), "--ui"),
                health_url=api_url + "/health",
                url=api_url,
                log_path=work / "prefect.log",
                env=prefect_env,
                timeout=120,
            )  # fmt: skip
        )
        eport, sport = free_port(), free_port()
        emulator = start_service(
            "emulator",
            doccheck_command("emulator", "--host", "127.0.0.1", "--port", str(eport), "--storage-port", str(sport),
                             "--api-key", API_KEY, "--offline"),  # fmt: skip
            health_url=f"http://127.0.0.1:{eport}/_emulator/health", url=f"http://127.0.0.1:{eport}/api/v1",
            log_path=work / "emulator.log",
        )  # fmt: skip
        services.append(emulator)

        data = work / "sample_data"
        shutil.copytree(ROOT / "sample_data", data)
        script = textwrap.dedent(
            f"""
            import asyncio
            from doccheck.pipeline import RunOptions
            from prefect_doccheck.flows.bulk_check import bulk_check
            asyncio.run(bulk_check(**RunOptions.from_flat(manifest={str(data / "manifest.csv")!r}, products=["ai", "similarity"],
                out_dir={str(work / "reports")!r}, campaign={CAMPAIGN!r}, base_url={emulator.url!r},
                database_url={"sqlite:///" + str(work / "ledger.db")!r}, grace_seconds=0, poll_interval=0.3,
                batch_size=5, concurrency=1).flow_parameters()))
            """
        )
        env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_HOME": str(work / "client"),
               "DOCCHECK_API_KEY": API_KEY}  # fmt: skip
        subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=ROOT, timeout=300)

        with httpx.Client(trust_env=False, timeout=30) as http:
            runs = http.post(f"{api_url}/flow_runs/filter", json={"sort": "START_TIME_DESC", "limit": 1}).json()
            run_id = runs[0]["id"]
            artifacts = http.post(
                f"{api_url}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [run_id]}}}
            ).json()
        by_type = {a["type"]: a["id"] for a in artifacts}
        ui = api_url.removesuffix("/api")
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        shoot(f"{ui}/runs/flow-run/{run_id}", OUT_DIR / "prefect-run.png", height=1100)
        shoot(f"{ui}/artifacts/artifact/{by_type['markdown']}", OUT_DIR / "prefect-summary.png", height=1900)
        shoot(f"{ui}/artifacts/artifact/{by_type['image']}", OUT_DIR / "prefect-scores.png", height=800)
        shoot(f"{ui}/artifacts/artifact/{by_type['table']}", OUT_DIR / "prefect-outcomes.png", height=700)
        shoot(make_report(work, emulator.url).as_uri(), OUT_DIR / "report.png", width=1400, height=1700)
        summary = OUT_DIR / "prefect-run.json"
        summary.write_text(json.dumps({"campaign": CAMPAIGN, "flow_run_name": runs[0]["name"]}, indent=2) + "\n")
    finally:
        for service in reversed(services):
            service.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    report_only() if sys.argv[1:] == ["report"] else main()
