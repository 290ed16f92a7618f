// The in-memory engine's extension commands as Engine methods, each handed to the part
// that does it: core/memory/extensions.ts (whole tubes, puts, policies, limits) or
// core/memory/schedules.ts (recurring jobs). Queue (core/memory/queue.ts) extends this
// class, which extends the read side (queue_views.ts), so queue.ts keeps to the stock
// commands that change state.
import type { Client, Job } from "./model.ts";
import type {
  Exists,
  NewJobAt,
  NewSchedule,
  PutResult,
  Refusal,
  ScheduleInfo,
  TubeState,
  UniqueJob,
} from "../engine.ts";
import { QueueViews } from "./queue_views.ts";

export abstract class QueueExtensions extends QueueViews {
  deleteTube(tube: string, state?: TubeState): number | Refusal {
    return this.x.deleteTube(tube, state);
  }

  kickTube(tube: string, bound: number, state?: "buried" | "delayed"): number | Refusal {
    return this.x.kickTube(tube, bound, state);
  }

  putAt(c: Client, job: NewJobAt): Job | PutResult {
    return this.draining ? "DRAINING" : this.x.putAt(c, job);
  }

  putUnique(c: Client, job: UniqueJob): Job | PutResult | Exists {
    return this.draining ? "DRAINING" : this.x.putUnique(c, job);
  }

  setDlq(tube: string, maxAttempts: number, deadTube: string): "OK" | "INTERNAL_ERROR" {
    return this.x.setDlq(tube, maxAttempts, deadTube);
  }

  setBackoff(tube: string, baseSec: number, capSec: number): "OK" | "INTERNAL_ERROR" {
    return this.x.setBackoff(tube, baseSec, capSec);
  }

  setConcurrency(tube: string, max: number): "OK" | "INTERNAL_ERROR" {
    return this.x.setConcurrency(tube, max);
  }

  setRate(tube: string, count: number, windowSec: number): "OK" | "INTERNAL_ERROR" {
    return this.x.setRate(tube, count, windowSec);
  }

  schedule(s: NewSchedule): "OK" | "INTERNAL_ERROR" {
    return this.schedules.set(s);
  }

  unschedule(name: string): "DELETED" | Refusal {
    return this.schedules.remove(name);
  }

  listSchedules(): ScheduleInfo[] {
    return this.schedules.list();
  }
}
