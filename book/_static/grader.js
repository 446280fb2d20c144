/* Submit an exercise notebook to the course's grading service and show the feedback.
 *
 * Used by the exercise pages: a block with data-grader-exercise="<name>" holds a
 * learner-id field, a file picker and a button (see book/exercises/*.md). The
 * service URL is http://<this host>:8001 unless the page URL says ?grader=<url>
 * (or the block has data-grader-url). Nothing here loads anything from elsewhere.
 */
(function () {
  "use strict";
  var LEARNER = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;

  function serviceUrl(root) {
    var fromPage = new URLSearchParams(window.location.search).get("grader");
    var host = window.location.hostname || "127.0.0.1";
    var url = fromPage || root.getAttribute("data-grader-url") || ("http://" + host + ":8001");
    return url.replace(/\/+$/, "");
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text; // never innerHTML: feedback is data
    return node;
  }

  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  async function call(url, options) {
    var response;
    try {
      response = await fetch(url, options);
    } catch (err) {
      throw new Error("the grading service at " + url.split("/api/")[0] +
                      " did not answer; is it running (make serve)?");
    }
    var data = null;
    try { data = await response.json(); } catch (err) { data = null; }
    if (!response.ok) {
      throw new Error((data && data.error) || ("the service answered HTTP " + response.status));
    }
    return data;
  }

  function show(feedback, sub) {
    var r = sub.result;
    feedback.textContent = "";
    var secs = sub.seconds || {};
    feedback.appendChild(el("p", "grader-score", "Score: " + r.score + " / " + r.max_score +
      " (graded in " + (secs.grading || 0).toFixed(1) + " s, " +
      (secs.total || 0).toFixed(1) + " s after you submitted)"));
    feedback.appendChild(el("p", "grader-output", r.output));
    var list = el("ul", "grader-tests");
    r.tests.forEach(function (t) {
      var item = el("li", "grader-test grader-" + t.status);
      item.appendChild(el("strong", "", (t.status === "passed" ? "\u2713 " : "\u2717 ") + t.name));
      item.appendChild(document.createTextNode(" (" + t.score + " / " + t.max_score + ")"));
      if (t.status !== "passed") item.appendChild(el("pre", "grader-test-output", t.output));
      list.appendChild(item);
    });
    feedback.appendChild(list);
  }

  function init(root) {
    var form = root.querySelector("form");
    var learner = root.querySelector("[name=learner]");
    var file = root.querySelector("[name=notebook]");
    var button = root.querySelector("button[type=submit]");
    var status = root.querySelector(".grader-status");
    var feedback = root.querySelector(".grader-feedback");
    var service = serviceUrl(root);
    try { learner.value = learner.value || localStorage.getItem("grader-learner") || ""; } catch (e) {}

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      feedback.textContent = "";
      status.textContent = "";
      var id = learner.value.trim();
      if (!LEARNER.test(id)) {
        status.textContent = "Enter your learner id: letters, digits and . _ @ - only.";
        return;
      }
      if (!file.files.length) { status.textContent = "Choose your .ipynb file first."; return; }
      try { localStorage.setItem("grader-learner", id); } catch (e) {}
      button.disabled = true;
      try {
        var notebook;
        try {
          notebook = JSON.parse(await file.files[0].text());
        } catch (err) {
          throw new Error(file.files[0].name + " is not a notebook file (it is not JSON).");
        }
        status.textContent = "Sending " + file.files[0].name + "\u2026";
        var sent = await call(service + "/api/submissions", {
          method: "POST", headers: {"Content-Type": "application/json"},
          body: JSON.stringify({exercise: root.getAttribute("data-grader-exercise"),
                                learner: id, notebook: notebook})});
        var started = Date.now(), delay = 500, sub;
        for (;;) {
          sub = await call(service + "/api/submissions/" + encodeURIComponent(sent.id), {});
          if (sub.status === "done") break;
          status.textContent = sub.status === "queued"
            ? "Queued (position " + sub.queue_position + ")\u2026"
            : "Grading\u2026 " + Math.round((Date.now() - started) / 1000) + " s";
          await sleep(delay);
          delay = Math.min(2000, delay * 1.5);
        }
        status.textContent = "Graded. Submission id: " + sub.id;
        show(feedback, sub);
      } catch (err) {
        status.textContent = "Not graded: " + err.message;
      } finally {
        button.disabled = false;
      }
    });
  }

  function start() {
    document.querySelectorAll("[data-grader-exercise]").forEach(init);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
