/**
 * What the event log says about concurrency. Each job logs `start` and `end` in fenced transactions
 * while it holds its permit, and Postgres numbers the events as they are written, so a job's
 * start..end lies within its permit's lifetime: jobs whose intervals overlap in this order held their
 * permits at the same time.
 */
export interface JobEvent {
  readonly seq: number;
  readonly jobId: string;
  /** The semaphore's key, `tenant:<id>`. */
  readonly key: string;
  readonly slot: number;
  readonly token: bigint;
  readonly kind: "start" | "end";
}

/** Per key, the most jobs between their start and their end at once. */
export function mostAtOnce(events: readonly JobEvent[]): Map<string, number> {
  const running = new Map<string, number>();
  const most = new Map<string, number>();
  for (const { key, kind } of events) {
    const now = (running.get(key) ?? 0) + (kind === "start" ? 1 : -1);
    running.set(key, now);
    most.set(key, Math.max(most.get(key) ?? 0, now));
  }
  return most;
}

/**
 * Events written on a key's slot by another job than the one between its start and end on that slot
 * (two holders of one slot at once), or with a lower token than an earlier event of the slot (the
 * fence let a stale holder write): each as `<key> slot <n>: <what>`.
 */
export function slotViolations(events: readonly JobEvent[]): string[] {
  const open = new Map<string, string>();
  const highest = new Map<string, bigint>();
  const violations: string[] = [];
  for (const { key, slot, jobId, token, kind } of events) {
    const resource = `${key} slot ${slot}`;
    const holder = open.get(resource);
    if (holder !== undefined && holder !== jobId) violations.push(`${resource}: ${jobId} beside ${holder}`);
    const top = highest.get(resource) ?? 0n;
    if (token < top) violations.push(`${resource}: token ${token} after ${top}`);
    highest.set(resource, token > top ? token : top);
    if (kind === "start") open.set(resource, jobId);
    else open.delete(resource);
  }
  return violations;
}
