// The HTTP side port as one function, web Request -> Response, with no runtime in
// it: adapters/http_deno.ts and adapters/http_bun.ts hand every request here.
//
//   GET  /healthz   200 while the process serves (liveness)
//   GET  /readyz    200 when puts are accepted (not draining, log writable, database there), else 503
//   GET  /metrics   Prometheus text (metrics.ts)
//   GET  /          the dashboard (dashboard_*.ts), and GET /api/... its JSON (views.ts)
//   POST /api/...   write actions (actions.ts): need `Authorization: Bearer TOKEN`;
//                   /api/tubes/TUBE/VERB, /api/jobs/ID/VERB, /api/schedules/NAME/set|delete
//
// Security: without a configured token every write is refused (403), so a side port
// without --http-token is read-only. A token travels only in a header, never a cookie,
// so another site's page cannot make a browser send it; and a header or a JSON body
// makes any cross-origin request a preflighted one, which we never approve.
import type { Service } from "../service.ts";
import { METRICS_CONTENT_TYPE, type MetricsSource, metricsStream } from "./metrics.ts";
import { type ListState, overview, tubeJobs } from "./views.ts";
import { type Action, runAction } from "./actions.ts";
import { DASHBOARD_CSS, DASHBOARD_HTML } from "./dashboard_page.ts";
import { DASHBOARD_JS } from "./dashboard_script.ts";
import { parseSpec } from "../../core/schedule_spec.ts";

export interface HttpOptions {
  /** Enables write actions for requests that present it. */
  token?: string | undefined;
  version: string;
}

const SECURITY_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** Scripts and styles only from this origin (no inline code), no framing. */
const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

function respond(status: number, body: string, type: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { "content-type": type, ...SECURITY_HEADERS, ...extra } });
}

const text = (status: number, body: string, extra: Record<string, string> = {}) =>
  respond(status, body, "text/plain; charset=utf-8", extra);
const json = (status: number, value: unknown) => respond(status, JSON.stringify(value), "application/json");

/** beanstalkd's tube name rule: 1-200 of these characters, not starting with '-'. */
const TUBE_NAME = /^[A-Za-z0-9+/;.$_()][A-Za-z0-9+/;.$_()-]{0,199}$/;
const U32_MAX = 4294967295;
/** A schedule's name or spec: 1-200 bytes of printable ASCII without spaces (the protocol's rule for a name). */
const WORD = /^[\x21-\x7e]{1,200}$/;

/** Equal strings, in time that depends on their lengths only (no early exit on a mismatch). */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** A request body as text, refusing more than maxBytes (read as it streams in, never buffered whole). */
async function readCapped(req: Request, maxBytes: number): Promise<string | undefined> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > maxBytes) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    parts.push(value);
  }
  const all = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return new TextDecoder().decode(all);
}

function u32(v: unknown, fallback?: number): number | undefined {
  if (v === undefined && fallback !== undefined) return fallback;
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= U32_MAX ? v : undefined;
}

function hexBytes(s: string): Uint8Array | undefined {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(s)) return undefined;
  return Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));
}

/** The action a POST names, or an error message. */
function parseAction(parts: string[], body: Record<string, unknown>): Action | string {
  const [kind, key, verb] = parts;
  if (kind === "tubes") return tubeAction(key ?? "", verb, body);
  if (kind === "schedules") return scheduleAction(key ?? "", verb, body);
  if (kind === "jobs" && /^[1-9][0-9]{0,15}$/.test(key ?? "")) {
    const id = Number(key);
    if (verb === "kick") return { kind: "kick-job", id };
    if (verb === "delete") return { kind: "delete", id };
  }
  return "no such action";
}

/** POST /api/tubes/TUBE/VERB. */
function tubeAction(tube: string, verb: string | undefined, body: Record<string, unknown>): Action | string {
  if (!TUBE_NAME.test(tube)) return "bad tube name";
  switch (verb) {
    case "kick": {
      const bound = u32(body.bound, 1);
      return bound === undefined || bound < 1 ? "bound must be a whole number >= 1" : { kind: "kick", tube, bound };
    }
    case "pause": {
      const seconds = u32(body.seconds);
      return seconds === undefined ? "seconds must be a whole number >= 0" : { kind: "pause", tube, seconds };
    }
    case "empty":
      return { kind: "delete-tube", tube };
    case "dlq": {
      const maxAttempts = u32(body.maxAttempts);
      const deadTube = typeof body.deadTube === "string" ? body.deadTube : "";
      if (maxAttempts === undefined) return "maxAttempts must be a whole number >= 0";
      if (!TUBE_NAME.test(deadTube)) return "bad dead-letter tube name";
      return { kind: "set-dlq", tube, maxAttempts, deadTube };
    }
    case "backoff": {
      const baseSec = u32(body.base), capSec = u32(body.cap, 0);
      if (baseSec === undefined || capSec === undefined) return "base, cap: whole numbers >= 0";
      return { kind: "set-backoff", tube, baseSec, capSec };
    }
    case "limits": {
      const concurrency = u32(body.concurrency, 0), rateCount = u32(body.rateCount, 0);
      const rateWindowSec = u32(body.rateWindow, 0);
      if (concurrency === undefined || rateCount === undefined || rateWindowSec === undefined) {
        return "concurrency, rateCount, rateWindow: whole numbers >= 0";
      }
      if (rateCount > 0 && rateWindowSec === 0) return "a rate needs a window of at least 1 s";
      return { kind: "limits", tube, concurrency, rateCount, rateWindowSec };
    }
    case "put": {
      const pri = u32(body.pri, 1024), delaySec = u32(body.delay, 0), ttrSec = u32(body.ttr, 60);
      if (pri === undefined || delaySec === undefined || ttrSec === undefined) return "pri, delay, ttr: whole numbers";
      const bytes = bodyBytes(body);
      return typeof bytes === "string" ? bytes : { kind: "put", tube, pri, delaySec, ttrSec, body: bytes };
    }
  }
  return "no such action";
}

/** POST /api/schedules/NAME/set (a schedule added or replaced) or /delete. */
function scheduleAction(name: string, verb: string | undefined, body: Record<string, unknown>): Action | string {
  if (!WORD.test(name)) return "bad schedule name";
  if (verb === "delete") return { kind: "unschedule", name };
  if (verb !== "set") return "no such action";
  const tube = typeof body.tube === "string" ? body.tube : "";
  const spec = typeof body.spec === "string" ? body.spec : "";
  if (!TUBE_NAME.test(tube)) return "bad tube name";
  // checked here, not left to the protocol: after a refused line, its body would be read as commands
  if (parseSpec(spec) === undefined) return "spec: every:<seconds> or cron fields joined by _, e.g. 0_9_*_*_1-5";
  const pri = u32(body.pri, 1024), ttrSec = u32(body.ttr, 60);
  if (pri === undefined || ttrSec === undefined) return "pri, ttr: whole numbers";
  const bytes = bodyBytes(body);
  return typeof bytes === "string" ? bytes : { kind: "schedule", name, tube, spec, pri, ttrSec, body: bytes };
}

/** A job's body: text, or hex with `encoding: "hex"`; a string is what is wrong. */
function bodyBytes(body: Record<string, unknown>): Uint8Array | string {
  if (typeof body.body !== "string") return "body must be a string";
  const bytes = body.encoding === "hex" ? hexBytes(body.body) : new TextEncoder().encode(body.body);
  return bytes ?? "body is not hex";
}

/** HTTP status for a protocol reply. */
function statusOf(reply: string): number {
  if (/^(INSERTED|KICKED|DELETED|PAUSED|USING|DLQ_SET|BACKOFF_SET|CONCURRENCY_SET|RATE_SET|SCHEDULED)\b/.test(reply)) {
    return 200;
  }
  if (reply === "NOT_FOUND") return 404;
  if (reply === "DRAINING") return 503;
  if (reply === "JOB_TOO_BIG" || reply === "BAD_FORMAT" || reply === "EXPECTED_CRLF") return 400;
  return 500;
}

/** What a request is served with. */
interface Served {
  readonly svc: Service;
  /** What the metrics and the overview read. */
  readonly src: MetricsSource;
  /** --http-token: the write actions' bearer token (undefined: read-only). */
  readonly token: string | undefined;
  /** The largest POST body read. */
  readonly maxPostBytes: number;
}

/** A write action: POST /api/<tube>/<job>/<action> with a JSON body, under the bearer token. */
async function post(h: Served, req: Request, parts: string[]): Promise<Response> {
  if (!h.token) return json(403, { error: "read-only: start tubeway with --http-token to enable actions" });
  const auth = req.headers.get("authorization") ?? "";
  if (!auth.startsWith("Bearer ") || !sameSecret(auth.slice(7), h.token)) {
    return respond(401, JSON.stringify({ error: "missing or wrong token" }), "application/json", {
      "www-authenticate": 'Bearer realm="tubeway"',
    });
  }
  if (!(req.headers.get("content-type") ?? "").startsWith("application/json")) {
    return json(415, { error: "send application/json" });
  }
  const raw = await readCapped(req, h.maxPostBytes);
  if (raw === undefined) return json(413, { error: "request too large" });
  let body: unknown;
  try {
    body = raw === "" ? {} : JSON.parse(raw);
  } catch {
    return json(400, { error: "body is not JSON" });
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return json(400, { error: "want an object" });
  const action = parseAction(parts, body as Record<string, unknown>);
  if (typeof action === "string") return json(action === "no such action" ? 404 : 400, { error: action });
  const reply = await runAction(h.svc, action);
  return json(statusOf(reply), { reply });
}

/** The pages, the health checks, the metrics and the dashboard's reads. */
async function get(h: Served, url: URL, parts: string[]): Promise<Response> {
  const engine = h.src.engine;
  switch (url.pathname) {
    case "/healthz":
      return text(200, "ok\n");
    case "/readyz": {
      if (engine.draining) return text(503, "draining\n");
      const m = engine.metrics();
      if (m.database && !m.database.available) return text(503, `${m.database.reason}\n`);
      return m.log && !m.log.writable ? text(503, "log not writable\n") : text(200, "ready\n");
    }
    case "/metrics":
      return new Response(metricsStream(h.src), {
        headers: { "content-type": METRICS_CONTENT_TYPE, ...SECURITY_HEADERS },
      });
    case "/":
      return respond(200, DASHBOARD_HTML, "text/html; charset=utf-8", { "content-security-policy": PAGE_CSP });
    case "/dashboard.js":
      return respond(200, DASHBOARD_JS, "text/javascript; charset=utf-8");
    case "/dashboard.css":
      return respond(200, DASHBOARD_CSS, "text/css; charset=utf-8");
    case "/api/overview":
      return json(200, await overview({ ...h.src, writable: h.token !== undefined }));
  }
  if (parts[0] === "tubes" && parts[2] === "jobs" && parts.length === 3) {
    const state = url.searchParams.get("state") ?? "ready";
    if (state !== "ready" && state !== "delayed" && state !== "buried") return json(400, { error: "bad state" });
    const limit = Number(url.searchParams.get("limit") ?? "20");
    const list = await tubeJobs(engine, parts[1]!, state as ListState, Number.isFinite(limit) ? limit : 20);
    return list ? json(200, list) : json(404, { error: "no such tube" });
  }
  return text(404, "not found\n");
}

/** Build the request handler for a service. */
export function httpHandler(svc: Service, opts: HttpOptions): (req: Request) => Promise<Response> {
  const engine = svc.engine;
  const h: Served = {
    svc,
    src: { engine, counters: svc.counters, startedAtMs: svc.facts.startedAt, version: opts.version },
    token: opts.token,
    // JSON escapes a byte as at most 6 characters; leave room for the other fields.
    maxPostBytes: engine.maxJobSize * 6 + 4096,
  };
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    let parts: string[];
    try {
      parts = url.pathname.startsWith("/api/") ? url.pathname.slice(5).split("/").map(decodeURIComponent) : [];
    } catch {
      return text(400, "bad path\n");
    }
    try {
      if (req.method === "GET" || req.method === "HEAD") return await get(h, url, parts);
      if (req.method === "POST" && parts.length === 3) return await post(h, req, parts);
      return text(405, "method not allowed\n", { allow: "GET, HEAD, POST" });
    } catch (e) {
      svc.error(`http: internal error: ${e instanceof Error ? e.stack ?? e.message : e}`);
      return text(500, "internal error\n");
    }
  };
}
