// What the wire suite's topic files (this folder) get from tests/system/wire_suite.ts,
// which registers them for one target.
import type { Running, Target } from "../../harness/targets.ts";
import type { Conns } from "../../harness/wire_checks.ts";

export interface WireContext {
  /** The target the suite runs against. */
  readonly target: Target;
  /** The reference 1.12 binary: held to 1.12's answers where tubeway deliberately differs. */
  readonly v112: boolean;
  /** A string value as stats/stats-job/stats-tube write it (tubeway quotes only values a YAML reader would misread). */
  readonly q: (s: string) => string;
  /** Register a test (by name: options.oneNode of wire_suite.ts may pin it to one node). */
  readonly it: (name: string, fn: () => Promise<void>) => void;
  /** Run `body` with fresh connections to the shared server, closed afterwards. */
  readonly session: (body: (c: Conns) => Promise<void>) => Promise<void>;
  /** The shared server (its first node while a test of options.oneNode runs). */
  readonly srv: () => Running;
}
