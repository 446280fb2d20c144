/* Run a lesson: links into the local JupyterLab, and thebe in the page.
 *
 * The bar at the top of each lesson (book/_ext/course_run.py) links to the same
 * lesson in the JupyterLab that `make serve` starts, and has a button that turns
 * the page's code cells into live cells running on that JupyterLab's kernels.
 * thebe is loaded from this site (_static/thebe/, installed from the npm registry
 * at build time) only when the button is pressed; nothing comes from elsewhere.
 *
 * JupyterLab's address is http://<this host>:<its default port> (window.COURSE_DEFAULTS,
 * _static/course-defaults.js, written by the site build) unless the page URL says
 * ?jupyter=<url>; its token (random for every `make serve`) comes in the site URL
 * that `make serve` prints, ?token=<token>. Both are remembered in this site's
 * localStorage, so every page and every new tab of the site has them.
 *
 * Under `make hub` the site is served by the hub's "course" service
 * (/services/course/...). Then the page asks that service for the signed-in
 * user and a hub token (window.courseHub(), also used by grader.js), starts the
 * user's server through the hub's API if it is not running, and runs the code
 * on it, at the URL the hub gives (its own origin, <name>.<hub domain>), with
 * that token in an Authorization header and in the kernel WebSocket's URL
 * (never in the page's URL); the JupyterLab links go through /hub/user-redirect/.
 */
(function () {
  "use strict";
  var DEFAULTS = window.COURSE_DEFAULTS;
  var SCRIPT = document.currentScript && document.currentScript.src;
  var STATIC = SCRIPT ? SCRIPT.replace(/[^/]*(\?.*)?$/, "") : "_static/";

  function setting(name, fallback) {
    var fromUrl = new URLSearchParams(window.location.search).get(name);
    try {
      if (fromUrl) window.localStorage.setItem("course-jupyter-" + name, fromUrl);
      else fromUrl = window.localStorage.getItem("course-jupyter-" + name);
    } catch (err) { /* storage disabled: the URL parameter still works for this page */ }
    return fromUrl || fallback;
  }

  // Under the hub: "<prefix>services/course/..." (prefix is the hub's base URL).
  var HUB = window.location.pathname.match(/^(.*?\/)services\/course\//);
  var HUB_PREFIX = HUB ? HUB[1] : null;
  // Pages say what fits where they are read (course-run.css: .course-hub-only, .course-local-only).
  if (HUB) document.documentElement.classList.add("course-under-hub");
  var hubSession = null;

  function cookie(name) {
    var found = document.cookie.split("; ").filter(function (c) { return c.indexOf(name + "=") === 0; })[0];
    return found ? decodeURIComponent(found.slice(name.length + 1)) : "";
  }

  /* The signed-in user and the token the course service holds for them. The
   * request carries the _xsrf cookie's value, as JupyterHub's HubOAuth requires. */
  window.courseHub = !HUB ? null : function () {
    if (!hubSession) {
      hubSession = fetch(HUB_PREFIX + "services/course/api/session", {
        headers: { "X-XSRFToken": cookie("_xsrf") }, credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error("not signed in to the hub (reload the page)");
          return r.json();
        })
        .then(function (s) {
          s.prefix = HUB_PREFIX;
          s.headers = { Authorization: "token " + s.token };
          return s;
        });
      hubSession.catch(function () { hubSession = null; });
    }
    return hubSession;
  };

  /* Start the user's server through the hub's API unless it runs; wait until ready. */
  async function hubServer(status) {
    var s = await window.courseHub();
    var api = HUB_PREFIX + "hub/api/users/" + encodeURIComponent(s.user);
    for (var i = 0; i < 300; i++) {
      var user = await (await fetch(api, { headers: s.headers })).json();
      var server = (user.servers || {})[""];
      // The server's own origin (<name>.<hub domain>): its URL from the hub, absolute.
      if (server && server.ready) { s.server = new URL(server.url, window.location.href).href; return s; }
      if (!server || !server.pending) {
        var started = await fetch(api + "/server", { method: "POST", headers: s.headers });
        if (!started.ok && started.status !== 400) throw new Error("the hub did not start your server (HTTP " + started.status + ")");
      }
      status.textContent = "Starting your JupyterLab server\u2026";
      await new Promise(function (r) { setTimeout(r, 1000); });
    }
    throw new Error("your server did not start in time");
  }

  /* What the running `make serve` says (scripts/serve.py writes _static/course-local.json
   * at start): its JupyterLab's and grading service's addresses and its learner, for a
   * page opened without the printed query string ({} when there is none: another host,
   * the hub, or make serve stopped). Never the token. */
  window.courseLocal = HUB ? Promise.resolve({}) : fetch(STATIC + "course-local.json", { cache: "no-store" })
    .then(function (r) { return r.ok ? r.json() : {}; })
    // only for the pages that make serve serves itself (another server of this checkout's
    // site, a test's say, is not that make serve's)
    .then(function (local) { return String(local.sitePort) === window.location.port ? local : {}; })
    .catch(function () { return {}; });

  var host = window.location.hostname || DEFAULTS.host;
  var FROM_URL = new URLSearchParams(window.location.search).get("jupyter");
  // The page URL first, then the running make serve, then what this site last remembered.
  var BASE = setting("jupyter", "http://" + host + ":" + DEFAULTS.jupyterPort).replace(/\/+$/, "");
  var TOKEN = setting("token", DEFAULTS.jupyterToken);
  var located = window.courseLocal.then(function (local) {
    if (!FROM_URL && local.jupyter) BASE = String(local.jupyter).replace(/\/+$/, "");
  });

  function labUrl(path) {
    if (HUB) return HUB_PREFIX + "hub/user-redirect/lab/tree/" + path.split("/").map(encodeURIComponent).join("/");
    var tree = path.split("/").map(encodeURIComponent).join("/");
    return BASE + "/lab/tree/" + tree + (TOKEN ? "?token=" + encodeURIComponent(TOKEN) : "");
  }

  function loadOnce(tag, attrs) {
    return new Promise(function (resolve, reject) {
      var node = document.createElement(tag);
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      node.onload = resolve;
      node.onerror = function () { reject(new Error("could not load " + (attrs.src || attrs.href))); };
      document.head.appendChild(node);
    });
  }

  function darkMode() {
    return document.documentElement.getAttribute("data-theme") === "dark";
  }

  /* Mark the page's code cells the way thebe looks for them: every cell with a
   * visible source gets an output placeholder, so sources and outputs pair up. */
  function markCells() {
    var count = 0;
    document.querySelectorAll("article div.cell").forEach(function (cell) {
      var pre = cell.querySelector(".cell_input pre");
      if (!pre) return; // output-only cell (source removed on purpose)
      pre.setAttribute("data-executable", "true");
      pre.setAttribute("data-language", "python");
      var output = cell.querySelector(".cell_output");
      if (!output) {
        output = document.createElement("div");
        output.className = "cell_output docutils container";
        cell.appendChild(output);
      }
      output.setAttribute("data-output", "");
      count += 1;
    });
    return count;
  }

  /* Whether a server answers this page: "ok"; "refused" (it answers, but with
   * 401/403, or without the CORS header that lets this site read it); "down"
   * (nothing answers: connection refused). A failed CORS read and a server that is
   * not running look alike to fetch(); an opaque no-cors request tells them apart. */
  async function reach(url) {
    try {
      var reply = await fetch(url, { cache: "no-store" });
      if (reply.ok) return { state: "ok", status: reply.status };
      return { state: reply.status === 401 || reply.status === 403 ? "refused" : "error", status: reply.status };
    } catch (err) {
      try {
        await fetch(url, { mode: "no-cors", cache: "no-store" });
        return { state: "refused", status: 0 };
      } catch (err2) {
        return { state: "down", status: 0 };
      }
    }
  }
  window.CourseServers = { reach: reach };

  /* JupyterLab from this page: "ok"; "token" (it accepts this site, whose /api it
   * answers without a token, but refuses the token: jupyter_server's 403 carries
   * no CORS header, so it looks like a refused origin to fetch); or reach()'s
   * "refused" (this site's origin is not allowed) or "down". */
  async function diagnose() {
    var query = TOKEN ? "?token=" + encodeURIComponent(TOKEN) : "";
    var found = await reach(BASE + "/api/status" + query);
    if (found.state === "ok") return found;
    var open = await reach(BASE + "/api");
    return open.state === "ok" ? { state: "token", status: found.status || 403 } : open;
  }

  /* What the learner should do when JupyterLab is not usable from this page. */
  function jupyterProblem(found) {
    if (found.state === "down") {
      return "Nothing answers at " + BASE + ": the course JupyterLab is not running. Start the course " +
        "with make serve (in the course's folder) and keep it running.";
    }
    if (found.state === "token") {
      return "The course JupyterLab at " + BASE + " is running but refused this page's token: make " +
        "serve makes a new token each time it starts. Open the site from the course site address " +
        "that the running make serve printed last.";
    }
    if (found.state === "refused") {
      return "The course JupyterLab at " + BASE + " is running but does not accept this site (" +
        window.location.origin + "): it accepts only the site address make serve printed with it. " +
        "Open the site from that address.";
    }
    return "The course JupyterLab at " + BASE + " answered HTTP " + found.status +
      "; see _build/logs/jupyterlab.log.";
  }

  function sessionsUrl(base, token, id) {
    return base.replace(/\/+$/, "") + "/api/sessions" + (id ? "/" + encodeURIComponent(id) : "") +
      (token ? "?token=" + encodeURIComponent(token) : "");
  }

  /* Jupyter hands back the running session of a path instead of starting one, so a
   * kernel left at this page's path (an earlier visit, a reload, another tab of this
   * page) would carry its names and settings (jax_num_cpu_devices can only be set
   * before JAX starts) into this run: shut it down first. */
  async function pageSessions(base, token, path) {
    var reply = await fetch(sessionsUrl(base, token), { cache: "no-store" });
    if (!reply.ok) throw new Error("JupyterLab did not list its kernels (HTTP " + reply.status + ")");
    return (await reply.json()).filter(function (s) { return s.path === path; });
  }

  /* A page that goes sends its kernel's DELETE as it leaves (shutDownOnLeave) and
   * notes the session here; the page that follows (a reload, another tab of it) waits
   * for that DELETE to land instead of sending a second one: two DELETEs of one
   * session cross, and the loser's 404 carries no CORS header (a console error). */
  var LEAVING = "course-run-leaving:";
  var LEAVING_MS = 10000;  // a kernel's shutdown on a loaded machine: seconds

  function leavingSince(id) {
    try { return Number(window.localStorage.getItem(LEAVING + id)) || 0; } catch (e) { return 0; }
  }

  /* Whether a DELETE of ``id`` was noted less than LEAVING_MS ago (a note "from the
   * future", after the clock was set back, counts as old). */
  function stillLeaving(id) {
    var age = Date.now() - leavingSince(id);
    return age >= 0 && age < LEAVING_MS;
  }

  function noteLeaving(id) {
    try {
      window.localStorage.setItem(LEAVING + id, String(Date.now()));
    } catch (e) { /* storage off: the next page may then send a second DELETE */ }
  }

  function forgetOldNotes() {
    try {
      Object.keys(window.localStorage).forEach(function (key) {
        if (key.indexOf(LEAVING) === 0 && !stillLeaving(key.slice(LEAVING.length))) {
          window.localStorage.removeItem(key);
        }
      });
    } catch (e) { /* storage off: nothing was noted */ }
  }

  /* The sessions at ``path`` once those a leaving page is deleting are gone (waiting at
   * most LEAVING_MS from its note). */
  async function sessionsLeftBehind(base, token, path, status) {
    var found = await pageSessions(base, token, path);
    while (found.some(function (s) { return stillLeaving(s.id); })) {
      status.textContent = "Waiting for the kernel this page ran on before to shut down...";
      await new Promise(function (r) { setTimeout(r, 250); });
      found = await pageSessions(base, token, path);
    }
    forgetOldNotes();
    return found;
  }

  async function shutDownPageKernels(base, token, path, status) {
    // A DELETE can still cross one a closing page sent without a note, or one of another
    // page starting at the same moment (its 404 carries no CORS header, so fetch rejects
    // it): ignore it, and look again.
    await Promise.all((await sessionsLeftBehind(base, token, path, status)).map(function (s) {
      noteLeaving(s.id);
      return fetch(sessionsUrl(base, token, s.id), { method: "DELETE" }).catch(function () {});
    }));
    if ((await pageSessions(base, token, path)).length) {
      throw new Error("the kernel this page ran on before could not be shut down");
    }
  }

  /* Shut the page's kernel down when the page goes (each holds its own JAX). */
  async function shutDownOnLeave(base, token, path) {
    var mine = (await pageSessions(base, token, path))[0];
    if (!mine) return;
    window.addEventListener("pagehide", function () {  // once: a page back from the cache reloads
      noteLeaving(mine.id);
      fetch(sessionsUrl(base, token, mine.id), { method: "DELETE", keepalive: true }).catch(function () {});
    }, { once: true });
    // Back to this page from the browser's cache: its kernel is gone, so start over.
    window.addEventListener("pageshow", function (evt) { if (evt.persisted) window.location.reload(); });
  }

  async function runHere(button, status) {
    button.disabled = true;
    await located;
    if (!HUB) { // under the hub, hubServer() below starts and finds the learner's own server
      status.textContent = "Connecting to the course JupyterLab at " + BASE + "...";
      var found = await diagnose();
      if (found.state !== "ok") {
        button.disabled = false;
        status.textContent = "Could not start the code runner. " + jupyterProblem(found);
        return;
      }
    }
    status.textContent = "Loading the code runner...";
    try {
      await loadOnce("link", { rel: "stylesheet", href: STATIC + "thebe/thebe.css" });
      // its code/pre font would restyle the whole page: course-run.css restores it outside its cells
      document.documentElement.classList.add("course-thebe-styles");
      await loadOnce("script", { src: STATIC + "thebe/index.js" });
      var cells = markCells();
      var base = BASE, token = TOKEN;
      if (HUB) {
        var session = await hubServer(status);
        base = session.server;  // with its trailing slash: thebe appends "api/..." to it
        token = session.token;
      }
      var path = button.getAttribute("data-kernel-path") || "lessons/page.ipynb";
      await shutDownPageKernels(base, token, path, status);
      status.textContent = "Starting a new Python kernel for this page on " + base + "...";
      window.thebe.on("status", function (evt, data) {
        if (data && data.subject === "kernel" && data.status) {
          status.textContent = "Kernel: " + data.status;
        }
      });
      var started = await window.thebe.bootstrap({
        useBinder: false,
        useJupyterLite: false,
        requestKernel: true,
        mountActivateWidget: false,
        mountStatusWidget: false,
        mountRestartAllButton: false,
        predefinedOutput: true,
        mathjaxUrl: "", // no MathJax from a CDN; the lessons print no LaTeX
        serverSettings: {
          baseUrl: base,
          wsUrl: base.replace(/^http/, "ws"),
          token: token,
          appendToken: true,
        },
        kernelOptions: { name: "python3", path: path },
        codeMirrorConfig: { theme: darkMode() ? "darcula" : "idea", mode: "python" },
      });
      if (!started || !started.session) throw new Error("no kernel session");
      shutDownOnLeave(base, token, path).catch(function () {});
      document.body.classList.add("course-run-live");
      status.textContent = "Ready: " + cells + " cells are live. Edit a cell and press Shift-Enter or its \u201crun\u201d button.";
      button.hidden = true;
    } catch (err) {
      button.disabled = false;
      if (HUB) {
        status.textContent = "Could not start the code runner: " + (err && err.message ? err.message : err) +
          ". Press the button to try again; if it fails again, reload the page (the hub may ask you to sign in).";
        return;
      }
      var now = await diagnose();
      status.textContent = "Could not start the code runner: " + (err && err.message ? err.message : err) +
        ". " + (now.state === "ok" ? "JupyterLab answers at " + BASE + "; press the button to try again, " +
        "and see _build/logs/jupyterlab.log if it fails again." : jupyterProblem(now));
    }
  }

  function init() {
    var links = function () {
      document.querySelectorAll("a.course-run-lab").forEach(function (a) {
        a.href = labUrl(a.getAttribute("data-lab-path"));
      });
    };
    links();
    located.then(links);
    document.querySelectorAll("button.course-run-here").forEach(function (button) {
      var status = button.parentNode.querySelector(".course-run-status");
      button.hidden = false;
      button.addEventListener("click", function () { runHere(button, status); });
    });
  }

  /* The theme's icon buttons and sidebar toggles, named so that screen readers
   * (and axe-core) get a name that contains what is shown. */
  function nameControls() {
    document.querySelectorAll(".search-button-field[aria-label]").forEach(function (button) {
      button.removeAttribute("aria-label"); // its text ("Search Ctrl+K") names it
    });
    document.querySelectorAll("details.hide > summary[aria-label]").forEach(function (summary) {
      summary.removeAttribute("aria-label"); // a folded code cell: its text ("Show code cell source") names it
    });
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      var modes = [];
      button.querySelectorAll("[title], title").forEach(function (t) {
        var name = t.getAttribute("title") || t.textContent;
        if (name && modes.indexOf(name) < 0) modes.push(name);
      });
      button.setAttribute("aria-label", "Color mode" + (modes.length ? ": " + modes.join(", ") : ""));
    });
    document.querySelectorAll("nav summary").forEach(function (summary) {
      if (summary.textContent.trim() || summary.getAttribute("aria-label")) return;
      var link = summary.parentNode.parentNode.querySelector("a");
      summary.setAttribute("aria-label", "Show or hide the sections of " +
        (link ? link.textContent.trim() : "this part"));
    });
  }

  /* Tables and outputs that scroll sideways (on a phone) can be scrolled with the
   * keyboard too. */
  function focusableScrollers() {
    document.querySelectorAll(".bd-article table, .bd-article pre").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1 && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
      }
    });
  }

  /* Under the hub: the first code a learner runs on a lesson's page is recorded for
   * them, so the instructors' class page shows which lessons each learner ran code
   * on. The grading service takes who from the hub token, never from the body. */
  var LESSON = window.location.pathname.match(/\/lessons\/([A-Za-z0-9_]+)\.html$/);
  var runRecorded = false;
  function recordRun() {
    if (!HUB || !LESSON || runRecorded) return;
    runRecorded = true;
    window.courseHub().then(function (s) {
      return fetch(HUB_PREFIX + "services/grader/api/runs", { method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, s.headers),
        body: JSON.stringify({ lesson: LESSON[1] }) });
    }).then(function (r) { if (!r.ok) runRecorded = false; }, function () { runRecorded = false; });
  }
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest(".thebe-run-button")) recordRun();
  }, true);
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && e.shiftKey && e.target.closest && e.target.closest(".thebe-cell")) recordRun();
  }, true);

  /* Under the hub, instructors (the grading service says who is one) find the class
   * page in the site's navigation; learners never get the link (nor the page). */
  function instructorLink() {
    if (!HUB) return;
    window.courseHub().then(function (s) {
      return fetch(HUB_PREFIX + "services/grader/api/me", { headers: s.headers });
    }).then(function (r) { return r.ok ? r.json() : null; }).then(function (me) {
      if (!me || !me.instructor) return;
      var nav = document.querySelector("nav.bd-links") || document.querySelector(".bd-sidebar-primary") ||
        document.body;
      var p = document.createElement("p");
      p.className = "course-instructors";
      var a = document.createElement("a");
      a.href = HUB_PREFIX + "services/grader/class";
      a.textContent = "The class (instructors)";
      p.appendChild(a);
      nav.insertBefore(p, nav.firstChild);
    }).catch(function () { /* not signed in: the hub's sign-in comes first */ });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", instructorLink);
  else instructorLink();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  window.addEventListener("load", function () { nameControls(); focusableScrollers(); });
  window.addEventListener("resize", focusableScrollers);
})();
