// Scripted sessions for the differential suite (tests/system/differential_test.ts), in
// the order they run. The language they are written in is sessions/dsl.ts (re-exported
// here); each file of sessions/ holds one group.
import type { Session } from "./sessions/dsl.ts";
import { PUT_SESSIONS } from "./sessions/put.ts";
import { FRAMING_SESSIONS } from "./sessions/framing.ts";
import { COMMAND_SESSIONS } from "./sessions/commands.ts";
import { SCHEDULING_STATS_SESSIONS } from "./sessions/scheduling_stats.ts";
import { TIMING_SESSIONS } from "./sessions/timing.ts";

export * from "./sessions/dsl.ts";

export const SESSIONS: Session[] = [
  ...PUT_SESSIONS,
  ...FRAMING_SESSIONS,
  ...COMMAND_SESSIONS,
  ...SCHEDULING_STATS_SESSIONS,
  ...TIMING_SESSIONS,
];
