import { randomBytes } from "node:crypto";
import { EtcdCluster, FaultProxy } from "@lock/testkit";
import pg from "pg";
import type { FaultKind } from "./chaos-history.js";

/**
 * The coordination store of a coordinated chaos run (docs/consistency.md, "With a coordinator"): a
 * 3-member etcd started for the run, or the machine's PostgreSQL under a random schema dropped
 * after. lockd reaches it through one FaultProxy per endpoint, so the store's faults need no
 * signals to the store itself: `store-cut` black-holes every store connection for longer than the
 * ownership lease (requests hang, then every held reply arrives at once), `store-slow` delays every
 * byte both ways, `store-reset` drops every store connection again and again (what a database
 * restart looks like to its clients), `store-leader-kill` (etcd) kills the raft leader with SIGKILL.
 */
export type StoreKind = "etcd" | "postgres";

export const STORE_FAULTS: Readonly<Record<StoreKind, readonly FaultKind[]>> = {
  etcd: ["store-cut", "store-slow", "store-reset", "store-leader-kill"],
  postgres: ["store-cut", "store-slow", "store-reset"],
};

export interface StoreFaultTiming {
  /** How long a cut lasts: longer than the lease. */
  readonly cutMs: number;
  readonly slowMs: number;
  /** Delay of each chunk, each way, while slow. */
  readonly slowDelayMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const RESETS = 5;
const RESET_EVERY_MS = 400;

export class ChaosStore {
  /** The `--coordinator` URL every node gets: the proxies' addresses. */
  readonly url: string;
  readonly faults: readonly FaultKind[];
  readonly #proxies: FaultProxy[];
  readonly #timing: StoreFaultTiming;
  readonly #etcd: EtcdCluster | undefined;
  readonly #cleanup: () => Promise<void>;
  /** etcd members are not restarted: a second leader kill would leave no quorum, so one per run. */
  #leaderKilled = false;

  private constructor(
    url: string,
    faults: readonly FaultKind[],
    proxies: FaultProxy[],
    timing: StoreFaultTiming,
    etcd: EtcdCluster | undefined,
    cleanup: () => Promise<void>,
  ) {
    this.url = url;
    this.faults = faults;
    this.#proxies = proxies;
    this.#timing = timing;
    this.#etcd = etcd;
    this.#cleanup = cleanup;
  }

  static async start(kind: StoreKind, timing: StoreFaultTiming, pgUrl: string): Promise<ChaosStore> {
    const tag = randomBytes(4).toString("hex");
    if (kind === "etcd") {
      const etcd = await EtcdCluster.start({ members: 3 });
      const proxies = await Promise.all(
        etcd.members.map((member) => FaultProxy.start(Number(member.endpoint.split(":")[1]))),
      );
      const url = `etcd://${proxies.map((proxy) => proxy.address).join(",")}/lock-chaos-${tag}/`;
      return new ChaosStore(url, STORE_FAULTS.etcd, proxies, timing, etcd, () => etcd.dispose());
    }
    const target = new URL(pgUrl);
    const proxy = await FaultProxy.start(Number(target.port || 5432));
    const schema = `lock_chaos_${tag}`;
    const url = new URL(pgUrl);
    url.host = proxy.address;
    url.searchParams.set("schema", schema);
    const dropSchema = async () => {
      const db = new pg.Client({ connectionString: pgUrl });
      await db.connect();
      try {
        await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await db.end();
      }
    };
    return new ChaosStore(url.toString(), STORE_FAULTS.postgres, [proxy], timing, undefined, dropSchema);
  }

  /** Runs one store fault to its end (lifted). */
  async inject(kind: FaultKind): Promise<void> {
    switch (kind) {
      case "store-cut":
        for (const proxy of this.#proxies) proxy.freeze();
        await sleep(this.#timing.cutMs);
        for (const proxy of this.#proxies) proxy.heal();
        return;
      case "store-slow":
        for (const proxy of this.#proxies) proxy.delayMs = this.#timing.slowDelayMs;
        await sleep(this.#timing.slowMs);
        for (const proxy of this.#proxies) proxy.delayMs = 0;
        return;
      case "store-reset":
        for (let reset = 0; reset < RESETS; reset++) {
          for (const proxy of this.#proxies) proxy.dropAll();
          await sleep(RESET_EVERY_MS);
        }
        return;
      case "store-leader-kill":
        if (this.#etcd === undefined || this.#leaderKilled) return;
        this.#leaderKilled = true;
        await this.#etcd.kill(await this.#etcd.leader());
        return;
      default:
        throw new Error(`not a store fault: ${kind}`);
    }
  }

  async dispose(): Promise<void> {
    for (const proxy of this.#proxies) await proxy.close();
    await this.#cleanup();
  }
}
