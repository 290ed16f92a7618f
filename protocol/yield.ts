// Let the event loop poll other sockets before going on.

type Schedule = (f: () => void) => void;

/** setImmediate where the runtime has it (Bun does), not setTimeout(0), which is clamped to milliseconds. */
const immediate: Schedule = (f) => {
  const set = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
  if (set) set(f);
  else setTimeout(f, 0);
};
let schedule: Schedule = immediate;

/**
 * Replace how afterIO() waits for the event loop to poll I/O. For a runtime whose
 * setImmediate does not let sockets be polled in between (adapters/deno_turns.ts).
 * Returns the one it replaces.
 */
export function setAfterIO(s: Schedule): Schedule {
  const before = schedule;
  schedule = s;
  return before;
}

/** Run `f` after the event loop has polled I/O, so that other sockets get a turn first. */
export function afterIO(f: () => void): void {
  schedule(f);
}

/**
 * Run `f` once the callbacks of this turn of the event loop have run (setImmediate),
 * without waiting for the sockets to be polled again, which afterIO may (on Deno a
 * timer turn, a millisecond or more): for work that gathers what this turn's reads
 * produced (the log's shared append, log_turn.ts), not for fairness.
 */
export function afterTurn(f: () => void): void {
  immediate(f);
}

/** A promise that settles after the event loop has polled I/O (see afterIO). */
export function yieldToIO(): Promise<void> {
  return new Promise((r) => afterIO(r));
}
