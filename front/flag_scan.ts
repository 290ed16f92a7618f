// The command line read word by word the way beanstalkd 1.12 reads it (scanFlags), then
// by node:util's parseArgs into option tokens (optionTokens); front/config.ts turns the
// tokens into a Config.
import { parseArgs } from "node:util";

/** Where the scan stopped before the end: -h, -v, or a usage error (exit 5, with the usage text). */
export type Stop = { kind: "help" } | { kind: "version" } | { kind: "usage"; message: string };

const OPTIONS = {
  b: { type: "string", short: "b" },
  f: { type: "string", short: "f" },
  F: { type: "boolean", short: "F" },
  l: { type: "string", short: "l" },
  p: { type: "string", short: "p" },
  u: { type: "string", short: "u" },
  z: { type: "string", short: "z" },
  s: { type: "string", short: "s" },
  c: { type: "boolean", short: "c" },
  n: { type: "boolean", short: "n" },
  v: { type: "boolean", short: "v" },
  V: { type: "boolean", short: "V" },
  h: { type: "boolean", short: "h" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-ca": { type: "string" },
  tls: { type: "string" },
  "log-format": { type: "string" },
  http: { type: "string" },
  "http-token": { type: "string" },
  pg: { type: "string" },
  "pg-schema": { type: "string" },
  "pg-lease": { type: "string" },
  "pg-wait": { type: "string" },
} as const;

/** tubeway's own long options and their kinds (none of beanstalkd's flags is long). */
export const LONG_OPTIONS = new Map(
  Object.entries(OPTIONS).filter(([name]) => name.length > 1).map(([name, o]) => [name, o.type]),
);
const VALUE_FLAGS = "bflpuzs";
const KNOWN_FLAGS = VALUE_FLAGS + "FcnvVh";

/**
 * beanstalkd's own flag scan (1.12 main.c opts()), which parseArgs cannot express: a
 * flag's value is the rest of its word or else the next word, whatever it looks like
 * (`-z -l` is "invalid size: -l"); `-h`/`-v` answer at once, even before a later bad
 * flag; a bad flag is named from the character before it (`-Vx` -> "Vx", `--help` and
 * a bare `--` -> themselves). Returns the words up to the first problem, each value
 * attached to its flag (so parseArgs reads `-z-l` as z = "-l"), and the answer to give
 * once those have been applied.
 */
export function scanFlags(args: readonly string[]): { words: string[]; stop: Stop | undefined } {
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("-") || a === "-") {
      words.push(a);
      continue;
    }
    // tubeway's own long options (--tls-cert FILE, --log-format=json, ...) go to parseArgs
    // as given; any other word starting with -- is an unknown flag, as in 1.12.
    const long = a.startsWith("--") ? LONG_OPTIONS.get(a.slice(2).split("=")[0]!) : undefined;
    if (long) {
      if (long === "boolean" || a.includes("=")) words.push(a);
      else {
        // The next word is the value whatever it looks like, as for the short flags.
        const value = args[++i];
        if (value === undefined) return { words, stop: { kind: "usage", message: `flag requires an argument: ${a}` } };
        words.push(`${a}=${value}`);
      }
      continue;
    }
    for (let j = 1; j < a.length; j++) {
      const c = a[j]!;
      if (!KNOWN_FLAGS.includes(c)) {
        return { words, stop: { kind: "usage", message: `unknown flag: ${a.slice(j - 1)}` } };
      }
      if (c === "h") return { words, stop: { kind: "help" } };
      if (c === "v") return { words, stop: { kind: "version" } };
      if (!VALUE_FLAGS.includes(c)) {
        words.push(`-${c}`);
        continue;
      }
      const value = j + 1 < a.length ? a.slice(j + 1) : args[++i];
      if (value === undefined) return { words, stop: { kind: "usage", message: `flag requires an argument: -${c}` } };
      // Attached, so that parseArgs takes a value starting with "-" too; "" cannot be.
      words.push(...(value === "" ? [`-${c}`, ""] : [`-${c}${value}`]));
      break;
    }
  }
  return { words, stop: undefined };
}

/** The option tokens of scanFlags' words, in order; a string: the usage error to report. */
export function optionTokens(words: string[]) {
  try {
    return parseArgs({ args: words, options: OPTIONS, tokens: true, strict: true, allowPositionals: true }).tokens;
  } catch (e) {
    const code = (e as { code?: string }).code;
    const flag = /'(--[\w-]+|-\w)/.exec(String((e as Error).message))?.[1] ?? "";
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown flag: ${flag}`;
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") return `flag requires an argument: ${flag}`;
    return String((e as Error).message);
  }
}
