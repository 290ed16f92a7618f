// Engines that answer later: the in-memory engine wrapped so that every call the
// interface lets answer later (Answer<T>) answers with a promise, either already
// resolved or after a random 0-2 ms. The wire suite and the differential sessions run
// against them to prove the seam: protocol/ must give the same bytes whether answers
// come at once or later (a database engine's come later), in command order.
//
// The wrapped call runs at once (the state changes then); only its answer is late, as
// an engine whose change is made when asked and confirmed later would behave.
import type { Answer, Engine, EngineClient, ListState, NewJob, Settling, Wake } from "../../core/engine.ts";

/** How an answer is delayed: "resolved" (an already-resolved promise) or "jitter" (0-2 ms, random). */
export type Lateness = "resolved" | "jitter";

function later<T>(how: Lateness, value: Answer<T>): Promise<T> {
  if (how === "resolved") return Promise.resolve(value);
  const ms = Math.random() * 2;
  return new Promise((resolve, reject) => setTimeout(() => Promise.resolve(value).then(resolve, reject), ms));
}

/** `inner`'s answers, each as a promise (see the header). */
export class LateEngine implements Engine {
  readonly #inner: Engine;
  readonly #how: Lateness;
  /** Answers given as promises so far (a test checks the seam was really exercised). */
  promised = 0;

  constructor(inner: Engine, how: Lateness) {
    this.#inner = inner;
    this.#how = how;
  }

  #later<T>(value: Answer<T>): Promise<T> {
    this.promised++;
    return later(this.#how, value);
  }

  get clock() {
    return this.#inner.clock;
  }
  get maxJobSize() {
    return this.#inner.maxJobSize;
  }
  get draining() {
    return this.#inner.draining;
  }
  /** Answers already resolved come in call order: a reserve may be taken behind a delete. */
  get reserveBehindDelete() {
    return this.#how === "resolved";
  }

  connect(wake: Wake): EngineClient {
    return this.#inner.connect(wake);
  }
  disconnect(c: EngineClient): void {
    this.#inner.disconnect(c);
  }
  takeId(): number {
    return this.#inner.takeId();
  }
  put(c: EngineClient, job: NewJob) {
    return this.#later(this.#inner.put(c, job));
  }
  reserve(c: EngineClient, timeoutMs: number) {
    return this.#later(this.#inner.reserve(c, timeoutMs));
  }
  cancelWait(c: EngineClient): void {
    this.#inner.cancelWait(c);
  }
  reserveJob(c: EngineClient, id: number) {
    return this.#later(this.#inner.reserveJob(c, id));
  }
  delete(c: EngineClient, id: number) {
    return this.#later(this.#inner.delete(c, id));
  }
  release(c: EngineClient, id: number, pri: number, delaySec: number) {
    return this.#later(this.#inner.release(c, id, pri, delaySec));
  }
  bury(c: EngineClient, id: number, pri: number) {
    return this.#later(this.#inner.bury(c, id, pri));
  }
  touch(c: EngineClient, id: number) {
    return this.#later(this.#inner.touch(c, id));
  }
  kick(c: EngineClient, bound: number) {
    return this.#later(this.#inner.kick(c, bound));
  }
  kickJob(id: number) {
    return this.#later(this.#inner.kickJob(id));
  }
  peek(id: number) {
    return this.#later(this.#inner.peek(id));
  }
  peekReady(c: EngineClient) {
    return this.#later(this.#inner.peekReady(c));
  }
  peekDelayed(c: EngineClient) {
    return this.#later(this.#inner.peekDelayed(c));
  }
  peekBuried(c: EngineClient) {
    return this.#later(this.#inner.peekBuried(c));
  }
  statsJob(id: number) {
    return this.#later(this.#inner.statsJob(id));
  }
  statsTube(name: string) {
    return this.#later(this.#inner.statsTube(name));
  }
  stats() {
    return this.#later(this.#inner.stats());
  }
  tubeNames() {
    return this.#later(this.#inner.tubeNames());
  }
  tubes(names: readonly string[]) {
    return this.#later(this.#inner.tubes(names));
  }
  listJobs(tube: string, state: ListState, limit: number) {
    return this.#later(this.#inner.listJobs(tube, state, limit));
  }
  metrics() {
    return this.#inner.metrics();
  }
  use(c: EngineClient, name: string): void {
    this.#inner.use(c, name);
  }
  watch(c: EngineClient, name: string): number {
    return this.#inner.watch(c, name);
  }
  ignore(c: EngineClient, name: string): number | "NOT_IGNORED" {
    return this.#inner.ignore(c, name);
  }
  pauseTube(name: string, delaySec: number) {
    return this.#later(this.#inner.pauseTube(name, delaySec));
  }
  reservedIds(clients: readonly EngineClient[]) {
    return this.#later(this.#inner.reservedIds!(clients));
  }
  drain(): void {
    this.#inner.drain();
  }
  undrain(): void {
    this.#inner.undrain();
  }
  settle(s: Settling, changed: boolean, replies: boolean): boolean {
    return this.#inner.settle(s, changed, replies);
  }
  close(): void {
    this.#inner.close();
  }
}
