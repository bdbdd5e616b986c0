// skillwire: the job page's live timeline.
// Follows the job's server-sent events (data-stream), appends the rendered timeline and
// model-call rows it receives (once each, by seq), fetches the state panel again when
// the job was saved (data-state, through htmx), and stops when the job has ended.
// The browser reconnects by itself with Last-Event-ID after a dropped connection.
(function () {
  "use strict";

  function append(tbody, html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    var row = template.content.firstElementChild;
    if (!row || !tbody) return;
    var seq = row.getAttribute("data-seq");
    if (seq && tbody.querySelector('[data-seq="' + seq + '"]')) return;
    var empty = tbody.querySelector(".empty");
    if (empty) empty.remove();
    tbody.appendChild(row);
  }

  function follow(el) {
    var source = new EventSource(el.getAttribute("data-stream"));
    var events = document.getElementById("timeline-rows");
    var calls = document.getElementById("call-rows");
    var busy = false;
    var again = false;

    // Fetch the state panel again; a change announced while a fetch is under way is
    // fetched once more after it, so the panel ends on the latest state.
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      var done = function () {
        busy = false;
        if (again) { again = false; refresh(); }
      };
      htmx.ajax("GET", el.getAttribute("data-state"), { target: "#job-state", swap: "outerHTML" })
        .then(done, done);
    }

    source.addEventListener("open", function () { el.setAttribute("data-live", "on"); });
    source.addEventListener("error", function () {
      if (el.getAttribute("data-live") !== "ended") el.setAttribute("data-live", "reconnecting");
    });
    source.addEventListener("row", function (e) { append(events, e.data); });
    source.addEventListener("call", function (e) { append(calls, e.data); });
    source.addEventListener("state", refresh);
    source.addEventListener("end", function () {
      source.close();
      el.setAttribute("data-live", "ended");
      refresh();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-stream]").forEach(follow);
  });
})();
