// The strict readers of extension arguments (extensions.ts, flow_control.ts): unsigned
// 32-bit numbers without a sign, tube names, and keys (put-unique's, schedule names).
// Unlike 1.12's readers of the stock commands (command.ts), nothing lax: a malformed
// argument is BAD_FORMAT.
import { MAX_TUBE_NAME } from "./command.ts";

export const U32_MAX = 4294967295;
/** put-unique keys and schedule names: 1..200 bytes of printable ASCII without space. */
export const MAX_KEY = 200;

const TUBE_NAME = /^[A-Za-z0-9+/;.$_()][A-Za-z0-9\-+/;.$_()]*$/;
const KEY = /^[\x21-\x7e]+$/;
const U32 = /^[0-9]+$/;
export const I64 = /^[+-]?[0-9]+$/;

/** Digits only, at most 2^32-1; -1 when not. */
export function u32(s: string): number {
  if (!U32.test(s)) return -1;
  const v = Number(s);
  return v <= U32_MAX ? v : -1;
}

/** A tube name: 1..200 bytes of name characters, not starting with '-'. */
export function tube(s: string): boolean {
  return s.length <= MAX_TUBE_NAME && TUBE_NAME.test(s);
}

/** A key or a schedule name. */
export function key(s: string): boolean {
  return s.length <= MAX_KEY && KEY.test(s);
}
