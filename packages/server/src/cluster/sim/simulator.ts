import { keySlot } from "@lock/protocol";
import { History } from "./history.js";
import { scheduleFault } from "./inject.js";
import { describeFault, type Fault, planFaults, planMoves } from "./nemesis.js";
import { RequestLabels } from "./request-labels.js";
import { type ClientMutation, SEMAPHORE_PERMITS, SimApp } from "./sim-app.js";
import type { NodeObserver } from "./sim-node.js";
import { SimWatcher } from "./sim-watcher.js";
import { SlotChecks } from "./slot-checks.js";
import type { SlotOperator } from "./slot-operator.js";
import { workloadKeys } from "./slot-workload.js";
import { WatchChecks } from "./watch-checks.js";
import { type SimCluster, SimWorld, type Mutation as WorldMutation } from "./world.js";

/** The workload's keys: two read/write locks and a semaphore (sim-app.ts). */
const SIM_KEYS = ["k0", "k1", "s0"];

/** A bug put in on purpose, in the nodes (world.ts) or in the client (sim-app.ts). */
export type Mutation = WorldMutation | ClientMutation;
export const MUTATIONS: readonly Mutation[] = [
  "none",
  "same-node-id",
  "clock-behind",
  "peer-token-mismatch",
  "writer-beside-reader",
  "bundle-key-by-key",
  "fresh-retry-id",
  "lease-overrun",
  "skip-epoch-raise",
];

export interface SimOptions {
  readonly seed: number;
  readonly nodes?: number;
  /** Faults the nemesis injects. */
  readonly steps?: number;
  readonly clients?: number;
  readonly mutation?: Mutation;
  /** Coordinated mode: an in-memory store with faults decides who is active. */
  readonly coordinated?: boolean;
  /**
   * Several clusters of `nodes` nodes each over one key space and one store (so coordinated),
   * with slot moves between them.
   */
  readonly clusters?: number;
  /** A line per notable event (role changes, grants, faults), for reading one run closely. */
  readonly log?: (line: string) => void;
}

export interface SimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly failures: readonly string[];
  /** The fault schedule, one line per fault, for a human. */
  readonly schedule: readonly string[];
  readonly counts: History["counts"];
  /** States the watcher (real `observe()`) was told, and how many of them held the key. */
  readonly watched: WatchChecks["counts"];
  /** Several clusters: the moves begun and committed, and what the operator's tool went through. */
  readonly moves?: SlotChecks["counts"] & SlotOperator["counts"];
  readonly simulatedMs: number;
  readonly events: number;
}

/** After the last fault heals, how long the cluster gets to settle before the final checks. */
const SETTLE_MS = 4_000;
/** Clients stop starting operations this long after the heal; they must all settle soon after. */
const TRAFFIC_AFTER_HEAL_MS = 2_000;
/**
 * An operation started just before the drain may take its wait, the reply grace, a hold of twice
 * its lease and a release's retries; then its client closes (releases retried at most 5 s more).
 */
const DRAIN_LIMIT_MS = 25_000;

/**
 * Runs one seeded schedule: N real cluster nodes (LockNode, Replicator, Cluster) on one manual
 * clock, applications using the real @lock/client over the simulated network, and a nemesis (kills, graceful stops,
 * stalls, partitions, one-way cuts, delays, connection resets, restarts of every node), then heals
 * everything and checks the history (history.ts). The same seed gives the same run.
 */
export async function simulate(options: SimOptions): Promise<SimResult> {
  let world: SimWorld | undefined;
  const now = () => world?.now ?? 0;
  const several = (options.clusters ?? 1) > 1;
  const history = new History(now, options.coordinated === true || several);
  const labels = new RequestLabels();
  const log = options.log
    ? (line: string) => options.log!(`${now().toFixed(1).padStart(8)} ${line}`)
    : undefined;
  let slots: SlotChecks | undefined;
  world = new SimWorld({
    seed: options.seed,
    nodes: options.nodes ?? 3,
    observer: recordingObserver(
      history,
      () => world!,
      () => slots,
      labels,
      log,
    ),
    ...(isClientMutation(options.mutation) ? {} : { mutation: options.mutation }),
    coordinated: options.coordinated === true,
    clusters: options.clusters ?? 1,
  });
  const keys = world.initialMap ? workloadKeys(world.initialMap) : SIM_KEYS;
  if (world.store && world.operator) {
    slots = new SlotChecks(world.store.state, keys, (what) => history.fail(what));
    world.operator.log = log;
  }
  const watches = new WatchChecks(history, (what) => history.fail(what));
  const plan = schedule(world, history, options, keys, labels, log, watches);
  await runUntilSettled(world, history, plan, slots, log);
  await finishWatching(world, history, plan, watches);
  for (const app of plan.clients) if (app.busy) history.fail(`${app.name}'s client never finished closing`);
  const unsettled = history.unsettled();
  if (unsettled.length > 0) history.fail(`operations never settled: ${unsettled.slice(0, 5).join("; ")}`);
  if (world.operator?.busy) history.fail("the operator's last move never began or never committed");
  slots?.finalCheck();
  return {
    seed: options.seed,
    ok: history.failures.length === 0,
    failures: history.failures,
    schedule: plan.faults.map((fault) => describeFault(fault, world.names)),
    counts: history.counts,
    watched: watches.counts,
    ...(slots && world.operator ? { moves: { ...slots.counts, ...world.operator.counts } } : {}),
    simulatedMs: Math.round(world.now),
    events: world.events,
  };
}

/** What the nodes do, into the history and the slot checks (and the log). */
function recordingObserver(
  history: History,
  world: () => SimWorld,
  slots: () => SlotChecks | undefined,
  labels: RequestLabels,
  log: ((line: string) => void) | undefined,
): NodeObserver {
  return {
    issued: (node, key, token, id, leaseMs) => {
      const label = labels.label(id);
      log?.(`${node.name} grants ${key} ${token} to ${label}`);
      // A standby, an active handing off or held: its grants would be unknown to the next active.
      if (!node.lock?.serving)
        history.fail(`${node.name} granted ${key} ${token} to ${label} while not serving`);
      const cluster = node.clusterName;
      history.serving(world().servingIn(cluster), cluster);
      const own = node.lock?.epoch ?? 0n;
      const told = own > node.toldEpoch ? own : node.toldEpoch;
      const store = world().store;
      const coordinator = store && {
        leased: store.state.holderNow(cluster) === store.holderName(node),
        cluster,
      };
      history.issued(node.term, node.name, key, token, label, leaseMs, told, coordinator);
      slots()?.granted(node.name, cluster, key, token, node.gate?.map);
    },
    bundleIssued: (_node, keys, token) => history.bundleKeys(keys, token),
    queued: (node, key, id) => history.queued(node.term, key, labels.label(id)),
    dequeued: (node, key, id, granted) => history.dequeued(node.term, key, labels.label(id), granted),
    refusedRelease: (node, key, token) => history.refusedRelease(node.term, key, token),
    roleChanged: (node, role, reason) => {
      log?.(`${node.name} ${role}: ${reason} (epoch ${node.lock?.epoch})`);
      if (role !== "active" || reason.startsWith("raised epoch") || reason.startsWith("took a fresh epoch"))
        return;
      // Lone as docs/consistency.md has it: not heard from every peer since it started, nor held
      // an active's snapshot (which carries what that active knew).
      const lone = node.heardSinceStart.size < node.config.peers.length - 1 && !node.syncedSinceStart;
      history.promoted(node.term, new Set(node.table().values()), lone);
    },
    following: (node, active) => log?.(`${node.name} follows ${active ?? "nobody"}`),
    slotEvent: (node, what) => log?.(`${node.name} ${what}`),
    violation: (node, what) => history.fail(`${node.name}: ${what}`),
  };
}

/** The run's plan: its clients, its faults, when everything heals and when clients stop. */
interface Plan {
  readonly clients: readonly SimApp[];
  /** Watches every key with the real client's `observe()` (sim-watcher.ts). */
  readonly watcher: SimWatcher;
  readonly keys: readonly string[];
  readonly faults: readonly Fault[];
  readonly healAt: number;
  readonly drainAt: number;
}

/** Schedules the nodes' and clients' starts, the faults, the heal and the drain. */
function schedule(
  world: SimWorld,
  history: History,
  options: SimOptions,
  keys: readonly string[],
  labels: RequestLabels,
  log: ((line: string) => void) | undefined,
  watches: WatchChecks,
): Plan {
  const { rng, scheduler, network, nodes, names } = world;
  const mutation = isClientMutation(options.mutation) ? options.mutation : undefined;
  const clients = [...Array(options.clients ?? 3).keys()].map(
    (i) =>
      new SimApp(`c${i}`, world, history, {
        keys,
        // Both read/write keys in either order (A,B against B,A); with a slot map they live in
        // different clusters' slots, so a bundle there is one key.
        bundles: world.initialMap
          ? keys.slice(0, -1).map((key) => [key])
          : [keys.slice(0, -1), keys.slice(0, -1).reverse()],
        servers: serversOf(world, i),
        rng: rng.fork(),
        jitter: rng.fork(),
        labels,
        mutation,
        log,
      }),
  );

  for (const node of nodes) scheduler.at(rng.int(0, 300), () => node.start());
  for (const client of clients) scheduler.at(rng.int(300, 600), () => client.start());
  const watcher = new SimWatcher("w0", world, watches, names, rng.fork());
  scheduler.at(rng.int(300, 600), () => watcher.start(keys));
  const random = planFaults(
    rng.fork(),
    nodes.length,
    options.steps ?? 8,
    1_500,
    clients.length + 1,
    world.store !== undefined,
  );
  // The slots of the read/write keys (the semaphore shares the first one's) move among the faults.
  const lastAt = Math.max(1_500, ...random.map((fault) => fault.at));
  const moves = world.operator
    ? planMoves(rng.fork(), keys.slice(0, -1), world.clusters.length, 1_500, lastAt)
    : [];
  const faults = [...random, ...moves].sort((a, b) => a.at - b.at);
  // Faults reach the watcher like the other applications.
  const clientNames = [...clients.map((client) => client.name), watcher.name];
  for (const fault of faults) {
    scheduleFault(fault, world, clientNames);
    if (log) scheduler.at(fault.at, () => log(`fault: ${describeFault(fault, names).trim()}`));
  }
  const lastEnd = Math.max(1_500, ...faults.map((fault) => fault.at + fault.forMs));
  const healAt = lastEnd + 100;
  scheduler.at(healAt, () => {
    network.healAll();
    world.store?.healAll();
    for (const node of nodes) {
      node.resume();
      if (!node.up) node.start();
    }
  });
  const drainAt = healAt + TRAFFIC_AFTER_HEAL_MS;
  scheduler.at(drainAt, () => {
    for (const client of clients) client.draining = true;
  });
  return { clients, watcher, keys, faults, healAt, drainAt };
}

/**
 * The servers application `index` is given: every node of a single cluster. With several, the
 * applications take turns: cluster a's nodes, b's, …, then every node; one given a single
 * cluster finds the others by `S` and `K`.
 */
function serversOf(world: SimWorld, index: number): readonly string[] {
  const { clusters, names } = world;
  if (clusters.length === 1) return names;
  const cluster = clusters[index % (clusters.length + 1)];
  return cluster ? cluster.nodes.map((node) => node.name) : names;
}

/**
 * Runs the world past the heal until every client is idle and the nodes have converged (or
 * failed to within a few checks), or until the clients fail to drain in time.
 */
async function runUntilSettled(
  world: SimWorld,
  history: History,
  { clients, keys, healAt, drainAt }: Plan,
  slots: SlotChecks | undefined,
  log: ((line: string) => void) | undefined,
): Promise<void> {
  const nodes = world.nodes;
  let finalCheckAt = Math.max(drainAt, healAt + SETTLE_MS);
  let mismatches = 0;
  const serving = () => {
    for (const { name } of world.clusters) history.serving(world.servingIn(name), name);
    for (const node of nodes)
      if (node.serving)
        for (const key of keys)
          history.holding(
            node.name,
            key,
            node.holdersOf(key),
            key.startsWith("s") ? SEMAPHORE_PERMITS : undefined,
          );
  };
  try {
    for (;;) {
      await world.runUntil(finalCheckAt, undefined, serving);
      // Moves settle too: the operator's begun, their sources' commits written.
      const idle =
        clients.every((client) => !client.busy) &&
        !world.operator?.busy &&
        slots?.pendingMove() === undefined;
      if (idle) {
        const problem = world.clusters.map(converged).find((found) => found !== undefined);
        if (problem === undefined) break;
        if (++mismatches >= 5) {
          history.fail(`after the heal: ${problem}`);
          for (const node of nodes)
            log?.(
              `${node.name} sees ${JSON.stringify(node.cluster?.peerStatus().map((p) => [p.address, p.role, p.live, p.linkConnected]))}`,
            );
          break;
        }
      } else if (world.now >= drainAt + DRAIN_LIMIT_MS) break;
      finalCheckAt = world.now + 100;
    }
  } catch (error) {
    history.fail(`exception: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }
}

/** How many times the final watch check looks again (200 ms apart) for pushes still on their way. */
const WATCH_CHECKS = 10;
/** How long the watcher's client gets to close at the end. */
const WATCHER_CLOSE_MS = 10_000;

/**
 * After the run: the watcher's last state of every key must be the active's (once the pushes on
 * their way have arrived: it looks again a few times), then its client closes.
 */
async function finishWatching(
  world: SimWorld,
  history: History,
  plan: Plan,
  watches: WatchChecks,
): Promise<void> {
  const { watcher, keys } = plan;
  let problems: string[] = [];
  for (let attempt = 0; attempt < WATCH_CHECKS; attempt++) {
    problems = keys.flatMap((key) => {
      const active = activeFor(world, key);
      if (active === undefined) return [`no active serves ${key} at the end`];
      const problem = watches.finalMismatch(
        watcher.name,
        key,
        watcher.lastState(key),
        active.holderSummary(key),
      );
      return problem === undefined ? [] : [problem];
    });
    if (problems.length === 0) break;
    await world.runUntil(world.now + 200);
  }
  for (const problem of problems) history.fail(problem);
  let closed = false;
  watcher.close().then(
    () => (closed = true),
    (error: unknown) => history.fail(`the watcher's client failed to close: ${String(error)}`),
  );
  await world.runUntil(world.now + WATCHER_CLOSE_MS, () => closed);
  if (!closed) history.fail("the watcher's client never finished closing");
}

/** The active node that serves `key` (its cluster's, with several), if there is one. */
function activeFor(world: SimWorld, key: string) {
  const slot = keySlot(key);
  const active = world.nodes.find(
    (node) =>
      node.up &&
      node.lock?.role === "active" &&
      (node.gate?.map === undefined || node.gate.map.rangeOf(slot).cluster === node.clusterName),
  );
  return active?.lock;
}

/** Exactly one active in the cluster, and every standby's table equal to its table; else what is wrong. */
function converged({ nodes }: SimCluster): string | undefined {
  const actives = nodes.filter((node) => node.up && node.lock?.role === "active");
  if (actives.length !== 1) return `${actives.length} actives (${actives.map((n) => n.name).join(", ")})`;
  const active = actives[0]!;
  const expected = active.table();
  for (const node of nodes) {
    if (node === active) continue;
    const table = node.table();
    const same =
      table.size === expected.size && [...expected].every(([key, token]) => table.get(key) === token);
    if (!same)
      return `${node.name}'s table ${show(table)} differs from the active ${active.name}'s ${show(expected)}`;
  }
  return undefined;
}

function isClientMutation(mutation: Mutation | undefined): mutation is ClientMutation {
  return mutation === "fresh-retry-id";
}

function show(table: Map<string, bigint>): string {
  return `{${[...table].map(([key, token]) => `${key}=${token}`).join(" ")}}`;
}
