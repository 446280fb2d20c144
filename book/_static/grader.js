/* Submit an exercise notebook to the course's grading service and show the feedback.
 *
 * Used by the exercise pages: an empty block <div data-grader-exercise="<name>">
 * (see book/exercises/*.md) gets a file picker and a button, and a learner-id
 * field (with what the id is for) unless a site URL named the learner (?learner=<id>,
 * which make serve's printed URL carries for its one learner; remembered like the
 * service URL) or the running make serve does (_static/course-local.json, which also
 * names its grading service: window.courseLocal, course-run.js).
 * The service URL is http://<this host>:<its default port> (window.COURSE_DEFAULTS,
 * _static/course-defaults.js, written by the site build from autograder/defaults.py)
 * unless a site URL said ?grader=<url> (make serve prints one when GRADER_PORT is
 * not the default; it is remembered in localStorage like the JupyterLab address,
 * so every page has it) or the block has data-grader-url. Nothing here loads anything from elsewhere.
 * Above the form: the rule for which graded submission counts, as the running service
 * says it (api/config's "recorded"; the course's default, said to be one, when no
 * service answers), and the learner's recorded grade and latest graded submission (the
 * service's api/standing); an upload of the unedited notebook, or under the "latest"
 * rule any upload that would replace a recorded grade, is held back with a warning until
 * Submit is pressed again. Below it: every earlier submission of the learner's for this
 * exercise with its score and feedback (api/submissions), when the service knows who
 * the learner is. The exercise index (<div data-grader-progress>) lists the learner's
 * recorded grade of every exercise.
 *
 * Who the learner is, is never said by the page: under `make serve` the grading service
 * serves its one learner (--auth local) to requests holding the run's key, which the
 * printed site URL carries (?grader_token=, remembered here; never in course-local.json)
 * and every request sends in an Authorization header. Under `make hub`
 * (window.courseHub, from course-run.js) the service is the hub's /services/grader and
 * every request carries the signed-in user's hub token instead. Only a service run
 * without either (--auth none) takes the learner id the page names.
 */
(function () {
  "use strict";
  var DEFAULTS = window.COURSE_DEFAULTS;
  var LEARNER = new RegExp(DEFAULTS.learnerPattern); // the service's own rule

  // Remembered on every page of the site, so the URL make serve prints (which
  // opens the home page) carries them to the exercise pages.
  function remembered(name, key) {
    var given = new URLSearchParams(window.location.search).get(name);
    try {
      if (given) localStorage.setItem(key, given);
      else given = localStorage.getItem(key);
    } catch (e) {}
    return given;
  }
  var GIVEN = remembered("grader", "course-grader-url");
  // make serve's key to its grading service (autograder/service/api/local_auth.py)
  var KEY = remembered("grader_token", "course-grader-token");
  // The one learner of a one-person deployment (make serve names it: scripts/serve.py
  // learner_id()); without it the form asks for an id.
  var LEARNER_GIVEN = remembered("learner", "course-learner");
  if (LEARNER_GIVEN && !LEARNER.test(LEARNER_GIVEN)) LEARNER_GIVEN = null;

  function serviceUrl(root) {
    if (window.courseHub) return window.location.origin + window.location.pathname.split("services/course/")[0] + "services/grader";
    var host = window.location.hostname || DEFAULTS.host;
    var url = GIVEN || root.getAttribute("data-grader-url") || ("http://" + host + ":" + DEFAULTS.graderPort);
    return url.replace(/\/+$/, "");
  }

  var QUERY = new URLSearchParams(window.location.search);

  /* A page opened without make serve's printed query string: the running make serve
   * names its grading service and learner (course-local.json, read by course-run.js). */
  function fromLocal(local) {
    if (!QUERY.get("grader") && local.grader) GIVEN = String(local.grader);
    if (!QUERY.get("learner") && local.learner && LEARNER.test(local.learner)) LEARNER_GIVEN = local.learner;
  }

  /* ``named``: the page shows who submits (the service knows: make serve's key, the hub's
   * sign-in; or the site URL named the learner); otherwise the form asks for an id. */
  function formMarkup(named) {
    return '<p class="grader-rule"></p><p class="grader-deadline" hidden></p><form hidden>' +
    (named ? '<p class="grader-as">Submitting as <strong></strong></p>'
      : '<label>Learner id <input id="grader-learner" name="learner" autocomplete="username" required>' +
        '<span class="grader-hint">the name your grades are recorded under: use the same one ' +
        'every time (make serve uses your login name)</span></label>') +
    '<label>Notebook <input id="grader-file" name="notebook" type="file" accept=".ipynb" required></label>' +
    '<button id="grader-submit" type="submit">Submit for grading</button></form>' +
    '<p class="grader-standing" aria-live="polite"></p>' +
    '<p id="grader-status" class="grader-status" role="status" aria-live="polite"></p>' +
    '<div id="grader-feedback" class="grader-feedback"></div>' +
    '<section class="grader-history" aria-live="polite"></section>';
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text; // never innerHTML: feedback is data
    return node;
  }

  var POLL_MS = 600000; // as the notebook's submit cell (learner_submit.POLL_S)
  var HOLD_S = 15; // as learner_submit.HOLD_S
  var DEADLINE_WAIT_MS = 5000; // a service slow to say the due date still gets its form shown
  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  // An error with .transient set: no answer came (network, proxy, 5xx), so a request
  // about a stored submission is worth repeating; without it the service refused.
  function noAnswer(message) { var e = new Error(message); e.transient = true; return e; }

  async function call(url, options) {
    var response;
    try {
      response = await fetch(url, options);
    } catch (err) {
      var base = url.split("/api/")[0];
      var found = window.CourseServers ? await window.CourseServers.reach(base + "/api/health") : {};
      if (found.state === "refused" || found.state === "ok") {
        throw new Error("the grading service at " + base + " is running but does not accept this site (" +
                        window.location.origin + "). Open the site from the course site address make " +
                        "serve printed.");
      }
      throw noAnswer("nothing answers at " + base + ": the grading service is not running. Start the " +
                     "course with make serve and keep it running.");
    }
    var data = null;
    try { data = await response.json(); } catch (err) { data = null; }
    if (!response.ok) {
      var message = (data && data.error) || ("the service answered HTTP " + response.status);
      throw response.status >= 500 ? noAnswer(message) : new Error(message);
    }
    return data;
  }

  // Poll a stored submission until it is graded; a poll that gets no answer is tried
  // again (the submission is kept, and a restarted service grades it). Null after POLL_MS.
  // Each poll is held by the service until the submission is graded or HOLD_S passed.
  async function follow(url, auth, say) {
    var started = Date.now(), delay = 500, sub, held = url + "?wait=" + HOLD_S;
    while (Date.now() - started < POLL_MS) {
      try {
        sub = await call(held, {headers: auth});
      } catch (err) {
        if (!err.transient) throw err;
        say("the grading service does not answer just now (" + err.message + "); still trying\u2026");
        await sleep(2000);
        continue;
      }
      if (sub.status === "done") return sub;
      say(sub.status === "queued" ? "queued (position " + sub.queue_position + ")\u2026"
          : "grading\u2026 " + Math.round((Date.now() - started) / 1000) + " s");
      await sleep(delay);
      delay = Math.min(2000, delay * 1.5);
    }
    return null;
  }

  function show(feedback, sub) {
    var r = sub.result;
    feedback.textContent = "";
    var secs = sub.seconds || {};
    feedback.appendChild(el("p", "grader-score", "Score: " + points(r.score) + " / " + points(r.max_score) +
      " (graded in " + (secs.grading || 0).toFixed(1) + " s, " +
      (secs.total || 0).toFixed(1) + " s after you submitted)"));
    feedback.appendChild(el("p", "grader-output", r.output));
    var list = el("ul", "grader-tests");
    r.tests.forEach(function (t) {
      var item = el("li", "grader-test grader-" + t.status);
      item.appendChild(el("strong", "", (t.status === "passed" ? "\u2713 " : "\u2717 ") + t.name));
      item.appendChild(document.createTextNode(" (" + points(t.score) + " / " + points(t.max_score) + ")"));
      if (t.status !== "passed") item.appendChild(el("pre", "grader-test-output", t.output));
      list.appendChild(item);
    });
    feedback.appendChild(list);
  }

  /* The exercise's due date for this learner (extension included) and the late policy,
   * from the grading service (nbgrader's gradebook); nothing shown without one. */
  async function showDeadline(root, service, identity, who) {
    if (identity.keyless) return; // the service would refuse: nothing to ask
    try {
      var query = "?exercise=" + encodeURIComponent(root.getAttribute("data-grader-exercise")) +
        (!identity.known && who() ? "&learner=" + encodeURIComponent(who()) : "");
      var reply = await fetch(service + "/api/deadline" + query, {headers: await identity.headers()});
      var d = reply.ok ? await reply.json() : null;
      if (!d || !d.due) return;
      var line = root.querySelector(".grader-deadline");
      line.textContent = "Due " + d.due.slice(0, 16).replace("T", " ") + " UTC; " + d.late_policy + ".";
      line.hidden = false;
    } catch (err) { /* no deadline shown: the form still works */ }
  }

  /* Points as every view prints them: the service's one rule (autograder/defaults.py,
   * points_text): the exact value rounded to 2 decimals, a tie away from zero. */
  function points(x) { return String(Number(x.toFixed(2))); }

  /* The rule for which graded submission counts (the service's recorded.py), in words:
   * the running service's (api/config), else the course's default, said to be one. */
  function ruleWords(config) {
    var rule = config ? config.recorded : DEFAULTS.recorded;
    var words = rule === "latest"
      ? "your newest graded submission made before the deadline is your grade, even if it scores less"
      : "your best graded submission is your grade: a worse one never lowers it";
    return "Grading rule: " + words + (config ? "." : " (the course's default: no grading service " +
      "answered, so the rule it runs with could not be read).");
  }

  /* What the running grading service says of itself (api/config: auth, recorded rule,
   * exercises), or null when none answers this page. */
  async function serviceConfig(service) {
    try {
      var reply = await fetch(service + "/api/config", {cache: "no-store"});
      return reply.ok ? await reply.json() : null;
    } catch (err) { return null; }
  }

  /* How this page says who the learner is: {known, headers()} where known is true when
   * the service decides it (the hub's sign-in, make serve's key) and the page names no one. */
  function identityOf(config) {
    var hub = window.courseHub;
    if (hub) return {known: true, headers: async function () { return (await hub()).headers; }};
    if (config && config.auth === "local") {
      return {known: true, keyless: !KEY, headers: async function () {
        return KEY ? {Authorization: "token " + KEY} : {};
      }};
    }
    return {known: false, headers: async function () { return {}; }};
  }

  /* The learner the service serves this page (api/me), or null (no key, a stale one). */
  async function knownLearner(service, identity) {
    try {
      var reply = await fetch(service + "/api/me", {headers: await identity.headers()});
      return reply.ok ? (await reply.json()).learner : null;
    } catch (err) { return null; }
  }

  var NO_KEY = "This page does not hold the key of the running make serve, so it can neither " +
    "submit nor show your submissions: open the course site from the address make serve printed last.";

  /* The learner's standing in words: the recorded grade and the latest graded submission. */
  function standingWords(s) {
    if (!s.recorded) return "No graded submission yet.";
    var r = s.recorded, text = "Your recorded grade: " + points(r.score) + " / " + points(r.max_score) +
      " (submitted " + r.submitted_at.slice(0, 16).replace("T", " ") + " UTC)" +
      (r.set_by ? ", set by your instructor (the autograder gave " + points(r.set_by.autograder) +
        ")." : ".");
    if (s.latest && (s.latest.id !== r.id || r.set_by)) {
      text += " Latest graded submission: " + points(s.latest.score) + " / " + points(s.latest.max_score) +
        " (" + s.latest.submitted_at.slice(0, 16).replace("T", " ") + " UTC).";
    }
    return text;
  }

  /* api/standing of ``exercise``: for the learner the service knows (``id`` empty), or,
   * from a service without identities, for ``id``; null when there is none to read. */
  async function fetchStanding(service, identity, exercise, id) {
    if ((!identity.known && !id) || identity.keyless) return null; // no learner yet, or no key
    try {
      var reply = await fetch(service + "/api/standing?exercise=" + encodeURIComponent(exercise) +
        (!identity.known && id ? "&learner=" + encodeURIComponent(id) : ""),
        {headers: await identity.headers()});
      return reply.ok ? await reply.json() : null;
    } catch (err) { return null; } // the form still works without it
  }

  async function loadStanding(root, service, identity, who) {
    var s = await fetchStanding(service, identity, root.getAttribute("data-grader-exercise"), who());
    if (s) root.querySelector(".grader-standing").textContent = standingWords(s);
    return s;
  }

  function when(iso) { return iso.slice(0, 16).replace("T", " ") + " UTC"; }

  /* Every submission of the learner's for this exercise, newest first, each with its
   * score and, opened, its feedback (api/submissions: only for a learner the service knows). */
  async function loadHistory(root, service, identity) {
    var box = root.querySelector(".grader-history");
    if (!identity.known || identity.keyless) return;
    var exercise = root.getAttribute("data-grader-exercise"), subs;
    try {
      var reply = await fetch(service + "/api/submissions", {headers: await identity.headers()});
      if (!reply.ok) return;
      subs = (await reply.json()).submissions.filter(function (s) { return s.exercise === exercise; });
    } catch (err) { return; }
    box.textContent = "";
    box.appendChild(el("h3", "grader-history-title", "Your submissions (" + subs.length + ")"));
    if (!subs.length) { box.appendChild(el("p", "", "None yet.")); return; }
    var list = el("ol", "grader-history-list");
    subs.forEach(function (sub) {
      var item = el("li", "grader-history-item"), details = el("details");
      var r = sub.result;
      // a late one says what it counts, as the submit cell does ("counted 0 / 10 (late)")
      var late = r && sub.late_penalty != null ? ", counted " +
        points(Math.max(0, r.score - sub.late_penalty)) + " / " + points(r.max_score) + " (late)" : "";
      details.appendChild(el("summary", "", when(sub.submitted_at) + ": " +
        (r ? points(r.score) + " / " + points(r.max_score) + late : sub.status === "replaced"
          ? "replaced by a newer submission before it was graded" : sub.status)));
      if (r) { var body = el("div", "grader-history-feedback"); show(body, sub); details.appendChild(body); }
      item.appendChild(details);
      list.appendChild(item);
    });
    box.appendChild(list);
  }

  /* Why this upload deserves a second look, or "": the released stub (it scores 0), or,
   * under the "latest" rule, an upload that replaces a recorded grade whatever it scores. */
  function uploadWarning(notebook, exercise, standing) {
    // Not a notebook's shape: no warning here, the service says what is wrong with it.
    var stub = Array.isArray(notebook && notebook.cells) && notebook.cells.some(function (c) {
      var meta = ((c && c.metadata) || {}).nbgrader || {};
      var src = c && Array.isArray(c.source) ? c.source.join("") : String((c && c.source) || "");
      return meta.grade_id === exercise && /raise NotImplementedError\(\)/.test(src);
    });
    var rec = standing && standing.recorded;
    var keeps = rec && standing.rule !== "latest";
    if (stub) {
      return "This notebook's answer cell is still the released stub (raise NotImplementedError()): " +
        "it would score 0" + (rec && !keeps ? " and replace your recorded " + points(rec.score) + " / " +
        rec.max_score : keeps ? "; your recorded grade stays " + points(rec.score) + " / " + points(rec.max_score) : "") +
        ". Choose the notebook you worked in, or press Submit again to send this one.";
    }
    if (rec && !keeps) {
      return "Under this course's rule your newest submission is your grade: this one replaces your " +
        "recorded " + points(rec.score) + " / " + points(rec.max_score) + ", even if it scores less. Press Submit " +
        "again to send it.";
    }
    return "";
  }

  async function init(root) {
    root.classList.add("grader");
    var service = serviceUrl(root);
    var config = await serviceConfig(service);
    var identity = identityOf(config), hub = window.courseHub;
    // fixed markup, no data in it
    if (!root.querySelector("form")) root.innerHTML = formMarkup(identity.known || !!LEARNER_GIVEN);
    root.querySelector(".grader-rule").textContent = ruleWords(config);
    var form = root.querySelector("form");
    var learner = root.querySelector("[name=learner]");
    var as = root.querySelector(".grader-as strong");
    if (as && LEARNER_GIVEN) as.textContent = LEARNER_GIVEN;
    var file = root.querySelector("[name=notebook]");
    var button = root.querySelector("button[type=submit]");
    var status = root.querySelector(".grader-status");
    var feedback = root.querySelector(".grader-feedback");
    if (hub) { // the hub says who you are, and "Graded as" says it again
      if (root.querySelector(".grader-as")) root.querySelector(".grader-as").remove();
    } else if (identity.known) { // make serve's one learner, as its service names it
      if (identity.keyless) status.textContent = NO_KEY;
      else {
        knownLearner(service, identity).then(function (name) {
          if (name && as) as.textContent = name;
          else if (!name) status.textContent = NO_KEY; // a key of an earlier make serve
        });
      }
    } else if (learner) {
      try { learner.value = learner.value || localStorage.getItem("grader-learner") || ""; } catch (e) {}
    }

    var who = function () {
      return identity.known ? "" : (LEARNER_GIVEN || (learner && learner.value.trim()));
    };
    // Drawn before the form shows: a line appearing above it would move the Submit button
    // from under a pointer already on its way there (only a reply later than
    // DEADLINE_WAIT_MS still can).
    var deadlineShown = showDeadline(root, service, identity, who);
    var standing = null, warned = null; // warned: the file the last warning was about
    var refresh = async function () {
      loadHistory(root, service, identity);
      standing = await loadStanding(root, service, identity, who);
    };
    refresh();
    if (learner) learner.addEventListener("change", refresh);
    file.addEventListener("change", function () { warned = null; });

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      feedback.textContent = "";
      status.textContent = "";
      var id = who();
      if (!identity.known && !LEARNER.test(id)) {
        status.textContent = "Enter your learner id: letters, digits and . _ @ - only.";
        return;
      }
      if (!file.files.length) { status.textContent = "Choose your .ipynb file first."; return; }
      if (!identity.known && !LEARNER_GIVEN) {
        try { localStorage.setItem("grader-learner", id); } catch (e) {}
      }
      button.disabled = true;
      try {
        var auth = await identity.headers();
        var notebook;
        try {
          notebook = JSON.parse(await file.files[0].text());
        } catch (err) {
          throw new Error(file.files[0].name + " is not a notebook file (it is not JSON).");
        }
        var exercise = root.getAttribute("data-grader-exercise");
        var warning = uploadWarning(notebook, exercise, standing);
        if (warning && warned !== file.files[0]) {
          warned = file.files[0];
          status.textContent = warning;
          return;
        }
        warned = null;
        status.textContent = "Sending " + file.files[0].name + "\u2026";
        var body = {exercise: exercise, notebook: notebook};
        if (!identity.known) body.learner = id; // only a service without identities reads it
        var sent;
        try {
          sent = await call(service + "/api/submissions", {
            method: "POST", headers: Object.assign({"Content-Type": "application/json"}, auth),
            body: JSON.stringify(body)});
        } catch (err) {
          throw new Error(err.message + (err.transient ? " It was not received: press Submit again to " +
            "resend (a resend replaces a copy still waiting, so nothing is graded twice)." : ""));
        }
        var received = "Received: submission " + sent.id + "; ";
        status.textContent = received + "queued (position " + sent.queue_position + ")\u2026";
        var sub = await follow(service + "/api/submissions/" + encodeURIComponent(sent.id), auth,
                               function (words) { status.textContent = received + words; });
        if (!sub) {
          status.textContent = received + "not graded yet. Reload this page later: it shows your " +
            "latest graded submission.";
          return;
        }
        status.textContent = "Graded" + (hub ? " as " + sub.learner : "") + ". Submission id: " + sub.id +
          (sent.late ? ". Late: " + sent.late + "." : "");
        show(feedback, sub);
        await refresh();
      } catch (err) {
        status.textContent = "Not graded: " + err.message;
      } finally {
        button.disabled = false;
      }
    });
    await Promise.race([deadlineShown, sleep(DEADLINE_WAIT_MS)]);
    form.hidden = false;
  }

  /* The exercise index: the learner's recorded grade of each exercise, one row each,
   * linked to its page (each exercise page is <name>.html beside the index). */
  async function progress(box) {
    var service = serviceUrl(box), config = await serviceConfig(service);
    var identity = identityOf(config);
    box.classList.add("grader-progress");
    box.textContent = "";
    box.appendChild(el("h2", "", "Your grades"));
    if (!config) {
      box.appendChild(el("p", "", "Your recorded grades show here while the course runs (make serve): " +
        "no grading service answered this page."));
      box.appendChild(el("p", "grader-rule", ruleWords(null)));
      return;
    }
    if (identity.keyless || (config.auth === "local" && !await knownLearner(service, identity))) {
      box.appendChild(el("p", "grader-status", NO_KEY)); // none, or an earlier make serve's
      return;
    }
    var table = el("table", "grader-progress-table"), head = el("tr");
    ["Exercise", "Your recorded grade"].forEach(function (t) { head.appendChild(el("th", "", t)); });
    table.appendChild(el("thead")).appendChild(head);
    var rows = table.appendChild(el("tbody"));
    var standings = await Promise.all(config.exercises.map(function (name) {
      return fetchStanding(service, identity, name, identity.known ? "" : LEARNER_GIVEN);
    }));
    for (var i = 0; i < config.exercises.length; i++) {
      var name = config.exercises[i], row = el("tr"), link = el("a", "", name), s = standings[i];
      link.href = encodeURIComponent(name) + ".html";
      row.appendChild(el("td")).appendChild(link);
      row.appendChild(el("td", "grader-progress-grade", !s ? "not known (enter your learner id on an " +
        "exercise page)" : s.recorded ? points(s.recorded.score) + " / " + points(s.recorded.max_score) +
        " (submitted " + when(s.recorded.submitted_at) + ")" : "no graded submission yet"));
      rows.appendChild(row);
    }
    box.appendChild(table);
    box.appendChild(el("p", "grader-rule", ruleWords(config)));
  }

  function start() {
    (window.courseLocal || Promise.resolve({})).then(fromLocal, function () {}).then(function () {
      document.querySelectorAll("[data-grader-exercise]").forEach(init);
      document.querySelectorAll("[data-grader-progress]").forEach(progress);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
