import { type AcquireOptions, type Lock, LockClient, type LockError } from "@lock/client";
import { fence, fenceRead, StaleTokenError, slotResource } from "@lock/fence";
import type { PostgresStore } from "@lock/fence/postgres";
import type pg from "pg";
import { type Failure, type History, nodeOf } from "./chaos-history.js";
import type { HoldMode } from "./chaos-holders.js";

/**
 * The chaos run's load: workers that each loop acquire → fenced Postgres write → unfenced
 * read-modify-write of a control table → release, on a few shared keys, with their own LockClient
 * (as separate processes would), and one probe worker that only acquires and releases a key of its
 * own, as often as it can. A few critical sections pause past their lease, as a GC pause or a
 * frozen VM would; nothing in them checks that the lock is still held, so only the fence protects
 * the fenced table, and the control table shows what happens without it.
 *
 * Beside them, the lock modes: permit workers on a semaphore key (each writes fenced on its slot's
 * resource), and readers and writers on a read/write key (writers write fenced, readers read the
 * fenced log through fenceRead() with `record`, and note a write newer than their token if one got
 * through). Every worker's holding span goes to the history for the holder rules.
 */
export interface WorkloadOptions {
  readonly servers: readonly string[];
  readonly workers: number;
  readonly keys: number;
  readonly leaseMs: number;
  readonly waitMs: number;
  /** Chance that a critical section pauses past its lease. */
  readonly pauseProbability: number;
  readonly seed: number;
  readonly pool: pg.Pool;
  readonly store: PostgresStore;
  readonly tables: { readonly log: string; readonly control: string };
  /** The lock-mode workers: `permitWorkers` on a semaphore of `permits`, `readers` and `writers` on one key. */
  readonly modes: {
    readonly permits: number;
    readonly permitWorkers: number;
    readonly readers: number;
    readonly writers: number;
  };
}

/** What a worker takes: its key, and how. */
interface Role {
  readonly key: string;
  readonly mode: HoldMode;
  readonly acquire: Pick<AcquireOptions, "mode" | "permits">;
}

export const SEMAPHORE_KEY = "chaos-sem";
export const RW_KEY = "chaos-rw";

// Past these, an operation counts as hung (it still counts if it settles later): acquire's own bound
// is its wait plus the client's 2 s grace for a silent server; release retries for 5 s.
const ACQUIRE_BOUND_EXTRA_MS = 3_000;
const RELEASE_BOUND_MS = 6_000;
const WRITE_BOUND_MS = 10_000;

/** A small seeded PRNG (mulberry32): the same seed, the same choices. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Prints one client's connection events (CHAOS_TRACE=<worker>), to see what it went through. */
function trace(client: LockClient): void {
  for (const name of ["connecting", "connect", "connectFailed", "disconnect", "redirect", "retry"] as const) {
    client.on(name, (event) => {
      const fields = Object.entries(event).map(
        ([k, v]) => `${k}=${v instanceof Error ? v.message : String(v)}`,
      );
      console.error(`trace ${Math.round(performance.now())} ${name} ${fields.join(" ")}`);
    });
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Workload {
  readonly #options: WorkloadOptions;
  readonly #history: History;
  readonly #clients: LockClient[] = [];
  readonly #inside = new Map<string, number>();
  #loops: Promise<void>[] = [];
  #stopping = false;

  constructor(options: WorkloadOptions, history: History) {
    this.#options = options;
    this.#history = history;
  }

  start(): void {
    // A probe worker on a key of its own, without Postgres: a grant every round trip, so that a gap
    // in grants measures the cluster, not the critical sections' length.
    const probe = new LockClient({ servers: this.#options.servers });
    this.#clients.push(probe);
    this.#loops.push(this.#probeLoop(probe));
    const { permits, permitWorkers, readers, writers } = this.#options.modes;
    const roles: Role[] = [
      ...Array.from({ length: this.#options.workers }, (_, worker) => ({
        key: `chaos:${worker % this.#options.keys}`,
        mode: "exclusive" as const,
        acquire: {},
      })),
      ...Array.from({ length: permitWorkers }, () => ({
        key: SEMAPHORE_KEY,
        mode: "permit" as const,
        acquire: { permits },
      })),
      ...Array.from({ length: readers }, () => ({
        key: RW_KEY,
        mode: "shared" as const,
        acquire: { mode: "shared" as const },
      })),
      ...Array.from({ length: writers }, () => ({ key: RW_KEY, mode: "exclusive" as const, acquire: {} })),
    ];
    roles.forEach((role, worker) => {
      const client = new LockClient({ servers: this.#options.servers });
      // Connections come and go under the nemesis; the history records what callers see.
      client.on("lockLost", () => {});
      if (process.env.CHAOS_TRACE === String(worker)) trace(client);
      this.#clients.push(client);
      this.#loops.push(this.#loop(client, role, seededRandom(this.#options.seed * 1_000 + worker)));
    });
  }

  /** Stops the loops; resolves false if some did not finish within `boundMs` (hung). */
  async stop(boundMs: number): Promise<boolean> {
    this.#stopping = true;
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      Promise.all(this.#loops).then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), boundMs))),
    ]);
    clearTimeout(timer);
    await Promise.all(this.#clients.map((client) => client.close()));
    return finished;
  }

  /**
   * One worker on its own key: workers that picked keys at random would all end up queued behind a
   * holder that paused (a convoy), and the whole load would stop with it.
   */
  async #loop(client: LockClient, role: Role, random: () => number): Promise<void> {
    const { leaseMs, waitMs, pauseProbability } = this.#options;
    const { key } = role;
    while (!this.#stopping) {
      const requestedAt = performance.now();
      const lock = await this.#bounded("acquire", waitMs + ACQUIRE_BOUND_EXTRA_MS, () =>
        client.acquire(key, { leaseMs, waitMs, ...role.acquire }),
      );
      if (lock === undefined) {
        // Do not spin while the cluster has no active.
        await sleep(20);
        continue;
      }
      const at = performance.now();
      this.#history.grants.push({
        at,
        key,
        token: lock.token,
        node: nodeOf(lock.token),
        ...(key === SEMAPHORE_KEY || key === RW_KEY ? { sharedKey: true as const } : {}),
      });
      const pausing = random() < pauseProbability;
      try {
        await this.#criticalSection(role, lock, pausing ? leaseMs + 300 : 0);
      } finally {
        this.#history.holds.push({
          key,
          mode: role.mode,
          permits: lock.permits,
          slot: lock.slot,
          token: lock.token,
          requestedAt,
          at,
          end: Math.min(performance.now(), lock.expiresAt),
        });
      }
      // A holder that paused past its lease lost the lock: its release finds nothing, as it should.
      await this.#release(lock, !pausing);
    }
  }

  /**
   * What a holder does, after pausing `pauseMs` first: fenced writes (per slot for a permit), fenced
   * reads for a reader; on the exclusive keys, also the unfenced control write, counting the holder
   * inside from before its pause.
   */
  async #criticalSection(role: Role, lock: Lock, pauseMs: number): Promise<void> {
    const pause = () => (pauseMs > 0 ? sleep(pauseMs) : undefined);
    if (role.mode === "exclusive" && role.key !== RW_KEY) {
      const inside = (this.#inside.get(role.key) ?? 0) + 1;
      this.#inside.set(role.key, inside);
      if (inside > 1) this.#history.overlaps++;
      try {
        await pause();
        await this.#bounded("write", WRITE_BOUND_MS, () => this.#fencedWrite(role.key, lock));
        await this.#bounded("write", WRITE_BOUND_MS, () => this.#controlWrite(role.key));
      } finally {
        this.#inside.set(role.key, (this.#inside.get(role.key) ?? 1) - 1);
      }
      return;
    }
    await pause();
    if (role.mode === "shared") {
      await this.#bounded("read", WRITE_BOUND_MS, () => this.#fencedRead(role.key, lock));
      return;
    }
    const resource = role.mode === "permit" ? slotResource(role.key, lock.slot!) : role.key;
    await this.#bounded("write", WRITE_BOUND_MS, () => this.#fencedWrite(resource, lock));
  }

  async #probeLoop(client: LockClient): Promise<void> {
    const { leaseMs, waitMs } = this.#options;
    while (!this.#stopping) {
      const lock = await this.#bounded("acquire", waitMs + ACQUIRE_BOUND_EXTRA_MS, () =>
        client.acquire("chaos-probe", { leaseMs, waitMs }),
      );
      if (lock === undefined) {
        await sleep(20);
        continue;
      }
      this.#history.grants.push({
        at: performance.now(),
        key: "chaos-probe",
        token: lock.token,
        node: nodeOf(lock.token),
      });
      await this.#release(lock, true);
    }
  }

  /**
   * Releases `lock`. A release that resolves `false` while the lease should still run (`held`) is a
   * failure too: the node that answered did not know the holder (a handoff that lost it, say).
   */
  async #release(lock: Lock, held: boolean): Promise<void> {
    const released = await this.#bounded("release", RELEASE_BOUND_MS, () => lock.release());
    if (released === false && held)
      this.#history.failures.push({ at: performance.now(), code: "RELEASE_NOT_HELD", op: "release" });
  }

  /** Logs the grant's token under `resource` (a key, or a permit's slot resource) if the fence lets it. */
  async #fencedWrite(resource: string, lock: Lock): Promise<void> {
    try {
      await fence(this.#options.store, resource, lock, async (tx) => {
        await tx.query(`INSERT INTO ${this.#options.tables.log} (key, token) VALUES ($1, $2)`, [
          resource,
          lock.token.toString(),
        ]);
      });
      this.#history.fencedWrites++;
    } catch (error) {
      if (!(error instanceof StaleTokenError)) throw error;
      this.#history.staleRefused++;
    }
  }

  /**
   * Reads the newest write logged under `key` through the read rule (recorded, so that an older
   * writer's later write is refused); an accepted read that sees a write newer than the reader's own
   * grant means a writer got in while the reader held the key.
   */
  async #fencedRead(key: string, lock: Lock): Promise<void> {
    try {
      const newest = await fenceRead(
        this.#options.store,
        key,
        lock,
        async (tx) => {
          const { rows } = await tx.query(
            `SELECT max(token)::text AS token FROM ${this.#options.tables.log} WHERE key = $1`,
            [key],
          );
          return rows[0]?.token === null || rows[0]?.token === undefined ? 0n : BigInt(rows[0].token);
        },
        { record: true },
      );
      this.#history.fencedReads++;
      if (newest > lock.token) this.#history.staleReadsAccepted++;
    } catch (error) {
      if (!(error instanceof StaleTokenError)) throw error;
      this.#history.staleReadsRefused++;
    }
  }

  /** Read, then write what was read plus one: lost updates when two holders overlap. */
  async #controlWrite(key: string): Promise<void> {
    const { pool, tables } = this.#options;
    const { rows } = await pool.query(`SELECT value FROM ${tables.control} WHERE key = $1`, [key]);
    const value = Number(rows[0]?.value ?? 0);
    await pool.query(
      `INSERT INTO ${tables.control} (key, value) VALUES ($1, $2)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [key, value + 1],
    );
    this.#history.controlIncrements++;
  }

  /** Runs `operation`, recording a failure by code and a hang past `boundMs`; undefined on failure. */
  async #bounded<T>(op: Failure["op"], boundMs: number, operation: () => Promise<T>): Promise<T | undefined> {
    let hung = false;
    const watchdog = setTimeout(() => {
      hung = true;
      this.#history.hung++;
    }, boundMs);
    try {
      return await operation();
    } catch (error) {
      const code = (error as Partial<LockError>).code ?? (error as Error).name;
      this.#history.failures.push({ at: performance.now(), code: String(code), op });
      return undefined;
    } finally {
      clearTimeout(watchdog);
      if (hung) this.#history.failures.push({ at: performance.now(), code: "HUNG_BUT_SETTLED", op });
    }
  }
}
