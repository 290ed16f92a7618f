// The dashboard's part for limits and schedules, as a piece of the page's script
// (dashboard_script.ts puts it inside its function, so it uses that one's helpers: $,
// el, button, act, secs, writable). A tube's limits show in its row ("5 at once,
// 100/60s, 3 held") with a button to set them; the schedules get a table of their own,
// with their next and last due times, and a form to add one. Values are written with
// textContent only. (Plain ES2017 in a String.raw literal: no backticks or dollar-braces.)

export const DASHBOARD_FLOW_JS = String.raw`
  // a tube's limits (set-concurrency, set-rate) and the ready jobs they hold back, or "-"
  function limitsText(t) {
    var l = t.limits;
    if (!l) return "-";
    var out = [];
    if (l.concurrency) out.push(l.concurrency + " at once");
    if (l.rateCount) out.push(l.rateCount + "/" + l.rateWindowSec + "s");
    if (t.heldJobs) out.push(t.heldJobs + " held");
    return out.join(", ");
  }

  function limitsButton(name, r) {
    return button("limits", "limits", function () {
      var l = r.t && r.t.limits;
      var c = window.prompt("Most jobs of " + name + " reserved at once (0: no limit)", l ? l.concurrency : 0);
      if (c === null) return;
      var n = window.prompt("Most reservations per window (0: no rate limit)", l ? l.rateCount : 0);
      if (n === null) return;
      var w = Number(n) > 0 ? window.prompt("The window, seconds", l && l.rateWindowSec ? l.rateWindowSec : 60) : "0";
      if (w === null) return;
      act("/api/tubes/" + encodeURIComponent(name) + "/limits",
        { concurrency: Number(c), rateCount: Number(n), rateWindow: Number(w) });
    });
  }

  // a due time (Unix seconds) from now: "in 42s", "3m ago", "-" for none
  function dueText(sec, now) {
    if (!sec) return "-";
    return sec >= now ? "in " + secs(sec - now) : secs(now - sec) + " ago";
  }

  var shownSchedules = "";

  // Rows are rebuilt only when the schedules change (a button is not swapped out under a
  // click); their due times are updated in place.
  function schedules(o) {
    var list = o.schedules || [];
    $("#schedule-count").textContent = "(" + list.length + ")";
    $("#schedule-form button").disabled = !writable;
    var body = $("#schedule-list tbody");
    var key = JSON.stringify([writable, list.map(function (s) { return [s.name, s.tube, s.spec, s.pri, s.size]; })]);
    if (key !== shownSchedules) {
      shownSchedules = key;
      body.replaceChildren();
      list.forEach(function (s) {
        var tr = el("tr");
        tr.dataset.schedule = s.name;
        [["name", s.name], ["tube", s.tube, "text"], ["spec", s.spec, "text"], ["next", ""], ["last", ""], ["pri", s.pri],
          ["size", s.size]].forEach(function (c) {
          var td = el("td", c[1], c[2]);
          td.dataset.col = c[0];
          tr.appendChild(td);
        });
        var a = el("td", null, "actions");
        a.appendChild(button("unschedule", "unschedule", function () {
          if (window.confirm("Remove the schedule " + s.name + "?")) {
            act("/api/schedules/" + encodeURIComponent(s.name) + "/delete");
          }
        }));
        tr.appendChild(a);
        body.appendChild(tr);
      });
    }
    list.forEach(function (s, i) {
      var cells = body.children[i].children;
      cells[3].textContent = dueText(s.nextDueSec, o.nowSec);
      cells[3].title = new Date(s.nextDueSec * 1000).toISOString();
      cells[4].textContent = dueText(s.lastDueSec, o.nowSec);
    });
  }

  function scheduleForm() {
    $("#schedule-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = ev.target.elements;
      act("/api/schedules/" + encodeURIComponent(f.name.value) + "/set", {
        tube: f.tube.value, spec: f.spec.value, pri: Number(f.pri.value), ttr: Number(f.ttr.value), body: f.body.value,
      });
    });
  }
`;
