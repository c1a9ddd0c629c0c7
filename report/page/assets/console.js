// kcleanup console: replace the content with the worker's rendering of its
// /v1/status document every two seconds, without a reload. It keeps the
// keyboard focus and the scroll position, and says when the worker cannot
// be reached. No framework, nothing loaded from elsewhere.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var live = document.getElementById("live");
  var etag = "";
  var every = 2000;

  function focusKey(el) {
    if (!el || !main.contains(el)) return null;
    if (el.id) return "#" + CSS.escape(el.id);
    if (el.dataset && el.dataset.plan) return '[data-plan="' + CSS.escape(el.dataset.plan) + '"]';
    return null;
  }

  function swap(html) {
    var key = focusKey(document.activeElement);
    var x = window.scrollX, y = window.scrollY;
    main.innerHTML = html;
    if (key) {
      var el = main.querySelector(key);
      if (el) el.focus({ preventScroll: true });
    }
    window.scrollTo(x, y);
  }

  function poll() {
    var headers = etag ? { "If-None-Match": etag } : {};
    fetch("console/main" + location.search, { headers: headers, cache: "no-store" })
      .then(function (r) {
        if (r.status === 304) return null;
        if (!r.ok) throw new Error("HTTP " + r.status);
        etag = r.headers.get("ETag") || "";
        return r.text();
      })
      .then(function (html) {
        if (html !== null) swap(html);
        live.textContent = "live: checked " + new Date().toLocaleTimeString();
      })
      .catch(function (e) {
        live.textContent = "cannot reach this worker (" + e.message + "): retrying; what is shown may be old";
      })
      .then(function () { setTimeout(poll, every); });
  }
  setTimeout(poll, every);
})();
