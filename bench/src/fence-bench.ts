/**
 * The cost of fencing, as ratios measured side by side in one run:
 *   Postgres: BEGIN; UPDATE one row; COMMIT   vs   the same UPDATE through fence() (postgresStore)
 *   Redis:    SET                             vs   the same SET through fence() (the fence script)
 * Sequential latency (p50/p99, one request at a time) and throughput with `--concurrency` workers, each
 * on its own row/resource so the numbers measure fencing, not contention. Baseline and fenced runs
 * alternate in short slices, so drift (autovacuum, checkpoints, a noisy neighbour) hits both alike.
 *
 *   node bench/dist/fence-bench.js [--seconds 3] [--concurrency 8]
 *
 * Needs PostgreSQL (PG_URL) and Redis (REDIS_URL); works in its own schema and key prefix, removed at exit.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { fence } from "@lock/fence";
import { createFenceTable, postgresStore } from "@lock/fence/postgres";
import { redisStore } from "@lock/fence/redis";
import { Redis } from "ioredis";
import pg from "pg";
import { formatRate, percentile, printRow } from "./report.js";

const TARGET_LATENCY_RATIO = 1.3;
// Short alternating slices: on a shared VM latency shifts between modes every few seconds, and both sides
// must sample the same modes for the ratio to mean anything.
const SLICES = 20;

const { values: options } = parseArgs({
  options: {
    seconds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "8" },
  },
});
const secondsPerMeasurement = Number(options.seconds);
const concurrency = Number(options.concurrency);

// Ctrl+C or a closed stdout (`| head`) must still reach the cleanup in main(): stop measuring instead
// of dying, so no schema or keys are left on the shared servers.
const stop = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stop.abort());
process.stdout.on("error", () => stop.abort());

/** One write of one kind; `worker` picks the row/resource, so workers never contend. */
type Operation = (worker: number) => Promise<unknown>;

interface Pair {
  name: string;
  unfenced: Operation;
  fenced: Operation;
}

async function main(): Promise<void> {
  const suffix = randomBytes(5).toString("hex");
  const pool = new pg.Pool({
    connectionString: process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    max: concurrency + 1,
  });
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { lazyConnect: true });
  await redis.connect();
  const schema = `fence_bench_${suffix}`;
  const redisPrefix = `fence-bench:${suffix}:`;
  try {
    const pairs = [await postgresPair(pool, schema), redisPair(redis, redisPrefix)];
    console.log(
      `fence bench: ${secondsPerMeasurement}s per measurement in ${SLICES} alternating slices, ` +
        `concurrency ${concurrency}, target latency ratio <= ${TARGET_LATENCY_RATIO}`,
    );
    for (const pair of pairs) if (!stop.signal.aborted) await measurePair(pair);
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await deleteKeys(redis, redisPrefix);
    await pool.end();
    await redis.quit();
  }
}

async function postgresPair(pool: pg.Pool, schema: string): Promise<Pair> {
  await pool.query(`CREATE SCHEMA "${schema}"`);
  const rows = `"${schema}".rows`;
  await pool.query(`CREATE TABLE ${rows} (id int PRIMARY KEY, v bigint NOT NULL)`);
  await pool.query(`INSERT INTO ${rows} SELECT g, 0 FROM generate_series(0, $1) g`, [concurrency]);
  await createFenceTable(pool, `${schema}.lock_fence`);
  const store = postgresStore({ pool, table: `${schema}.lock_fence` });
  const update = `UPDATE ${rows} SET v = v + 1 WHERE id = $1`;
  const tokens = tokenCounters();
  return {
    name: "postgres UPDATE in a transaction",
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
    fenced: (worker) => fence(store, `row:${worker}`, tokens(worker), (tx) => tx.query(update, [worker])),
  };
}

function redisPair(redis: Redis, prefix: string): Pair {
  const store = redisStore({ client: redis, keyPrefix: `${prefix}fence:` });
  const tokens = tokenCounters();
  return {
    name: "redis SET",
    unfenced: (worker) => redis.set(`${prefix}key:${worker}`, "value"),
    fenced: (worker) =>
      fence(store, `key:${worker}`, tokens(worker), (tx) =>
        tx.call("SET", `${prefix}key:${worker}`, "value"),
      ),
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

async function measurePair(pair: Pair): Promise<void> {
  const slice = (secondsPerMeasurement * 1000) / SLICES;
  for (const operation of [pair.unfenced, pair.fenced]) await runFor(operation, 1, 300); // warm up: JIT, pool connections, script cache

  const latencies = { unfenced: [] as number[], fenced: [] as number[] };
  for (let i = 0; i < SLICES; i++) {
    latencies.unfenced.push(...(await sequentialLatencies(pair.unfenced, slice)));
    latencies.fenced.push(...(await sequentialLatencies(pair.fenced, slice)));
  }
  const unfenced = latencies.unfenced.sort((a, b) => a - b);
  const fenced = latencies.fenced.sort((a, b) => a - b);
  const p50Ratio = percentile(fenced, 50) / percentile(unfenced, 50);
  printRow(`${pair.name}, sequential`, {
    unfenced_p50_ms: percentile(unfenced, 50),
    fenced_p50_ms: percentile(fenced, 50),
    p50_ratio: p50Ratio,
    unfenced_p99_ms: percentile(unfenced, 99),
    fenced_p99_ms: percentile(fenced, 99),
    p99_ratio: percentile(fenced, 99) / percentile(unfenced, 99),
    target: p50Ratio <= TARGET_LATENCY_RATIO ? "met" : "MISSED",
  });

  const ops = { unfenced: 0, fenced: 0 };
  for (let i = 0; i < SLICES; i++) {
    ops.unfenced += await runFor(pair.unfenced, concurrency, slice);
    ops.fenced += await runFor(pair.fenced, concurrency, slice);
  }
  const seconds = secondsPerMeasurement;
  printRow(`${pair.name}, ${concurrency} concurrent`, {
    unfenced: formatRate(ops.unfenced / seconds),
    fenced: formatRate(ops.fenced / seconds),
    throughput_ratio: ops.fenced / ops.unfenced,
  });
}

/** Latencies in ms of back-to-back operations for `durationMs`. */
async function sequentialLatencies(operation: Operation, durationMs: number): Promise<number[]> {
  const latencies: number[] = [];
  const deadline = performance.now() + durationMs;
  while (performance.now() < deadline && !stop.signal.aborted) {
    const start = process.hrtime.bigint();
    await operation(0);
    latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
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
