// Prometheus text parsed by a well-kept parser (parse-prometheus-text-format, pinned in
// package.json), with small lookups for the tests. No regex of ours reads the format.
// @ts-ignore: the package ships no type definitions; the shape is declared below
import parsePrometheusTextFormat from "parse-prometheus-text-format";

interface Sample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}
export interface MetricFamily {
  name: string;
  help: string;
  type: string;
  metrics: Sample[];
}

export class Scrape {
  readonly families: MetricFamily[];
  constructor(text: string) {
    this.families = (parsePrometheusTextFormat as (t: string) => MetricFamily[])(text);
  }

  family(name: string): MetricFamily {
    const f = this.families.find((x) => x.name === name);
    if (!f) throw new Error(`no metric family ${name}`);
    return f;
  }

  /** The value of the one sample of `name` whose labels include `labels`. */
  value(name: string, labels: Record<string, string> = {}): number {
    const hits = this.#samples(name, labels);
    if (hits.length !== 1) throw new Error(`${hits.length} samples of ${name} match ${JSON.stringify(labels)}`);
    return Number(hits[0]!.value);
  }

  /** Whether `name` has a sample whose labels include `labels`. */
  has(name: string, labels: Record<string, string> = {}): boolean {
    return this.#samples(name, labels).length > 0;
  }

  #samples(name: string, labels: Record<string, string>) {
    return this.family(name).metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  }

  /** A histogram's cumulative buckets (by le), count and sum. */
  histogram(name: string): { buckets: Record<string, number>; count: number; sum: number } {
    const m = this.family(name).metrics[0]!;
    const buckets: Record<string, number> = {};
    for (const [le, v] of Object.entries(m.buckets ?? {})) buckets[le] = Number(v);
    return { buckets, count: Number(m.count), sum: Number(m.sum) };
  }
}
