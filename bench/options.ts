// Command-line options of bench/main.ts (the usage text is the comment at its top).
// Errors are values: parseArgs returns a message instead of exiting, main decides.

export interface Opts {
  quick: boolean;
  only: string[];
  targets: string[];
  serverFlags: Map<string, string[]>;
  duration: number;
  warmup: number;
  /** The sustained rows' seconds (0: not run) and window. */
  seconds: number;
  window: number;
  json?: string;
  client?: string;
  /** Load generator processes; they share the generator core(s). */
  procs: number;
  pin: boolean;
  nice: number;
  help: boolean;
}

/** Every target of a full run: beanstalkd, each runtime's ceiling next to it, then the log modes. */
export const DEFAULT_TARGETS = [
  "beanstalkd",
  "fixed-deno",
  "deno",
  "fixed-bun",
  "bun",
  "beanstalkd+b",
  "deno+b",
  "bun+b",
  "beanstalkd+bf0",
  "deno+bf0",
  "bun+bf0",
];

/**
 * Generator processes by default: one per generator CPU (every CPU but the server's),
 * at most 4. More processes than CPUs add no capacity: in the agreement check
 * (bench/README.md) two processes sharing CPU 1 spent 5-35% more generator CPU per
 * command than one (5 rows of 6), and were only ahead on a busy machine, by taking a second share
 * of a contended core.
 */
export function defaultProcs(ncpu: number): number {
  return Math.max(1, Math.min(ncpu - 1, 4));
}

const SWITCHES = ["--quick", "--no-pin", "-h", "--help"];
const VALUED = [
  "--only",
  "--targets",
  "--server-flags",
  "--duration",
  "--warmup",
  "--seconds",
  "--window",
  "--json",
  "--client",
  "--procs",
  "--nice",
];

export function parseArgs(argv: string[], env: Record<string, string | undefined>, ncpu: number): Opts | string {
  const o: Opts = {
    quick: env.BENCH_QUICK === "1",
    only: [],
    targets: [...DEFAULT_TARGETS],
    serverFlags: new Map(),
    duration: 4,
    warmup: 2,
    seconds: 0,
    window: 30,
    procs: defaultProcs(ncpu),
    pin: true,
    nice: 0,
    help: false,
  };
  let durationSet = false;
  let warmupSet = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const val = (): string | undefined => (eq > 0 ? a.slice(eq + 1) : argv[++i]);
    if (!SWITCHES.includes(name) && !VALUED.includes(name)) return `unknown option ${a}`;
    const v = SWITCHES.includes(name) ? "" : val();
    if (v === undefined) return `${a} needs a value`;
    switch (name) {
      case "--quick":
        o.quick = true;
        break;
      case "--only":
        o.only.push(...v.split(",").filter(Boolean));
        break;
      case "--targets":
        o.targets = v.split(",").filter(Boolean);
        break;
      case "--server-flags": {
        if (!v.includes("=")) return "--server-flags wants TARGET=FLAGS";
        const t = v.slice(0, v.indexOf("="));
        o.serverFlags.set(t, [
          ...(o.serverFlags.get(t) ?? []),
          ...v.slice(v.indexOf("=") + 1).split(/\s+/).filter(Boolean),
        ]);
        break;
      }
      case "--duration":
        o.duration = Number(v);
        durationSet = true;
        if (!(o.duration > 0)) return "--duration wants a positive number of seconds";
        break;
      case "--warmup":
        o.warmup = Number(v);
        warmupSet = true;
        if (!(o.warmup >= 0)) return "--warmup wants a number of seconds";
        break;
      case "--seconds":
        o.seconds = Number(v);
        if (!(o.seconds > 0)) return "--seconds wants a positive number of seconds";
        break;
      case "--window":
        o.window = Number(v);
        if (!(o.window > 0)) return "--window wants a positive number of seconds";
        break;
      case "--json":
        o.json = v;
        break;
      case "--client":
        o.client = v;
        break;
      case "--procs":
        o.procs = Math.max(1, Math.floor(Number(v)) || 1);
        break;
      case "--nice":
        o.nice = Math.trunc(Number(v));
        if (!Number.isFinite(o.nice)) return "--nice wants an integer";
        break;
      case "--no-pin":
        o.pin = false;
        break;
      case "-h":
      case "--help":
        o.help = true;
        break;
    }
  }
  if (o.quick && !durationSet) o.duration = 0.05;
  if (o.quick && !warmupSet) o.warmup = 0;
  return o;
}
