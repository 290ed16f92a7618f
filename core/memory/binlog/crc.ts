// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.
// Chosen over CRC-32 (zlib) for its better detection of the short burst errors a
// torn sector produces; node:zlib's crc32 is not in every runtime we support, and
// this table version runs at several hundred MB/s, well above the disk.

const POLY = 0x82f63b78;

/**
 * T[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8 tables), as signed 32-bit
 * integers: JavaScriptCore (Bun) loads a Uint32Array entry of 2^31 or more as a double,
 * and XORing those costs conversions; Int32Array keeps every step in int32 on both
 * engines (faster per record on both: docs/benchmark.md, Measurements behind the code).
 */
function makeTables(): Int32Array[] {
  const tables: Int32Array[] = [];
  for (let k = 0; k < 8; k++) tables.push(new Int32Array(256));
  const t0 = tables[0]!;
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let i = 0; i < 8; i++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t0[b] = c;
  }
  for (let b = 0; b < 256; b++) {
    let c = t0[b]!;
    for (let k = 1; k < 8; k++) {
      c = (c >>> 8) ^ t0[c & 0xff]!;
      tables[k]![b] = c;
    }
  }
  return tables;
}

const [T0, T1, T2, T3, T4, T5, T6, T7] = makeTables() as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
];

/** The running state before any byte; pass it to the first crc32cUpdate. */
export const CRC_INIT = 0xffffffff;

/**
 * Feed bytes[start, end) into a running CRC state. States chain: the result of one
 * call is the `state` of the next. Finish with crc32cFinal.
 */
export function crc32cUpdate(
  state: number,
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
): number {
  let c = state | 0;
  let i = start;
  const fast = end - 8;
  while (i <= fast) {
    const lo = c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    c = T7[lo & 0xff]! ^ T6[(lo >>> 8) & 0xff]! ^ T5[(lo >>> 16) & 0xff]! ^ T4[lo >>> 24]! ^
      T3[bytes[i + 4]!]! ^ T2[bytes[i + 5]!]! ^ T1[bytes[i + 6]!]! ^ T0[bytes[i + 7]!]!;
    i += 8;
  }
  while (i < end) c = (c >>> 8) ^ T0[(c ^ bytes[i++]!) & 0xff]!;
  return c >>> 0;
}

/** Turn a running state into the checksum value. */
export function crc32cFinal(state: number): number {
  return (state ^ 0xffffffff) >>> 0;
}

/** CRC-32C of bytes[start, end) in one call. */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  return crc32cFinal(crc32cUpdate(CRC_INIT, bytes, start, end));
}
