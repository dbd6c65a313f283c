import { connect } from "node:net";
import { LockEngine, monotonicClock, TokenIssuer } from "@lock/server";
import { percentile, printRow } from "./report.js";
import { startLockd } from "./spawn.js";

/**
 * `/locks` on a million held keys. Run: `pnpm bench:locks` (builds first).
 *
 * 1. Through a real lockd (pinned to cpu 0; this process, the HTTP client, on cpu 1 when run as
 *    `taskset -c 1 node bench/dist/locks-bench.js`): fill BENCH_LOCKS_KEYS keys over one pipelined
 *    connection, then time GET /locks pages end to end (HTTP, JSON and all): the first listing
 *    (which builds the index), pages from random cursors, a prefix that matches nothing, a narrow
 *    prefix, and the event loop's longest block while the index is built.
 * 2. In process: the engine's grant+release cycle with the index off (nobody lists) and on (a
 *    listing is open, so every new or freed key is logged), side by side: the hot path's cost.
 */
const KEYS = Number(process.env.BENCH_LOCKS_KEYS ?? 1_000_000);
const PAGES = Number(process.env.BENCH_LOCKS_PAGES ?? 200);
const keyOf = (i: number) => `job:${String(i).padStart(7, "0")}`;

async function fill(port: number): Promise<void> {
  const socket = connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  let answered = 0;
  let pending = "";
  const done = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      pending += chunk.toString("latin1");
      let at = pending.indexOf("\n");
      while (at >= 0) {
        if (!pending.startsWith("A ")) throw new Error(`unexpected reply: ${pending.slice(0, at)}`);
        answered += 1;
        pending = pending.slice(at + 1);
        at = pending.indexOf("\n");
      }
      if (answered === KEYS) resolve();
    });
  });
  const BATCH = 10_000;
  for (let start = 0; start < KEYS; start += BATCH) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(KEYS, start + BATCH); i++) lines.push(`A ${keyOf(i)} 3600 0\n`);
    if (!socket.write(lines.join(""))) await new Promise((resolve) => socket.once("drain", resolve));
    // Keep the pipeline bounded: lockd answers in order.
    while (answered < start - 5 * BATCH) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await done;
  // Left open until lockd stops: the keys stay held either way (leases, not connections, free them).
}

async function timed(
  url: string,
): Promise<{ ms: number; body: { locks: unknown[]; nextCursor: string | null } }> {
  const started = performance.now();
  const response = await fetch(url);
  const body = (await response.json()) as { locks: unknown[]; nextCursor: string | null };
  if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
  return { ms: performance.now() - started, body };
}

function summary(samples: number[]): Record<string, number> {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99), max_ms: sorted.at(-1)! };
}

async function throughLockd(): Promise<void> {
  console.log(`\n# GET /locks on ${KEYS.toLocaleString("en-US")} held keys (lockd cpu 0)`);
  // One connection holds every key: lift the per-connection quota (default 100000).
  const lockd = await startLockd("0", ["--admin", "127.0.0.1:0", "--max-connection-keys", String(KEYS)]);
  try {
    const admin = lockd.adminPort!;
    const fillStarted = performance.now();
    await fill(lockd.port);
    printRow("fill", { keys: KEYS, seconds: (performance.now() - fillStarted) / 1000 });
    const base = `http://127.0.0.1:${admin}`;

    // The event loop's longest block while the first listing builds the index: /healthz answers
    // between build steps, so its slowest answer bounds what a lease deadline could be late.
    let building = true;
    const healthz: number[] = [];
    const probe = (async () => {
      while (building) healthz.push((await timed(`${base}/healthz`)).ms);
    })();
    const first = await timed(`${base}/locks?limit=100`);
    building = false;
    await probe;
    printRow("first listing (builds the index)", {
      ms: first.ms,
      healthz_max_ms_meanwhile: Math.max(0, ...healthz),
    });

    const fromCursor: number[] = [];
    let cursor = first.body.nextCursor;
    for (let i = 0; i < PAGES; i++) {
      const page = await timed(`${base}/locks?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      fromCursor.push(page.ms);
      cursor = page.body.nextCursor;
    }
    printRow("next page, limit=100", summary(fromCursor));
    const random: number[] = [];
    const full: number[] = [];
    for (let i = 0; i < PAGES; i++) {
      const key = keyOf(Math.floor(Math.random() * KEYS));
      const cursorOf = `k${Buffer.from(key).toString("base64url")}`;
      random.push((await timed(`${base}/locks?limit=100&cursor=${cursorOf}`)).ms);
      if (i < PAGES / 4) full.push((await timed(`${base}/locks?limit=1000&cursor=${cursorOf}`)).ms);
    }
    printRow("page at a random cursor, limit=100", summary(random));
    printRow("page at a random cursor, limit=1000", summary(full));
    const none: number[] = [];
    const narrow: number[] = [];
    for (let i = 0; i < PAGES; i++) {
      none.push((await timed(`${base}/locks?prefix=nothing:${i}`)).ms);
      narrow.push(
        (await timed(`${base}/locks?prefix=${keyOf(Math.floor(Math.random() * KEYS)).slice(0, 10)}`)).ms,
      );
    }
    printRow("prefix matching nothing", summary(none));
    printRow("prefix matching 10-1000 keys", summary(narrow));
  } finally {
    lockd.stop();
  }
}

function cycles(listing: boolean, keys: "reused" | "unique"): number {
  let epoch = 1n;
  const engine = new LockEngine<undefined>({
    clock: monotonicClock,
    tokens: new TokenIssuer(epoch, () => ++epoch),
    events: { granted() {}, timedOut() {} },
  });
  const session = engine.openSession("127.0.0.1:1");
  // A table of held keys the cycles run beside, as on a loaded server.
  for (let i = 0; i < 100_000; i++) engine.tryAcquire(`held:${i}`, 3_600_000, undefined, session);
  if (listing) while (!engine.prepareListing(100_000));
  const names = Array.from({ length: 1024 }, (_, i) => `cycle:${i}`);
  const started = performance.now();
  let count = 0;
  while (performance.now() - started < 1000) {
    for (let i = 0; i < 1024; i++) {
      const key = keys === "reused" ? names[i]! : `u:${count}`;
      const outcome = engine.tryAcquire(key, 30_000, undefined, session);
      if (outcome.status === "granted") engine.release(key, outcome.token);
      count += 1;
    }
    // A listing reads now and then (the status page does not; a `lock locks` would).
    if (listing && count % 65_536 === 0) engine.listHeld({ prefix: "", after: undefined, limit: 100 });
  }
  return count / ((performance.now() - started) / 1000);
}

function hotPath(): void {
  console.log("\n# engine grant+release with the held-key index off and on (this process)");
  for (const keys of ["reused", "unique"] as const) {
    const off: number[] = [];
    const on: number[] = [];
    // Alternating rounds, so a machine that gets busier affects both sides alike.
    for (let round = 0; round < 5; round++) {
      off.push(cycles(false, keys));
      on.push(cycles(true, keys));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[2]!;
    printRow(`cycles, ${keys} keys`, {
      index_off: Math.round(median(off)),
      index_on: Math.round(median(on)),
      ratio_on_off: median(on) / median(off),
    });
  }
}

await throughLockd();
hotPath();
