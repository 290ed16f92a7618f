// The screenshot in docs/metrics.md: a server on Deno with a few tubes under a light,
// bounded load (puts, reserves, deletes, buries, a paused tube, a retry policy, limits,
// schedules), its
// dashboard in Debian's chromium (puppeteer-core, as tests/system/dashboard_test.ts),
// with the token entered and a tube's buried jobs listed. About 30 s.
//   npx deno run -A scripts/dashboard_shot.ts [OUT.png] [WIDTH]   (default docs/dashboard.png 1280)
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { HTTP_KINDS, startWithHttp } from "../tests/harness/http.ts";
import { ROOT } from "../tests/harness/paths.ts";
import { dial, type Wire } from "../tests/harness/wire.ts";

const OUT = Deno.args[0] ?? join(ROOT, "docs", "dashboard.png");
const WIDTH = Number(Deno.args[1] ?? 1280);
const TOKEN = "shot";
const LOAD_MS = 25_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const srv = await startWithHttp(HTTP_KINDS.deno, ["--http-token", TOKEN]);
const wires: Wire[] = [];
const wire = async () => {
  const w = await dial(srv.addr);
  wires.push(w);
  return w;
};
try {
  const setup = await wire();
  for (const cmd of ["set-dlq emails 5 emails-dead", "set-backoff emails 10 600", "use reports"]) await setup.cmd(cmd);
  for (const cmd of ["set-concurrency thumbnails 4", "set-rate emails 1200 60"]) await setup.cmd(cmd);
  const report = '{"report":"daily"}';
  await setup.cmd(`schedule daily-report reports 0_6_*_*_* 100 300 ${report.length}\r\n${report}`);
  await setup.cmd(`schedule cache-warm-up thumbnails every:300 50 60 2\r\n{}`);
  for (let i = 0; i < 40; i++) await setup.put(`{"report":"monthly","n":${i}}`, 100, 300 + i * 60);
  await setup.cmd("use webhooks");
  for (let i = 0; i < 300; i++) await setup.put(`{"url":"https://example.com/hook/${i}"}`, 50);
  await setup.cmd("pause-tube webhooks 900");
  await setup.cmd("use emails-dead");
  for (let i = 0; i < 3; i++) await setup.put(`{"to":"user${i}@example.com","template":"welcome"}`, 100);
  await setup.cmd("watch emails-dead");
  for (let i = 0; i < 3; i++) {
    const id = /^RESERVED (\d+)/.exec(await setup.cmd("reserve-with-timeout 0"))?.[1];
    await setup.cmd(`bury ${id} 100`);
  }

  // producers and workers, each bounded by the deadline
  const until = Date.now() + LOAD_MS;
  const producer = async (tube: string, everyMs: number, body: (i: number) => string) => {
    const w = await wire();
    await w.cmd(`use ${tube}`);
    for (let i = 0; Date.now() < until; i++) {
      await w.put(body(i), 100);
      await sleep(everyMs);
    }
  };
  const worker = async (tube: string, everyMs: number, buryEvery: number) => {
    const w = await wire();
    await w.cmd(`watch ${tube}`);
    await w.cmd("ignore default");
    for (let i = 1; Date.now() < until; i++) {
      const id = /^RESERVED (\d+)/.exec(await w.cmd("reserve-with-timeout 1"))?.[1];
      if (id) await w.cmd(i % buryEvery === 0 ? `bury ${id} 100` : `delete ${id}`);
      await sleep(everyMs);
    }
  };
  const load = Promise.all([
    producer("emails", 40, (i) => `{"to":"user${i}@example.com","template":"welcome"}`),
    worker("emails", 50, 25),
    producer("thumbnails", 60, (i) => `{"image":"uploads/${i}.jpg","sizes":[64,256]}`),
    worker("thumbnails", 70, 1000),
  ]);

  const browser = await puppeteer.launch({
    executablePath: Deno.env.get("TUBEWAY_CHROMIUM") ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: WIDTH, height: 1000 });
    await page.goto(`${srv.http}/`, { waitUntil: "load" });
    await page.type("#token", TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#tubes tr[data-tube="emails-dead"] button[data-action="browse"]');
    await page.click('#tubes tr[data-tube="emails-dead"] button[data-action="browse"]');
    await sleep(until - Date.now() - 3000); // under load: the chart has risen, the rates are live
    await page.screenshot({ path: OUT as `${string}.png` });
    console.log(`wrote ${OUT}`);
    await load;
  } finally {
    await browser.close();
  }
} finally {
  for (const w of wires) w.close();
  await srv.stop();
}
