"""The dashboard's verbs on every backend (run now, attempts per minute, the audit trail), and the Flask app over real
backends through its test client: CSRF, read-only, the password (form, basic, bearer), the Host check, headers,
escaping, no secret in any page, every action audited; the schedules page over examples.schedules."""

from __future__ import annotations

import base64
import re
from zoneinfo import ZoneInfo

import pytest

from delayq import Manager, recovery, scheduler, schedules, validate
from delayq.errors import InvalidInput, NotFound
from delayq.search import JobFilter
from delayq.web import WebSettings, create_app
from tests.helpers import run

NOOP = "examples.shop:noop"
FAILS = "examples.shop:refund_rejected"
FLAKY = "examples.shop:flaky_sync"
RECORD = "examples.shop:record"
KEYED = "examples.limits:confirm_order"       # limit_key="order:{order_id}", limit=1
XSS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')
PASSWORD = "correct horse battery staple"


# -- verbs ------------------------------------------------------------------------------------
def test_run_now_moves_a_pending_job_due_now_in_the_store_and_the_index(q, clock):
    later = q.enqueue(NOOP, queue="sms", delay=3600, priority=3).id
    other = q.enqueue(NOOP, queue="sms", delay=3600).id
    assert run(q, ["sms"]).claimed == 0
    clock.advance(5)
    job = q.run_now(later)
    assert (job.id, job.due_at) == (later, clock.now()) and q.reports.get(later).due_at == clock.now()
    assert [j.id for j in q.claim(["sms"], 10)] == [later]       # the index has it due now; the other waits
    assert q.reports.get(other).status == "pending"
    with pytest.raises(InvalidInput, match=f"job {later} is running: only a pending job can run now"):
        q.run_now(later)
    with pytest.raises(NotFound):
        q.run_now(later + 1000)


def test_activity_counts_attempts_per_minute_by_outcome_over_the_last_hour(q, clock):
    start = clock.now()
    for _ in range(3):
        q.enqueue(NOOP)
    q.enqueue(FAILS, {"order_id": 1})
    run(q)
    clock.advance(10 * 60)
    q.enqueue(FLAKY, {"order_id": 2})
    run(q)
    hour = q.reports.activity("1h")
    assert hour.start == start - 50 * 60 and hour.bucket == 60     # whole minutes: the last 60 and the current one
    series = hour.counts
    assert series["succeeded"][50] == 3 and series["failed"][50] == 1 and series["retry"][60] == 1
    assert sum(series["succeeded"]) == 3 and len(series["succeeded"]) == 61


def test_queue_figures_cover_every_status_with_what_is_due(q, clock):
    q.enqueue(NOOP, queue="sms")
    q.enqueue(NOOP, queue="sms", delay=600)
    q.enqueue(FAILS, {"order_id": 1}, queue="erp")
    q.enqueue(NOOP, queue="done")
    run(q, ["erp", "done"])
    clock.advance(1)
    now, rows = q.reports.queue_figures()
    assert now == clock.now()
    assert sorted(rows) == [("done", "succeeded", 1, 0, None, None, None, False), ("erp", "failed", 1, 0, None, None,
                            None, False), ("sms", "pending", 2, 1, clock.now() - 1, clock.now() + 599, None, False)]


def test_audit_rows_are_kept_newest_first_and_paged(q, clock):
    for n in range(3):
        q.control.record_action("127.0.0.1", "local (no password)", "cancel", f"job {n}", n, f"cancelled job {n}")
        clock.advance(1)
    rows = q.reports.actions(limit=2)
    assert [r["target"] for r in rows] == ["job 2", "job 1"] and rows[0]["jobs"] == 2
    assert rows[0]["address"] == "127.0.0.1" and rows[0]["detail"] == "cancelled job 2"
    assert [r["target"] for r in q.reports.actions(before=rows[-1]["at"])] == ["job 0"]


# -- the app --------------------------------------------------------------------------------
@pytest.fixture(params=["sqlite", "mysql+redis"])
def web(request, tmp_path, clock):
    from tests.conftest import make_backend

    backend = make_backend(request.param, tmp_path, clock)
    manager = backend.manager()
    manager.backend = backend
    yield manager
    backend.cleanup()


def client(manager, **settings):
    app = create_app(manager, WebSettings(**settings))
    return app.test_client()


def csrf(c, path="/"):
    page = c.get(path, base_url="http://127.0.0.1:8080").get_data(as_text=True)
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def post(c, path, **form):
    return c.post(path, data=form, base_url="http://127.0.0.1:8080")


def get(c, path, **kwargs):
    return c.get(path, base_url="http://127.0.0.1:8080", **kwargs)


def test_every_response_carries_the_security_headers_and_only_the_dashboard_s_own_script(web):
    c = client(web)
    for path in ("/", "/jobs", "/audit", "/jobs/999", "/login"):
        response = get(c, path)
        policy = response.headers["Content-Security-Policy"]
        assert policy.startswith("default-src 'none'") and "script-src 'self';" in policy      # its own file alone:
        assert "unsafe" not in policy and "http" not in policy                              # no inline, no origin
        assert response.headers["X-Frame-Options"] == "DENY" and response.headers["X-Content-Type-Options"] == "nosniff"
        scripts = re.findall(r"<script[^>]*>", response.get_data(as_text=True))
        assert scripts == ([] if response.status_code == 302 else ['<script src="/static/live.js" defer>'])
    assert get(c, "/jobs/999").status_code == 404
    assert "data-live" in get(c, "/static/live.js").get_data(as_text=True)


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(web, clock):
    job = web.enqueue(NOOP, delay=600).id
    c = client(web)
    assert post(c, f"/jobs/{job}/cancel").status_code == 403
    assert post(c, f"/jobs/{job}/cancel", csrf="forged").status_code == 403
    assert web.reports.get(job).status == "pending"
    assert [(r["action"], r["target"], r["detail"], r["jobs"]) for r in web.reports.actions()] == \
        [("refused", f"POST /jobs/{job}/cancel", "HTTP 403", 0)] * 2         # the refusals are audited
    token = csrf(c)
    clock.advance(1)
    done = post(c, f"/jobs/{job}/cancel", csrf=token)
    assert done.status_code == 302 and web.reports.get(job).status == "cancelled"
    row = web.reports.actions()[0]
    assert (row["action"], row["target"], row["jobs"], row["address"]) == ("cancel", f"job {job}", 1, "127.0.0.1")
    clock.advance(1)
    assert post(c, f"/jobs/{job}/cancel", csrf=token).status_code == 302       # refused by the verb: audited too
    assert "refused: job" in web.reports.actions()[0]["detail"] and web.reports.actions()[0]["jobs"] == 0


def test_read_only_shows_no_action_and_refuses_every_post(web):
    failed = web.enqueue(FAILS, {"order_id": 1}).id
    run(web)
    c = client(web, read_only=True)
    page = get(c, f"/jobs/{failed}").get_data(as_text=True)
    assert "Retry the job" not in page and 'action="/jobs/' not in page and "read-only" in page
    assert "Pause" not in get(c, "/").get_data(as_text=True)
    assert "bulk-retry" not in get(c, "/jobs?status=failed").get_data(as_text=True)
    assert get(c, "/bulk/retry?status=failed").status_code == 403
    with c.session_transaction() as session:      # a valid CSRF token does not matter: read-only refuses first
        session["csrf"] = "valid-token"
    assert post(c, f"/jobs/{failed}/retry", csrf="valid-token").status_code == 403
    assert web.reports.get(failed).status == "failed"
    assert {r["action"] for r in web.reports.actions()} == {"refused"}       # the refusals only, audited
    writable = get(client(web), f"/jobs/{failed}").get_data(as_text=True)
    assert "Retry the job" in writable                 # the same page with the buttons, when not read-only


def test_with_a_password_every_page_needs_it_by_form_basic_or_bearer(web):
    c = client(web, password=PASSWORD, local_only=False)
    assert get(c, "/jobs?status=failed").headers["Location"].startswith("/login?next=/jobs?status%3Dfailed")
    assert get(c, "/static/delayq.css").status_code == 200            # the login page's CSS only
    assert post(c, "/queues/pause", queue="sms").status_code == 401
    token = csrf(c, "/login")
    wrong = post(c, "/login", csrf=token, password=PASSWORD[:-1])
    assert wrong.status_code == 401 and "wrong password" in wrong.get_data(as_text=True)
    assert post(c, "/login", csrf=token, password=PASSWORD, next="//evil.example/").headers["Location"] == "/"
    assert get(c, "/").status_code == 200
    fresh = client(web, password=PASSWORD, local_only=False)
    basic = base64.b64encode(f"ops:{PASSWORD}".encode()).decode()
    assert get(fresh, "/", headers={"Authorization": f"Basic {basic}"}).status_code == 200
    assert get(fresh, "/", headers={"Authorization": f"Bearer {PASSWORD}"}).status_code == 200
    assert get(fresh, "/", headers={"Authorization": "Bearer nope"}).status_code == 302
    assert post(fresh, "/queues/pause", queue="sms", csrf=csrf(fresh, "/login"),
                ).status_code == 401      # a CSRF token is not a login
    assert web.control.paused_queues() == {}


def test_wrong_passwords_are_throttled_per_address(web):
    c = client(web, password=PASSWORD, local_only=False)
    token = csrf(c, "/login")
    codes = [post(c, "/login", csrf=token, password="guess").status_code for _ in range(11)]
    assert codes[:10] == [401] * 10 and codes[10] == 429
    assert post(c, "/login", csrf=token, password=PASSWORD).status_code == 429     # even the right one, for a minute


def logged_in(web, **headers):
    """A client logged in by the form (its session cookie set), as a browser would be."""
    c = client(web, password=PASSWORD, local_only=False)
    done = c.post("/login", data={"csrf": csrf(c, "/login"), "password": PASSWORD},
                  base_url="http://127.0.0.1:8080", headers=headers)
    assert done.status_code == 302, done.get_data(as_text=True)
    return c, done


def test_logout_ends_the_session_and_a_saved_cookie_reads_nothing(web):
    """Issue 24: a cookie saved before POST /logout still read pages and paused queues."""
    c, _ = logged_in(web)
    saved = c.get_cookie("delayq_session", domain="127.0.0.1").value
    assert get(c, "/").status_code == 200
    assert post(c, "/logout", csrf=csrf(c)).status_code == 302
    thief = c.application.test_client()           # the same app (its sessions), a copy of the old cookie
    thief.set_cookie("delayq_session", saved, domain="127.0.0.1")
    assert get(thief, "/").status_code == 302      # to the login form: the session is over
    assert post(thief, "/queues/pause", queue="sms", csrf="anything").status_code == 401
    assert web.control.paused_queues() == {}


def test_the_session_cookie_expires_and_is_secure_behind_tls(web):
    """Issue 24: the session cookie had no expiry, and no Secure flag behind a TLS proxy."""
    _, plain = logged_in(web)
    cookie = plain.headers["Set-Cookie"]
    assert "Expires=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    _, proxied = logged_in(web, **{"X-Forwarded-Proto": "https"})
    assert "; Secure" in proxied.headers["Set-Cookie"]


def test_wrong_passwords_by_header_are_throttled_with_the_form(web):
    """Issue 24: 400 wrong Bearer (and Basic) tokens were never answered 429, and the right token still worked while
    the login form was locked. Right answer: one throttle for every way of giving the password."""
    c = client(web, password=PASSWORD, local_only=False)
    basic = base64.b64encode(b"ops:guess").decode()
    codes = [get(c, "/", headers={"Authorization": f"Bearer guess{n}" if n % 2 else f"Basic {basic}"}).status_code
             for n in range(11)]
    assert codes[:10] == [302] * 10 and codes[10] == 429
    assert get(c, "/", headers={"Authorization": f"Bearer {PASSWORD}"}).status_code == 429   # even the right one
    assert post(c, "/login", csrf=csrf(c, "/login"), password=PASSWORD).status_code == 429   # the form too
    refused = [r for r in web.reports.actions(limit=100) if r["action"] == "refused"]
    assert refused and {r["detail"] for r in refused} == {"HTTP 429"} and all("guess" not in str(r) for r in refused)


def test_a_flood_of_refused_requests_writes_a_bounded_audit(web):
    c = client(web, password=PASSWORD, local_only=False)
    for _ in range(40):
        assert post(c, "/queues/pause", queue="sms").status_code == 401
    rows = [r for r in web.reports.actions(limit=100) if r["action"] == "refused"]
    assert len(rows) == 10 and rows[0]["target"] == "POST /queues/pause" and rows[0]["actor"] == "anonymous"


@pytest.mark.parametrize("target", ["/\t/evil.example", "/%09/evil.example", "/\n/evil.example", "//evil.example",
                                    "/\\evil.example", "https://evil.example/", "/ /evil.example", "javascript:x"])
def test_after_login_next_is_only_a_path_of_this_site(web, target):
    """Issue 24: next=/%09/evil.example answered Location: //evil.example (a browser drops the tab)."""
    c = client(web, password=PASSWORD, local_only=False)
    token = csrf(c, "/login")
    wanted = target.replace("\\t", "\t").replace("\\n", "\n")
    done = c.post("/login?next=" + wanted if "%" in wanted else "/login",
                  data={"csrf": token, "password": PASSWORD, **({} if "%" in wanted else {"next": wanted})},
                  base_url="http://127.0.0.1:8080")
    assert done.headers["Location"] == "/", done.headers["Location"]
    kept, _ = logged_in(web)
    assert post(kept, "/logout", csrf=csrf(kept)).status_code == 302
    again = kept.post("/login", data={"csrf": csrf(kept, "/login"), "password": PASSWORD, "next": "/jobs?status=failed"},
                      base_url="http://127.0.0.1:8080")
    assert again.headers["Location"] == "/jobs?status=failed"       # a path of this site is kept


def test_a_bulk_action_acts_on_the_jobs_its_preview_showed(web, clock):
    """Issue 24: preview /bulk/cancel?ext_prefix=toctou: (10 jobs), enqueue 5 more matching jobs, click "Cancel 10
    job(s)": 15 were cancelled. Right answer: the 10 the preview showed, less any that changed since (said so)."""
    shown = [web.enqueue(NOOP, ext=f"toctou:{n}", delay=600).id for n in range(10)]
    c = client(web)
    page = get(c, "/bulk/cancel?ext_prefix=toctou:").get_data(as_text=True)
    assert "Cancel 10 job(s)" in page
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    clock.advance(1)
    later = [web.enqueue(NOOP, ext=f"toctou:late{n}", delay=600).id for n in range(5)]
    web.run_now(shown[0])                           # one of the ten changed since the preview
    done = post(c, "/bulk/cancel", **hidden)
    assert done.status_code == 302
    assert [web.reports.get(job).status for job in shown] == ["pending"] + ["cancelled"] * 9
    assert {web.reports.get(job).status for job in later} == {"pending"}
    message = get(c, done.headers["Location"]).get_data(as_text=True)
    assert "1 of the 10 confirmed left alone: they changed since the preview" in message, message[-3000:]
    audit = [r for r in web.reports.actions() if r["action"] == "bulk_cancel"][0]
    assert audit["jobs"] == 9 and "as previewed" in audit["target"]


@pytest.mark.parametrize("before", ["nan", "inf", "-inf", "1e400", "soon"])
def test_the_audit_page_refuses_a_time_that_is_not_one(web, before):
    """Issue 24: /audit?before=nan (or inf, 1e400) answered 503 "MySQL ... failed". Right answer: 400 naming it."""
    page = get(client(web), f"/audit?before={before}")
    assert page.status_code == 400 and "before must be a time in seconds" in page.get_data(as_text=True)


def test_pausing_a_queue_that_has_no_job_is_refused(web):
    """Issue 24: pausing a queue that does not exist succeeded and added a phantom row."""
    web.enqueue(NOOP, queue="sms", delay=600)
    c = client(web)
    done = post(c, "/queues/pause", csrf=csrf(c), queue="smss")
    assert "queue &#39;smss&#39; has no job: nothing to pause" in get(c, done.headers["Location"]).get_data(as_text=True)
    assert web.control.paused_queues() == {}
    assert post(c, "/queues/pause", csrf=csrf(c), queue="sms").status_code == 302 and "sms" in web.control.paused_queues()


def test_no_next_page_link_when_the_results_end_on_a_full_page(web):
    """Issue 24: "Next page" led to an empty page when the matches were a multiple of the page size."""
    for n in range(6):
        web.enqueue(NOOP, ext=f"page:{n}", delay=600)
    c = client(web)
    assert 'id="next-page"' in get(c, "/jobs?ext_prefix=page:&limit=5").get_data(as_text=True)    # 6: a next page
    page = get(c, "/jobs?ext_prefix=page:&limit=6").get_data(as_text=True)
    assert page.count('href="/jobs/') >= 6 and 'id="next-page"' not in page       # exactly a page: no link to nothing
    second = get(c, "/jobs?ext_prefix=page:&limit=3").get_data(as_text=True)
    last = re.search(r'id="next-page" href="([^"]+)"', second).group(1).replace("&amp;", "&")
    assert 'id="next-page"' not in get(c, last).get_data(as_text=True)          # the second of two full pages


def test_retrying_or_cancelling_an_at_most_once_job_asks_first(web, tmp_path):
    """Issue 24: one click retried or cancelled an at-most-once job (a refund, a gift) with no confirmation."""
    failed = web.enqueue("examples.shop:charge", {"path": str(tmp_path / "charge.log"), "fail": True}).id
    pending = web.enqueue("examples.shop:charge", {"path": str(tmp_path / "charge.log")}, delay=600).id
    ordinary = web.enqueue(NOOP, delay=600).id
    run(web)
    c = client(web)
    token = csrf(c)
    for job, verb in ((failed, "retry"), (pending, "cancel")):
        before = web.reports.get(job).status
        asked = post(c, f"/jobs/{job}/{verb}", csrf=token)
        assert asked.status_code == 200 and "runs at most once" in asked.get_data(as_text=True)
        assert 'name="confirmed" value="yes"' in asked.get_data(as_text=True) and web.reports.get(job).status == before
        assert post(c, f"/jobs/{job}/{verb}", csrf=token, confirmed="yes").status_code == 302
        assert web.reports.get(job).status == ("pending" if verb == "retry" else "cancelled")
    assert post(c, f"/jobs/{ordinary}/cancel", csrf=token).status_code == 302      # an ordinary job: one click
    assert web.reports.get(ordinary).status == "cancelled"


def test_search_by_an_argument_and_bulk_on_it(web, clock):
    """Issue 24: no search by arguments. 'Argument' takes name=value."""
    mine = web.enqueue(RECORD, {"path": "/dev/null", "tag": "order-77"}, delay=600).id
    web.enqueue(RECORD, {"path": "/dev/null", "tag": "order-78"}, delay=600)
    c = client(web)
    page = get(c, "/jobs?arg=tag%3Dorder-77").get_data(as_text=True)
    assert re.findall(r'class="job-link">(\d+)<', page) == [str(mine)] and "argument tag = &#39;order-77&#39;" in page
    assert "Cancel 1 job(s)" in get(c, "/bulk/cancel?arg=tag%3Dorder-77").get_data(as_text=True)
    bad = get(c, "/jobs?arg=order-77")
    assert bad.status_code == 400 and "&#39;Argument&#39; is name=value" in bad.get_data(as_text=True)


def test_a_search_shows_how_many_jobs_match_counted_up_to_a_bound(web, monkeypatch):
    """Issue 24: no total count of matches."""
    from delayq.web import jobs as pages
    for n in range(7):
        web.enqueue(NOOP, ext=f"total:{n}", delay=600)
    c = client(web)
    assert '<strong id="total">7 job(s) match</strong>' in get(c, "/jobs?ext_prefix=total:&limit=2").get_data(as_text=True)
    monkeypatch.setattr(pages, "TOTAL_UPTO", 5)        # the bound, made small: the count stops there
    assert "more than 5 job(s) match" in get(c, "/jobs?ext_prefix=total:").get_data(as_text=True)
    assert 'id="total"' not in get(c, "/jobs").get_data(as_text=True)     # no filter: no count of the whole table


def test_ticked_rows_go_to_a_bulk_preview_of_those_jobs_only(web):
    """Issue 24: no picking rows by checkbox for a bulk action."""
    ids = [web.enqueue(NOOP, ext=f"tick:{n}", delay=600).id for n in range(4)]
    c = client(web)
    page = get(c, "/jobs?ext_prefix=tick:").get_data(as_text=True)
    assert all(f'name="id" value="{job}"' in page for job in ids) and 'id="pick-cancel"' in page
    assert 'class="pick"' not in get(client(web, read_only=True), "/jobs?ext_prefix=tick:").get_data(as_text=True)
    confirm = get(c, f"/bulk/cancel?id={ids[0]}&id={ids[2]}").get_data(as_text=True)
    assert "Cancel 2 job(s)" in confirm
    hidden = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', confirm)
    form = {}
    for name, value in hidden:
        form.setdefault(name, []).append(value)
    assert post(c, "/bulk/cancel", **form).status_code == 302
    assert [web.reports.get(job).status for job in ids] == ["cancelled", "pending", "cancelled", "pending"]


def test_without_a_password_only_loopback_host_names_are_served(web):
    c = client(web)
    assert c.get("/", base_url="http://evil.example:8080").status_code == 400     # DNS rebinding
    for base in ("http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"):
        assert c.get("/", base_url=base).status_code == 200
    assert client(web, password=PASSWORD, local_only=False).get(
        "/login", base_url="http://dash.example").status_code == 200


def test_args_errors_and_business_keys_are_escaped(web):
    job = web.enqueue(RECORD, {"path": XSS[0], "tag": XSS[1]}, ext="k" + XSS[1][:40]).id
    run(web)
    c = client(web)
    for path in (f"/jobs/{job}", "/jobs", "/jobs?ext_prefix=k%22", "/audit"):
        page = get(c, path).get_data(as_text=True)
        assert "<script>alert" not in page and "<img src=x" not in page
    page = get(c, f"/jobs/{job}").get_data(as_text=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_no_password_or_secret_appears_in_any_page(web):
    failed = web.enqueue(FAILS, {"order_id": 1}, ext="order:1").id
    run(web)
    secrets = (PASSWORD, "hunter2", "whsecret")
    settings = WebSettings(password=PASSWORD, local_only=False, backend="mysql://db1:3306/shop")
    c = create_app(web, settings).test_client()
    auth = {"Authorization": f"Bearer {PASSWORD}"}
    for path in ("/", "/jobs", f"/jobs/{failed}", "/audit", "/bulk/retry?status=failed", "/jobs/99999", "/login",
                 "/jobs?since=nonsense"):
        page = c.get(path, headers=auth).get_data(as_text=True)
        assert not any(secret in page for secret in secrets), path
    assert PASSWORD not in repr(settings)


def test_job_actions_retry_a_step_run_now_and_bulk_with_confirmation_are_audited(web, clock, tmp_path):
    log = tmp_path / "effects.log"
    gift = web.enqueue("examples.shop:SendGift", {"path": str(log), "charge_fails": True}).id
    run(web)
    c = client(web)
    token = csrf(c)
    page = get(c, f"/jobs/{gift}").get_data(as_text=True)
    assert "Retry step charge_user only" in page and "manual (at most once)" in page
    asked = post(c, f"/jobs/{gift}/retry", csrf=token, step="charge_user")     # issue 24: a manual step asks first
    assert asked.status_code == 200 and "is a manual step" in asked.get_data(as_text=True)
    assert web.reports.get(gift).status == "failed"
    assert post(c, f"/jobs/{gift}/retry", csrf=token, step="charge_user", confirmed="yes").status_code == 302
    assert web.reports.get(gift).status == "pending"
    later = web.enqueue(NOOP, queue="sms", delay=3600).id
    clock.advance(1)
    post(c, f"/jobs/{later}/run-now", csrf=token)
    assert web.reports.get(later).due_at == clock.now()
    promos = [web.enqueue(NOOP, queue="promo", ext=f"promo:{i}", delay=600).id for i in range(4)]
    confirm = get(c, "/bulk/cancel?ext_prefix=promo:&queue=promo").get_data(as_text=True)
    assert "would cancel 4 job(s)" in confirm and "Cancel 4 job(s)" in confirm
    assert [web.reports.get(j).status for j in promos] == ["pending"] * 4          # the confirmation page changes nothing
    clock.advance(1)
    done = post(c, "/bulk/cancel", csrf=token, ext_prefix="promo:", queue="promo")
    assert done.headers["Location"] == "/jobs?queue=promo&ext_prefix=promo:"
    assert [web.reports.get(j).status for j in promos] == ["cancelled"] * 4
    assert "needs a filter" in get(c, "/bulk/purge").get_data(as_text=True)
    clock.advance(1)
    post(c, "/queues/pause", csrf=token, queue="sms", reason="gateway down")
    assert web.control.paused_queues()["sms"][1] == "gateway down"
    clock.advance(1)
    post(c, "/queues/resume", csrf=token, queue="sms")
    actions = [(r["action"], r["target"], r["jobs"]) for r in reversed(web.reports.actions())]
    assert actions == [("retry_step", f"job {gift} step charge_user", 1), ("run_now", f"job {later}", 1),
                       ("bulk_cancel", "filter: queue 'promo', ext prefix 'promo:'", 4),
                       ("pause", "queue sms", 0), ("resume", "queue sms", 0)]
    assert web.reports.count(JobFilter(queues=("promo",), statuses=("cancelled",))) == [("promo", "cancelled", 4)]


def test_an_at_most_once_job_whose_runner_died_is_marked_outcome_unknown_with_what_to_check(web, clock, tmp_path):
    job = web.enqueue("examples.shop:charge", {"path": str(tmp_path / "charge.log")}, ext="order:9", lease=30).id
    [claimed] = web.claim(["default"], 1)
    assert web.begin(claimed)                          # it began: then its runner vanished
    clock.advance(31)
    recovery.recover_expired(web)
    page = get(client(web), f"/jobs/{job}").get_data(as_text=True)
    assert web.reports.get(job).status == "failed" and 'id="outcome-unknown"' in page
    assert "The job began (this job runs <strong>at most once</strong>)" in page and "What to check:" in page
    assert "for <code>order:9</code>" in page and "Retry the job" in page
    ordinary = web.enqueue(FAILS, {"order_id": 2}).id
    run(web)
    assert 'id="outcome-unknown"' not in get(client(web), f"/jobs/{ordinary}").get_data(as_text=True)


def test_search_pages_by_keyset_and_reports_bad_input(web):
    ids = [web.enqueue(NOOP, queue="pages", ext=f"p:{i}").id for i in range(5)]
    c = client(web)
    first = get(c, "/jobs?queue=pages&limit=2").get_data(as_text=True)
    assert re.findall(r'class="job-link">(\d+)<', first) == [str(ids[4]), str(ids[3])]
    assert f"before={ids[3]}" in first
    second = get(c, f"/jobs?queue=pages&limit=2&before={ids[3]}").get_data(as_text=True)
    assert re.findall(r'class="job-link">(\d+)<', second) == [str(ids[2]), str(ids[1])]
    bad = get(c, "/jobs?since=yesterday-ish")
    assert bad.status_code == 400 and "since" in bad.get_data(as_text=True)
    assert get(c, "/jobs?status=lost").status_code == 400
    long = get(c, "/jobs?ext_prefix=" + "k" * 8000).get_data(as_text=True)      # issue 24: no CLI flag names
    assert "&#39;Business key starts with&#39; is 8000 characters long" in long and "--ext" not in long


def test_the_charts_count_attempts_by_bucket_from_the_roll_up_and_the_last_minutes_each_once(q, clock):
    """Issue 24: charts over 1 hour, 24 hours and 7 days, per queue. The long windows read the 5-minute buckets
    compensate rolled up and the attempts themselves after the newest of them; nothing is counted twice."""
    start = clock.now()
    for _ in range(3):
        q.enqueue(NOOP, queue="sms")
    q.enqueue(FAILS, {"order_id": 1}, queue="mail")
    run(q, ["sms", "mail"])
    clock.advance(2 * 3600)
    assert q.control.roll_up() >= 2 and q.control.roll_up() == 0       # a second run has nothing new to roll up
    q.enqueue(NOOP, queue="sms")
    run(q, ["sms"])                                                   # not rolled up yet: read from the attempts
    hour = q.reports.activity("1h")
    assert sum(hour.counts["succeeded"]) == 1 and hour.bucket == 60 and len(hour.late_avg) == 61
    day = q.reports.activity("24h")
    assert (day.bucket, len(day.late_avg)) == (900, 97)
    assert sum(day.counts["succeeded"]) == 4 and sum(day.counts["failed"]) == 1
    first = int((start - day.start) // 900)
    assert day.counts["succeeded"][first] == 3 and day.counts["succeeded"][-1] == 1
    sms = q.reports.activity("7d", "sms")
    assert sum(sms.counts["succeeded"]) == 4 and "failed" not in sms.counts and len(sms.late_avg) == 169
    assert sms.late_avg[-1] is not None and sms.late_max[-1] is not None
    with pytest.raises(InvalidInput, match="window"):
        q.reports.activity("2d")


def test_the_overview_charts_one_queue_over_a_window_and_refuses_a_bad_one(web, clock):
    web.enqueue(NOOP, queue="sms")
    web.enqueue(FAILS, {"order_id": 1}, queue="erp")
    run(web, ["sms", "erp"])
    c = client(web)
    page = get(c, "/?window=24h&queue=erp").get_data(as_text=True)
    assert "Attempts per quarter hour, last 24 hours: 0 succeeded, 1 failures" in page
    assert "Lateness per quarter hour, last 24 hours" in page and 'id="chart-lateness"' in page
    assert "Attempts per minute, last hour: 1 succeeded, 1 failures" in get(c, "/").get_data(as_text=True)
    for bad, field in (("window=2d", "window"), ("queue=no%20such%20queue", "queue")):
        response = get(c, "/?" + bad)
        assert response.status_code == 400 and field in response.get_data(as_text=True)


def limited(manager, queues):
    """A manager on the same store and index with these DELAYQ_QUEUES, as `delayq web` reads them (limits.py)."""
    return Manager(manager.store, manager.index, manager.registry, manager.clock,
                   queues=validate.queue_defaults(queues))


def limit_cells(page: str) -> dict[str, str]:
    """queue -> the text of its limit cell, read inside the queues table the page refreshes (data-live)."""
    table = re.search(r'<table class="grid-table" id="queues" data-live>.*?</table>', page, re.S).group(0)
    rows = re.findall(r'<tr id="queue-\d+" data-queue="([^"]*)">.*?<td class="limit">(.*?)</td>', table, re.S)
    return {queue: re.sub(r"<[^>]+>", "", cell) for queue, cell in rows}


def test_the_overview_shows_each_queue_s_limits_and_the_jobs_waiting_on_them(web):
    m = limited(web, {"r": {"rate": "1/s"}, "m": {"max_running": 1}, "p": {"rate": "100/h", "max_running": 5},
                      "idle": {"rate": "600/m"}})
    for _ in range(3):
        m.enqueue(NOOP, queue="r")
        m.enqueue(NOOP, queue="m")
    for _ in range(2):
        m.enqueue(KEYED, {"order_id": 7})            # one running job per order, on a queue of no limit
    m.enqueue(NOOP, queue="p", delay=600)
    m.enqueue(NOOP, queue="free")
    assert len(m.claim(["r"], 10)) == 1              # asks for 2 (half a second of 1/s, and its burst): 1 held
    assert len(m.claim(["m", "default"], 10)) == 2   # one of m (max_running 1), one of order 7: 3 held
    assert m.reports.waiting_on_limits() == {"r": 1, "m": 2, "default": 1}
    c = client(m)
    for live in ({}, {"X-Delayq-Live": "1"}):        # the page, and the refresh of its live parts
        page = get(c, "/", headers=live).get_data(as_text=True)
        assert limit_cells(page) == {"r": "1/s · 1 waiting", "m": "max 1 running · 2 waiting",
                                     "default": "1 waiting", "p": "100/h · max 5 running", "free": "-"}
    assert '<strong class="waiting" title="pending jobs a limit held back' in page
    assert 'data-queue="idle"' not in page           # a limited queue with no job has no row (no phantom pause)


def test_a_search_by_argument_reads_one_window_of_ids_a_page_and_goes_on_below_it(web, monkeypatch):
    """Issue 24 (every page under 100 ms at 1M jobs): text in the error and arguments are not indexed, so a page of
    such a search reads a window of ids, says which, and links to the window below it."""
    import delayq.web.jobs
    monkeypatch.setattr(delayq.web.jobs, "SCAN_WINDOW", 5)
    old = web.enqueue(RECORD, {"path": "t", "tag": "x"}, delay=60, ext="old").id          # the match, far below the newest
    newer = [web.enqueue(RECORD, {"path": str(i), "tag": "x"}, delay=60).id for i in range(12)]
    c = client(web)
    page = get(c, "/jobs?arg=path%3Dt").get_data(as_text=True)
    assert f"0 job(s) match among the jobs with id {newer[-1] - 4} to {newer[-1]}" in page
    assert 'id="scan-window"' in page and f"Search older jobs (id below {newer[-1] - 4})" in page
    ids = []
    path = f"/jobs?arg=path%3Dt&before={newer[-1] - 4}"
    for _ in range(5):                                               # window by window, down to the match
        page = get(c, path).get_data(as_text=True)
        ids += [int(i) for i in re.findall(r'data-id="(\d+)"', page)]
        found = re.search(r'id="next-page" href="([^"]+)"', page)
        if not found:
            break
        path = found.group(1).replace("&amp;", "&")
    assert ids == [old] and "Search older jobs" not in page
    exact = get(c, "/jobs?arg=path%3Dt&ext=old").get_data(as_text=True)      # an exact key narrows it: no window
    assert re.findall(r'data-id="(\d+)"', exact) == [str(old)] and 'id="scan-window"' not in exact


def test_a_live_refresh_takes_no_flashed_message(web):
    """Review of issue 24: a background refresh renders the page; the result of an action just taken waits for the
    person's own next page."""
    web.enqueue(NOOP, queue="sms")
    c = client(web)
    get(c, "/")
    c.post("/queues/pause", data={"csrf": csrf(c), "queue": "sms"}, base_url="http://127.0.0.1:8080")
    live = get(c, "/", headers={"X-Delayq-Live": "1"}).get_data(as_text=True)
    assert "paused queue sms" not in live
    assert "paused queue sms" in get(c, "/").get_data(as_text=True)


# -- the schedules page ----------------------------------------------------------------------
SCHEDULES = ("examples.schedules",)


def declared():
    return schedules.load(SCHEDULES, ("examples",))


def ran_a_minute(manager, clock) -> None:
    """The schedules looked at by a runner, then a minute of slots taken and their jobs run."""
    ticker = scheduler.Scheduler(manager, declared())
    ticker.tick()
    clock.advance(60)
    assert ticker.tick() >= 1
    run(manager)


def schedule_row(page: str, name: str) -> str:
    found = re.search(rf'<tr id="schedule-{re.escape(name)}".*?</tr>', page, re.DOTALL)
    assert found, page[-3000:]
    return re.sub(r"\s+", " ", found.group(0))


def audited(manager) -> list[tuple]:
    """The audit trail, oldest first: (action, target, jobs, detail)."""
    return [(r["action"], r["target"], r["jobs"], r["detail"]) for r in reversed(manager.reports.actions())]


def paused(manager) -> list[str]:
    return [s["name"] for s in scheduler.status(manager, declared()) if s["paused"]]


def test_the_schedules_page_lists_each_declared_schedule_with_its_next_slot_and_last_job(web, clock):
    ran_a_minute(web, clock)
    c = client(web, schedule_modules=SCHEDULES)
    response = get(c, "/schedules")
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and '<a href="/schedules" class="here">Schedules</a>' in page
    nightly = declared()["nightly-report"]
    at = schedules.slot_text(nightly.next_slot(clock.now()), ZoneInfo("Europe/Berlin"))
    assert at.endswith(("+01:00", "+02:00")) and at in schedule_row(page, "nightly-report")    # in its own zone
    assert "examples.schedules:nightly_report" in schedule_row(page, "nightly-report")
    [minute] = [s for s in scheduler.status(web, declared()) if s["name"] == "every-minute"]
    row = schedule_row(page, "every-minute")
    assert minute["ran"] == 1 and "* * * * *" in row
    assert schedules.slot_text(minute["next_slot"], ZoneInfo("UTC")) in row
    assert f'<a href="/jobs/{minute["last_job"]}" class="job-link">{minute["last_job"]}</a>' in row
    assert '<span class="status st-succeeded">succeeded</span>' in row and 'action="/schedules/pause"' in row
    assert '<td class="n counts">1 / 0 / 0</td>' in row                                # ran / skipped / missed
    job = get(c, f"/jobs/{minute['last_job']}").get_data(as_text=True)           # its job links back to it
    assert '<a href="/schedules#schedule-every-minute" id="job-schedule">every-minute</a>' in job
    read_only = get(client(web, schedule_modules=SCHEDULES, read_only=True), "/schedules").get_data(as_text=True)
    assert "every-minute" in read_only and 'action="/schedules/' not in read_only


def test_pause_then_resume_a_schedule_through_the_page_changes_its_row_and_is_audited(web, clock):
    ran_a_minute(web, clock)
    c = client(web, schedule_modules=SCHEDULES)
    token = csrf(c, "/schedules")
    clock.advance(1)
    done = post(c, "/schedules/pause", csrf=token, name="every-minute")
    assert done.status_code == 302 and done.headers["Location"] == "/schedules" and paused(web) == ["every-minute"]
    page = get(c, "/schedules").get_data(as_text=True)
    assert "paused schedule every-minute: no runner enqueues its slots until it is resumed" in page
    row = schedule_row(page, "every-minute")
    assert '<strong class="paused">paused</strong>' in row and "none while paused" in row
    assert 'action="/schedules/resume"' in row
    clock.advance(120)
    assert scheduler.Scheduler(web, declared()).tick() >= 1                    # the others run; it does not
    assert [s["ran"] for s in scheduler.status(web, declared()) if s["name"] == "every-minute"] == [1]
    clock.advance(1)
    assert post(c, "/schedules/pause", csrf=token, name="every-minute").status_code == 302
    assert "schedule every-minute was paused already" in get(c, "/schedules").get_data(as_text=True)
    clock.advance(1)
    assert post(c, "/schedules/resume", csrf=token, name="every-minute").status_code == 302
    page = get(c, "/schedules").get_data(as_text=True)
    assert "resumed schedule every-minute: its next slot runs" in page and paused(web) == []
    assert '<strong class="ok">active</strong>' in schedule_row(page, "every-minute")
    clock.advance(1)
    post(c, "/schedules/resume", csrf=token, name="every-minute")            # not paused: refused, said, audited
    assert "schedule every-minute is not paused" in get(c, "/schedules").get_data(as_text=True)
    trail = audited(web)
    assert [entry[:3] for entry in trail] == [("pause", "schedule every-minute", 0)] * 2 + \
        [("resume", "schedule every-minute", 0)] * 2
    assert trail[0][3].startswith("paused schedule") and trail[3][3] == "refused: schedule every-minute is not paused"


def test_a_schedule_s_pause_without_the_csrf_token_is_refused_and_changes_nothing(web, clock):
    ran_a_minute(web, clock)
    c = client(web, schedule_modules=SCHEDULES)
    get(c, "/schedules")
    assert post(c, "/schedules/pause", name="every-minute").status_code == 403
    assert post(c, "/schedules/pause", name="every-minute", csrf="forged").status_code == 403
    assert paused(web) == [] and audited(web) == [("refused", "POST /schedules/pause", 0, "HTTP 403")] * 2


@pytest.mark.parametrize("name", ["no-such-schedule", "", "x" * 5000, XSS[0]])
def test_pausing_an_unknown_schedule_is_one_clear_message_never_a_500(web, name):
    c = client(web, schedule_modules=SCHEDULES)
    assert post(c, "/schedules/pause", csrf=csrf(c, "/schedules"), name=name).status_code == 302
    page = get(c, "/schedules").get_data(as_text=True)
    [said] = re.findall(r'<p class="flash flash-error" role="status">([^<]*)</p>', page)
    assert said.startswith("no schedule named ")
    assert said.endswith("(schedules: every-minute, every-second, nightly-report)")
    assert len(said) < 250 and "<script>alert" not in page
    [(action, _, jobs, detail)] = audited(web)
    assert (action, jobs) == ("pause", 0) and detail.startswith("refused: no schedule named ")
    assert scheduler.status(web, {}) == []                                   # no row made for it


@pytest.fixture
def broken_module(tmp_path, monkeypatch):
    """examples.broken_schedules: a schedule module with a syntax error, in a folder of this test's own (examples
    is a namespace package: a second folder on sys.path adds to it)."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "broken_schedules.py").write_text("import delayq\ndelayq.schedule('x', every='1m'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "examples.broken_schedules"


@pytest.mark.parametrize("module, said", [
    ("shop.schedules", "schedule module 'shop.schedules' is not under DELAYQ_ALLOWED_MODULES"),
    ("examples.no_such_module", "schedule module 'examples.no_such_module' cannot be imported: ModuleNotFoundError: "
                                "No module named"),
    ("examples.broken_schedules", "schedule module 'examples.broken_schedules' cannot be imported: SyntaxError:"),
], ids=["not-allowed", "not-importable", "syntax-error"])
def test_a_broken_schedule_modules_setting_is_one_clear_message(web, broken_module, module, said):
    c = client(web, schedule_modules=(module,))
    response = get(c, "/schedules")
    page = response.get_data(as_text=True).replace("&#39;", "'")
    assert response.status_code == 200 and 'id="schedules"' not in page and "Traceback" not in page
    errors = re.findall(r'class="flash flash-error"[^>]*>([^<]*)<', page)
    assert len(errors) == 1 and errors[0].startswith(said), errors
    assert post(c, "/schedules/pause", csrf=csrf(c), name="every-minute").status_code == 302
    assert said in get(c, "/schedules").get_data(as_text=True).replace("&#39;", "'")
    [(action, _, _, detail)] = audited(web)
    assert action == "pause" and detail.startswith("refused: " + said)


def test_without_schedule_modules_the_schedules_page_says_how_to_declare_them(web, monkeypatch):
    page = get(client(web, schedule_modules=()), "/schedules").get_data(as_text=True)
    assert 'id="no-schedules"' in page and "DELAYQ_SCHEDULE_MODULES" in page and "delayq.schedule(" in page
    monkeypatch.setenv("DELAYQ_SCHEDULE_MODULES", "examples.schedules")      # not given: the environment's, as
    page = get(client(web), "/schedules").get_data(as_text=True)             # `delayq web` reads its settings
    assert 'id="schedule-nightly-report"' in page and 'id="no-schedules"' not in page
