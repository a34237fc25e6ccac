// delayq's dashboard: the parts of a page marked data-live are fetched again every few seconds and replaced in
// place, without reloading the page (issue 24). One request for the page's own URL, same origin, with the
// session's cookie; nothing is sent but that GET. A part the user is working in (the focus inside it, a box
// ticked, text typed, the pointer over it) is left as it is until they are done. A refresh is not "use" of the
// session (a tab left open still signs out when idle) and takes no flashed message. "live" in the header pauses it (kept per browser);
// it also rests while the tab is hidden. Without this script (or with JavaScript off) the pages work as before.
(function () {
  "use strict";
  var parts = document.querySelectorAll("[data-live][id]");
  var toggle = document.getElementById("live-toggle");
  var stamp = document.getElementById("live-stamp");
  if (!parts.length || !toggle || !window.fetch || !window.DOMParser) { return; }
  var EVERY = 5000;
  var on = window.localStorage.getItem("delayq-live") !== "off";
  var busy = false;

  function say(text) { if (stamp) { stamp.textContent = text; } }
  function show() {
    toggle.hidden = false;
    toggle.textContent = on ? "live" : "paused";
    toggle.setAttribute("aria-pressed", on ? "true" : "false");
    toggle.title = on ? "refreshed every 5 s: click to pause" : "click to refresh every 5 s";
  }
  function busyWith(el) {
    if (el.matches(":hover")) { return true; }            // under the pointer: nothing moves before a click
    if (el.contains(document.activeElement) && document.activeElement !== document.body) { return true; }
    var fields = el.querySelectorAll("input, select, textarea");
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if ((f.type === "checkbox" || f.type === "radio") ? f.checked : (f.type !== "hidden" && f.value)) { return true; }
    }
    return false;
  }
  function refresh() {
    if (!on || busy || document.hidden) { return; }
    busy = true;
    var abort = new AbortController();
    var timer = window.setTimeout(function () { abort.abort(); }, 10000);
    window.fetch(window.location.href, {credentials: "same-origin", redirect: "manual", cache: "no-store",
                                        headers: {"X-Delayq-Live": "1"}, signal: abort.signal})
      .then(function (response) {
        if (response.type === "opaqueredirect" || response.status === 401 || response.status === 403) {
          on = false; show(); say("signed out: reload the page");
          return null;
        }
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (el) {
          var now = fresh.getElementById(el.id);
          if (now && !busyWith(el)) { el.replaceWith(document.importNode(now, true)); }
        });
        say("updated " + new Date().toLocaleTimeString());
      })
      .catch(function () { say("not updated: the dashboard did not answer"); })
      .then(function () { window.clearTimeout(timer); busy = false; });
  }
  toggle.addEventListener("click", function () {
    on = !on;
    window.localStorage.setItem("delayq-live", on ? "on" : "off");
    show();
    if (on) { refresh(); } else { say(""); }
  });
  document.addEventListener("visibilitychange", refresh);
  show();
  window.setInterval(refresh, EVERY);
}());
