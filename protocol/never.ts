/**
 * The end of an exhaustive switch over a literal union: it compiles only when every
 * member is handled, so adding an opcode or a parser event without handling it is a
 * type error rather than a silent fall-through.
 */
export function assertNever(x: never): never {
  throw new Error(`unhandled case: ${String(x)}`);
}
