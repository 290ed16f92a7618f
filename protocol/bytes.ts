// The byte values the protocol is made of, named once: the parser, the command
// readers and the replies use these instead of raw codes.

/** Carriage return, line feed, space: the protocol's separators. */
export const CR = 13;
export const LF = 10;
export const SP = 32;
/** '0': a decimal digit's value is its byte minus this. */
export const DIGIT_0 = 48;

/** The bytes of an ASCII string (one byte per char: pass only ASCII). */
export function ascii(s: string): Uint8Array {
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
}
