/* The class page: the theme the course site chose, and list.js on each learners' table.
 *
 * The site (pydata-sphinx-theme) keeps the reader's light/dark choice in this
 * origin's localStorage ("mode": light, dark or auto); the page follows it, and
 * the system's preference for "auto". Sorting and filtering are list.js's
 * (npm, served by the grading service); the "Show" select narrows rows by the
 * data-state the server wrote (late, short of full marks, not graded).
 */
(function () {
  "use strict";
  var mode = "auto";
  try { mode = window.localStorage.getItem("mode") || "auto"; } catch (err) { /* storage off */ }
  if (mode === "auto") {
    mode = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  document.documentElement.dataset.theme = mode;

  window.addEventListener("load", function () {
    if (!window.List) return;  // list.js missing: the tables stay plain and complete
    document.querySelectorAll(".learners").forEach(function (box) {
      var list = new window.List(box.id, {
        valueNames: ["learner", "recorded", "best", "latest", "submissions", "late", "activity",
                     "feedback"],
      });
      // list.js searches on keyup; a paste or the browser's clear button fires input only
      var search = box.querySelector("input.search");
      search.addEventListener("input", function () { list.search(search.value); });
      var show = box.querySelector("select.show");
      var count = box.querySelector(".shown");
      function counted() { count.textContent = list.matchingItems.length + " of " + list.items.length + " shown"; }
      show.addEventListener("change", function () {
        var want = show.value;
        if (want === "all") list.filter();
        else list.filter(function (item) { return item.elm.dataset.state.split(" ").indexOf(want) >= 0; });
        counted();
      });
      list.on("updated", counted);
      counted();
    });
  });
})();
