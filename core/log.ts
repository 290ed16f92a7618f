// Log lines a person and a machine can both read: every line carries a UTC timestamp
// and a level, and one event is always exactly one line (control characters in a
// message, such as a client's bytes logged by -VV or a stack trace's newlines, are
// escaped, so nobody can forge or split a line). Pure: the clock and the sinks are
// passed in by server.ts.

/** --log-format: one readable line per event, or one JSON object per line. */
export type LogFormat = "text" | "json";

export type LogLevel = "debug" | "info" | "warn" | "error";

/** Extra key/value facts of an event; undefined values are left out. */
export type LogFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  readonly format: LogFormat;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export interface LoggerOptions {
  format: LogFormat;
  /** Wall-clock milliseconds since the epoch. */
  now: () => number;
  /** Where debug and info lines go (stdout in the server, where beanstalkd's -V output goes). */
  out: (line: string) => void;
  /** Where warn and error lines go (stderr in the server). */
  err: (line: string) => void;
}

/** Control characters (and DEL) that would break a line or drive a terminal. */
// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/g;

function escapeControl(s: string): string {
  return s.replace(CONTROL, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

/** A text field value: bare when it is one plain word, JSON-quoted otherwise. */
function textValue(v: string | number | boolean): string {
  const s = String(v);
  // deno-lint-ignore no-control-regex
  return s !== "" && /^[^\s"=\\\x00-\x1f\x7f]+$/.test(s) ? s : JSON.stringify(s);
}

/**
 * One log line, without the newline.
 * text: `2026-11-25T02:45:35.123Z INFO  listening plain=127.0.0.1:11300 runtime=deno-2.9.6`
 * json: `{"time":"2026-11-25T02:45:35.123Z","level":"info","msg":"listening","plain":"127.0.0.1:11300",...}`
 */
export function formatLogLine(
  format: LogFormat,
  timeMs: number,
  level: LogLevel,
  msg: string,
  fields: LogFields = {},
): string {
  const time = new Date(timeMs).toISOString();
  const present = Object.entries(fields).filter((e): e is [string, string | number | boolean] => e[1] !== undefined);
  if (format === "json") {
    // time, level and msg come first and cannot be overridden by a field of the same name.
    const record: Record<string, string | number | boolean> = { time, level, msg };
    for (const [k, v] of present) if (!(k in record)) record[k] = v;
    return JSON.stringify(record);
  }
  const facts = present.map(([k, v]) => ` ${escapeControl(k)}=${textValue(v)}`).join("");
  return `${time} ${level.toUpperCase().padEnd(5)} ${escapeControl(msg)}${facts}`;
}

export function createLogger(opts: LoggerOptions): Logger {
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    const line = formatLogLine(opts.format, opts.now(), level, msg, fields);
    (level === "warn" || level === "error" ? opts.err : opts.out)(line);
  };
  return {
    format: opts.format,
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
  };
}
