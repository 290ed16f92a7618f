// The dashboard's HTML and CSS, embedded as strings so that the single executable
// carries them (no files to find at run time, no CDN: it works offline). The page
// holds no data; dashboard_script.ts fills it from /api/overview with textContent only.
// The database section stays hidden unless the overview has one (--pg).

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tubeway</title>
<link rel="stylesheet" href="/dashboard.css">
<script src="/dashboard.js" defer></script>
</head>
<body>
<header>
  <h1>tubeway</h1>
  <span id="version"></span>
  <span id="uptime"></span>
  <span id="drain" class="badge"></span>
  <span id="mode" class="badge"></span>
  <form id="token-form">
    <input id="token" type="password" placeholder="token for actions" autocomplete="off">
    <button type="submit">use token</button>
  </form>
</header>
<main>
  <section id="cards" aria-label="server stats"></section>
  <section id="cluster" hidden>
    <h2>Database <span id="db-state" class="badge"></span></h2>
    <p id="db-figures"></p>
    <div class="scroll"><table id="nodes">
      <thead><tr><th>node</th><th>host</th><th>pid</th><th>lease left</th><th>this node</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section>
    <h2>Jobs over the last minutes</h2>
    <svg id="chart" viewBox="0 0 600 140" preserveAspectRatio="none" role="img" aria-label="ready, reserved and buried jobs over time"></svg>
    <div class="legend"><span class="k-ready">ready</span> <span class="k-reserved">reserved</span> <span class="k-buried">buried</span> <span id="chart-max"></span></div>
  </section>
  <section>
    <h2>Tubes <span id="tube-count"></span></h2>
    <div class="scroll"><table id="tubes">
      <thead><tr>
        <th>tube</th><th>ready</th><th>reserved</th><th>delayed</th><th>buried</th><th>urgent</th>
        <th>waiting</th><th>put/s</th><th>delete/s</th><th>oldest ready</th><th>paused</th><th class="text">retry</th>
        <th class="text">limits</th><th>actions</th>
      </tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section id="schedules">
    <h2>Schedules <span id="schedule-count"></span></h2>
    <div class="scroll"><table id="schedule-list">
      <thead><tr><th>name</th><th class="text">tube</th><th class="text">spec</th><th>next due</th><th>last run</th><th>pri</th>
        <th>size</th><th>actions</th></tr></thead>
      <tbody></tbody>
    </table></div>
    <form id="schedule-form" class="inline-form">
      <label>name <input name="name" required></label>
      <label>tube <input name="tube" value="default" required></label>
      <label>spec <input name="spec" placeholder="every:60, 0_9_*_*_1-5" required></label>
      <label>pri <input name="pri" type="number" min="0" value="1024"></label>
      <label>ttr <input name="ttr" type="number" min="1" value="60"></label>
      <label class="wide">body <textarea name="body" rows="1"></textarea></label>
      <button type="submit">schedule</button>
    </form>
  </section>
  <section id="browser" hidden>
    <h2>Jobs in <span id="browse-tube"></span></h2>
    <div class="tabs">
      <button data-state="ready">ready</button><button data-state="delayed">delayed</button><button data-state="buried">buried</button>
      <span id="browse-total"></span>
    </div>
    <div class="scroll"><table id="jobs">
      <thead><tr><th>id</th><th>pri</th><th>age</th><th>delay left</th><th>reserves</th><th>size</th><th class="body">body</th><th>actions</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section>
    <h2>Put a job</h2>
    <form id="put-form" class="inline-form">
      <label>tube <input name="tube" value="default" required></label>
      <label>pri <input name="pri" type="number" min="0" value="1024"></label>
      <label>delay <input name="delay" type="number" min="0" value="0"></label>
      <label>ttr <input name="ttr" type="number" min="1" value="60"></label>
      <label class="wide">body <textarea name="body" rows="2"></textarea></label>
      <button type="submit">put</button>
    </form>
  </section>
  <section>
    <h2>Commands</h2>
    <div id="commands"></div>
  </section>
  <p id="status" role="status"></p>
</main>
</body>
</html>
`;

export const DASHBOARD_CSS = `
:root { --bg: #f6f7f9; --fg: #1d2430; --mute: #6b7280; --line: #d9dde3; --ready: #2f7de1; --reserved: #e0a100;
  --buried: #c43d3d; --ok: #2e8b57; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
header { display: flex; gap: 12px; align-items: center; padding: 10px 16px; background: #1d2430; color: #fff; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0 8px 0 0; }
header form { margin-left: auto; display: flex; gap: 6px; }
main { padding: 12px 16px; max-width: 1600px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; margin-bottom: 12px;
  min-width: 0; }
h2 { font-size: 15px; margin: 0 0 8px; }
.badge { padding: 2px 8px; border-radius: 10px; background: var(--ok); font-size: 12px; }
.badge.warn { background: var(--buried); }
.badge.ro { background: #555; }
#cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(120px, 1fr)); gap: 8px; }
.card { border: 1px solid var(--line); border-radius: 4px; padding: 6px 8px; }
.card b { display: block; font-size: 18px; }
.card span { color: var(--mute); font-size: 12px; }
#chart { width: 100%; height: 140px; background: #fbfbfc; border: 1px solid var(--line); }
#chart polyline { fill: none; stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.legend span { margin-right: 10px; font-size: 12px; }
.k-ready { color: var(--ready); } .k-reserved { color: var(--reserved); } .k-buried { color: var(--buried); }
/* A table never runs past its panel: on a narrow window it scrolls inside it. Its columns
   give way first: headings, names and retry policies wrap, actions wrap group by group. */
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: right; padding: 3px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { white-space: normal; vertical-align: bottom; }
th:first-child, td:first-child, th:last-child { text-align: left; }
th.body, td.body, th.text { text-align: left; }
td.body { white-space: pre-wrap; word-break: break-all; font-family: ui-monospace, monospace;
  min-width: 16ch; max-width: 420px; font-size: 12px; }
td.body.hex { color: var(--mute); }
#tubes td[data-col=name], #tubes td[data-col=retry], #tubes td[data-col=limits], #schedule-list td.text {
  white-space: normal; overflow-wrap: anywhere; text-align: left; min-width: 12ch; max-width: 24ch; }
td.actions { text-align: left; white-space: normal; min-width: 12em; }
td.actions .group { display: inline-block; white-space: nowrap; margin: 1px 4px 1px 0; }
td.actions button { font-size: 12px; padding: 0 5px; }
td.actions input { width: 4em; font-size: 12px; }
button { font: inherit; padding: 1px 8px; cursor: pointer; }
button:disabled { cursor: not-allowed; }
.tabs button.on { font-weight: bold; }
.inline-form { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; }
.inline-form input[type=number] { width: 90px; }
.inline-form .wide { flex: 1 1 300px; }
.inline-form textarea { width: 100%; }
#schedule-form { margin-top: 8px; }
#schedule-form input:not([type=number]) { width: 12em; max-width: 100%; }
#commands { font-size: 12px; color: var(--mute); }
#db-state { color: #fff; font-weight: normal; }
#db-figures { margin: 0 0 6px; color: var(--mute); }
#nodes tr.self td { font-weight: bold; }
#status { min-height: 1.4em; font-weight: bold; }
#status.err { color: var(--buried); }
`;
