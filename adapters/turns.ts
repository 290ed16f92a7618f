// The Turns (core/clock.ts) for the runtime this runs on: Deno's own (adapters/deno_turns.ts),
// setImmediate elsewhere. openService() gives them to the Service it builds.
import { immediateTurns, type Turns } from "../core/clock.ts";
import { DenoTurns } from "./deno_turns.ts";

/** Turns that let every connection have its go on this runtime. */
export function runtimeTurns(): Turns {
  return "Deno" in globalThis ? new DenoTurns() : immediateTurns;
}
