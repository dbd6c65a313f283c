import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { LockEngine } from "../engine/engine.js";
import { TokenIssuer } from "../engine/token-issuer.js";

/**
 * A standby's holder table (its lease deadlines deferred) on a manual clock, with the node's timer
 * queue beside it, which loads snapshots; `turn` is one event-loop turn of the node, `ms` later.
 */
export function standbyTable(start = 0) {
  const clock = new ManualClock(start);
  const timers = new TimerQueue(clock, { host: "manual" });
  const table = new LockEngine<unknown>({
    clock,
    tokens: new TokenIssuer(1n, () => 2n),
    events: { granted() {}, timedOut() {} },
  });
  table.deferDeadlines(true);
  const turn = (ms = 1) => {
    clock.advance(ms);
    timers.runDue();
  };
  return { clock, timers, table, turn };
}
