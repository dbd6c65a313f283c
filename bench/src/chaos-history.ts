/**
 * What a chaos run records, and the checker that judges it. Pure: the run fills a History, the
 * checker reads it. Times are monotonic ms (`performance.now()`) of the bench process.
 */
import type { Hold } from "./chaos-holders.js";

/** A grant as the worker saw it when `acquire` resolved. */
export interface Grant {
  readonly at: number;
  readonly key: string;
  readonly token: bigint;
  /** The node that issued it: the node id in the token's epoch (`epoch = round × 256 + node id`). */
  readonly node: number;
  /**
   * A key held by several at once (readers, permits): grants of one moment may arrive in any order,
   * so its tokens are judged in real-time order (chaos-holders.ts), not in order of arrival.
   */
  readonly sharedKey?: true;
}

/** One injected fault: from injection to the cluster being back in its steady state. */
export interface Fault {
  readonly kind: FaultKind;
  readonly node: number;
  readonly startedAt: number;
  /** The same moment on the wall clock, to place the nodes' log lines (pino `time`). */
  readonly wallStartedAt: number;
  /** When the fault was lifted (resumed, restarted, healed). */
  healedAt: number;
  /** When the cluster was steady again (node 0 serving, the others following it). */
  settledAt: number;
  /** Two actives were possible (a peer partition): per-key token order may interleave. */
  readonly twoActives: boolean;
}

export type FaultKind =
  | "stall"
  | "kill"
  | "return"
  | "handoff"
  | "restart-standby"
  | "restart-all"
  | "partition-peers"
  | "partition-full"
  // Coordinated runs only (chaos-store.ts): faults of the coordination store.
  | "store-cut"
  | "store-slow"
  | "store-reset"
  | "store-leader-kill";

export interface Failure {
  readonly at: number;
  readonly code: string;
  readonly op: "acquire" | "write" | "read" | "release";
}

export class History {
  readonly grants: Grant[] = [];
  /** Every worker's holding span, for the holder rules (chaos-holders.ts). */
  readonly holds: Hold[] = [];
  readonly faults: Fault[] = [];
  readonly failures: Failure[] = [];
  /** Operations that did not settle within their bound (still counted if they settled later). */
  hung = 0;
  /** Fenced writes the fence refused as stale (a holder that paused past its lease, say). */
  staleRefused = 0;
  fencedWrites = 0;
  /** Reads through fenceRead() (readers of the read/write key): accepted, refused as stale. */
  fencedReads = 0;
  staleReadsRefused = 0;
  /** Accepted reads that saw a write with a higher token than the reader's: the read rule failed. */
  staleReadsAccepted = 0;
  /** Critical sections entered while another worker was inside for the same key (unfenced view). */
  overlaps = 0;
  controlIncrements = 0;
}

/** Node id of a token: `token = epoch × 2^24 + sequence`, `epoch = round × 256 + node id`. */
export function nodeOf(token: bigint): number {
  return Number((token >> 24n) & 0xffn);
}

export interface Verdict {
  readonly duplicateTokens: number;
  /** Grant pairs of one key whose token went down, outside the two-active windows. */
  readonly decreasing: number;
  /** The same inside the windows: documented, not a failure. */
  readonly decreasingInWindows: number;
  readonly hung: number;
  readonly staleAccepted: number;
  readonly staleReadsAccepted: number;
  readonly ok: boolean;
  /** The decreases outside the windows, for the report: the earlier grant and the later one. */
  readonly decreases: ReadonlyArray<readonly [Grant, Grant]>;
}

/**
 * Judges the history. `fencedLog` is the fence-protected table's log in commit order: the token of
 * every write the fence let through; a token lower than an earlier one is a stale write accepted.
 * `twoActiveWindows: false` (a coordinated cluster, where two nodes never grant at once) counts a
 * decrease inside a partition's window as a failure too.
 */
export function check(
  history: History,
  fencedLog: ReadonlyArray<{ key: string; token: bigint }>,
  { twoActiveWindows = true }: { twoActiveWindows?: boolean } = {},
): Verdict {
  const seen = new Set<bigint>();
  let duplicateTokens = 0;
  for (const grant of history.grants) {
    if (seen.has(grant.token)) duplicateTokens++;
    seen.add(grant.token);
  }
  // Two-active windows: from a peer partition's start until a while after the cluster settled
  // (a loser's holders may still resolve then).
  const windows = history.faults
    .filter((fault) => twoActiveWindows && fault.twoActives)
    .map((fault) => [fault.startedAt, fault.settledAt + 1_000] as const);
  const inWindow = (at: number) => windows.some(([from, to]) => at >= from && at <= to);
  let decreasing = 0;
  let decreasingInWindows = 0;
  const decreases: Array<readonly [Grant, Grant]> = [];
  const lastByKey = new Map<string, Grant>();
  for (const grant of [...history.grants].sort((a, b) => a.at - b.at)) {
    if (grant.sharedKey) continue;
    const last = lastByKey.get(grant.key);
    if (last !== undefined && grant.token < last.token) {
      if (inWindow(grant.at) || inWindow(last.at)) decreasingInWindows++;
      else {
        decreasing++;
        decreases.push([last, grant]);
      }
    }
    if (last === undefined || grant.token > last.token) lastByKey.set(grant.key, grant);
  }
  let staleAccepted = 0;
  const highest = new Map<string, bigint>();
  for (const { key, token } of fencedLog) {
    const top = highest.get(key);
    if (top !== undefined && token < top) staleAccepted++;
    else highest.set(key, token);
  }
  return {
    duplicateTokens,
    decreasing,
    decreasingInWindows,
    hung: history.hung,
    staleAccepted,
    staleReadsAccepted: history.staleReadsAccepted,
    decreases,
    ok:
      duplicateTokens === 0 &&
      decreasing === 0 &&
      history.hung === 0 &&
      staleAccepted === 0 &&
      history.staleReadsAccepted === 0,
  };
}

/** Per fault instance: how long until the first grant after it, and the longest gap in grants. */
export interface Outage {
  readonly fault: Fault;
  /** From the fault to the first grant after it (by another node than the faulted one, if `byOther`). */
  readonly firstGrantMs: number;
  /** The longest time with no grant at all, from the fault until the cluster settled. */
  readonly longestGapMs: number;
  /** Where that gap began, in ms from the fault, and the nodes that granted on either side of it. */
  readonly gapAtMs: number;
  readonly gapFrom: number | undefined;
  readonly gapTo: number | undefined;
}

/**
 * The longest gap between grants from `from` to `to` (and on to the first grant after `to`, with
 * `throughNext`), with its start and the grants on either side.
 */
function longestGap(sorted: readonly Grant[], from: number, to: number, throughNext = true) {
  let gap = 0;
  let at = from;
  let before: Grant | undefined;
  let after: Grant | undefined;
  let previous: Grant | undefined;
  let previousAt = from;
  for (const grant of sorted) {
    if (grant.at < from) continue;
    if (grant.at > to && !throughNext) break;
    if (grant.at - previousAt > gap) {
      gap = grant.at - previousAt;
      at = previousAt;
      before = previous;
      after = grant;
    }
    previous = grant;
    previousAt = grant.at;
    if (grant.at > to) break;
  }
  return { gap, at, before, after };
}

/** The longest gap in the steady time before each fault (`lookbackMs`): the baseline to compare with. */
export function steadyGaps(history: History, lookbackMs: number): number[] {
  const sorted = [...history.grants].sort((a, b) => a.at - b.at);
  return history.faults.map((fault) => {
    const from = fault.startedAt - lookbackMs;
    // The fault's window to `from` would be measured as a gap: start at the first grant after it.
    const first = sorted.find((grant) => grant.at >= from);
    return first === undefined ? Number.NaN : longestGap(sorted, first.at, fault.startedAt, false).gap;
  });
}

/**
 * Per fault: its outage. `byOther` kinds count only a grant by another node than the faulted one;
 * with `byNewEpoch` (a coordinated cluster, whose epochs come from the store's counter and so do not
 * name the node), a grant from an epoch above every epoch granted before the fault: the new active's.
 */
export function outages(
  history: History,
  byOther: (kind: FaultKind) => boolean,
  { byNewEpoch = false }: { byNewEpoch?: boolean } = {},
): Outage[] {
  const sorted = [...history.grants].sort((a, b) => a.at - b.at);
  return history.faults.map((fault) => {
    const other = byOther(fault.kind);
    let epochBefore = -1n;
    for (const grant of sorted) {
      if (grant.at >= fault.startedAt) break;
      if (grant.token >> 24n > epochBefore) epochBefore = grant.token >> 24n;
    }
    const counts = (grant: Grant) =>
      !other || (byNewEpoch ? grant.token >> 24n > epochBefore : grant.node !== fault.node);
    const first = sorted.find((grant) => grant.at >= fault.startedAt && counts(grant));
    // From the fault's start over every grant until it settled, and to the first grant after that.
    const { gap, at, before, after } = longestGap(
      sorted,
      fault.startedAt,
      Math.max(fault.settledAt, fault.healedAt),
    );
    return {
      fault,
      firstGrantMs: first === undefined ? Number.POSITIVE_INFINITY : first.at - fault.startedAt,
      longestGapMs: gap,
      gapAtMs: at - fault.startedAt,
      gapFrom: before?.node,
      gapTo: after?.node,
    };
  });
}

/** Errors by code within each fault kind's windows (from the fault until it settled). */
export function failuresByKind(history: History): Map<FaultKind | "steady", Map<string, number>> {
  const result = new Map<FaultKind | "steady", Map<string, number>>();
  for (const failure of history.failures) {
    const fault = history.faults.find(
      (f) => failure.at >= f.startedAt && failure.at <= Math.max(f.settledAt, f.healedAt) + 1_000,
    );
    const kind = fault?.kind ?? "steady";
    let codes = result.get(kind);
    if (codes === undefined) {
      codes = new Map();
      result.set(kind, codes);
    }
    const label = `${failure.op}:${failure.code}`;
    codes.set(label, (codes.get(label) ?? 0) + 1);
  }
  return result;
}
