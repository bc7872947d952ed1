"""The HTML report in a real browser (issue 21): headless Chromium from Debian, driven
by selenium through chromium-driver. Each page must load with no console errors and no
network request, and every chart must draw the number of series and points its report
holds. A screenshot of each page is saved under target/browser/ (and, with
FTLAB_UPDATE_SCREENSHOT=1, the README's docs/img/report.png is rewritten).

    tests/browser/run.sh            # installs what it needs, builds, runs this
    FTLAB_CLI=target/release/ftlab python -m pytest tests/browser -q
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "target" / "browser"
CLI = os.environ.get("FTLAB_CLI", str(ROOT / "target" / "release" / "ftlab"))

# The timeline charts and the interval key each one draws (see ftlab-html).
TIMELINE = [
    "requests", "bytes_written", "bytes_read", "waf", "waf_cumulative", "flash_programs",
    "flash_page_reads", "flash_erases", "gc_collections", "merges", "free_blocks",
    "buffer_hit_ratio", "map_cache_hit_ratio", "latency_p50_ns", "latency_p99_ns",
    "latency_max_ns",
]


def ftlab(*args):
    subprocess.run([CLI, *args, "-q"], check=True, stdout=subprocess.DEVNULL)


def binary(name, *alternatives):
    for n in (name, *alternatives):
        found = shutil.which(n) or (os.path.exists("/usr/bin/" + n) and "/usr/bin/" + n)
        if found:
            return found
    pytest.fail("%s not found: install chromium and chromium-driver (tests/browser/run.sh does)" % name)


@pytest.fixture(scope="module")
def pages():
    """Two runs, one with power losses; their reports, HTML pages and a comparison."""
    OUT.mkdir(parents=True, exist_ok=True)
    common = ["--capacity", "16MiB", "--set", "synthetic.count=30000"]
    ftlab("run", *common, "--ftl", "fast", "--timeline", "500", "--power-loss-at", "15000",
          "--json", str(OUT / "fast.json"), "--html", str(OUT / "fast.html"))
    ftlab("run", *common, "--ftl", "page", "--timeline", "500", "--power-loss-at", "15000",
          "--json", str(OUT / "page.json"), "--html", str(OUT / "page.html"))
    ftlab("run", *common, "--ftl", "dftl", "--buffer", "lru", "--timeline", "1s",
          "--json", str(OUT / "dftl.json"), "--html", str(OUT / "dftl.html"))
    subprocess.run([CLI, "compare", str(OUT / "fast.json"), str(OUT / "dftl.json"),
                    "--html", str(OUT / "compare.html")], check=True, stdout=subprocess.DEVNULL)
    reports = {k: json.loads((OUT / (k + ".json")).read_text()) for k in ("fast", "page", "dftl")}
    return reports


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary("chromium", "chromium-browser", "google-chrome")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,1500", "--hide-scrollbars"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(binary("chromedriver")), options=opts)
    yield driver
    driver.quit()


def interval_points(report, key):
    rows = report.get("timeline", {}).get("intervals", [])
    if key == "merges":
        return len(rows)
    return sum(1 for r in rows if r.get(key) is not None)


def expected_charts(reports):
    """chart id -> list of point counts, one per series (run), from the JSON reports."""
    want = {}
    for key in TIMELINE:
        counts = [interval_points(r, key) for r in reports if r.get("timeline")]
        if any(counts):
            want["timeline-" + key] = counts
    cdf = [len(r["distributions"]["response_cdf"]) for r in reports]
    want["latency-cdf"] = cdf
    want["merges"] = [7 for _ in reports]
    want["erase-count"] = [len(r["distributions"]["erase_count"]) for r in reports]
    want["valid-pages"] = [len(r["distributions"]["valid_pages"]) for r in reports]
    return want


def drawn_points(series):
    """Points a series element draws: path vertices (M/L commands) or bars."""
    if series.tag_name == "path":
        return len(re.findall(r"[ML]", series.get_attribute("d") or ""))
    return len(series.find_elements(By.TAG_NAME, "rect"))


def check_page(driver, path, reports, shot):
    driver.get(path.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    severe = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not severe, "console errors: %s" % severe
    fetched = driver.execute_script("return performance.getEntriesByType('resource').length")
    assert fetched == 0, "the page fetched %d resources: it must be self-contained" % fetched
    want = expected_charts(reports)
    charts = driver.find_elements(By.CSS_SELECTOR, "figure.chart")
    got_ids = [c.get_attribute("data-chart") for c in charts]
    assert sorted(got_ids) == sorted(want), (got_ids, list(want))
    for chart in charts:
        cid = chart.get_attribute("data-chart")
        series = chart.find_elements(By.CSS_SELECTOR, ".series")
        assert int(chart.get_attribute("data-series")) == len(series) == len(want[cid]), cid
        for s, n in zip(series, want[cid]):
            assert int(s.get_attribute("data-points")) == n, (cid, s.get_attribute("data-series"))
            assert drawn_points(s) == n, (cid, "drawn", drawn_points(s), n)
    summary = driver.execute_script("return window.ftlabCharts")
    assert [c["id"] for c in summary] == got_ids, "the page's script ran"
    # The cursor readout answers a hover (the script works, not only loads).
    first = charts[0].find_element(By.TAG_NAME, "svg")
    webdriver.ActionChains(driver).move_to_element(first).perform()
    readout = charts[0].find_element(By.CSS_SELECTOR, "output.readout").text
    assert readout.startswith("x "), readout
    severe = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not severe, "console errors after hovering: %s" % severe
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_a_run_report_loads_clean_and_draws_every_series_and_point(pages, browser):
    check_page(browser, OUT / "fast.html", [pages["fast"]], OUT / "fast.png")
    marks = browser.find_elements(
        By.CSS_SELECTOR, "figure[data-chart=timeline-waf] line.mark[data-mark=power_loss]")
    assert len(marks) == 1, "the power loss is marked on the timeline"


def test_a_page_mapped_run_with_gc_and_the_readme_screenshot(pages, browser):
    check_page(browser, OUT / "page.html", [pages["page"]], OUT / "page.png")
    if os.environ.get("FTLAB_UPDATE_SCREENSHOT") == "1":
        browser.set_window_size(1100, 1500)
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(str(ROOT / "docs" / "img" / "report.png"))


def test_a_time_based_run_with_a_buffer_and_map_cache(pages, browser):
    check_page(browser, OUT / "dftl.html", [pages["dftl"]], OUT / "dftl.png")
    drains = [m for m in pages["dftl"]["timeline"]["marks"] if m["kind"] == "drain"]
    drawn = browser.find_elements(
        By.CSS_SELECTOR, "figure[data-chart=timeline-waf] line.mark[data-mark=drain]")
    assert len(drawn) == len(drains) == 1, "the buffer's end-of-run drain is marked"


def test_compare_has_one_series_per_run(pages, browser):
    check_page(browser, OUT / "compare.html", [pages["fast"], pages["dftl"]], OUT / "compare.png")
    table = browser.find_element(By.CSS_SELECTOR, "table.summary")
    heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert heads[1:] == ["fast", "dftl"], heads


def test_the_same_reports_give_the_same_page(pages):
    first = (OUT / "compare.html").read_bytes()
    subprocess.run([CLI, "compare", str(OUT / "fast.json"), str(OUT / "dftl.json"),
                    "--html", str(OUT / "compare2.html")], check=True, stdout=subprocess.DEVNULL)
    assert (OUT / "compare2.html").read_bytes() == first
