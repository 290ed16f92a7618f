// The dashboard's script, embedded as a string (see dashboard_page.ts). It polls
// /api/overview, keeps a few minutes of samples for the chart and the per-tube rates,
// and sends write actions as JSON POSTs with the token in a header. Every value from
// the server is written with textContent: a job body or tube name is never markup.
// (Plain ES2017 in a String.raw literal: no backticks or dollar-braces inside.) The part
// for limits and schedules is dashboard_flow.ts's, put inside the same function.
import { DASHBOARD_FLOW_JS } from "./dashboard_flow.ts";

export const DASHBOARD_JS = String.raw`
"use strict";
(function () {
  var POLL_MS = 2000, KEEP = 150;
  var samples = [];
  var prev = null;
  var prevAt = 0;
  var browsing = null;
  var shownJobs = "";
  var writable = false;
  var $ = function (sel) { return document.querySelector(sel); };

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function token() { return sessionStorage.getItem("tubeway-token") || ""; }
  function status(msg, bad) { var s = $("#status"); s.textContent = msg; s.className = bad ? "err" : ""; }
  function secs(s) {
    if (s < 1) return s > 0 ? "<1s" : "0s";
    if (s < 120) return Math.round(s) + "s";
    if (s < 7200) return Math.round(s / 60) + "m";
    return Math.round(s / 3600) + "h";
  }
  function api(path) {
    return fetch(path, { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error(path + ": HTTP " + r.status);
      return r.json();
    });
  }
  function act(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer " + token() },
      body: JSON.stringify(body || {}),
    }).then(function (r) {
      return r.json().then(function (j) {
        var msg = j.reply || j.error || ("HTTP " + r.status);
        status(path.replace("/api/", "") + ": " + msg, !r.ok);
        return refresh();
      });
    }).catch(function (e) { status(String(e), true); });
  }
  // actions that belong together (a button and its input) wrap as one
  function group() {
    var g = el("span", null, "group");
    for (var i = 0; i < arguments.length; i++) g.appendChild(arguments[i]);
    return g;
  }
  function button(label, action, onClick) {
    var b = el("button", label);
    b.dataset.action = action;
    b.disabled = !writable;
    b.addEventListener("click", onClick);
    return b;
  }

  function cards(o) {
    var c = $("#cards");
    c.replaceChildren();
    var items = [
      ["ready", o.jobs.ready], ["reserved", o.jobs.reserved], ["delayed", o.jobs.delayed],
      ["buried", o.jobs.buried], ["urgent", o.jobs.urgent], ["tubes", o.tubeCount],
      ["connections", o.connections.current], ["producers", o.connections.producers],
      ["workers", o.connections.workers], ["waiting", o.connections.waiting],
      ["total jobs", o.totalJobs], ["timeouts", o.jobTimeouts],
    ];
    items.forEach(function (it) {
      var d = el("div", null, "card");
      d.dataset.stat = it[0];
      d.appendChild(el("b", it[1]));
      d.appendChild(el("span", it[0]));
      c.appendChild(d);
    });
  }

  function chart() {
    var svg = $("#chart");
    var ns = "http://www.w3.org/2000/svg";
    svg.replaceChildren();
    var max = 1;
    samples.forEach(function (s) { max = Math.max(max, s.ready, s.reserved, s.buried); });
    ["ready", "reserved", "buried"].forEach(function (k) {
      var pts = samples.map(function (s, i) {
        var x = KEEP > 1 ? (600 * (KEEP - samples.length + i)) / (KEEP - 1) : 0;
        var y = 135 - (130 * s[k]) / max;
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      var line = document.createElementNS(ns, "polyline");
      line.setAttribute("points", pts.join(" "));
      line.setAttribute("stroke", getComputedStyle(document.documentElement).getPropertyValue("--" + k));
      line.dataset.series = k;
      svg.appendChild(line);
    });
    $("#chart-max").textContent = "max " + max + ", last " + Math.round((samples.length * POLL_MS) / 1000) + "s";
  }

  var COLS = ["name", "ready", "reserved", "delayed", "buried", "urgent", "waiting", "put-rate", "delete-rate",
    "oldest", "paused", "retry", "limits"];
  var rows = {};

  // A tube's row is made once and then updated in place, so that what someone is typing
  // into its inputs (kick bound, pause seconds) survives the refreshes.
  function makeRow(name) {
    var r = { tr: el("tr"), cells: {}, t: null, buttons: [] };
    r.tr.dataset.tube = name;
    COLS.forEach(function (c) { var td = el("td"); td.dataset.col = c; r.cells[c] = td; r.tr.appendChild(td); });
    var a = el("td", null, "actions");
    var path = "/api/tubes/" + encodeURIComponent(name);
    var browse = el("button", "browse");
    browse.dataset.action = "browse";
    browse.addEventListener("click", function () { browse_(name, r.t && r.t.buried ? "buried" : "ready"); });
    a.appendChild(group(browse));
    var bound = el("input");
    bound.type = "number"; bound.min = "1"; bound.value = "1"; bound.setAttribute("aria-label", "kick bound");
    r.buttons.push(button("kick", "kick", function () { act(path + "/kick", { bound: Number(bound.value) || 1 }); }));
    a.appendChild(group(r.buttons[0], bound));
    r.resume = button("resume", "resume", function () { act(path + "/pause", { seconds: 0 }); });
    r.secs = el("input");
    r.secs.type = "number"; r.secs.min = "1"; r.secs.value = "60"; r.secs.setAttribute("aria-label", "pause seconds");
    r.pause = button("pause", "pause", function () { act(path + "/pause", { seconds: Number(r.secs.value) || 60 }); });
    r.buttons.push(r.resume, r.pause);
    a.appendChild(group(r.resume, r.pause, r.secs));
    // extensions (docs/extensions.md): empty the tube, set its retry policy
    var empty = button("empty", "empty", function () {
      if (window.confirm("Delete every ready, delayed and buried job of " + name + "?")) act(path + "/empty");
    });
    var retry = button("retry", "retry", function () {
      var p = r.t && r.t.policy;
      var max = window.prompt("Attempts before a job goes to the dead-letter tube (0: no limit)", p ? p.maxAttempts : 5);
      if (max === null) return;
      var dead = window.prompt("Dead-letter tube", p && p.deadTube ? p.deadTube : name + "-dead");
      if (dead === null) return;
      var base = window.prompt("Backoff base in seconds (0: none)", p ? p.backoffBaseSec : 0);
      if (base === null) return;
      var cap = window.prompt("Backoff cap in seconds (0: no cap)", p ? p.backoffCapSec : 3600);
      if (cap === null) return;
      act(path + "/dlq", { maxAttempts: Number(max), deadTube: dead })
        .then(function () { return act(path + "/backoff", { base: Number(base), cap: Number(cap) }); });
    });
    var limits = limitsButton(name, r);
    r.buttons.push(empty, retry, limits);
    a.appendChild(group(empty, retry, limits));
    r.tr.appendChild(a);
    return r;
  }

  function tubes(o) {
    var body = $("#tubes tbody");
    var before = {};
    if (prev) prev.tubes.forEach(function (t) { before[t.name] = t; });
    // rates over the time between this page's own polls (uptime is in whole seconds)
    var dt = prev ? Math.max(0.001, (performance.now() - prevAt) / 1000) : 0;
    $("#tube-count").textContent = o.tubeCount > o.tubes.length
      ? "(" + o.tubes.length + " of " + o.tubeCount + " shown)" : "(" + o.tubeCount + ")";
    var seen = {};
    o.tubes.forEach(function (t, i) {
      seen[t.name] = true;
      var r = rows[t.name] || (rows[t.name] = makeRow(t.name));
      r.t = t;
      var p = before[t.name];
      var putRate = p && dt ? Math.max(0, (t.totalJobs - p.totalJobs) / dt) : 0;
      var delRate = p && dt ? Math.max(0, (t.cmdDelete - p.cmdDelete) / dt) : 0;
      var values = [t.name, t.ready, t.reserved, t.delayed, t.buried, t.urgent, t.waiting, putRate.toFixed(1),
        delRate.toFixed(1), t.ready ? secs(t.oldestReadyS) : "-", t.pause ? secs(t.pauseTimeLeft) : "no",
        retryText(t.policy), limitsText(t)];
      COLS.forEach(function (c, k) {
        var v = String(values[k]);
        if (r.cells[c].textContent !== v) r.cells[c].textContent = v;
      });
      r.resume.hidden = !t.pause;
      r.pause.hidden = r.secs.hidden = !!t.pause;
      r.buttons.forEach(function (b) { b.disabled = !writable; });
      // move only rows that are out of place (moving a row would take the focus from its inputs)
      if (body.children[i] !== r.tr) body.insertBefore(r.tr, body.children[i] || null);
    });
    Object.keys(rows).forEach(function (name) {
      if (!seen[name]) {
        rows[name].tr.remove();
        delete rows[name];
      }
    });
  }

  // "3 → dead, backoff 5-60s": a tube's retry policy (set-dlq, set-backoff), or "-"
  function retryText(p) {
    if (!p) return "-";
    var out = [];
    if (p.maxAttempts) out.push(p.maxAttempts + " \u2192 " + p.deadTube);
    if (p.backoffBaseSec) out.push("backoff " + p.backoffBaseSec + "-" + (p.backoffCapSec || "\u221e") + "s");
    return out.join(", ");
  }

  function browse_(tube, state) {
    browsing = { tube: tube, state: state };
    return jobs();
  }

  function jobs() {
    if (!browsing) return Promise.resolve();
    var b = browsing;
    $("#browser").hidden = false;
    $("#browse-tube").textContent = b.tube;
    document.querySelectorAll("#browser .tabs button").forEach(function (x) {
      x.className = x.dataset.state === b.state ? "on" : "";
    });
    return api("/api/tubes/" + encodeURIComponent(b.tube) + "/jobs?state=" + b.state + "&limit=50").then(function (l) {
      $("#browse-total").textContent = l.total + " " + b.state + (l.total > l.jobs.length ? ", first " + l.jobs.length + " shown" : "");
      // Rows are rebuilt only when the jobs listed change, so a button is not swapped out
      // under a click; ages and delays are updated in place.
      var key = JSON.stringify([b, writable, l.jobs.map(function (j) { return [j.id, j.pri, j.reserves]; })]);
      var body = $("#jobs tbody");
      if (key === shownJobs) {
        l.jobs.forEach(function (j, i) {
          var cells = body.children[i].children;
          cells[2].textContent = secs(j.ageS);
          cells[3].textContent = b.state === "delayed" ? secs(j.timeLeftS) : "-";
        });
        return;
      }
      shownJobs = key;
      body.replaceChildren();
      l.jobs.forEach(function (j) {
        var tr = el("tr");
        tr.dataset.job = String(j.id);
        [j.id, j.pri, secs(j.ageS), b.state === "delayed" ? secs(j.timeLeftS) : "-", j.reserves, j.size].forEach(function (v) {
          tr.appendChild(el("td", v));
        });
        var isHex = j.text === undefined;
        var shown = (isHex ? "hex " + j.hex : j.text) + (j.truncated ? " \u2026" : "");
        tr.appendChild(el("td", shown, isHex ? "body hex" : "body"));
        var a = el("td", null, "actions");
        if (b.state !== "ready") {
          a.appendChild(button("kick", "kick-job", function () { act("/api/jobs/" + j.id + "/kick"); }));
        }
        a.appendChild(button("delete", "delete", function () { act("/api/jobs/" + j.id + "/delete"); }));
        tr.appendChild(a);
        body.appendChild(tr);
      });
    }).catch(function (e) {
      $("#jobs tbody").replaceChildren();
      shownJobs = "";
      $("#browse-total").textContent = String(e.message || e);
    });
  }

  // the database and the cluster's live nodes (--pg only; hidden otherwise)
  function cluster(o) {
    var d = o.database;
    $("#cluster").hidden = !d;
    if (!d) return;
    var st = $("#db-state");
    st.textContent = d.available ? "available" : "unavailable" + (d.reason ? ": " + d.reason : "");
    st.className = d.available ? "badge" : "badge warn";
    $("#db-figures").textContent = "this node " + d.node + " · lease " +
      (d.leaseRemainingS > 0 ? d.leaseRemainingS.toFixed(1) + "s left" : "lapsed") + " · pool " +
      d.pool.inUse + "/" + d.pool.size + " in use · " + d.transactions + " transactions, " + d.retries +
      " retries, " + d.errors + " errors";
    var body = $("#nodes tbody");
    body.replaceChildren();
    if (!d.nodes) {
      var tr = el("tr");
      tr.appendChild(el("td", "the nodes table cannot be read now"));
      body.appendChild(tr);
      return;
    }
    d.nodes.forEach(function (n) {
      var tr = el("tr", null, n.self ? "self" : "");
      tr.dataset.node = String(n.id);
      [n.id, n.host || "-", n.pid || "-", n.leaseRemainingS.toFixed(1) + "s", n.self ? "yes" : ""].forEach(function (v) {
        tr.appendChild(el("td", v));
      });
      body.appendChild(tr);
    });
  }

  function commands(o) {
    var parts = Object.keys(o.commands).filter(function (k) { return o.commands[k] > 0; }).map(function (k) {
      return k + " " + o.commands[k];
    });
    $("#commands").textContent = parts.length ? parts.join(" \u00b7 ") : "none yet";
  }

  function refresh() {
    return api("/api/overview").then(function (o) {
      writable = o.writable && token() !== "";
      $("#version").textContent = "v" + o.version;
      $("#uptime").textContent = "up " + secs(o.uptimeS);
      var d = $("#drain");
      d.textContent = o.draining ? "draining" : "accepting puts";
      d.className = o.draining ? "badge warn" : "badge";
      var m = $("#mode");
      m.textContent = !o.writable ? "read-only" : writable ? "actions enabled" : "token needed for actions";
      m.className = writable ? "badge" : "badge ro";
      samples.push({ ready: o.jobs.ready, reserved: o.jobs.reserved, buried: o.jobs.buried });
      if (samples.length > KEEP) samples.shift();
      cards(o);
      chart();
      tubes(o);
      schedules(o);
      cluster(o);
      commands(o);
      document.querySelector("#put-form button").disabled = !writable;
      prev = o;
      prevAt = performance.now();
      document.body.dataset.loaded = String(Number(document.body.dataset.loaded || "0") + 1);
      return jobs();
    }).catch(function (e) { status(String(e.message || e), true); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("#token").value = token();
    $("#token-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      sessionStorage.setItem("tubeway-token", $("#token").value);
      refresh();
    });
    document.querySelectorAll("#browser .tabs button").forEach(function (x) {
      x.addEventListener("click", function () { if (browsing) browse_(browsing.tube, x.dataset.state); });
    });
    $("#put-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = ev.target.elements;
      act("/api/tubes/" + encodeURIComponent(f.tube.value) + "/put", {
        pri: Number(f.pri.value), delay: Number(f.delay.value), ttr: Number(f.ttr.value), body: f.body.value,
      });
    });
    scheduleForm();
    refresh();
    setInterval(refresh, POLL_MS);
  });
` + DASHBOARD_FLOW_JS + String.raw`
})();
`;
