// Let the event loop poll other sockets before going on.

/**
 * Run `f` after the event loop has polled I/O: setImmediate where the runtime has it
 * (Deno and Bun do), not setTimeout(0), which is clamped to milliseconds.
 */
export function afterIO(f: () => void): void {
  const immediate = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
  if (immediate) immediate(f);
  else setTimeout(f, 0);
}

/** A promise that settles after the event loop has polled I/O (see afterIO). */
export function yieldToIO(): Promise<void> {
  return new Promise((r) => afterIO(r));
}
