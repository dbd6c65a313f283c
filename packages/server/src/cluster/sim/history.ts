/**
 * What happened in one simulated run, recorded as it happens, and the checks that judge it
 * (docs/consistency.md is the contract):
 *
 * - no token is issued twice (a replay of the same acquire's grant, same id, is the same grant);
 * - every grant's token exceeds every earlier grant's whose epoch had reached the granting node
 *   (any frame that node processed carried that epoch or a later one, or it is its own): "every
 *   token a node issues after it learned of an epoch E is above every token of E". Grants of two
 *   sides of a partition that never told each other may interleave (documented); they still differ;
 * - a node that promoted without having heard from every peer since it started, nor held an
 *   active's snapshot (a lone restart), grants above every token issued anywhere before it
 *   promoted (wall clocks are within the skew bound in the simulator);
 * - a holder whose grant a node had in its replicated table when it promoted is not refused by
 *   that node while its lease runs (replicated holders survive failover);
 * - waiters queued on one node for one key are granted in the order they queued;
 * - after the last heal exactly one node is active and every standby's table equals the active's;
 * - no client operation is left unsettled, and none fails in a way a fault cannot explain (an
 *   acquire or a release refused by the server, a protocol error);
 * - with a coordinator, more: a node grants only while the store says it holds its cluster's
 *   ownership lease, never two nodes of a cluster serve at once (no window at all), every new token
 *   of a cluster exceeds every token it issued before, whatever the node knew, and each key's tokens
 *   strictly increase in grant order, across clusters and the moves of its slot between them
 *   (slot-checks.ts checks the rest of several clusters' rules).
 *
 * The client operations are those of the real @lock/client (sim-app.ts), named by the workload
 * (`c0#3`); the grants are what the nodes sent, with request ids named by RequestLabels.
 */

import { tokenEpoch } from "@lock/protocol";

interface Issue {
  readonly at: number;
  readonly node: string;
  /** The granting node's cluster ("" without a coordinator). */
  readonly cluster: string;
  readonly key: string;
  readonly token: bigint;
  readonly id: string | undefined;
  /** The two-active window it was issued in, if any. */
  readonly window: number | undefined;
  /**
   * Another node promoted after the granting node's own promotion: a rival active (in a partition,
   * maybe not serving yet, so no window) that never hears of this grant, and may later be the one
   * that serves the key.
   */
  readonly rivalled: boolean;
  readonly leaseEndsAt: number;
}

interface Queued {
  readonly id: string;
  waiting: boolean;
}

export class History {
  readonly failures: string[] = [];
  readonly #issues: Issue[] = [];
  readonly #byToken = new Map<bigint, Issue>();
  /** When each term (a node's run as the active) began. */
  readonly #promotedAt = new Map<string, number>();
  /** Every key of a bundle's grant, by its token (`#byToken` has its first key). */
  readonly #bundleKeys = new Map<bigint, readonly string[]>();
  /** Per node term and key, the queue of acquires as they arrived. */
  readonly #queues = new Map<string, Queued[]>();
  /** Per node term: tokens of the replicated table it promoted with. */
  readonly #inherited = new Map<string, Set<bigint>>();
  /** Terms of nodes that promoted alone, and when. */
  readonly #lonePromotions = new Map<string, number>();
  /** Per cluster, the window of several serving nodes open now. */
  readonly #window = new Map<string, number>();
  #windows = 0;
  /** Coordinated runs: the highest token each cluster issued so far. */
  readonly #highestToken = new Map<string, bigint>();
  /** Coordinated runs: each key's latest grant. */
  readonly #lastOfKey = new Map<string, Issue>();
  readonly counts = {
    grants: 0,
    timeouts: 0,
    gaveUp: 0,
    /** tryAcquire found the key taken. */
    busy: 0,
    /** Every connection was tried (a node down or cut off) and the acquire did not wait for one. */
    noServer: 0,
    /** A late grant whose refresh failed, handed out as LockLostError. */
    lost: 0,
    aborted: 0,
    errors: 0,
    released: 0,
    staleReleases: 0,
    abandonedReleases: 0,
    windows: 0,
    /** What the clients' failover code did (their events): it must run, or faults missed them. */
    redirects: 0,
    retries: 0,
    disconnects: 0,
    locksLost: 0,
  };
  readonly #pending = new Set<string>();
  #now: () => number;
  /** When a node last promoted (-1: none did yet). */
  #lastPromotionAt = -1;

  readonly #coordinated: boolean;

  constructor(now: () => number, coordinated = false) {
    this.#now = now;
    this.#coordinated = coordinated;
  }

  fail(what: string): void {
    if (this.failures.length < 20) this.failures.push(`t=${this.#now().toFixed(1)} ${what}`);
  }

  /**
   * How many nodes of `cluster` serve right now: two or more open a window (closed when fewer serve
   * again).
   */
  serving(count: number, cluster = ""): void {
    if (count >= 2 && !this.#window.has(cluster)) {
      this.#window.set(cluster, ++this.#windows);
      this.counts.windows += 1;
      if (this.#coordinated)
        this.fail(`${count} nodes${cluster ? ` of ${cluster}` : ""} serve at once with a coordinator`);
    } else if (count < 2) this.#window.delete(cluster);
  }

  /**
   * `toldEpoch`: the highest epoch that had reached `node` (its own included). `term`: the node's
   * run as the active, checked against a lone promotion's promise. `coordinator` (coordinated
   * runs): `node`'s cluster, and whether the store says `node` holds its lease at this instant.
   */
  issued(
    term: string,
    node: string,
    key: string,
    token: bigint,
    id: string | undefined,
    leaseMs: number,
    toldEpoch: bigint,
    coordinator?: { readonly leased: boolean; readonly cluster: string },
  ): void {
    const at = this.#now();
    const cluster = coordinator?.cluster ?? "";
    const window = this.#window.get(cluster);
    const rivalled = this.#lastPromotionAt > (this.#promotedAt.get(term) ?? Number.NEGATIVE_INFINITY);
    const issue: Issue = { at, node, cluster, key, token, id, window, rivalled, leaseEndsAt: at + leaseMs };
    const same = this.#byToken.get(token);
    if (same) {
      if (same.key !== key || same.id === undefined || same.id !== id)
        this.fail(`token ${token} issued twice: ${describe(same)} and ${describe(issue)}`);
      return; // a replay of the same grant
    }
    this.#byToken.set(token, issue);
    if (this.#coordinated) this.#coordinatedIssue(issue, coordinator?.leased === true);
    for (const before of this.#issues) {
      if (before.token < token || tokenEpoch(before.token) > toldEpoch) continue;
      this.fail(
        `token went backwards: ${describe(before)}, then ${describe(issue)}, which knew epoch ${toldEpoch}`,
      );
    }
    const lone = this.#lonePromotions.get(term);
    if (lone !== undefined) {
      // Another cluster may take a store epoch above this one's while it promotes.
      for (const before of this.#issues) {
        if (before.at >= lone || before.token < token || before.cluster !== cluster) continue;
        this.fail(
          `a lone restart granted ${describe(issue)}, below ${describe(before)} issued before it promoted`,
        );
      }
    }
    this.#issues.push(issue);
  }

  /** A coordinator's rules for a new grant: under the lease, above its cluster's and its key's. */
  #coordinatedIssue(issue: Issue, leased: boolean): void {
    const { cluster, key, token } = issue;
    if (!leased) this.fail(`${describe(issue)} was granted without the ownership lease`);
    const highest = this.#highestToken.get(cluster) ?? 0n;
    if (token < highest)
      this.fail(`token went backwards with a coordinator: ${describe(issue)} after ${highest}`);
    if (token > highest) this.#highestToken.set(cluster, token);
    const last = this.#lastOfKey.get(key);
    if (last !== undefined && token <= last.token)
      this.fail(`${key}'s token went backwards: ${describe(last)}, then ${describe(issue)}`);
    this.#lastOfKey.set(key, issue);
  }

  /**
   * The keys of a bundle granted with `token`, whose first key went through `issued`: with a
   * coordinator each of its keys' tokens must rise too. (Without one, `issued` already checks the
   * token against every earlier grant of any key.)
   */
  bundleKeys(keys: readonly string[], token: bigint): void {
    const issue = this.#byToken.get(token);
    if (issue === undefined) return;
    this.#bundleKeys.set(token, keys);
    if (!this.#coordinated) return;
    for (const key of keys) {
      const last = this.#lastOfKey.get(key);
      if (key === issue.key || last?.token === token) continue;
      if (last !== undefined && token < last.token)
        this.fail(`${key}'s token went backwards in a bundle: ${describe(last)}, then ${describe(issue)}`);
      this.#lastOfKey.set(key, { ...issue, key });
    }
  }

  /**
   * The holders `node` has for `key` right now (checked after every event on every serving node):
   * an exclusive holder alone, shared holders only beside shared ones, a semaphore's permits at most
   * `limit` and on distinct slots below it.
   */
  holding(
    node: string,
    key: string,
    holders: ReadonlyArray<{ readonly mode: string; readonly slot: number | undefined }>,
    limit: number | undefined,
  ): void {
    if (holders.length < 2 && holders.every((h) => h.mode !== "permit" || (h.slot ?? 0) < (limit ?? 1)))
      return;
    const modes = new Set(holders.map((h) => h.mode));
    const what = `${node} holds ${key} as ${holders.map((h) => (h.slot === undefined ? h.mode : `${h.mode}:${h.slot}`)).join(", ")}`;
    if (modes.size > 1 || modes.has("exclusive")) this.fail(`${what}: an exclusive holder beside another`);
    else if (modes.has("permit")) {
      const slots = new Set(holders.map((h) => h.slot));
      if (limit !== undefined && holders.length > limit) this.fail(`${what}: more than ${limit} permits`);
      else if (slots.size < holders.length) this.fail(`${what}: two permits on one slot`);
      else if ([...slots].some((slot) => slot === undefined || slot >= (limit ?? 0)))
        this.fail(`${what}: a slot out of range`);
    }
  }

  /** `term` names one node's run as the active: its queue order is checked within it. */
  queued(term: string, key: string, id: string): void {
    const queue = this.#queues.get(`${term} ${key}`) ?? [];
    if (!queue.some((entry) => entry.id === id && entry.waiting)) queue.push({ id, waiting: true });
    this.#queues.set(`${term} ${key}`, queue);
  }

  /** A queued acquire left its queue: granted (checked for order), or not. */
  dequeued(term: string, key: string, id: string, granted: boolean): void {
    const queue = this.#queues.get(`${term} ${key}`);
    if (!queue) return;
    const index = queue.findIndex((entry) => entry.id === id && entry.waiting);
    if (index < 0) return;
    if (granted) {
      const skipped = queue.slice(0, index).filter((entry) => entry.waiting);
      if (skipped.length > 0)
        this.fail(
          `${term}: ${id} granted ${key} before ${skipped.map((e) => e.id).join(", ")}, queued earlier`,
        );
    }
    queue[index]!.waiting = false;
    while (queue.length > 0 && !queue[0]!.waiting) queue.shift();
  }

  /** `lone`: it had not heard from every peer since it started. */
  promoted(term: string, tokens: Set<bigint>, lone: boolean): void {
    this.#lastPromotionAt = this.#now();
    this.#promotedAt.set(term, this.#lastPromotionAt);
    this.#inherited.set(term, tokens);
    if (lone) this.#lonePromotions.set(term, this.#now());
  }

  /** Whether a node granted `key` with `token` (alone, or as one of a bundle's keys). */
  granted(token: bigint, key: string): boolean {
    return this.#byToken.get(token)?.key === key || (this.#bundleKeys.get(token)?.includes(key) ?? false);
  }

  /**
   * Whether the grant of `token` may be unknown to the active now: a node promoted after it (a
   * failover), it was granted while two nodes served (a partition, the other active never had it),
   * or a rival had promoted before it on the other side of a partition (`rivalled`).
   */
  mayBeLost(token: bigint): boolean {
    const issue = this.#byToken.get(token);
    return (
      issue !== undefined &&
      (this.#lastPromotionAt >= issue.at || issue.window !== undefined || issue.rivalled)
    );
  }

  /** `node` (in `term`) answered a release of `token` with `R key 0`. */
  refusedRelease(term: string, key: string, token: bigint): void {
    const issue = this.#byToken.get(token);
    if (!issue || !this.#inherited.get(term)?.has(token)) return;
    if (this.#now() < issue.leaseEndsAt - 1)
      this.fail(`${term} lost the replicated holder of ${key} (${token}) before its lease ran out`);
  }

  acquireStarted(client: string, id: string, _key: string): void {
    this.#pending.add(`${client} ${id}`);
  }

  acquired(_client: string, _id: string, _key: string, _token: bigint, _node: string): void {
    this.counts.grants += 1;
  }

  /** `outcome`: `granted` (counted by `acquired`), one of EXPLAINED's, or anything else: a failure. */
  acquireSettled(client: string, id: string, outcome: string): void {
    this.#pending.delete(`${client} ${id}`);
    if (outcome === "granted") {
      this.#pending.add(`${client} ${id} release`);
      return;
    }
    const counted = EXPLAINED.get(outcome);
    if (counted !== undefined) this.counts[counted] += 1;
    else {
      this.counts.errors += 1;
      this.fail(`${client} ${id}: acquire failed with ${outcome}`);
    }
  }

  released(client: string, id: string, _key: string, _token: bigint, outcome: string): void {
    this.#pending.delete(`${client} ${id} release`);
    if (outcome === "released") this.counts.released += 1;
    else if (outcome === "stale") this.counts.staleReleases += 1;
    else if (outcome === "abandoned") this.counts.abandonedReleases += 1;
    else this.fail(`${client} ${id}: release failed with ${outcome}`);
  }

  /** Operations that never settled. */
  unsettled(): string[] {
    return [...this.#pending];
  }
}

/** The outcomes of an acquire that faults explain, and what each counts as. */
const EXPLAINED = new Map<string, "timeouts" | "gaveUp" | "busy" | "noServer" | "lost" | "aborted">([
  ["timed-out", "timeouts"],
  ["gave-up", "gaveUp"],
  ["busy", "busy"],
  ["no-server", "noServer"],
  ["lost", "lost"],
  ["aborted", "aborted"],
]);

function describe(issue: Issue): string {
  return `${issue.token} by ${issue.node} at ${issue.at.toFixed(1)} for ${issue.id ?? "-"}${issue.window ? ` (window ${issue.window})` : ""}`;
}
