// The V8 flags every Deno launch of tubeway carries: `deno task serve` (so `npm start`),
// `deno task compile` (baked into the binary), the tests and the benchmark. deno.json
// cannot import this file; tests/adapters/deno_flags_test.ts checks that its tasks say
// the same. They must be given at launch: V8 sizes its heap when the isolate starts, and
// v8.setFlagsFromString() later changes nothing.
//
// --max-semi-space-size=8: V8 grows its young generation with the allocation rate and
// never gives it back while the process runs, so a burst of connections or of puts grew
// it to its limit and left it there, a sizeable part of each idle connection's memory.
// With this cap the memory per connection and per job is lower and throughput the same
// (put-50's p99 a little higher, put-50x16's much lower); a smaller cap cut memory a
// little more but lost put-50 throughput. The figures: docs/reliability.md (Memory) and
// bench/README.md (The V8 cap on Deno).

/** The value of `--v8-flags=` for a Deno launch of tubeway. */
export const DENO_V8_FLAGS = "--max-semi-space-size=8";
