import {
  AbortError,
  type Lock,
  LockClient,
  LockLostError,
  LockServerError,
  LockTimeoutError,
  NoServerError,
} from "@lock/client";
import type { History } from "./history.js";
import type { RequestLabels } from "./request-labels.js";
import type { Rng } from "./rng.js";
import { AppHost, SimSocket } from "./sim-socket.js";
import type { SimWorld } from "./world.js";

/** The permits of the workload's semaphore keys (those whose name starts with `s`). */
export const SEMAPHORE_PERMITS = 2;

/** A bug put into the client on purpose (its `testMutation`): the checker must then fail. */
export type ClientMutation = "fresh-retry-id";

export interface AppOptions {
  /** Keys whose name starts with `s` are semaphores of SEMAPHORE_PERMITS; the others read/write locks. */
  readonly keys: readonly string[];
  /** Key sets an operation may take at once (`acquireAll`), none of them semaphores. */
  readonly bundles?: ReadonlyArray<readonly string[]> | undefined;
  /** The client's configured servers (several clusters: maybe one cluster's). */
  readonly servers: readonly string[];
  /** The workload's choices: operations, keys, leases, waits, holds. */
  readonly rng: Rng;
  /** The client's own randomness (reconnect and retry jitter). */
  readonly jitter: Rng;
  readonly labels: RequestLabels;
  readonly mutation?: ClientMutation | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

/**
 * A simulated application process that uses the real @lock/client: its sockets are SimSockets on
 * the world's network, its timers a queue on the world's clock, its jitter a seeded stream, so a
 * seed replays it exactly. It runs one operation at a time (acquire, tryAcquire or an acquire it
 * aborts; hold, maybe extend; release) until told to drain, then closes its client; the outcomes
 * go to the history.
 */
export class SimApp {
  readonly host: AppHost;
  /** Stop starting operations (the run is draining). */
  draining = false;
  #closed = false;
  #ops = 0;

  constructor(
    readonly name: string,
    readonly world: SimWorld,
    readonly history: History,
    readonly options: AppOptions,
  ) {
    this.host = new AppHost(name, () => world.appRuns());
    world.network.addHost(this.host);
  }

  /** Busy until its client has closed: nothing may be left unsettled once the run drained. */
  get busy(): boolean {
    return !this.#closed;
  }

  /** Starts the process: its client connects, and the workload begins. */
  start(): void {
    this.world.appRuns();
    const { network } = this.world;
    const watch = this.options.labels.watch(this.name);
    const client = new LockClient({
      servers: [...this.options.servers],
      connect: (server) => new SimSocket(network, this.host, server, watch),
      timers: this.world.appTimers(),
      random: () => this.options.jitter.float(),
      ...(this.options.mutation ? { testMutation: this.options.mutation } : {}),
    });
    this.#countEvents(client);
    if (this.options.log) this.#logEvents(client, this.options.log);
    this.#run(client).catch((error: unknown) => this.history.fail(`${this.name}: ${describe(error)}`));
  }

  async #run(client: LockClient): Promise<void> {
    const { rng } = this.options;
    await this.#sleep(rng.int(0, 50));
    while (!this.draining) {
      await this.#operation(client);
      await this.#sleep(rng.int(0, 100));
    }
    await client.close();
    this.#closed = true;
  }

  /** One acquire (of some kind, or a bundle 1 in 5), and if granted a hold and a release. */
  async #operation(client: LockClient): Promise<void> {
    const { rng, keys, bundles } = this.options;
    const op = `${this.name}#${this.#ops++}`;
    if (bundles !== undefined && bundles.length > 0 && rng.chance(0.2)) {
      await this.#bundleOperation(client, op, rng.pick(bundles));
      return;
    }
    const key = rng.pick(keys);
    const leaseMs = rng.int(200, 2_000);
    this.history.acquireStarted(this.name, op, key);
    let lock: Lock | null;
    try {
      lock = await this.#acquire(client, key, leaseMs);
    } catch (error) {
      this.history.acquireSettled(this.name, op, outcomeOf(error));
      return;
    }
    await this.#holdAndRelease(op, lock);
  }

  /** `acquireAll(keys)`: one grant for every key; a key held shared refuses it (KIND_MISMATCH). */
  async #bundleOperation(client: LockClient, op: string, keys: readonly string[]): Promise<void> {
    const { rng } = this.options;
    const options = {
      leaseMs: rng.int(200, 2_000),
      waitMs: rng.int(100, 3_000),
      autoExtend: rng.chance(0.2),
    };
    this.history.acquireStarted(this.name, op, keys.join(","));
    let lock: Lock;
    try {
      lock = await client.acquireAll(keys, options);
    } catch (error) {
      const busy = error instanceof LockServerError && error.serverCode === "KIND_MISMATCH";
      this.history.acquireSettled(this.name, op, busy ? "busy" : outcomeOf(error));
      return;
    }
    await this.#holdAndRelease(op, lock);
  }

  async #holdAndRelease(op: string, lock: Lock | null): Promise<void> {
    const key = lock?.key ?? "";
    if (lock === null) {
      this.history.acquireSettled(this.name, op, "busy");
      return;
    }
    this.history.acquired(this.name, op, key, lock.token, "");
    this.history.acquireSettled(this.name, op, "granted");
    await this.#hold(lock);
    let outcome: string;
    try {
      outcome = (await lock.release()) ? "released" : "stale";
    } catch (error) {
      outcome = error instanceof NoServerError ? "abandoned" : `error ${describe(error)}`;
    }
    this.history.released(this.name, op, key, lock.token, outcome);
  }

  /**
   * acquire (7 in 10, some with autoExtend or waitForReady), tryAcquire (2), an aborted acquire (1);
   * a permit of a semaphore key, else exclusive (3 in 4) or shared.
   */
  #acquire(client: LockClient, key: string, leaseMs: number): Promise<Lock | null> {
    const { rng } = this.options;
    const kind = rng.int(0, 9);
    const waitMs = rng.int(100, 3_000);
    const hold = key.startsWith("s")
      ? { permits: SEMAPHORE_PERMITS }
      : rng.chance(0.25)
        ? { mode: "shared" as const }
        : {};
    if (kind < 7) {
      const autoExtend = rng.chance(0.2);
      const waitForReady = rng.chance(0.3);
      return client.acquire(key, { leaseMs, waitMs, autoExtend, waitForReady, ...hold });
    }
    if (kind < 9) return client.tryAcquire(key, { leaseMs, ...hold });
    const controller = new AbortController();
    this.#after(rng.int(0, waitMs), () => controller.abort());
    return client.acquire(key, { leaseMs, waitMs, signal: controller.signal, ...hold });
  }

  /** Holds the lock, sometimes past its lease (a stalled holder), sometimes extending it midway. */
  async #hold(lock: Lock): Promise<void> {
    const { rng } = this.options;
    const holdMs = rng.chance(0.1)
      ? rng.int(lock.leaseMs, lock.leaseMs * 2)
      : rng.int(0, Math.floor(lock.leaseMs / 2));
    if (!rng.chance(0.2)) {
      await this.#sleep(holdMs);
      return;
    }
    await this.#sleep(holdMs / 2);
    try {
      await lock.extend();
    } catch (error) {
      // Lost (refused, or not confirmed in time) or unreachable: what a failover may do to a lease.
      // Refused SLOT_MOVING: its slot is moving to another cluster, which extends nothing there.
      const explained =
        error instanceof LockLostError ||
        error instanceof NoServerError ||
        (error instanceof LockServerError && error.serverCode === "SLOT_MOVING");
      if (!explained) this.history.fail(`${this.name}: extending ${lock.key} failed with ${describe(error)}`);
    }
    await this.#sleep(holdMs / 2);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#after(ms, resolve));
  }

  /** Runs `work` as this application, `ms` from now on the world's clock. */
  #after(ms: number, work: () => void): void {
    this.world.scheduler.after(ms, () => {
      this.world.appRuns();
      work();
    });
  }

  #countEvents(client: LockClient): void {
    const { counts } = this.history;
    client.on("redirect", () => counts.redirects++);
    client.on("retry", () => counts.retries++);
    client.on("disconnect", () => counts.disconnects++);
    client.on("lockLost", () => counts.locksLost++);
  }

  #logEvents(client: LockClient, log: (line: string) => void): void {
    const { labels } = this.options;
    client.on("connect", (e) => log(`${this.name} connected to ${e.address}`));
    client.on("disconnect", (e) => log(`${this.name} lost ${e.address}: ${e.error?.message}`));
    client.on("redirect", (e) => log(`${this.name} redirected ${e.op} ${e.key} from ${e.from} to ${e.to}`));
    client.on("retry", (e) => log(`${this.name} retries ${labels.label(e.id)} (${e.error?.message})`));
    client.on("lockLost", (e) => log(`${this.name} lost ${e.key} ${e.token}: ${e.error.message}`));
  }
}

/** An acquire's failure as the history counts it; anything unexpected starts with "error". */
function outcomeOf(error: unknown): string {
  if (error instanceof LockTimeoutError)
    return error.cause instanceof NoServerError ? "gave-up" : "timed-out";
  if (error instanceof NoServerError) return "no-server";
  if (error instanceof LockLostError) return "lost";
  if (error instanceof AbortError) return "aborted";
  return `error ${describe(error)}`;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = "code" in error ? ` ${String(error.code)}` : "";
  const serverCode = "serverCode" in error ? ` ${String(error.serverCode)}` : "";
  return `${error.name}${code}${serverCode}: ${error.message}`;
}
