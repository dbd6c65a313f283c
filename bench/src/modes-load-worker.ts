import { setImmediate as nextTurn } from "node:timers/promises";
import { jainIndex, measurementWindow, percentile } from "./report.js";

/**
 * Contended load on one key through a client library, run as its own (pinned) process by
 * bench/src/modes-bench.ts. Every contender loops acquire → critical section (one event-loop turn)
 * → release, as fast as it can; the contenders share `clients` client instances round-robin, as
 * `clients` worker processes of several concurrent jobs each would.
 *
 * - `semaphore`: `contenders` contenders take one of `permits` permits: `@lock/client`'s
 *   `{ permits }` against lockd, or redis-semaphore's `Semaphore` (ioredis) against Redis, used as
 *   its README shows (a new `Semaphore` per acquire, default retry interval, an acquire timeout
 *   long enough that no contender gives up).
 * - `rw`: `readers` shared and `writers` exclusive contenders on one lockd key.
 *
 * Holders are also counted in this process, from the grant's arrival to the release being sent:
 * that span lies inside the holder's span on the server, so more than `permits` here (or a writer
 * beside anyone) is more on the server too. Prints one JSON line (WorkerResult).
 */
export interface WorkerOptions {
  readonly scenario: "semaphore" | "rw";
  readonly target: "lockd" | "redis-semaphore";
  readonly host: string;
  readonly port: number;
  readonly key: string;
  readonly clients: number;
  readonly durationMs: number;
  /** semaphore */
  readonly contenders?: number;
  readonly permits?: number;
  /** rw */
  readonly readers?: number;
  readonly writers?: number;
}

export interface RoleResult {
  readonly contenders: number;
  readonly grants: number;
  /** Jain's fairness index over this role's contenders' grant counts. */
  readonly jain: number;
  readonly minGrants: number;
  readonly maxGrants: number;
  readonly waitP50: number;
  readonly waitP99: number;
  readonly waitMax: number;
}

export interface WorkerResult {
  readonly seconds: number;
  readonly roles: Record<string, RoleResult>;
  /** The most holders seen at once (semaphore), over the whole run. */
  readonly maxHolders: number;
  /** Grants that found the limit already reached, a slot already live, or a writer not alone (or beside a writer). */
  readonly violations: {
    readonly overLimit: number;
    readonly slotClashes: number;
    readonly rwClashes: number;
  };
}

const LEASE_MS = 30_000;

type Role = "contender" | "reader" | "writer";

interface Held {
  readonly slot: number | undefined;
  release(): Promise<unknown>;
}

type Acquire = (contender: number, role: Role) => Promise<Held>;

const options = JSON.parse(process.argv[2] ?? "{}") as WorkerOptions;

async function lockdAcquire(): Promise<{ acquire: Acquire; close(): Promise<unknown> }> {
  const { LockClient } = await import("@lock/client");
  const clients = Array.from(
    { length: options.clients },
    () => new LockClient({ servers: [`${options.host}:${options.port}`] }),
  );
  await Promise.all(
    clients.map((client) => new Promise<void>((resolve) => client.once("connect", () => resolve()))),
  );
  const acquire: Acquire = async (contender, role) => {
    const client = clients[contender % clients.length]!;
    const lock = await client.acquire(
      options.key,
      role === "contender"
        ? { leaseMs: LEASE_MS, permits: options.permits! }
        : { leaseMs: LEASE_MS, mode: role === "reader" ? "shared" : "exclusive" },
    );
    return { slot: lock.slot, release: () => lock.release() };
  };
  return { acquire, close: () => Promise.all(clients.map((client) => client.close())) };
}

async function redisSemaphoreAcquire(): Promise<{ acquire: Acquire; close(): Promise<unknown> }> {
  // Loaded only for Redis runs, so that the lockd runs carry none of it.
  const { Redis } = await import("ioredis");
  const { Semaphore } = await import("redis-semaphore");
  const clients = Array.from(
    { length: options.clients },
    () => new Redis({ host: options.host, port: options.port, lazyConnect: true }),
  );
  await Promise.all(clients.map((client) => client.connect()));
  // Long enough that a contender left behind keeps polling instead of throwing: starvation then
  // shows in the fairness index, as it does for lockd's waiters (which wait forever).
  const acquireTimeout = options.durationMs + 60_000;
  const acquire: Acquire = async (contender) => {
    const semaphore = new Semaphore(clients[contender % clients.length]!, options.key, options.permits!, {
      lockTimeout: LEASE_MS,
      acquireTimeout,
    });
    await semaphore.acquire();
    return { slot: undefined, release: () => semaphore.release() };
  };
  const close = async () => {
    // redis-semaphore keeps the set under `semaphore:<key>`; the driver also deletes it on failure.
    await clients[0]!.del(`semaphore:${options.key}`);
    await Promise.all(clients.map((client) => client.quit()));
  };
  return { acquire, close };
}

const roles: Role[] =
  options.scenario === "semaphore"
    ? Array.from({ length: options.contenders! }, () => "contender" as const)
    : [
        ...Array.from({ length: options.readers! }, () => "reader" as const),
        ...Array.from({ length: options.writers! }, () => "writer" as const),
      ];
const backend = options.target === "lockd" ? await lockdAcquire() : await redisSemaphoreAcquire();
const grants = roles.map(() => 0);
const waits: Record<Role, number[]> = { contender: [], reader: [], writer: [] };
const inside: Record<Role, number> = { contender: 0, reader: 0, writer: 0 };
const liveSlots = new Set<number>();
const violations = { overLimit: 0, slotClashes: 0, rwClashes: 0 };
let maxHolders = 0;
let measuring = false;
let running = true;

/** Counts the new holder in, and any rule its grant broke beside the holders already in. */
function enter(role: Role, slot: number | undefined): void {
  if (role === "writer" && inside.reader + inside.writer > 0) violations.rwClashes++;
  if (role === "reader" && inside.writer > 0) violations.rwClashes++;
  inside[role]++;
  if (role === "contender") {
    maxHolders = Math.max(maxHolders, inside.contender);
    if (inside.contender > options.permits!) violations.overLimit++;
  }
  if (slot !== undefined) {
    if (liveSlots.has(slot)) violations.slotClashes++;
    liveSlots.add(slot);
  }
}

async function loop(contender: number, role: Role): Promise<void> {
  while (running) {
    const started = performance.now();
    const held = await backend.acquire(contender, role);
    const waited = performance.now() - started;
    enter(role, held.slot);
    if (measuring) {
      grants[contender]! += 1;
      waits[role].push(waited);
    }
    await nextTurn();
    inside[role]--;
    if (held.slot !== undefined) liveSlots.delete(held.slot);
    await held.release();
  }
}

function summarize(role: Role): RoleResult {
  const mine = grants.filter((_, contender) => roles[contender] === role);
  const sorted = waits[role].sort((a, b) => a - b);
  return {
    contenders: mine.length,
    grants: mine.reduce((sum, n) => sum + n, 0),
    jain: jainIndex(mine),
    minGrants: Math.min(...mine),
    maxGrants: Math.max(...mine),
    waitP50: percentile(sorted, 50),
    waitP99: percentile(sorted, 99),
    waitMax: sorted.at(-1) ?? Number.NaN,
  };
}

const loops = roles.map((role, contender) => loop(contender, role));
const seconds = await measurementWindow(options.durationMs, (on) => {
  measuring = on;
});
running = false;
await Promise.all(loops);
await backend.close();
const present = [...new Set(roles)];
const result: WorkerResult = {
  seconds,
  roles: Object.fromEntries(present.map((role) => [role, summarize(role)])),
  maxHolders,
  violations,
};
console.log(JSON.stringify(result));
process.exit(0);
