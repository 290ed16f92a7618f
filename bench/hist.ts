// A log-linear latency histogram: 0.1 µs units, exact below 12.8 µs, then 64
// sub-buckets per power of two (≈1.6 % resolution), up to ~200 s. Recording is a
// few integer operations; histograms from several processes merge by adding.

const SUB = 64;
const LINEAR = 2 * SUB; // values below this (in 0.1 µs) get their own bucket
const SIZE = LINEAR + 25 * SUB;

export class Hist {
  counts = new Float64Array(SIZE);
  n = 0;
  max = 0;

  /** Record one value in microseconds. */
  add(us: number): void {
    this.counts[Hist.index(us)]! += 1;
    this.n++;
    if (us > this.max) this.max = us;
  }

  /** Record the same value k times (replies that arrived together). */
  addN(us: number, k: number): void {
    this.counts[Hist.index(us)]! += k;
    this.n += k;
    if (us > this.max) this.max = us;
  }

  static index(us: number): number {
    let v = Math.round(us * 10);
    if (!(v >= 0)) v = 0;
    if (v > 0x7fffffff) v = 0x7fffffff;
    if (v < LINEAR) return v;
    const m = 31 - Math.clz32(v); // 2^m <= v < 2^(m+1), m >= 7
    return LINEAR + (m - 7) * SUB + ((v >>> (m - 6)) - SUB);
  }

  /** Midpoint of bucket i, in microseconds. */
  static value(i: number): number {
    if (i < LINEAR) return i / 10;
    const j = i - LINEAR;
    const m = Math.floor(j / SUB) + 7;
    const sub = j % SUB;
    const lo = (SUB + sub) * 2 ** (m - 6);
    const width = 2 ** (m - 6);
    return (lo + width / 2) / 10;
  }

  /** The q-quantile (0..1) in microseconds, or NaN when empty. */
  quantile(q: number): number {
    if (this.n === 0) return NaN;
    const rank = Math.max(1, Math.ceil(q * this.n));
    let seen = 0;
    for (let i = 0; i < SIZE; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(Hist.value(i), this.max);
    }
    return this.max;
  }

  merge(o: Hist): void {
    for (let i = 0; i < SIZE; i++) this.counts[i]! += o.counts[i]!;
    this.n += o.n;
    if (o.max > this.max) this.max = o.max;
  }

  /** Sparse JSON form: [[index, count], ...]. */
  toJSON(): { n: number; max: number; b: number[][] } {
    const b: number[][] = [];
    for (let i = 0; i < SIZE; i++) if (this.counts[i]) b.push([i, this.counts[i]!]);
    return { n: this.n, max: this.max, b };
  }

  static fromJSON(j: { n: number; max: number; b: number[][] }): Hist {
    const h = new Hist();
    h.n = j.n;
    h.max = j.max;
    for (const [i, c] of j.b) h.counts[i!] = c!;
    return h;
  }
}
