import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createFenceTable, postgresStore } from "@lock/fence/postgres";
import { LockdCluster } from "@lock/testkit";
import pg from "pg";
import {
  check,
  type FaultKind,
  failuresByKind,
  History,
  nodeOf,
  outages,
  steadyGaps,
} from "./chaos-history.js";
import { checkHolders } from "./chaos-holders.js";
import { FAULT_KINDS, MEASURED_ON_ANOTHER_NODE, Nemesis } from "./chaos-nemesis.js";
import { ChaosStore, type StoreKind } from "./chaos-store.js";
import { RW_KEY, SEMAPHORE_KEY, seededRandom, Workload } from "./chaos-workers.js";
import { percentile, printRow } from "./report.js";

/**
 * Chaos run: a 3-node lockd cluster at default timing (100 ms heartbeats, 500 ms peer timeout),
 * workers doing acquire → fenced Postgres write → release while a nemesis stops, kills, restarts and
 * partitions nodes; then a checker over the recorded history and the outage per fault kind.
 * Beside the exclusive keys, a semaphore key (permit workers, each writing fenced on its slot) and
 * a read/write key (readers reading through fenceRead(), writers writing fenced).
 *
 *   pnpm bench:chaos [--seed N] [--duration SECONDS] [--workers N] [--keys N]
 *                   [--permits N] [--permit-workers N] [--readers N] [--writers N]
 *   pnpm bench:chaos --ci       one seeded round of every fault kind (about a minute)
 *   --coordinator etcd|postgres a coordinated cluster (a 3-member etcd started for the run, or the
 *                               machine's Postgres under a random schema), its store behind proxies,
 *                               and the store's faults too (chaos-store.ts); no window is allowed:
 *                               a token decrease or a holder-rule break anywhere is a failure
 *   --verbose                   also one line per fault: where its longest gap was, around which nodes,
 *                               and the nodes' log lines meanwhile; CHAOS_TRACE=<worker> prints that
 *                               worker's connection events (stderr)
 *
 * Exits 1 if the checker finds a duplicate token, a per-key token decrease outside the documented
 * two-active windows, a stale write or read accepted by the fence, or an operation that never
 * settled; or if the holder rules (chaos-holders.ts) find, outside the faults that do not promise
 * mutual exclusion, more permit holders than permits, two live permits on one slot, an exclusive
 * holder (a writer) beside any other, or tokens out of real-time order.
 * Pinning: lockd nodes on cpu 0, this process (workers, proxies) on cpu 1 (BENCH_NODE_CPUS and
 * BENCH_LOAD_CPUS override; "none" leaves them unpinned). Postgres is the machine's shared one.
 */
const { values: args } = parseArgs({
  options: {
    seed: { type: "string" },
    duration: { type: "string" },
    workers: { type: "string" },
    keys: { type: "string" },
    permits: { type: "string" },
    "permit-workers": { type: "string" },
    readers: { type: "string" },
    writers: { type: "string" },
    ci: { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
    coordinator: { type: "string" },
  },
});
if (args.coordinator !== undefined && args.coordinator !== "etcd" && args.coordinator !== "postgres")
  throw new Error(`--coordinator etcd|postgres, not ${args.coordinator}`);
const coordinator = args.coordinator as StoreKind | undefined;
const seed = Number(args.seed ?? 1);
const durationMs = Number(args.duration ?? (args.ci ? 60 : 600)) * 1_000;
const workers = Number(args.workers ?? 36);
const keys = Number(args.keys ?? 4);
const modes = {
  permits: Number(args.permits ?? 3),
  permitWorkers: Number(args["permit-workers"] ?? 6),
  readers: Number(args.readers ?? 6),
  writers: Number(args.writers ?? 2),
};
const LEASE_MS = 1_000;
const WAIT_MS = 5_000;
const PAUSE_PROBABILITY = 0.002;
const STEADY_MS = 1_500;
const DEFAULT_TIMING = ["--heartbeat-interval", "0.1", "--peer-timeout", "0.5"];
/** The ownership lease of a coordinated run: lockd's default. */
const COORDINATOR_LEASE_S = 2;
const TARGETS: Partial<Record<FaultKind, string>> = coordinator
  ? {
      stall: `first grant on the new active p99 <= ${COORDINATOR_LEASE_S * 1000 + 500} ms (lease + 500)`,
      return: "gap p99 <= 100 ms",
      kill: `first grant p99 <= ${COORDINATOR_LEASE_S * 1000 + 500} ms (lease + 500)`,
      handoff: "gap p99 <= 50 ms, 0 failed operations",
    }
  : {
      stall: "first grant on the new active p99 <= 800 ms (peer timeout + 300)",
      return: "gap p99 <= 100 ms",
      kill: "first grant p99 <= 1000 ms",
      handoff: "gap p99 <= 50 ms, 0 failed operations",
    };

const cpus = (name: string, fallback: string) => {
  const value = process.env[name] ?? fallback;
  return value === "none" ? undefined : value;
};
const nodeCpus = cpus("BENCH_NODE_CPUS", "0");
const loadCpus = cpus("BENCH_LOAD_CPUS", "1");
if (loadCpus !== undefined)
  execFileSync("taskset", ["-pc", loadCpus, String(process.pid)], { stdio: "ignore" });

console.log(
  `lockd chaos bench  node ${process.version}  ${new Date().toISOString()}  seed=${seed}  duration=${durationMs / 1000}s` +
    `  workers=${workers}  keys=${keys}  semaphore=${modes.permitWorkers} on ${modes.permits} permits` +
    `  rw=${modes.readers} readers + ${modes.writers} writers  lease=${LEASE_MS}ms  wait=${WAIT_MS}ms  pinning: nodes cpu ${nodeCpus ?? "-"}, load cpu ${loadCpus ?? "-"}` +
    (coordinator ? `  coordinator=${coordinator} lease=${COORDINATOR_LEASE_S}s (no window allowed)` : ""),
);

const suffix = randomBytes(4).toString("hex");
const tables = {
  fence: `chaos_${suffix}_fence`,
  log: `chaos_${suffix}_log`,
  control: `chaos_${suffix}_control`,
};
const pool = new pg.Pool({
  connectionString: process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  max: 16,
});
const history = new History();
// The grants are timed in this process, which also runs the proxies: its own lag is the floor of
// every gap measured.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
let cluster: LockdCluster | undefined;
let store: ChaosStore | undefined;
let exitCode = 0;
try {
  await createFenceTable(pool, tables.fence);
  await pool.query(
    `CREATE TABLE ${tables.log} (id bigserial PRIMARY KEY, key text NOT NULL, token numeric(20,0) NOT NULL)`,
  );
  await pool.query(`CREATE TABLE ${tables.control} (key text PRIMARY KEY, value bigint NOT NULL)`);
  const pgUrl = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  store = coordinator
    ? await ChaosStore.start(
        coordinator,
        { cutMs: COORDINATOR_LEASE_S * 1000 + 1_500, slowMs: 3_000, slowDelayMs: 150 },
        pgUrl,
      )
    : undefined;
  const coordinatorArgs = store
    ? [
        "--coordinator",
        store.url,
        "--cluster-name",
        "chaos",
        "--coordinator-lease",
        String(COORDINATOR_LEASE_S),
      ]
    : [];
  cluster = await LockdCluster.start({ nodes: 3, args: [...DEFAULT_TIMING, ...coordinatorArgs] });
  const nemesis = new Nemesis(cluster, history, {
    // With a coordinator, a stall longer than the lease: the standby takes over meanwhile.
    stallMs: coordinator ? COORDINATOR_LEASE_S * 1000 + 1_000 : 2_000,
    partitionMs: 3_000,
    steadyMs: STEADY_MS,
    nodeCpus,
    ...(store ? { storeFault: (kind: FaultKind) => store!.inject(kind) } : {}),
  });
  await nemesis.settled();
  const workload = new Workload(
    {
      servers: cluster.proxies.map((proxy) => proxy.address),
      workers,
      keys,
      leaseMs: LEASE_MS,
      waitMs: WAIT_MS,
      pauseProbability: PAUSE_PROBABILITY,
      seed,
      pool,
      store: postgresStore({ pool, table: tables.fence }),
      tables,
      modes,
    },
    history,
  );
  workload.start();
  const random = seededRandom(seed);
  const started = performance.now();
  // Whole rounds of every kind in a seeded order; --ci runs exactly one.
  for (let round = 0; round === 0 || (!args.ci && performance.now() - started < durationMs); round++) {
    const order = [...FAULT_KINDS, ...(store?.faults ?? [])].sort(() => random() - 0.5);
    for (const kind of order) {
      await new Promise((resolve) => setTimeout(resolve, STEADY_MS));
      await nemesis.inject(kind);
      if (!args.ci && performance.now() - started >= durationMs) break;
    }
  }
  await new Promise((resolve) => setTimeout(resolve, STEADY_MS));
  if (!(await workload.stop(15_000))) history.hung++;
  report(nemesis, await fencedLog(), await controlSum());
} catch (error) {
  console.error(error);
  const fault = history.faults.at(-1);
  if (fault !== undefined) console.error(`during ${fault.kind}; the nodes' last log lines:`);
  cluster?.nodes.forEach((node, i) => {
    for (const entry of node.logs.slice(-8)) console.error(`  node ${i} ${JSON.stringify(entry)}`);
    if (node.stderr.length > 0) console.error(`  node ${i} stderr: ${node.stderr.join("").slice(-3_000)}`);
  });
  exitCode = 2;
} finally {
  await cluster?.dispose();
  await store?.dispose().catch((error) => console.error(error));
  await pool.query(`DROP TABLE IF EXISTS ${tables.log}, ${tables.control}, ${tables.fence}`).catch(() => {});
  await pool.end();
}
process.exit(exitCode);

async function fencedLog(): Promise<Array<{ key: string; token: bigint }>> {
  const { rows } = await pool.query(`SELECT key, token::text AS token FROM ${tables.log} ORDER BY id`);
  return rows.map((row: { key: string; token: string }) => ({ key: row.key, token: BigInt(row.token) }));
}

async function controlSum(): Promise<number> {
  const { rows } = await pool.query(
    `SELECT coalesce(sum(value), 0)::bigint::text AS total FROM ${tables.control}`,
  );
  return Number(rows[0].total);
}

/** Whole numbers as they are (printRow shows small numbers with three decimals). */
function ms(value: number): string {
  return Number.isFinite(value) ? String(Math.round(value)) : String(value);
}

function report(nemesis: Nemesis, log: Array<{ key: string; token: bigint }>, control: number): void {
  console.log(
    `\n# outages per fault kind (ms from the fault; gap = longest time with no grant until steady)`,
  );
  // Coordinated, a fully partitioned active keeps its lease (it still reaches the store): nobody
  // replaces it, and its first grant after the heal is the one that counts.
  const byOther = (kind: FaultKind) =>
    MEASURED_ON_ANOTHER_NODE.has(kind) && !(coordinator && kind === "partition-full");
  const all = outages(history, byOther, {
    byNewEpoch: coordinator !== undefined,
  });
  const kinds = [...new Set(all.map((outage) => outage.fault.kind))];
  const errors = failuresByKind(history);
  for (const kind of kinds) {
    const mine = all.filter((outage) => outage.fault.kind === kind);
    const first = mine.map((outage) => outage.firstGrantMs).sort((a, b) => a - b);
    const gaps = mine.map((outage) => outage.longestGapMs).sort((a, b) => a - b);
    const failed = [...(errors.get(kind) ?? new Map()).values()].reduce((sum, n) => sum + n, 0);
    printRow(kind, {
      n: ms(mine.length),
      first_grant_p50: ms(percentile(first, 50)),
      first_grant_p99: ms(percentile(first, 99)),
      gap_p50: ms(percentile(gaps, 50)),
      gap_p99: ms(percentile(gaps, 99)),
      failed_ops: ms(failed),
      ...(TARGETS[kind] ? { target: TARGETS[kind]! } : {}),
    });
  }
  const steady = steadyGaps(history, STEADY_MS - 200).sort((a, b) => a - b);
  printRow("bench event-loop delay", {
    p50_ms: ms(loopDelay.percentile(50) / 1e6),
    p99_ms: ms(loopDelay.percentile(99) / 1e6),
    max_ms: ms(loopDelay.max / 1e6),
  });
  printRow("steady (before each fault)", {
    n: ms(steady.length),
    gap_p50: ms(percentile(steady, 50)),
    gap_p99: ms(percentile(steady, 99)),
  });
  if (args.verbose) {
    for (const outage of all) {
      printRow(`  ${outage.fault.kind} @${ms(outage.fault.startedAt)}`, {
        first_grant: ms(outage.firstGrantMs),
        gap: ms(outage.longestGapMs),
        gap_at: ms(outage.gapAtMs),
        nodes: `${outage.gapFrom ?? "-"}->${outage.gapTo ?? "-"}`,
        healed_at: ms(outage.fault.healedAt - outage.fault.startedAt),
        settled_at: ms(outage.fault.settledAt - outage.fault.startedAt),
      });
      const span = Math.max(outage.fault.settledAt - outage.fault.startedAt, outage.longestGapMs) + 100;
      for (const line of nemesis.roleLog(outage.fault, span)) console.log(`      ${line}`);
    }
  }
  console.log(`\n# errors by code (op:code), per fault kind`);
  for (const [kind, codes] of errors) {
    printRow(kind, Object.fromEntries([...codes].sort().map(([code, n]) => [code, ms(n)])));
  }
  const verdict = check(history, log, { twoActiveWindows: coordinator === undefined });
  const lostUpdates = history.controlIncrements - control;
  console.log(`\n# checker`);
  printRow("history", {
    grants: ms(history.grants.length),
    fenced_writes_accepted: ms(history.fencedWrites),
    stale_writes_refused: ms(history.staleRefused),
    failures: ms(history.failures.length),
  });
  printRow("safety", {
    duplicate_tokens: ms(verdict.duplicateTokens),
    token_decreases: ms(verdict.decreasing),
    token_decreases_in_two_active_windows: ms(verdict.decreasingInWindows),
    stale_writes_accepted: ms(verdict.staleAccepted),
    hung_operations: ms(verdict.hung),
    ok: verdict.ok ? "yes" : "NO",
  });
  for (const [earlier, later] of verdict.decreases) {
    const fault = history.faults.findLast((f) => f.startedAt <= later.at);
    printRow("  token decrease", {
      key: later.key,
      earlier: `${earlier.token}@${ms(earlier.at)} node ${earlier.node}`,
      later: `${later.token}@${ms(later.at)} node ${later.node}`,
      after: fault === undefined ? "-" : `${fault.kind}@${ms(fault.startedAt)}`,
    });
  }
  printRow("unfenced control", {
    overlapping_holders: ms(history.overlaps),
    lost_updates: ms(lostUpdates),
    faults_bite: history.overlaps > 0 || lostUpdates > 0 ? "yes" : "no",
  });
  if (!verdict.ok || !holderReport()) exitCode = 1;
}

/** The holder rules over every worker's holding spans (chaos-holders.ts); true if none broke. */
function holderReport(): boolean {
  // Coordinated: no fault opens a window where a rule is not promised.
  const verdict = checkHolders(history.holds, coordinator ? [] : history.faults, LEASE_MS);
  const count = (key: string, mode?: string) =>
    history.holds.filter((hold) => hold.key === key && (mode === undefined || hold.mode === mode)).length;
  const broken = (rule: string) => verdict.breaks.filter((found) => found.rule === rule).length;
  console.log(`\n# holder rules (each grant's span as its worker saw it; lease ${LEASE_MS} ms)`);
  printRow("holds", {
    all: ms(verdict.holds),
    semaphore_permits: ms(count(SEMAPHORE_KEY)),
    readers: ms(count(RW_KEY, "shared")),
    writers: ms(count(RW_KEY, "exclusive")),
    fenced_reads: ms(history.fencedReads),
    stale_reads_refused: ms(history.staleReadsRefused),
  });
  printRow("violations", {
    over_permits: ms(broken("over-limit")),
    slot_clashes: ms(broken("slot-clash")),
    exclusive_not_alone: ms(broken("not-alone")),
    token_order: ms(broken("token-order")),
    stale_reads_accepted: ms(history.staleReadsAccepted),
    ok: verdict.breaks.length === 0 ? "yes" : "NO",
  });
  printRow("inside failover windows (not promised)", {
    over_permits: ms(verdict.inWindows["over-limit"]),
    slot_clashes: ms(verdict.inWindows["slot-clash"]),
    exclusive_not_alone: ms(verdict.inWindows["not-alone"]),
    token_order_two_actives: ms(verdict.inWindows["token-order"]),
    by_fault: [...verdict.inWindowsByFault].map(([kind, n]) => `${kind} ${n}`).join(", ") || "-",
  });
  const shown = [...verdict.breaks.slice(0, 10), ...(args.verbose ? verdict.inWindowsFirst : [])];
  for (const found of shown) {
    const fault = history.faults.findLast((f) => f.startedAt <= found.hold.at);
    const span = (hold: typeof found.hold) =>
      `${hold.mode}${hold.slot === undefined ? "" : ` slot ${hold.slot}`} ${hold.token} ` +
      `asked ${ms(hold.requestedAt)} held ${ms(hold.at)}-${ms(hold.end)} node ${nodeOf(hold.token)}`;
    printRow(`  ${found.rule}${found.fault === undefined ? "" : " (in window)"}`, {
      key: found.hold.key,
      hold: span(found.hold),
      beside: span(found.other),
      after: fault === undefined ? "-" : `${fault.kind}@${ms(fault.startedAt)}`,
    });
  }
  return verdict.breaks.length === 0;
}
