import { execFileSync } from "node:child_process";
import type { LockdCluster } from "@lock/testkit";
import type { Fault, FaultKind, History } from "./chaos-history.js";

/**
 * The faults of a chaos run, on a real LockdCluster (every node behind a FaultProxy that peers and
 * clients go through). Each fault starts from the steady state (node 0 active, the others following
 * it), is lifted, and ends when the cluster is steady again; the History gets one Fault per
 * measured event (a kill or a graceful stop of node 0 also records its return).
 */
export const FAULT_KINDS: readonly FaultKind[] = [
  "stall",
  "kill",
  "handoff",
  "restart-standby",
  "restart-all",
  "partition-peers",
  "partition-full",
];

/** Faults whose first grant that counts comes from another node than the faulted one. */
export const MEASURED_ON_ANOTHER_NODE: ReadonlySet<FaultKind> = new Set(["stall", "kill", "partition-full"]);

export interface NemesisOptions {
  readonly stallMs: number;
  readonly partitionMs: number;
  /** Steady time before a return (after a kill or stop). */
  readonly steadyMs: number;
  /** Where lockd processes run (taskset -p); undefined leaves them unpinned. */
  readonly nodeCpus: string | undefined;
  /** A coordinated run's store faults (chaos-store.ts): runs one to its end. */
  readonly storeFault?: (kind: FaultKind) => Promise<void>;
}

const SETTLE_TIMEOUT_MS = 30_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Nemesis {
  readonly #cluster: LockdCluster;
  readonly #history: History;
  readonly #options: NemesisOptions;
  #probes = 0;

  constructor(cluster: LockdCluster, history: History, options: NemesisOptions) {
    this.#cluster = cluster;
    this.#history = history;
    this.#options = options;
    this.pinAll();
  }

  /** The nodes' log lines (roles, holds, peers) within `ms` of a fault, for --verbose. */
  roleLog(fault: Fault, ms: number): string[] {
    const lines: Array<[number, string]> = [];
    this.#cluster.nodes.forEach((node, i) => {
      for (const entry of node.logs) {
        const at = (entry.time as number) - fault.wallStartedAt;
        if (at < -50 || at > ms) continue;
        const { time: _t, level: _l, msg, pid: _p, hostname: _h, ...rest } = entry;
        const detail = Object.entries(rest)
          .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
          .join(" ");
        lines.push([at, `${String(at).padStart(6)} node ${i} ${String(msg)} ${detail}`]);
      }
    });
    return lines.sort((a, b) => a[0] - b[0]).map(([, line]) => line);
  }

  /** Pins every running node to the node CPUs (again after restarts: a new process, a new pid). */
  pinAll(): void {
    const cpus = this.#options.nodeCpus;
    if (cpus === undefined) return;
    for (const node of this.#cluster.nodes) {
      if (node.pid !== undefined)
        execFileSync("taskset", ["-pc", cpus, String(node.pid)], { stdio: "ignore" });
    }
  }

  /** Waits until node 0 is the active and the others follow it. */
  async settled(): Promise<void> {
    const deadline = performance.now() + SETTLE_TIMEOUT_MS;
    const active = this.#cluster.advertised(0);
    for (;;) {
      const infos = await Promise.all(
        this.#cluster.nodes.map((_, i) => this.#cluster.info(i).catch(() => undefined)),
      );
      const steady = infos.every((info, i) =>
        i === 0 ? info?.role === "active" : info?.role === "standby" && info.active === active,
      );
      // And it grants: an active may hold (NO_ACTIVE) after a stall or an epoch ahead of its clock.
      if (steady && (await this.#grants())) return;
      if (performance.now() > deadline) throw new Error(`cluster not steady: ${JSON.stringify(infos)}`);
      await sleep(50);
    }
  }

  /** A 1 ms try-acquire straight to node 0, on a key of its own: granted means it serves. */
  async #grants(): Promise<boolean> {
    try {
      using line = await this.#cluster.connect(0);
      const reply = await line.request(`Y chaos-settle 0.001 settle${this.#probes++}`);
      return reply.startsWith("Y ") || reply.startsWith("N ");
    } catch {
      return false;
    }
  }

  async inject(kind: FaultKind): Promise<void> {
    const cluster = this.#cluster;
    const top = cluster.nodes[0]!;
    switch (kind) {
      case "stall":
        await this.#fault(kind, 0, false, async () => {
          top.pause();
          await sleep(this.#options.stallMs);
          top.resume();
        });
        return;
      case "kill": {
        const since = cluster.nodes[1]!.logs.length;
        await this.#fault(kind, 0, false, async () => {
          await top.kill("SIGKILL");
          await cluster.nodes[1]!.waitForServing({ since });
        });
        await this.#return();
        return;
      }
      case "handoff":
        await this.#fault(kind, 0, false, async () => {
          await top.stop();
        });
        await this.#return();
        return;
      case "restart-standby":
        await this.#fault(kind, 2, false, async () => {
          await cluster.nodes[2]!.kill("SIGKILL");
          await cluster.restart(2);
          this.pinAll();
        });
        return;
      case "restart-all":
        await this.#fault(kind, 0, false, async () => {
          await Promise.all(cluster.nodes.map((node) => node.kill("SIGKILL")));
          await Promise.all(cluster.nodes.map((_, i) => cluster.restart(i)));
          this.pinAll();
        });
        return;
      case "partition-peers":
        // Clients still reach every node: both sides have an active until the partition heals.
        await this.#fault(kind, 0, true, async () => {
          cluster.partition(0);
          await sleep(this.#options.partitionMs);
          cluster.heal();
        });
        return;
      case "partition-full":
        // Node 0 stays active on its side, reached by nobody; at the heal, clients may reach it
        // before it hears the other side's later epoch: the documented two-active window.
        await this.#fault(kind, 0, true, async () => {
          cluster.partition(0, { clients: true });
          await sleep(this.#options.partitionMs);
          cluster.heal();
        });
        return;
      case "return":
        throw new Error("a return follows a kill or a handoff");
      default: {
        const storeFault = this.#options.storeFault;
        if (storeFault === undefined) throw new Error(`${kind}: not a coordinated run`);
        await this.#fault(kind, 0, false, () => storeFault(kind));
        return;
      }
    }
  }

  /** Node 0 is down: start it again and measure its taking the role back. */
  async #return(): Promise<void> {
    // Let the outage of its going down end first: the return is measured on its own.
    await sleep(this.#options.steadyMs);
    await this.#fault("return", 0, false, async () => {
      await this.#cluster.restart(0);
      this.pinAll();
    });
  }

  async #fault(kind: FaultKind, node: number, twoActives: boolean, run: () => Promise<void>): Promise<void> {
    const fault: Fault = {
      kind,
      node,
      startedAt: performance.now(),
      wallStartedAt: Date.now(),
      healedAt: Number.NaN,
      settledAt: Number.NaN,
      twoActives,
    };
    this.#history.faults.push(fault);
    await run();
    fault.healedAt = performance.now();
    // A node that is down (after kill or stop, before its return) cannot settle the cluster yet.
    if (kind !== "kill" && kind !== "handoff") await this.settled();
    fault.settledAt = performance.now();
  }
}
