import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { RoleResult, WorkerOptions, WorkerResult } from "./modes-load-worker.js";
import { formatRate, loadLine, percentile, printRow } from "./report.js";
import { BENCH_DIST, firstJsonLine, type Served, spawnPinned, startLockd, startRedis } from "./spawn.js";

/**
 * Lock modes under contention, one key each (issue 22):
 *
 *   pnpm bench:modes [semaphore|rw]
 *
 * - `semaphore`: a 5-permit semaphore, 64 contenders looping acquire → one event-loop turn →
 *   release: lockd through `@lock/client` (`{ permits: 5 }`) against redis-semaphore's `Semaphore`
 *   on Redis through ioredis, rounds alternating. Grants/s, Jain's fairness index over the 64
 *   contenders' grant counts, waits, and the most holders seen at once (counted in the load process).
 *   Targets: grants/s ≥ 2× redis-semaphore's, fairness ≥ 0.99.
 * - `rw`: 64 readers (shared) and 4 writers (exclusive) on one lockd key: the writers' wait
 *   (p50/p99/max) and the readers' grants/s, beside the same 4 writers alone and the same 64 readers
 *   alone, rounds alternating. Phase-fair order bounds the writers' wait: a writer waits for the
 *   readers in front of it, never for readers who came after it.
 *
 * Pinning (2 cores): the server (lockd, or a dedicated redis-server started here on a free port with
 * persistence off) on CPU 0, the load process (bench/src/modes-load-worker.ts) on CPU 1.
 * `BENCH_REDIS=machine` uses the machine's Redis instead (REDIS_URL, default 127.0.0.1:6379; not
 * pinned by this bench, so the pinning then differs), under a random key that is deleted afterwards.
 *
 * Exits 1 if any run saw more holders than permits, two live permits on one slot, or a writer
 * beside another holder.
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
const PERMITS = 5;
const CONTENDERS = 64;
const READERS = 64;
const WRITERS = 4;
const SERVER_CPU = "0";
const LOAD_CPU = "1";
const machineRedis = process.env.BENCH_REDIS === "machine";

let violations = 0;

function redisAddress(): { host: string; port: number } {
  const url = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  return { host: url.hostname, port: Number(url.port || 6379) };
}

async function startTarget(target: WorkerOptions["target"]): Promise<Served & { host: string }> {
  if (target === "lockd") return { ...(await startLockd(SERVER_CPU)), host: "127.0.0.1" };
  if (!machineRedis) return { ...(await startRedis(SERVER_CPU)), host: "127.0.0.1" };
  const { host, port } = redisAddress();
  return { host, port, child: undefined as never, stop: () => {} };
}

/** Deletes what redis-semaphore left under `key` (the worker deletes it too, unless it failed). */
async function cleanRedis(host: string, port: number, key: string): Promise<void> {
  const { Redis } = await import("ioredis");
  const redis = new Redis({ host, port, lazyConnect: true });
  try {
    await redis.connect();
    await redis.del(`semaphore:${key}`);
  } finally {
    redis.disconnect();
  }
}

async function runWorker(
  options: Omit<WorkerOptions, "port" | "host" | "key" | "clients" | "durationMs">,
): Promise<WorkerResult> {
  const key = `bench:${options.scenario}:${randomBytes(6).toString("hex")}`;
  const served = await startTarget(options.target);
  try {
    const worker = spawnPinned(LOAD_CPU, [
      join(BENCH_DIST, "modes-load-worker.js"),
      JSON.stringify({
        ...options,
        host: served.host,
        port: served.port,
        key,
        clients: CLIENTS,
        durationMs: DURATION_MS,
      } satisfies WorkerOptions),
    ]);
    const result = await firstJsonLine<WorkerResult>(worker, (value) => typeof value.seconds === "number");
    const { overLimit, slotClashes, rwClashes } = result.violations;
    violations += overLimit + slotClashes + rwClashes;
    return result;
  } finally {
    if (options.target === "redis-semaphore") await cleanRedis(served.host, served.port, key);
    served.stop();
  }
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const rate = (result: WorkerResult, role: string) => result.roles[role]!.grants / result.seconds;
const role = (result: WorkerResult, name: string): RoleResult => result.roles[name]!;
/** Rules broken over `results`: more holders than permits, a slot twice, a writer beside anyone. */
const violationText = (results: readonly WorkerResult[]) => {
  const sum = (field: keyof WorkerResult["violations"]) =>
    results.reduce((total, result) => total + result.violations[field], 0);
  return `${sum("overLimit") + sum("slotClashes") + sum("rwClashes")} (over limit ${sum("overLimit")}, slot clashes ${sum("slotClashes")}, writer not alone ${sum("rwClashes")})`;
};

async function semaphore(): Promise<void> {
  console.log(
    `\n# ${PERMITS}-permit semaphore, ${CONTENDERS} contenders over ${CLIENTS} clients: acquire → one turn → release ` +
      `(server cpu ${SERVER_CPU}${machineRedis ? " (Redis: the machine's, unpinned)" : ""}, load cpu ${LOAD_CPU})`,
  );
  const runs: Record<"lockd" | "redis-semaphore", WorkerResult[]> = { lockd: [], "redis-semaphore": [] };
  const targets = ["lockd", "redis-semaphore"] as const;
  for (let round = 0; round < ROUNDS; round++) {
    // Which goes first alternates, so that neither always runs on the machine the other left.
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      runs[target].push(
        await runWorker({ scenario: "semaphore", target, contenders: CONTENDERS, permits: PERMITS }),
      );
    }
    for (const target of targets) {
      const result = runs[target][round]!;
      const contender = role(result, "contender");
      printRow(`  round ${round + 1} ${target}`, {
        grants: formatRate(rate(result, "contender")),
        jain: contender.jain,
        min_max_grants: `${contender.minGrants}-${contender.maxGrants}`,
        wait_p99_ms: contender.waitP99,
        max_holders: result.maxHolders,
        ...(target === "lockd"
          ? { ratio: rate(result, "contender") / rate(runs["redis-semaphore"][round]!, "contender") }
          : {}),
        load: loadLine(),
      });
    }
  }
  const summary = (results: WorkerResult[]) => ({
    rate: median(results.map((result) => rate(result, "contender"))),
    jain: median(results.map((result) => role(result, "contender").jain)),
    p50: median(results.map((result) => role(result, "contender").waitP50)),
    p99: median(results.map((result) => role(result, "contender").waitP99)),
    maxHolders: Math.max(...results.map((result) => result.maxHolders)),
  });
  const lockd = summary(runs.lockd);
  const redis = summary(runs["redis-semaphore"]);
  // Per round, lockd's and Redis's runs are neighbours: the median of those ratios shrugs off the
  // swings of a shared machine better than the ratio of the medians.
  const ratio = median(
    runs.lockd.map(
      (run, round) => rate(run, "contender") / rate(runs["redis-semaphore"][round]!, "contender"),
    ),
  );
  for (const [name, figures] of [
    ["lockd (@lock/client)", lockd],
    ["redis-semaphore (ioredis)", redis],
  ] as const) {
    printRow(name, {
      grants: formatRate(figures.rate),
      jain: figures.jain,
      wait_p50_ms: figures.p50,
      wait_p99_ms: figures.p99,
      max_holders: `${figures.maxHolders} (limit ${PERMITS})`,
    });
  }
  printRow("lockd / redis-semaphore", {
    grants_ratio: ratio,
    ratio_of_medians: lockd.rate / redis.rate,
    target: ratio >= 2 && lockd.jain >= 0.99 ? "met (>= 2x, jain >= 0.99)" : "MISSED (< 2x or jain < 0.99)",
  });
  printRow("rules", {
    lockd_violations: violationText(runs.lockd),
    redis_semaphore_violations: violationText(runs["redis-semaphore"]),
  });
}

async function rw(): Promise<void> {
  console.log(
    `\n# ${READERS} readers + ${WRITERS} writers on one key, over ${CLIENTS} clients, against each side alone ` +
      `(lockd cpu ${SERVER_CPU}, load cpu ${LOAD_CPU})`,
  );
  const kinds = [
    { name: "mixed", readers: READERS, writers: WRITERS },
    { name: "writers alone", readers: 0, writers: WRITERS },
    { name: "readers alone", readers: READERS, writers: 0 },
  ] as const;
  const runs = new Map<string, WorkerResult[]>(kinds.map((kind) => [kind.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of kinds) {
      const result = await runWorker({
        scenario: "rw",
        target: "lockd",
        readers: kind.readers,
        writers: kind.writers,
      });
      runs.get(kind.name)!.push(result);
      const writer = result.roles.writer;
      printRow(`  round ${round + 1} ${kind.name}`, {
        readers: result.roles.reader ? formatRate(rate(result, "reader")) : "-",
        writer_wait_p99_ms: writer ? writer.waitP99 : "-",
        writer_wait_max_ms: writer ? writer.waitMax : "-",
        load: loadLine(),
      });
    }
  }
  const mixed = runs.get("mixed")!;
  const writersAlone = runs.get("writers alone")!;
  const readersAlone = runs.get("readers alone")!;
  const writerFigure = (results: WorkerResult[], field: "waitP50" | "waitP99" | "waitMax") =>
    median(results.map((result) => role(result, "writer")[field]));
  printRow("writers' wait, beside 64 readers", {
    p50_ms: writerFigure(mixed, "waitP50"),
    p99_ms: writerFigure(mixed, "waitP99"),
    max_ms: writerFigure(mixed, "waitMax"),
    worst_max_ms: Math.max(...mixed.map((result) => role(result, "writer").waitMax)),
    writer_grants: formatRate(median(mixed.map((result) => rate(result, "writer")))),
    writer_jain: median(mixed.map((result) => role(result, "writer").jain)),
  });
  printRow("writers' wait, alone", {
    p50_ms: writerFigure(writersAlone, "waitP50"),
    p99_ms: writerFigure(writersAlone, "waitP99"),
    max_ms: writerFigure(writersAlone, "waitMax"),
    p99_ratio_mixed_to_alone: writerFigure(mixed, "waitP99") / writerFigure(writersAlone, "waitP99"),
  });
  const readerRate = median(mixed.map((result) => rate(result, "reader")));
  const aloneRate = median(readersAlone.map((result) => rate(result, "reader")));
  printRow("readers", {
    grants_beside_writers: formatRate(readerRate),
    grants_alone: formatRate(aloneRate),
    ratio: readerRate / aloneRate,
    wait_p99_ms: median(mixed.map((result) => role(result, "reader").waitP99)),
    reader_jain: median(mixed.map((result) => role(result, "reader").jain)),
  });
  printRow("rules", { violations: violationText([...runs.values()].flat()) });
}

const only = process.argv[2];
const sections: Record<string, () => Promise<void>> = { semaphore, rw };
console.log(
  `lock modes benchmark  node ${process.version}  ${new Date().toISOString()}  ${DURATION_MS} ms/run, ` +
    `median of ${ROUNDS} alternating runs  loadavg ${loadLine()}`,
);
for (const [name, section] of Object.entries(sections)) {
  if (only === undefined || only === name) await section();
}
console.log(`loadavg at the end ${loadLine()}  rule violations ${violations}`);
if (violations > 0) process.exitCode = 1;
