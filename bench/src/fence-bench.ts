/**
 * The cost of fencing, as ratios measured side by side in one run, each fenced write against the same
 * write unfenced:
 *
 *   Postgres  BEGIN; UPDATE one row; COMMIT (three round trips)
 *             vs fence() with a write function (the guard, the UPDATE, COMMIT: three round trips)
 *             on a pool in pg's pipeline mode, BEGIN + UPDATE + COMMIT sent at once (one round trip)
 *             vs fence() with sqlStatements() (the guard, the UPDATE, COMMIT at once: one round trip)
 *   Redis     SET
 *             vs fence() with a write function (the GET pre-check, then the script: two round trips)
 *             vs fence() with redisCommands() (the script alone: one round trip)
 *
 Each round measures sequential latency (one request at a time) with the group's operations
 * interleaved request by request, for a slice per operation, then each operation's throughput with
 * `--concurrency` workers (each on its own row/resource, so the figures measure fencing, not
 * contention) for a slice, in an order that rotates from round to round. A ratio is taken within each
 * round, and the report gives the median of the rounds' ratios with their range: on a shared machine
 * latency shifts every few seconds, and only operations measured side by side may be compared.
 *
 *   node bench/dist/fence-bench.js [--rounds 7] [--slice-ms 400] [--concurrency 8] [--cpu 1|none]
 *
 * The process pins itself to one CPU (`--cpu`, default 1; `none` to leave it) as `taskset -c 1` would.
 * Needs PostgreSQL (PG_URL) and Redis (REDIS_URL); works in its own schema and key prefix, removed at exit.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { fence } from "@lock/fence";
import { createFenceTable, postgresStore, sqlStatements } from "@lock/fence/postgres";
import { redisCommands, redisStore } from "@lock/fence/redis";
import { Redis } from "ioredis";
import pg from "pg";
import { formatRate, loadLine, median, percentile, printRow } from "./report.js";

const { values: options } = parseArgs({
  options: {
    rounds: { type: "string", default: "7" },
    "slice-ms": { type: "string", default: "400" },
    concurrency: { type: "string", default: "8" },
    cpu: { type: "string", default: "1" },
  },
});
const rounds = Number(options.rounds);
if (!(rounds >= 5))
  throw new Error("--rounds: at least 5, so that each ratio is a median of 5 or more rounds");
const sliceMs = Number(options["slice-ms"]);
const concurrency = Number(options.concurrency);

// Ctrl+C or a closed stdout (`| head`) must still reach the cleanup in main(): stop measuring instead
// of dying, so no schema or keys are left on the shared servers.
const stop = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stop.abort());
process.stdout.on("error", () => stop.abort());

/** One write of one kind; `worker` picks the row/resource, so workers never contend. */
type Operation = (worker: number) => Promise<unknown>;

interface Comparison {
  fenced: string;
  unfenced: string;
}

interface Group {
  name: string;
  /** The latency ratio (fenced p50 / unfenced p50) the issue asks for. */
  target: number;
  operations: Record<string, Operation>;
  comparisons: Comparison[];
}

/** One round's figures for one operation. */
interface Sample {
  p50: number;
  p99: number;
  throughput: number;
}

async function main(): Promise<void> {
  pinTo(options.cpu);
  const suffix = randomBytes(5).toString("hex");
  const connectionString = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const pool = new pg.Pool({ connectionString, max: concurrency + 1 });
  const pipelined = new pg.Pool({ connectionString, max: concurrency + 1, pipeline: true });
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { lazyConnect: true });
  await redis.connect();
  const schema = `fence_bench_${suffix}`;
  const redisPrefix = `fence-bench:${suffix}:`;
  try {
    const groups = [await postgresGroup(pool, pipelined, schema), redisGroup(redis, redisPrefix)];
    console.log(
      `fence bench: ${rounds} rounds, ${sliceMs} ms per operation per round (sequential, then ` +
        `${concurrency} concurrent), load average ${loadLine()}`,
    );
    for (const group of groups) if (!stop.signal.aborted) await measureGroup(group);
    console.log(`load average at the end: ${loadLine()}`);
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await deleteKeys(redis, redisPrefix);
    await Promise.all([pool.end(), pipelined.end(), redis.quit()]);
  }
}

/**
 * Pins every thread of this process to `cpu`, as `taskset -c` would have at its start. taskset walks
 * the process's threads one by one and fails if one ends meanwhile (Node starts and ends a few at
 * start-up), so a failure is tried again.
 */
function pinTo(cpu: string | undefined): void {
  if (cpu === undefined || cpu === "none") return;
  let failure: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      execFileSync("taskset", ["-a", "-cp", cpu, String(process.pid)], { stdio: "ignore" });
      console.log(`pinned to cpu ${cpu}`);
      return;
    } catch (error) {
      failure = error;
    }
  }
  console.log(`not pinned (taskset -a -cp ${cpu} failed: ${(failure as Error).message})`);
}

async function postgresGroup(pool: pg.Pool, pipelined: pg.Pool, schema: string): Promise<Group> {
  await pool.query(`CREATE SCHEMA "${schema}"`);
  const rows = `"${schema}".rows`;
  await pool.query(`CREATE TABLE ${rows} (id int PRIMARY KEY, v bigint NOT NULL)`);
  await pool.query(`INSERT INTO ${rows} SELECT g, 0 FROM generate_series(0, $1) g`, [concurrency]);
  await createFenceTable(pool, `${schema}.lock_fence`);
  const table = `${schema}.lock_fence`;
  const store = postgresStore({ pool, table });
  const pipelinedStore = postgresStore({ pool: pipelined, table });
  const update = `UPDATE ${rows} SET v = v + 1 WHERE id = $1`;
  const functionTokens = tokenCounters();
  const statementTokens = tokenCounters();
  return {
    name: "postgres UPDATE in a transaction",
    target: 1.2,
    operations: {
      unfenced: async (worker) => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await client.query(update, [worker]);
          await client.query("COMMIT");
        } finally {
          client.release();
        }
      },
      "fenced, write function": (worker) =>
        fence(store, `function:${worker}`, functionTokens(worker), (tx) => tx.query(update, [worker])),
      "unfenced, pipelined": async (worker) => {
        const client = await pipelined.connect();
        try {
          await Promise.all([client.query("BEGIN"), client.query(update, [worker]), client.query("COMMIT")]);
        } finally {
          client.release();
        }
      },
      "fenced, sqlStatements pipelined": (worker) =>
        fence(
          pipelinedStore,
          `statements:${worker}`,
          statementTokens(worker),
          sqlStatements({ text: update, values: [worker] }),
        ),
    },
    comparisons: [
      { fenced: "fenced, write function", unfenced: "unfenced" },
      { fenced: "fenced, sqlStatements pipelined", unfenced: "unfenced, pipelined" },
      { fenced: "fenced, sqlStatements pipelined", unfenced: "unfenced" },
    ],
  };
}

function redisGroup(redis: Redis, prefix: string): Group {
  const store = redisStore({ client: redis, keyPrefix: `${prefix}fence:` });
  const functionTokens = tokenCounters();
  const commandTokens = tokenCounters();
  return {
    name: "redis SET",
    target: 1.3,
    operations: {
      unfenced: (worker) => redis.set(`${prefix}key:${worker}`, "value"),
      "fenced, write function": (worker) =>
        fence(store, `function:${worker}`, functionTokens(worker), (tx) =>
          tx.call("SET", `${prefix}key:${worker}`, "value"),
        ),
      "fenced, redisCommands": (worker) =>
        fence(
          store,
          `commands:${worker}`,
          commandTokens(worker),
          redisCommands(["SET", `${prefix}key:${worker}`, "value"]),
        ),
    },
    comparisons: [
      { fenced: "fenced, write function", unfenced: "unfenced" },
      { fenced: "fenced, redisCommands", unfenced: "unfenced" },
    ],
  };
}

/** Each worker holds its "lock" with ever-increasing tokens, as successive grants would. */
function tokenCounters(): (worker: number) => bigint {
  const next = new Map<number, bigint>();
  return (worker) => {
    const token = (next.get(worker) ?? 1n) + 1n;
    next.set(worker, token);
    return token;
  };
}

async function measureGroup(group: Group): Promise<void> {
  const names = Object.keys(group.operations);
  // Warm up: JIT, pool connections, prepared script caches.
  for (const name of names) await runFor(group.operations[name]!, concurrency, 300);

  const samples = new Map<string, Sample[]>(names.map((name) => [name, []]));
  for (let round = 0; round < rounds && !stop.signal.aborted; round++) {
    const latencies = await interleavedLatencies(group.operations, sliceMs * names.length);
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length]!;
      const completed = await runFor(group.operations[name]!, concurrency, sliceMs);
      const sorted = latencies.get(name)!.sort((a, b) => a - b);
      samples.get(name)!.push({
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        throughput: completed / (sliceMs / 1000),
      });
    }
  }
  if (stop.signal.aborted) return;

  for (const name of names) {
    const taken = samples.get(name)!;
    printRow(`${group.name}: ${name}`, {
      p50_ms: median(taken.map((sample) => sample.p50)),
      p99_ms: median(taken.map((sample) => sample.p99)),
      throughput: formatRate(median(taken.map((sample) => sample.throughput))),
    });
  }
  for (const { fenced, unfenced } of group.comparisons) {
    const ratios = (field: keyof Sample) =>
      samples.get(fenced)!.map((sample, round) => sample[field] / samples.get(unfenced)![round]![field]);
    const p50Ratios = ratios("p50");
    const p50Ratio = median(p50Ratios);
    printRow(`${group.name}: ${fenced} / ${unfenced}`, {
      p50_ratio: p50Ratio,
      p50_ratio_range: `${Math.min(...p50Ratios).toFixed(2)}-${Math.max(...p50Ratios).toFixed(2)}`,
      p99_ratio: median(ratios("p99")),
      throughput_ratio: median(ratios("throughput")),
      target: `${p50Ratio <= group.target ? "met" : "MISSED"} (<= ${group.target})`,
    });
  }
}

/**
 * Latencies in ms of back-to-back operations for `durationMs`, one of each operation in turn (the
 * first of each turn moving along): every operation samples the same moments of a noisy machine.
 */
async function interleavedLatencies(
  operations: Record<string, Operation>,
  durationMs: number,
): Promise<Map<string, number[]>> {
  const names = Object.keys(operations);
  const latencies = new Map<string, number[]>(names.map((name) => [name, []]));
  const deadline = performance.now() + durationMs;
  for (let turn = 0; performance.now() < deadline && !stop.signal.aborted; turn++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(turn + i) % names.length]!;
      const start = process.hrtime.bigint();
      await operations[name]!(0);
      latencies.get(name)!.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
  return latencies;
}

/** Operations completed by `workers` concurrent loops in `durationMs`. */
async function runFor(operation: Operation, workers: number, durationMs: number): Promise<number> {
  const deadline = performance.now() + durationMs;
  let completed = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < deadline && !stop.signal.aborted) {
        await operation(worker);
        completed++;
      }
    }),
  );
  return completed;
}

async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 })) {
    if (keys.length > 0) await redis.del(...(keys as string[]));
  }
}

await main();
