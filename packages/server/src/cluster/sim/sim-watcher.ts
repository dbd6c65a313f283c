import { type HolderState, LockClient } from "@lock/client";
import type { HolderSummary } from "../../engine/holder-summary.js";
import type { Rng } from "./rng.js";
import { AppHost, SimSocket } from "./sim-socket.js";
import type { WatchChecks } from "./watch-checks.js";
import type { SimWorld } from "./world.js";

/**
 * A simulated application that only watches: the real @lock/client's `observe()` on every workload
 * key, over the simulated network (faults reach it like the other applications). Every state it is
 * told goes to the watch checks as it arrives; at the end of the run its last state of each key is
 * compared with the active's (`finalStates`), then it closes.
 */
export class SimWatcher {
  readonly host: AppHost;
  readonly #client: LockClient;
  readonly #last = new Map<string, HolderState>();
  readonly #ended: Array<Promise<void>> = [];
  #closed = false;

  constructor(
    readonly name: string,
    readonly world: SimWorld,
    readonly checks: WatchChecks,
    servers: readonly string[],
    jitter: Rng,
  ) {
    this.host = new AppHost(name, () => world.appRuns());
    world.network.addHost(this.host);
    this.#client = new LockClient({
      servers: [...servers],
      connect: (server) => new SimSocket(world.network, this.host, server, () => {}),
      timers: world.appTimers(),
      random: () => jitter.float(),
    });
  }

  /** Busy until its client closed (after `close`). */
  get busy(): boolean {
    return !this.#closed;
  }

  /** Starts watching `keys`. */
  start(keys: readonly string[]): void {
    this.world.appRuns();
    for (const key of keys) this.#ended.push(this.#watch(key));
  }

  async #watch(key: string): Promise<void> {
    try {
      for await (const state of this.#client.observe(key)) {
        this.#last.set(key, state);
        this.checks.told(this.name, state);
      }
    } catch (error) {
      this.checks.failed(`${this.name} stopped watching ${key}: ${String(error)}`);
    }
  }

  /** The last state it was told of `key` (undefined: none yet). */
  lastState(key: string): HolderSummary | undefined {
    const state = this.#last.get(key);
    return state && { token: state.token, mode: state.mode, holders: state.holders };
  }

  async close(): Promise<void> {
    await this.#client.close();
    await Promise.all(this.#ended);
    this.#closed = true;
  }
}
