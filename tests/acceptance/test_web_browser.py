"""The dashboard in a real browser: headless Chromium (Debian's chromium and chromium-driver, through Selenium)
drives a real `bin/web.py` process on MariaDB + Redis and on SQLite (there behind a password, so the login form
is driven too), while the real `bin/run_due.py` runs the jobs. One browser for the whole module.

Screenshots of the overview, a job page, a search and the schedules go to tests/output/; the MariaDB + Redis run
also copies them to docs/img/, which docs/DASHBOARD.md shows. The web process declares the schedules of
examples.schedules (DELAYQ_SCHEDULE_MODULES); the runners the tests start do not, so no schedule enqueues a job
the other tests would count."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
from zoneinfo import ZoneInfo

import pytest
import requests

from delayq import scheduler, schedules
from delayq.clock import SystemClock
from delayq.cron import Every
from delayq.search import JobFilter
from tests.conftest import ROOT, make_backend
from tests.helpers import as_json, command, script

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
INSTALL = ("headless Chromium is needed for the browser tests: apt-get install chromium chromium-driver "
           "(make test runs scripts/ensure_services.sh, which installs them)")
OUTPUT = os.path.join(ROOT, "tests", "output")
DOCS_IMG = os.path.join(ROOT, "docs", "img")
FLAKY = "examples.shop:flaky_sync"
RECORD = "examples.shop:record"
HANG = "examples.shop:hang"
NOOP = "examples.shop:noop"
XSS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')
PASSWORD = "browser-test-" + secrets.token_hex(8)
SCHEDULES = "examples.schedules"
WAIT = 15


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is needed for the browser tests: make install (the dev extra)", pytrace=False)
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail(INSTALL, pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1000", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


class Site:
    """A real `bin/web.py` on one backend, and the browser's way around it."""

    def __init__(self, kind: str, backend, password: str | None):
        self.kind, self.backend, self.password = kind, backend, password
        self.manager = backend.manager()
        self.manager.check_ready()                # SQLite: the tables exist before the web process reads them
        env = dict(backend.env(), DELAYQ_SCHEDULE_MODULES=SCHEDULES)
        if password:
            env["DELAYQ_WEB_PASSWORD"] = password
        self.proc = subprocess.Popen(command("web.py", "--listen", "127.0.0.1:0", "--json"), env=env, cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"bin/web.py did not start: {self.proc.stderr.read()}")
        self.base = json.loads(line)["listening"].rstrip("/")
        self.paused = False

    def open(self, driver, path: str) -> None:
        """Go to a page, through the login form when there is a password. The live refresh is paused for this
        site (the browser keeps it per origin), so that no part is replaced under a click; the live test turns it
        on (live())."""
        driver.get(self.base + path)
        if "/login" in driver.current_url:
            driver.find_element("id", "password").send_keys(self.password)
            driver.find_element("id", "login").click()
            until_page(driver, lambda d: "/login" not in d.current_url)
        if not self.paused:
            driver.execute_script("window.localStorage.setItem('delayq-live', 'off')")
            self.paused = True
            driver.refresh()

    def live(self, driver, on: bool) -> None:
        """Turn the live refresh on or off, with the pointer on the page's title (a part under the pointer waits)."""
        from selenium.webdriver.common.action_chains import ActionChains

        driver.execute_script(f"window.localStorage.setItem('delayq-live', '{'on' if on else 'off'}')")
        driver.refresh()
        ActionChains(driver).move_to_element(driver.find_element("css selector", "main h1")).perform()

    def run_due(self, *args: str) -> dict:
        return as_json(script(self.backend, "run_due.py", "--json", *args, check=0))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


@pytest.fixture(scope="module", params=["mysql+redis", "sqlite"])
def site(request, tmp_path_factory):
    backend = make_backend(request.param, tmp_path_factory.mktemp(request.param.replace("+", "_")), SystemClock())
    s = Site(request.param, backend, PASSWORD if request.param == "sqlite" else None)
    yield s
    s.stop()
    backend.cleanup()


def until_page(driver, condition, timeout: float = WAIT):
    """tests.helpers.until for the browser: poll condition(driver) until it holds (Selenium's WebDriverWait). An
    element found on the page a click is leaving goes stale when the next page replaces it (the old page's flash,
    read just as the form's redirect lands): that look is retried."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05,
                         ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def text_of(driver, element_id: str) -> str:
    return driver.find_element("id", element_id).text


def flash(driver) -> str:
    return " ".join(e.text for e in driver.find_elements("css selector", "p.flash"))


def no_alert(driver) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def screenshot(driver, site: Site, name: str) -> None:
    os.makedirs(OUTPUT, exist_ok=True)
    path = os.path.join(OUTPUT, f"{name}-{site.kind.replace('+', '-')}.png")
    assert driver.save_screenshot(path)
    if site.kind == "mysql+redis":
        os.makedirs(DOCS_IMG, exist_ok=True)
        shutil.copyfile(path, os.path.join(DOCS_IMG, f"dashboard-{name}.png"))


def screenshots(driver, site: Site, name: str) -> None:
    """The page as it is, light and then dark (prefers-color-scheme emulated, then put back)."""
    screenshot(driver, site, name)
    try:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        screenshot(driver, site, f"{name}-dark")
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_find_a_failed_job_by_business_key_see_its_traceback_retry_it_and_see_it_succeed(browser, site):
    key = f"order:{secrets.token_hex(3)}"
    job = site.manager.enqueue(FLAKY, {"order_id": 7, "fail_times": 1}, ext=key, max_attempts=1).id
    assert site.run_due()["failed"] == 1
    site.open(browser, "/")
    search = browser.find_element("css selector", "form.quick input[name=ext_prefix]")
    search.send_keys(key + "\n")
    link = until_page(browser, lambda d: d.find_elements("css selector",
                                                         f'#results tr[data-id="{job}"] a.job-link'))[0]
    assert browser.find_element("css selector", f'#results tr[data-id="{job}"] td.ext').text == key
    link.click()
    until_page(browser, lambda d: d.current_url.endswith(f"/jobs/{job}"))
    assert text_of(browser, "job-status") == "failed"
    error = text_of(browser, "last-error")
    assert error.startswith("ConnectionError: ERP timed out (attempt 1)") and "in flaky_sync" in error
    assert 'File "' in browser.find_element("css selector", "#attempts pre.traceback").text
    screenshot(browser, site, "job")
    browser.find_element("id", "retry").click()
    until_page(browser, lambda d: f"retried job {job}" in flash(d))
    assert text_of(browser, "job-status") == "pending"
    assert site.run_due()["succeeded"] == 1
    browser.refresh()
    until_page(browser, lambda d: text_of(d, "job-status") == "succeeded")
    outcomes = [row.text for row in browser.find_elements("css selector", "#attempts span.status")]
    assert outcomes == ["failed", "succeeded"]


def test_bulk_cancel_by_filter_with_the_count_and_a_confirmation(browser, site):
    prefix = f"promo{secrets.token_hex(3)}:"
    ids = [site.manager.enqueue(NOOP, queue="promo", ext=f"{prefix}{i}", delay=3600).id for i in range(6)]
    other = site.manager.enqueue(NOOP, queue="promo", ext="keep:1", delay=3600).id
    site.open(browser, f"/jobs?ext_prefix={prefix}&queue=promo")
    until_page(browser, lambda d: len(d.find_elements("css selector", "a.job-link")) == 6)
    browser.find_element("id", "bulk-cancel").click()
    until_page(browser, lambda d: d.find_elements("id", "preview"))
    assert text_of(browser, "preview").startswith("dry run: would cancel 6 job(s) in queue(s) promo 6")
    assert [site.manager.reports.get(j).status for j in ids] == ["pending"] * 6        # asking changed nothing
    browser.find_element("id", "confirm").click()
    until_page(browser, lambda d: "cancelled 6 job(s)" in flash(d))
    assert [site.manager.reports.get(j).status for j in ids] == ["cancelled"] * 6
    assert site.manager.reports.get(other).status == "pending"
    site.open(browser, "/audit")
    row = browser.find_element("css selector", "#audit tbody tr").text
    assert "bulk_cancel" in row and prefix in row and "127.0.0.1" in row


def test_tick_rows_of_a_search_and_cancel_just_those(browser, site):
    """Issue 24: pick rows by checkbox for a bulk action (no script: the ticked ids go to the same preview)."""
    prefix = f"tick{secrets.token_hex(3)}:"
    ids = [site.manager.enqueue(NOOP, queue="promo", ext=f"{prefix}{i}", delay=3600).id for i in range(5)]
    site.open(browser, f"/jobs?ext_prefix={prefix}")
    until_page(browser, lambda d: len(d.find_elements("css selector", "input.pick")) == 5)
    assert "5 job(s) match" in text_of(browser, "total")
    for job in ids[1:3]:
        browser.find_element("css selector", f'input.pick[value="{job}"]').click()
    screenshots(browser, site, "jobs-selection")
    browser.find_element("id", "pick-cancel").click()
    until_page(browser, lambda d: d.find_elements("id", "preview"))
    assert browser.find_element("id", "confirm").text == "Cancel 2 job(s)"
    browser.find_element("id", "confirm").click()
    until_page(browser, lambda d: "cancelled 2 job(s)" in flash(d))
    assert [site.manager.reports.get(j).status for j in ids] == ["pending", "cancelled", "cancelled", "pending", "pending"]


def test_pause_a_queue_and_see_a_runner_skip_it(browser, site):
    queue = f"sms{secrets.token_hex(3)}"
    job = site.manager.enqueue(NOOP, queue=queue).id
    site.open(browser, "/")
    row = f'#queues tr[data-queue="{queue}"]'
    browser.find_element("css selector", f"{row} input[name=reason]").send_keys("gateway down, INC-1")
    browser.find_element("css selector", f"{row} button.pause").click()
    until_page(browser, lambda d: f"paused queue {queue} (gateway down, INC-1)" in flash(d))
    assert "paused" in browser.find_element("css selector", row).text
    assert site.run_due("--queue", queue)["claimed"] == 0                  # the runner skips the paused queue
    assert site.manager.reports.get(job).status == "pending"
    browser.find_element("css selector", f"{row} button.resume").click()
    until_page(browser, lambda d: f"resumed queue {queue}" in flash(d))
    assert site.run_due("--queue", queue)["succeeded"] == 1


def test_xss_payloads_stay_text(browser, site):
    ext = "x" + XSS[1]
    job = site.manager.enqueue(RECORD, {"path": XSS[0], "tag": XSS[1]}, ext=ext).id
    site.run_due()                                     # fails: the "path" is no file; the error repeats it
    for path in (f"/jobs/{job}", "/jobs?ext_prefix=x%22", "/"):
        site.open(browser, path)
        assert no_alert(browser), path
        assert browser.find_elements("css selector", "main img, main script") == [], path
    site.open(browser, f"/jobs/{job}")
    args = text_of(browser, "args")
    assert XSS[0] in args and XSS[1].replace('"', '\\"') in args
    assert text_of(browser, "job-ext") == ext and XSS[0] in text_of(browser, "last-error")
    assert no_alert(browser)


def test_overview_shows_a_live_runner_with_its_job_and_the_chart_without_a_reload(browser, site, tmp_path):
    """Issue 24: refresh without reload. The page is loaded once: the runner's row, its job and the chart's bars
    arrive by the live refresh (a marker set on the page's window survives: it was never reloaded)."""
    queue = f"reports{secrets.token_hex(2)}"
    site.open(browser, "/")
    site.live(browser, True)
    until_page(browser, lambda d: text_of(d, "live-toggle") == "live")
    browser.execute_script("window.loadedOnce = 42")
    job = site.manager.enqueue(HANG, {"path": str(tmp_path / "hang.log"), "seconds": 8}, queue=queue).id
    site.manager.enqueue(NOOP, queue=queue)
    env = dict(site.backend.env(), DELAYQ_HEARTBEAT="0.3")
    runner = subprocess.Popen(command("run_due.py", "--for", "60", "--queue", queue), env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until_page(browser, lambda d: d.find_elements("css selector", f'#runners tr.live a[href$="/jobs/{job}"]'),
                   timeout=30)
        row = browser.find_element("css selector", "#runners tr.live").text
        assert str(runner.pid) in row and queue in row
        until_page(browser, lambda d: d.find_elements("css selector", f'#queues tr[data-queue="{queue}"]'))
        title = browser.find_element("css selector", "#chart-attempts > title").get_attribute("textContent")
        assert title.startswith("Attempts per minute, last hour") and "succeeded" in title
        assert browser.find_elements("css selector", "#chart-attempts rect.bar-ok")
        assert browser.execute_script("return window.loadedOnce") == 42          # never reloaded
        assert text_of(browser, "live-stamp").startswith("updated ")
        screenshot(browser, site, "overview")
    finally:
        runner.send_signal(signal.SIGTERM)
        try:
            runner.wait(timeout=45)
        except subprocess.TimeoutExpired:
            runner.kill()
            runner.wait()
        site.live(browser, False)


def test_a_live_part_being_worked_in_waits_and_pause_stops_the_refresh(browser, site):
    """A reason being typed is not wiped by the refresh: the queues table waits while it holds typed text (the
    refresh goes on around it), then follows; "paused" stops every refresh, and the choice is kept."""
    here = f"here{secrets.token_hex(2)}"
    site.manager.enqueue(NOOP, queue=here, delay=600)
    site.open(browser, "/")
    site.live(browser, True)
    typed = f"INC-{secrets.token_hex(2)}"
    field = browser.find_element("css selector", f'#queues tr[data-queue="{here}"] input[name=reason]')
    field.send_keys(typed)
    queue = f"late{secrets.token_hex(2)}"
    site.manager.enqueue(NOOP, queue=queue, delay=600)
    first = text_of(browser, "live-stamp")
    until_page(browser, lambda d: text_of(d, "live-stamp").startswith("updated ") and text_of(d, "live-stamp") != first)
    stamp = text_of(browser, "live-stamp")
    until_page(browser, lambda d: text_of(d, "live-stamp") != stamp)           # a second refresh went by
    assert field.get_attribute("value") == typed                             # the table waited for it
    assert not browser.find_elements("css selector", f'#queues tr[data-queue="{queue}"]')
    field.clear()
    browser.find_element("css selector", "h1").click()                        # the focus leaves it
    until_page(browser, lambda d: d.find_elements("css selector", f'#queues tr[data-queue="{queue}"]'))
    browser.find_element("id", "live-toggle").click()
    until_page(browser, lambda d: text_of(d, "live-toggle") == "paused")
    assert browser.execute_script("return window.localStorage.getItem('delayq-live')") == "off"
    browser.refresh()
    until_page(browser, lambda d: text_of(d, "live-toggle") == "paused")      # kept across pages
    site.live(browser, False)


def test_dark_mode_follows_the_system_setting(browser, site):
    """Issue 24: no dark mode. The pages follow prefers-color-scheme (no switch to keep): the overview
    and a failed job's page, with the system set to dark, are light text on a dark ground."""
    failed = site.manager.enqueue(FLAKY, {"order_id": 9, "fail_times": 1}, ext="order:dark", max_attempts=1).id
    assert site.run_due()["failed"] == 1

    def ground(d) -> tuple[int, ...]:
        color = d.execute_script("return getComputedStyle(document.body).backgroundColor")
        return tuple(int(part) for part in color[color.index("(") + 1:color.index(")")].split(",")[:3])
    try:
        for scheme in ("dark", "light"):
            browser.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                    {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            for path, name in (("/", "overview"), (f"/jobs/{failed}", "job")):
                site.open(browser, path)
                until_page(browser, lambda d: d.find_elements("css selector", "header.top"))
                assert (sum(ground(browser)) < 120) == (scheme == "dark"), (scheme, path, ground(browser))
                if scheme == "dark":
                    screenshot(browser, site, f"{name}-dark")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_a_post_without_the_csrf_token_is_refused(site):
    job = site.manager.enqueue(NOOP, delay=3600).id
    with requests.Session() as http:
        if site.password:
            http.auth = ("ops", site.password)
        page = http.get(site.base + f"/jobs/{job}", timeout=10)
        assert page.status_code == 200 and 'name="csrf"' in page.text
        refused = http.post(site.base + f"/jobs/{job}/cancel", data={}, timeout=10, allow_redirects=False)
        assert refused.status_code == 403 and "CSRF" in refused.text
        forged = http.post(site.base + f"/jobs/{job}/cancel", data={"csrf": "x" * 43}, timeout=10,
                           allow_redirects=False)
        assert forged.status_code == 403
    assert site.manager.reports.get(job).status == "pending"
    assert site.manager.reports.count(JobFilter(ids=(job,))) == [("default", "pending", 1)]
    stranger = requests.post(site.base + f"/jobs/{job}/cancel", timeout=10, allow_redirects=False)
    assert stranger.status_code == (401 if site.password else 403)
    assert site.manager.reports.get(job).status == "pending"


def test_the_schedules_with_their_last_jobs_and_a_pause(browser, site):
    """Issue 23's schedules on the dashboard: each declared schedule's rule, zone, next and last slot and last job,
    one removed from the code, and a Pause that the row and the audit trail show."""
    declared = schedules.load((SCHEDULES,), ("examples",))
    removed = schedules.Schedule("old-cleanup", NOOP, Every(3600), ZoneInfo("UTC"))       # in no module any more
    ticker = scheduler.Scheduler(site.manager, declared)
    now = site.manager.clock.now()
    for schedule, since in ((declared["every-second"], 5), (declared["every-minute"], 150),
                            (declared["nightly-report"], 2 * 86400), (removed, 2 * 3600)):
        ticker.look(schedule, now - since)            # a runner saw it first then,
        assert ticker.look(schedule, now) >= 1        # and takes what came due since (the latest, or each second)
    assert site.run_due()["failed"] == 0
    site.open(browser, "/schedules")
    row = '#schedules tr[data-schedule="nightly-report"]'
    until_page(browser, lambda d: d.find_elements("css selector", row))
    assert "Europe/Berlin" in browser.find_element("css selector", row).text
    assert "succeeded" in browser.find_element("css selector", f"{row} td.last-job").text
    gone = browser.find_element("css selector", '#schedules tr[data-schedule="old-cleanup"]')
    assert "removed from the code" in gone.text and "gone" in gone.get_attribute("class")
    browser.find_element("css selector", f"{row} button.pause").click()
    until_page(browser, lambda d: "paused schedule nightly-report" in flash(d))
    assert "paused" in browser.find_element("css selector", f"{row} td.state").text
    screenshots(browser, site, "schedules")
    browser.find_element("css selector", f"{row} td.last-job a.job-link").click()
    until_page(browser, lambda d: d.find_elements("id", "job-schedule"))
    assert text_of(browser, "job-ext").startswith("schedule:nightly-report:2")
    browser.find_element("id", "job-schedule").click()                        # back from its job to the schedule
    until_page(browser, lambda d: d.current_url.endswith("/schedules#schedule-nightly-report"))
    browser.find_element("css selector", f"{row} button.resume").click()
    until_page(browser, lambda d: "resumed schedule nightly-report" in flash(d))
    site.open(browser, "/audit")
    rows = [r.text for r in browser.find_elements("css selector", "#audit tbody tr")[:2]]
    assert "resume schedule nightly-report" in rows[0] and "pause schedule nightly-report" in rows[1]
