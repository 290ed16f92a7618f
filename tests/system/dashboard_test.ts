// The dashboard in a real browser: Debian's chromium, driven headless by puppeteer-core
// (pinned in package.json). Loads the page from the server of this file's runtime (and
// the compiled binary under Deno), checks the tubes and counts it shows, that a job
// body is shown as text (never markup), then kicks a buried job, pauses a tube, puts
// a job and deletes it from the page, and verifies each over the protocol; checks that
// every table fits its panel at 1400 px and at a phone's 390 px. Screenshots go to tests/artifacts/.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { dial, type Wire } from "../harness/wire.ts";
import { HTTP_KINDS, type HttpKind, type HttpRunning, startWithHttp } from "../harness/http.ts";
import { ROOT, RUNTIME, skipUnless } from "../harness/paths.ts";

const CHROMIUM = process.env.TUBEWAY_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "tests", "artifacts");
const TOKEN = "dash-token";
const WAIT_MS = 60_000;
const EVIL = "<img src=x onerror=alert(1)>";

/** What the layout check reads of the page, measured in the browser (MEASURE). */
interface Measured {
  /** The page's width and the window's: wider means a sideways scrollbar. */
  page: number;
  view: number;
  panels: {
    name: string;
    right: number;
    /** Where the panel's content ends (inside its padding and border). */
    edge: number;
    tables: { id: string; right: number; scrolls: boolean; buttons: number[] }[];
  }[];
}

/** Every visible panel and its tables; a table inside a box that scrolls shows as that box. */
const MEASURE = `(() => {
  const sections = [...document.querySelectorAll("main section")].filter((s) => !s.hidden);
  return {
    page: document.documentElement.scrollWidth,
    view: document.documentElement.clientWidth,
    panels: sections.map((s) => {
      const box = s.getBoundingClientRect();
      const st = getComputedStyle(s);
      const edge = box.right - parseFloat(st.paddingRight) - parseFloat(st.borderRightWidth);
      const tables = [...s.querySelectorAll("table")].map((t) => {
        const frame = t.parentElement;
        const scrolling = frame !== s && ["auto", "scroll"].includes(getComputedStyle(frame).overflowX);
        const shown = scrolling ? frame : t;
        return {
          id: t.id,
          right: shown.getBoundingClientRect().right,
          scrolls: scrolling && frame.scrollWidth > frame.clientWidth,
          buttons: [...t.querySelectorAll("button")].filter((b) => b.offsetParent !== null)
            .map((b) => b.getBoundingClientRect().right),
        };
      });
      return { name: s.querySelector("h2")?.textContent ?? s.id, right: box.right, edge, tables };
    }),
  };
})()`;

const kinds: HttpKind[] = RUNTIME === "bun" ? [HTTP_KINDS.bun] : [HTTP_KINDS.deno, HTTP_KINDS.binary];

for (const kind of kinds) {
  const missing = !existsSync(CHROMIUM)
    ? "chromium is not installed (apt-get install -y chromium)"
    : kind.unavailable();
  describe(`dashboard in chromium, served by ${kind.name}`, { skip: skipUnless(!missing, missing ?? "") }, () => {
    let srv: HttpRunning;
    let browser: Browser;
    let page: Page;
    let w: Wire;
    const dialogs: string[] = [];
    let buriedId = 0;

    before(async () => {
      srv = await startWithHttp(kind, ["--http-token", TOKEN]);
      w = await dial(srv.addr);
      assert.equal(await w.cmd("use emails"), "USING emails\r\n");
      assert.equal(await w.put(EVIL, 10), "INSERTED 1\r\n");
      assert.equal(await w.put("welcome mail", 20), "INSERTED 2\r\n");
      assert.equal(await w.put("reset mail", 30), "INSERTED 3\r\n");
      assert.equal(await w.cmd("watch emails"), "WATCHING 2\r\n");
      assert.equal(await w.cmd("reserve"), `RESERVED 1 ${EVIL.length}\r\n${EVIL}\r\n`);
      assert.equal(await w.cmd("bury 1 10"), "BURIED\r\n");
      buriedId = 1;
      assert.equal(await w.cmd("use reports"), "USING reports\r\n");
      assert.equal(await w.put("monthly", 5), "INSERTED 4\r\n");
      assert.equal(await w.put("later", 5, 600), "INSERTED 5\r\n");
      browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
      });
      page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 1000 });
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        // the "empty" and "unschedule" buttons' confirmations are accepted; nothing else should ask
        void (/^(Delete every|Remove the schedule)/.test(d.message()) ? d.accept() : d.dismiss());
      });
      await page.goto(`${srv.http}/`, { waitUntil: "load", timeout: WAIT_MS });
      await page.waitForSelector('#tubes tr[data-tube="emails"]', { timeout: WAIT_MS });
    });

    after(async () => {
      await browser?.close();
      w?.close();
      await srv?.stop();
    });

    const cell = (tube: string, col: string) =>
      page.$eval(`#tubes tr[data-tube="${tube}"] td[data-col="${col}"]`, (e) => e.textContent);

    it("shows every tube with its live counts, and the server's stats", async () => {
      const names = await page.$$eval("#tubes tbody tr", (rows) => rows.map((r) => r.getAttribute("data-tube")));
      assert.deepEqual(names, ["default", "emails", "reports"]);
      assert.deepEqual(
        [await cell("emails", "ready"), await cell("emails", "buried"), await cell("emails", "urgent")],
        ["2", "1", "2"],
      );
      assert.deepEqual([await cell("reports", "ready"), await cell("reports", "delayed")], ["1", "1"]);
      const total = await page.$eval('#cards [data-stat="total jobs"] b', (e) => e.textContent);
      assert.equal(total, "5");
      assert.equal(await page.$eval("#drain", (e) => e.textContent), "accepting puts");
      assert.equal(await page.$eval("#cluster", (e) => e.hasAttribute("hidden")), true, "no database section");
      // without the token in the page, actions are offered but disabled
      assert.equal(
        await page.$eval('#tubes tr[data-tube="emails"] button[data-action="kick"]', (b) => b.hasAttribute("disabled")),
        true,
      );
    });

    it("shows a job body as text: markup in it is neither parsed nor run", async () => {
      await page.click('#tubes tr[data-tube="emails"] button[data-action="browse"]');
      await page.waitForSelector(`#jobs tr[data-job="${buriedId}"]`, { timeout: WAIT_MS });
      const shown = await page.$eval(`#jobs tr[data-job="${buriedId}"] td.body`, (e) => e.textContent);
      assert.equal(shown, EVIL);
      assert.equal(await page.$$eval("#jobs img", (imgs) => imgs.length), 0);
      assert.deepEqual(dialogs, []);
    });

    it("kicks the buried job and pauses a tube from the page; the protocol sees both", async () => {
      await page.type("#token", TOKEN);
      await page.click('#token-form button[type="submit"]');
      await page.waitForFunction('document.querySelector("#mode")?.textContent === "actions enabled"', {
        timeout: WAIT_MS,
      });
      await page.waitForSelector(`#jobs tr[data-job="${buriedId}"] button[data-action="kick-job"]:not([disabled])`, {
        timeout: WAIT_MS,
      });
      await page.click(`#jobs tr[data-job="${buriedId}"] button[data-action="kick-job"]`);
      await page.waitForFunction('/KICKED/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      assert.match(await w.cmd(`stats-job ${buriedId}`), /\nstate: ready\n/);

      const pauseInput = '#tubes tr[data-tube="reports"] input[aria-label="pause seconds"]';
      await page.$eval(pauseInput, (e) => ((e as unknown as { value: string }).value = ""));
      await page.type(pauseInput, "120");
      await page.click('#tubes tr[data-tube="reports"] button[data-action="pause"]');
      await page.waitForFunction('/PAUSED/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      assert.match(await w.cmd("stats-tube reports"), /\npause: 120\n/);
      await page.waitForFunction(
        `document.querySelector('#tubes tr[data-tube="emails"] td[data-col="buried"]')?.textContent === "0"`,
        { timeout: WAIT_MS },
      );
      assert.notEqual(await cell("reports", "paused"), "no");
      // the protocol connection and others are still served
      assert.equal(await w.cmd("use emails"), "USING emails\r\n");
      assert.match(await w.cmd("peek-ready"), /^FOUND 1 /);
    });

    it("puts a job from the form and deletes it from the job list", async () => {
      await page.$eval('#put-form input[name="tube"]', (e) => ((e as unknown as { value: string }).value = ""));
      await page.type('#put-form input[name="tube"]', "forms");
      await page.type('#put-form textarea[name="body"]', "from the page");
      await page.click('#put-form button[type="submit"]');
      await page.waitForFunction('/INSERTED \\d+/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      const id = /INSERTED (\d+)/.exec(await page.$eval("#status", (e) => e.textContent ?? ""))![1]!;
      assert.equal(await w.cmd(`peek ${id}`), `FOUND ${id} 13\r\nfrom the page\r\n`);
      assert.match(await w.cmd(`stats-job ${id}`), /\ntube: forms\n/);

      await page.waitForSelector('#tubes tr[data-tube="forms"] button[data-action="browse"]', { timeout: WAIT_MS });
      await page.click('#tubes tr[data-tube="forms"] button[data-action="browse"]');
      await page.waitForSelector(`#jobs tr[data-job="${id}"] button[data-action="delete"]:not([disabled])`, {
        timeout: WAIT_MS,
      });
      await page.click(`#jobs tr[data-job="${id}"] button[data-action="delete"]`);
      await page.waitForFunction('/DELETED/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      assert.equal(await w.cmd(`peek ${id}`), "NOT_FOUND\r\n");
    });

    it("shows a tube's retry policy and empties a tube (extensions)", async () => {
      assert.equal(await w.cmd("set-dlq reports 2 reports-dead"), "DLQ_SET\r\n");
      assert.equal(await w.cmd("set-backoff reports 5 60"), "BACKOFF_SET\r\n");
      await page.waitForFunction(
        `document.querySelector('#tubes tr[data-tube="reports"] td[data-col="retry"]')?.textContent === ` +
          `"2 \u2192 reports-dead, backoff 5-60s"`,
        { timeout: WAIT_MS },
      );
      assert.equal(await cell("emails", "retry"), "-");
      await page.click('#tubes tr[data-tube="reports"] button[data-action="empty"]');
      await page.waitForFunction('/DELETED 2/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      assert.equal(await w.cmd("peek 4"), "NOT_FOUND\r\n");
      assert.equal(await w.cmd("peek 5"), "NOT_FOUND\r\n");
    });

    it("shows a tube's limits and the jobs they hold back, and the schedules; adds one and removes it", async () => {
      assert.equal(await w.cmd("set-concurrency emails 1"), "CONCURRENCY_SET\r\n");
      assert.equal(await w.cmd("set-rate emails 100 60"), "RATE_SET\r\n");
      assert.match(await w.cmd("reserve-with-timeout 0"), /^RESERVED 1 /);
      await page.waitForFunction(
        `document.querySelector('#tubes tr[data-tube="emails"] td[data-col="limits"]')?.textContent === ` +
          `"1 at once, 100/60s, 2 held"`,
        { timeout: WAIT_MS },
      );
      assert.equal(await cell("reports", "limits"), "-");
      const form = "#schedule-form";
      await page.type(`${form} input[name="name"]`, "nightly");
      await page.$eval(`${form} input[name="tube"]`, (e) => ((e as unknown as { value: string }).value = ""));
      await page.type(`${form} input[name="tube"]`, "reports");
      await page.type(`${form} input[name="spec"]`, "0_3_*_*_*");
      await page.type(`${form} textarea[name="body"]`, "monthly report");
      await page.click(`${form} button[type="submit"]`);
      await page.waitForFunction('/SCHEDULED/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      assert.match(await w.cmd("list-schedules"), /\n- name: nightly\n {2}tube: reports\n {2}spec: 0_3_\*_\*_\*\n/);
      const row = '#schedule-list tr[data-schedule="nightly"]';
      await page.waitForSelector(`${row} button[data-action="unschedule"]:not([disabled])`, { timeout: WAIT_MS });
      assert.equal(await page.$eval(`${row} td[data-col="spec"]`, (e) => e.textContent), "0_3_*_*_*");
      assert.match(await page.$eval(`${row} td[data-col="next"]`, (e) => e.textContent ?? ""), /^in \d+[smh]$/);
      assert.equal(await page.$eval(`${row} td[data-col="last"]`, (e) => e.textContent), "-");
      await page.click(`${row} button[data-action="unschedule"]`);
      await page.waitForFunction('/DELETED/.test(document.querySelector("#status")?.textContent ?? "")', {
        timeout: WAIT_MS,
      });
      assert.equal(await w.cmd("list-schedules"), "OK 4\r\n---\n\r\n");
      assert.ok(dialogs.includes("Remove the schedule nightly?"));
    });

    it("fits every table in its panel at 1400 px and at a phone's 390 px: no page scrolling sideways", async () => {
      // the widest a tube's row gets today: a long name, a retry policy, limits, every action
      const long = "newsletters-weekly-digest-for-customers-in-europe-and-asia";
      assert.equal(await w.cmd(`use ${long}`), `USING ${long}\r\n`);
      assert.match(await w.put("digest", 10), /^INSERTED \d+\r\n$/);
      assert.equal(await w.cmd(`set-dlq ${long} 25 ${long}-dead`), "DLQ_SET\r\n");
      assert.equal(await w.cmd(`set-backoff ${long} 30 86400`), "BACKOFF_SET\r\n");
      assert.equal(await w.cmd(`set-concurrency ${long} 500`), "CONCURRENCY_SET\r\n");
      assert.equal(await w.cmd(`set-rate ${long} 10000 86400`), "RATE_SET\r\n");
      // and the widest a schedule's row: a long name and tube, a long spec
      w.send(`schedule ${long.slice(0, 40)} ${long.slice(0, 60)} 0,15,30,45_9-17_1-15_JAN-JUN_MON-FRI 0 60 1\r\nx\r\n`);
      assert.equal(await w.reply(), "SCHEDULED\r\n");
      await page.waitForSelector("#schedule-list tbody tr", { timeout: WAIT_MS });
      await page.waitForFunction(
        `document.querySelector('#tubes tr[data-tube="${long}"] td[data-col="retry"]')?.textContent?.startsWith("25")`,
        { timeout: WAIT_MS },
      );
      for (const width of [1400, 390]) {
        await page.setViewport({ width, height: 1000 });
        await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))");
        const m = await page.evaluate(MEASURE) as Measured;
        const where = (what: string) => `${what} at ${width} px: ${JSON.stringify(m)}`;
        assert.ok(m.page <= m.view, where("the page scrolls sideways"));
        for (const p of m.panels) {
          assert.ok(p.right <= m.view + 0.5, where(`panel ${p.name} runs past the window`));
          for (const t of p.tables) {
            assert.ok(t.right <= p.edge + 0.5, where(`table #${t.id} runs past its panel`));
            if (width < 1400) continue;
            // wide enough: the whole table shows, every action button included
            assert.equal(t.scrolls, false, where(`table #${t.id} needs scrolling`));
            for (const b of t.buttons) assert.ok(b <= p.edge + 0.5, where(`a button of #${t.id} is cut off`));
          }
        }
      }
      await page.setViewport({ width: 1280, height: 1000 });
    });

    it("draws the chart and saves a screenshot as a test artifact", async () => {
      await page.waitForFunction('Number(document.body.dataset.loaded ?? "0") >= 3', { timeout: WAIT_MS });
      const series = await page.$$eval("#chart polyline", (ls) => ls.map((l) => l.getAttribute("data-series")));
      assert.deepEqual(series, ["ready", "reserved", "buried"]);
      mkdirSync(ARTIFACTS, { recursive: true });
      const file = join(ARTIFACTS, `dashboard-${kind.name.replace(/\W+/g, "-")}.png`);
      await page.screenshot({ path: file as `${string}.png`, fullPage: true });
      assert.ok(existsSync(file));
    });
  });
}
