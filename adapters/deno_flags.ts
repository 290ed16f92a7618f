// The V8 flags every Deno launch of tubeway carries: `deno task serve` (so `npm start`),
// `deno task compile` (baked into the binary), the tests and the benchmark. deno.json
// cannot import this file; tests/adapters/deno_flags_test.ts checks that its tasks say
// the same. They must be given at launch: V8 sizes its heap when the isolate starts, and
// v8.setFlagsFromString() later changes nothing.
//
// --max-semi-space-size=8: V8 grows its young generation with the allocation rate (to
// 39-48 MB in all after the bursts below, from 2.4) and never gives it back while the
// process runs. A burst of connections or of puts grew it to its limit and left it
// there: 10,000 idle connections measured 8.7-8.9 KB each (1.4-2.0 KB of it the young
// generation), 6.9-7.3 KB with this cap. The benchmark (native generator, alternating
// runs) found throughput unchanged (put-1, put-50, put-50x16, e2e-50 within the runs'
// spread), put-50x16's p99 42-72 ms -> 15-27 ms, put-50's 2.5-3.5 -> 4.1-4.2 ms, and
// mem-1m 444 -> 363-417 bytes per job. A 4 MiB cap cut memory a little more but put-50
// fell to 0.6-0.8x in two runs of three.

/** The value of `--v8-flags=` for a Deno launch of tubeway. */
export const DENO_V8_FLAGS = "--max-semi-space-size=8";
