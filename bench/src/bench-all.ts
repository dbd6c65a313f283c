import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { type Servers, startServers } from "./bench-all-servers.js";
import {
  dropWarning,
  type FigureRecord,
  type HistoryEntry,
  historyAppend,
  parseHistory,
  ratioDrops,
} from "./bench-history.js";
import { type ContendLoad, type CycleLoad, runContendLoad, runCycleLoad } from "./client-load.js";
import { FIGURES, figureSpec, formatValue, type RoundValues, summarizeFigure } from "./headline-figures.js";
import { LOCK_SYSTEMS, type LockSystem } from "./lockers/locker.js";
import type { LockerTarget } from "./lockers/open.js";
import { loadLine, printRow } from "./report.js";
import { REPO_ROOT } from "./spawn.js";

/**
 * The headline figures side by side in one run, appended with the commit to bench/history.jsonl:
 *
 *   pnpm bench:all [--no-record]
 *
 * lockd through `@lock/client`, Redis through ioredis (`SET NX PX` + Lua compare-and-delete),
 * Postgres advisory locks through node-postgres, etcd's lock service through its JSON gateway
 * (bench/src/lockers/): acquire+release cycles/s at 1024 and 64 in flight, the sequential cycle p50,
 * and 64 contenders on one key (not Redis: its recipe cannot wait): grants/s, real handoffs/s, Jain's
 * index over the contenders' grant counts, wait p99. Every system's server is started once for the
 * run, on CPU 0; each measured run is a new load process (CPU 1, or CPU 0 for the sequential p50).
 * ROUNDS rounds, each running every figure for every system back to back (the order rotating); per
 * figure the median value, and the median of the rounds' own ratios against lockd's run.
 *
 * A ratio more than 10 % below the last one recorded for the same figure prints a WARNING line
 * (noise on a shared machine does that too: it is a prompt to look, not a verdict).
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** lockd's LockClient instances for the 64 contenders (as bench:modes). */
const CONTEND_CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
/**
 * Postgres: the pool's size at most. A session lock lives on its connection, so 1024 in flight would
 * need 1024 backends; on 2 cores opening them took 13 s and drove the load average past 100.
 */
const PG_POOL = Number(process.env.BENCH_PG_POOL ?? 64);
const CONTENDERS = 64;
const SERVER_CPU = "0";
const LOAD_CPU = "1";
const HISTORY_FILE = process.env.BENCH_HISTORY_FILE ?? join(REPO_ROOT, "bench", "history.jsonl");
const record = !process.argv.includes("--no-record");
const systems = selectedSystems(process.env.BENCH_SYSTEMS);

function selectedSystems(list: string | undefined): LockSystem[] {
  if (list === undefined) return [...LOCK_SYSTEMS];
  const named = list.split(",").map((name) => name.trim());
  const unknown = named.filter((name) => !LOCK_SYSTEMS.includes(name as LockSystem));
  if (unknown.length > 0)
    throw new Error(`BENCH_SYSTEMS: unknown ${unknown.join(", ")} (${LOCK_SYSTEMS.join(", ")})`);
  // lockd is what every ratio is against.
  return LOCK_SYSTEMS.filter((system) => system === "lockd" || named.includes(system));
}

/**
 * How each system's load process connects, for `inflight` loops (cycles) or contenders (contend):
 * the connection counts are part of what is compared, so they are printed and recorded.
 */
function target(servers: Servers, system: LockSystem, inflight: number, contend: boolean): LockerTarget {
  switch (system) {
    case "lockd":
      return { system, port: servers.ports.lockd, connections: contend ? CONTEND_CLIENTS : 1 };
    case "redis":
      return { system, port: servers.ports.redis, connections: 1 };
    case "postgres":
      return {
        system,
        url: servers.postgresUrl,
        connections: contend ? inflight : Math.min(inflight, PG_POOL),
      };
    case "etcd":
      return { system, port: servers.ports.etcd, connections: contend ? inflight : 1, sockets: inflight };
  }
}

const SETUP = {
  lockd: `one LockClient (one connection, pipelined); ${CONTEND_CLIENTS} for the contenders`,
  redis: "one ioredis connection (pipelined)",
  postgres: `a pg.Pool of min(in flight, ${PG_POOL}) connections (a session lock holds its connection); 64 for the contenders`,
  etcd: "one HTTP connection per request in flight (keep-alive); one lease (session) for the uncontended loops, one per contender",
};

/** One kind of run: its figures, who runs it, and where the load process runs. */
interface Scenario {
  readonly name: string;
  readonly systems: readonly LockSystem[];
  run(servers: Servers, system: LockSystem): Promise<Record<string, number>>;
}

const cycles = (inflight: number, id: string): Scenario => ({
  name: `${inflight} in flight`,
  systems,
  run: async (servers, system) => {
    const load: CycleLoad = await runCycleLoad(LOAD_CPU, {
      target: target(servers, system, inflight, false),
      inflight,
      durationMs: DURATION_MS,
    });
    return { [id]: load.ops / load.seconds };
  },
});

const SCENARIOS: readonly Scenario[] = [
  cycles(1024, "cycles_1024"),
  cycles(64, "cycles_64"),
  {
    name: "sequential",
    systems,
    run: async (servers, system) => {
      const load = await runCycleLoad(SERVER_CPU, {
        target: target(servers, system, 1, false),
        inflight: 1,
        durationMs: DURATION_MS,
      });
      return { cycle_p50_sequential: load.cycleP50 };
    },
  },
  {
    name: `${CONTENDERS} contenders on one key`,
    // Redis's recipe does not wait: its contenders would have to poll, another benchmark (bench:modes).
    systems: systems.filter((system) => system !== "redis"),
    run: async (servers, system) => {
      const load: ContendLoad = await runContendLoad(LOAD_CPU, {
        target: target(servers, system, CONTENDERS, true),
        inflight: CONTENDERS,
        durationMs: DURATION_MS,
      });
      return {
        contend64_grants: load.grants / load.seconds,
        contend64_handoffs: load.handoffs / load.seconds,
        contend64_jain: load.jain,
        contend64_wait_p99: load.waitP99,
      };
    },
  },
];

const PINNING = {
  throughput: `servers cpu ${SERVER_CPU}, load process cpu ${LOAD_CPU}`,
  latency: `servers and load process cpu ${SERVER_CPU}`,
  contention: `servers cpu ${SERVER_CPU}, load process cpu ${LOAD_CPU}`,
};

function gitFacts(): { commit: string; dirty: boolean } {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8" }).trim();
  const history = HISTORY_FILE.startsWith(REPO_ROOT) ? HISTORY_FILE.slice(REPO_ROOT.length + 1) : undefined;
  const dirty = git("status", "--porcelain", "--", ".", ...(history ? [`:(exclude)${history}`] : []));
  return { commit: git("rev-parse", "HEAD"), dirty: dirty !== "" };
}

const started = performance.now();
const loadAtStart = loadavg();
// Read first: a history file that does not parse should stop the run before, not after, its minutes.
const historyText = existsSync(HISTORY_FILE) ? readFileSync(HISTORY_FILE, "utf8") : "";
const history = parseHistory(historyText);
const git = gitFacts();
console.log(
  `bench:all  node ${process.version}  ${new Date().toISOString()}  commit ${git.commit.slice(0, 10)}` +
    `${git.dirty ? " (dirty)" : ""}  ${DURATION_MS} ms/run, ${ROUNDS} rounds  load ${loadLine()}`,
);
console.log(
  `pinning: throughput ${PINNING.throughput}; latency ${PINNING.latency}; contention ${PINNING.contention}`,
);
for (const system of systems) console.log(`${system}: ${SETUP[system]}`);

const servers = await startServers(systems, SERVER_CPU);
const values = new Map<string, RoundValues[]>(FIGURES.map((spec) => [spec.id, []]));
/** Which systems each figure was measured for. */
const producers = new Map<string, readonly LockSystem[]>();
try {
  for (const system of systems) console.log(`${system} server: ${servers.descriptions[system]}`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of SCENARIOS) {
      const byFigure = new Map<string, Record<string, number>>();
      // The order rotates from round to round, so that no system always follows the same one.
      const order = scenario.systems.map(
        (_, index) => scenario.systems[(index + round) % scenario.systems.length]!,
      );
      for (const system of order) {
        const runStarted = performance.now();
        const figures = await scenario.run(servers, system);
        await servers.afterRun(system);
        for (const [id, value] of Object.entries(figures)) {
          byFigure.set(id, { ...byFigure.get(id), [system]: value });
        }
        printRow(`  round ${round + 1} ${scenario.name} ${system}`, {
          ...Object.fromEntries(
            Object.entries(figures).map(([id, value]) => [id, formatValue(value, figureSpec(id)!.unit)]),
          ),
          run_s: ((performance.now() - runStarted) / 1000).toFixed(1),
          load: loadLine(),
        });
      }
      for (const [id, round] of byFigure) {
        values.get(id)!.push(round);
        producers.set(id, scenario.systems);
      }
    }
  }
} finally {
  await servers.stop();
}

const records: FigureRecord[] = [];
for (const spec of FIGURES) {
  const rounds = values.get(spec.id)!;
  const figureSystems = producers.get(spec.id);
  if (rounds.length === 0 || figureSystems === undefined) continue;
  for (const summary of summarizeFigure(spec, figureSystems, rounds)) {
    const { system, value, ratio } = summary;
    records.push({ figure: spec.id, system, unit: spec.unit, value, ratio });
  }
}

console.log(
  `\n# median of ${ROUNDS} rounds; ratio = lockd's advantage (above 1: lockd does better), median of per-round ratios`,
);
for (const figure of records) {
  const spec = figureSpec(figure.figure)!;
  printRow(`${figure.figure.padEnd(22)} ${figure.system}`, {
    value: formatValue(figure.value, spec.unit),
    ratio_vs_lockd: figure.ratio === null ? "-" : figure.ratio,
  });
}
const drops = ratioDrops(history, records);
for (const drop of drops) console.log(dropWarning(drop));
if (drops.length === 0 && history.length > 0)
  console.log("no ratio fell more than 10 % below the last recorded one");

const entry: HistoryEntry = {
  date: new Date().toISOString(),
  commit: git.commit,
  dirty: git.dirty,
  node: process.version,
  load: { start: loadAtStart, end: loadavg() },
  pinning: { ...PINNING, ...servers.descriptions },
  setup: Object.fromEntries(systems.map((system) => [system, SETUP[system]])),
  durationMs: DURATION_MS,
  rounds: ROUNDS,
  figures: records,
};
if (record) {
  appendFileSync(HISTORY_FILE, historyAppend(historyText, entry));
  console.log(`recorded in ${HISTORY_FILE}`);
} else console.log("not recorded (--no-record)");
console.log(`took ${((performance.now() - started) / 1000).toFixed(0)} s; load ${loadLine()}`);
