// The Turns (core/clock.ts) that let every connection have its go: in slices, on both
// runtimes (adapters/sliced_turns.ts). openService() gives them to the Service it builds.
import type { Turns } from "../core/clock.ts";
import { SlicedTurns } from "./sliced_turns.ts";

/** Turns that let every connection have its go on this runtime. */
export function runtimeTurns(): Turns {
  return new SlicedTurns();
}
