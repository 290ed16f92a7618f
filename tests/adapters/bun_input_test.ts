// adapters/bun_input.ts: the input Bun's connections held, fed back in pieces. A piece
// pushed into a connection is read by its parser until push() returns (protocol/parser.ts
// keeps what is left of it then); if the connection closes while it takes the piece (a
// command that makes it close, or Bun's close callback run from inside a write), the
// socket's close lets go of the held input, and the chunk being fed must not be freed
// (detached) under the parser: the fuzz test's Bun server once died of "Buffer is
// detached" in parser.release(), called from feedHeld. Runtime-neutral: no socket here.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { InputBudget, newState, PIECE, type State } from "../../adapters/bun_input.ts";
import type { Connection } from "../../protocol/connection.ts";

function state(): State {
  return newState({ terminate() {} }, undefined as unknown as State["svc"]);
}

/** A chunk in a buffer of its own, as Bun hands over a read. */
function chunk(n: number, fill: number): Uint8Array {
  return new Uint8Array(n).fill(fill);
}

/**
 * A connection whose push() lets go of the held input in the middle (`closeAt`: on that
 * push), then reads the piece it was given, as the parser does when it keeps the rest.
 */
function closingConnection(budget: InputBudget, st: State, closeAt: number, seen: number[]): Connection {
  let pushes = 0;
  const conn = {
    closed: false,
    yielded: false,
    discarding: false,
    wantsInput: true,
    push(piece: Uint8Array) {
      pushes++;
      if (pushes === closeAt) {
        conn.closed = true;
        budget.release(st); // the socket's close callback, run while the connection takes the piece
      }
      seen.push(piece.subarray(piece.length - 1)[0]!); // throws on a detached buffer
    },
  };
  return conn as unknown as Connection;
}

describe("bun_input: held input fed back while the connection closes", () => {
  it("a close while the last piece of a chunk goes in: the piece stays readable", () => {
    const budget = new InputBudget();
    const st = state();
    budget.hold(st, chunk(PIECE, 1));
    const seen: number[] = [];
    assert.doesNotThrow(() => budget.feedHeld(st, closingConnection(budget, st, 1, seen)));
    assert.deepEqual(seen, [1]);
    assert.deepEqual([st.held.length, st.heldBytes], [0, 0]);
  });

  it("a close while a piece in the middle of a chunk goes in: the piece stays readable, the rest is let go", () => {
    const budget = new InputBudget();
    const st = state();
    budget.hold(st, chunk(3 * PIECE, 2));
    budget.hold(st, chunk(PIECE, 3));
    const seen: number[] = [];
    assert.doesNotThrow(() => budget.feedHeld(st, closingConnection(budget, st, 2, seen)));
    assert.deepEqual(seen, [2, 2], "two pieces went in; the connection closed during the second");
    assert.deepEqual([st.held.length, st.heldBytes], [0, 0], "nothing is held for a closed connection");
  });

  it("without a close, every piece goes in, in order, and nothing stays held", () => {
    const budget = new InputBudget();
    const st = state();
    budget.hold(st, chunk(2 * PIECE, 4));
    budget.hold(st, chunk(10, 5));
    const seen: number[] = [];
    assert.equal(budget.feedHeld(st, closingConnection(budget, st, 0, seen)), true);
    assert.deepEqual(seen, [4, 4, 5]);
    assert.deepEqual([st.held.length, st.heldBytes], [0, 0]);
  });
});
