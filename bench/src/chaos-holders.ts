/**
 * The holder rules of a chaos run, judged from what the workers saw: every grant of every worker
 * as a span from the grant's arrival to the release being sent (or to the lease's end as the client
 * knew it, `Lock.expiresAt`, if that came first: a holder that paused past its lease holds nothing).
 * That span lies inside the holder's span on the server (the grant left before it arrived, the
 * release arrives after it was sent, and the client's lease deadline is never later than the
 * server's), so two spans that break a rule broke it on the server too. Pure: no I/O, no clock.
 *
 * Rules: never more holders of a semaphore than its permits, never two live permits on one slot,
 * never an exclusive holder beside any other holder, and tokens in real-time order: a grant seen
 * before another was asked for has the lower token.
 */
import type { Fault, FaultKind } from "./chaos-history.js";

export type HoldMode = "exclusive" | "shared" | "permit";

export interface Hold {
  readonly key: string;
  readonly mode: HoldMode;
  /** The semaphore's permits (mode "permit"). */
  readonly permits: number | undefined;
  /** The permit's slot (mode "permit"). */
  readonly slot: number | undefined;
  readonly token: bigint;
  /** When `acquire` was called (before any retry of it was sent). */
  readonly requestedAt: number;
  /** When the grant arrived. */
  readonly at: number;
  /** When the release was sent, or the client's lease deadline if earlier. */
  readonly end: number;
}

/**
 * Faults during which lockd does not promise mutual exclusion (docs/consistency.md, "Guarantees and
 * non-guarantees in a cluster"): a grant the old active had not replicated is lost with it, so the
 * new active grants the key again; a partition may have two actives. Handoffs, a node's return and
 * a standby's restart keep every holder.
 */
export const EXCLUSION_NOT_PROMISED: ReadonlySet<FaultKind> = new Set([
  "stall",
  "kill",
  "restart-all",
  "partition-peers",
  "partition-full",
]);

export interface RuleBreak {
  readonly rule: "over-limit" | "slot-clash" | "not-alone" | "token-order";
  /** The later hold: the one whose grant broke the rule. */
  readonly hold: Hold;
  /** A hold it broke the rule against. */
  readonly other: Hold;
  /** The fault whose window it fell in, if any: then it is documented, not a failure. */
  readonly fault: Fault | undefined;
}

export interface HolderVerdict {
  /** Rule breaks outside the windows where the rule is not promised: each is a failure. */
  readonly breaks: readonly RuleBreak[];
  /** Rule breaks inside those windows (documented non-guarantees), by rule. */
  readonly inWindows: Readonly<Record<RuleBreak["rule"], number>>;
  /** The same by the kind of fault whose window they fell in. */
  readonly inWindowsByFault: ReadonlyMap<FaultKind, number>;
  /** The first few of them per fault kind, to look at (--verbose). */
  readonly inWindowsFirst: readonly RuleBreak[];
  readonly holds: number;
}

/**
 * Judges `holds`. Exclusion rules are not promised from a fault in EXCLUSION_NOT_PROMISED until
 * `leaseMs` plus a second after it settled (a holder granted before it may live that long); token
 * order is not promised in the two-active windows, as in the chaos checker's token check.
 */
export function checkHolders(
  holds: readonly Hold[],
  faults: readonly Fault[],
  leaseMs: number,
): HolderVerdict {
  const windowOf = (at: number, promised: (fault: Fault) => boolean) =>
    faults.find(
      (fault) =>
        !promised(fault) &&
        at >= fault.startedAt &&
        at <= Math.max(fault.settledAt, fault.healedAt) + leaseMs + 1_000,
    );
  const exclusionWindow = (at: number) => windowOf(at, (fault) => !EXCLUSION_NOT_PROMISED.has(fault.kind));
  const orderWindow = (at: number) => windowOf(at, (fault) => !fault.twoActives);
  const breaks: RuleBreak[] = [];
  const inWindows = { "over-limit": 0, "slot-clash": 0, "not-alone": 0, "token-order": 0 };
  const inWindowsByFault = new Map<FaultKind, number>();
  const inWindowsFirst: RuleBreak[] = [];
  const note = (rule: RuleBreak["rule"], hold: Hold, other: Hold, fault: Fault | undefined) => {
    if (fault === undefined) {
      breaks.push({ rule, hold, other, fault });
      return;
    }
    inWindows[rule]++;
    const seen = inWindowsByFault.get(fault.kind) ?? 0;
    if (seen < 5) inWindowsFirst.push({ rule, hold, other, fault });
    inWindowsByFault.set(fault.kind, seen + 1);
  };
  const byKey = new Map<string, Hold[]>();
  // A grant that arrived after the client's own lease deadline held nothing.
  for (const hold of holds.filter((held) => held.end > held.at)) {
    const mine = byKey.get(hold.key);
    if (mine === undefined) byKey.set(hold.key, [hold]);
    else mine.push(hold);
  }
  for (const mine of byKey.values()) {
    for (const [rule, hold, other] of exclusionBreaks(mine))
      note(rule, hold, other, exclusionWindow(hold.at));
    for (const [hold, other] of orderBreaks(mine)) note("token-order", hold, other, orderWindow(hold.at));
  }
  return { breaks, inWindows, inWindowsByFault, inWindowsFirst, holds: holds.length };
}

type Exclusion = Exclude<RuleBreak["rule"], "token-order">;

/** One key's holds swept in time order: each grant checked against the holders live at its arrival. */
function exclusionBreaks(holds: readonly Hold[]): Array<[Exclusion, Hold, Hold]> {
  // Ends sort before starts at the same instant: spans that only touch do not overlap.
  const events = holds.flatMap((hold) => [
    { at: hold.at, start: true, hold },
    { at: hold.end, start: false, hold },
  ]);
  events.sort((a, b) => a.at - b.at || Number(a.start) - Number(b.start));
  const live = new Set<Hold>();
  const found: Array<[Exclusion, Hold, Hold]> = [];
  for (const { start, hold } of events) {
    if (!start) {
      live.delete(hold);
      continue;
    }
    const others = [...live];
    const exclusive = others.find((other) => other.mode === "exclusive");
    if (hold.mode === "exclusive" && others.length > 0) found.push(["not-alone", hold, others[0]!]);
    else if (exclusive !== undefined) found.push(["not-alone", hold, exclusive]);
    if (hold.mode === "permit") {
      const permits = others.filter((other) => other.mode === "permit");
      if (permits.length >= (hold.permits ?? 1)) found.push(["over-limit", hold, permits[0]!]);
      const sameSlot = permits.find((other) => other.slot === hold.slot);
      if (sameSlot !== undefined) found.push(["slot-clash", hold, sameSlot]);
    }
    live.add(hold);
  }
  return found;
}

/**
 * Real-time order of one key's tokens: a hold whose grant arrived before another's acquire was
 * called was granted first, so its token must be lower. Holds granted while both were asked for
 * (readers of one phase, permits) may arrive in either order and are not compared.
 */
function orderBreaks(holds: readonly Hold[]): Array<[Hold, Hold]> {
  const byArrival = [...holds].sort((a, b) => a.at - b.at);
  const byRequest = [...holds].sort((a, b) => a.requestedAt - b.requestedAt);
  const found: Array<[Hold, Hold]> = [];
  let highest: Hold | undefined;
  let next = 0;
  for (const hold of byRequest) {
    while (next < byArrival.length && byArrival[next]!.at < hold.requestedAt) {
      const arrived = byArrival[next++]!;
      if (highest === undefined || arrived.token > highest.token) highest = arrived;
    }
    // Equal tokens are one grant given twice: the chaos checker counts those as duplicates.
    if (highest !== undefined && hold.token < highest.token) found.push([hold, highest]);
  }
  return found;
}
