import { FaultProxy } from "./fault-proxy.js";
import { LineClient } from "./line-client.js";
import { LockdProcess } from "./lockd-process.js";
import { nodeInfo } from "./node-info.js";

/** The peer token every LockdCluster node gets (LOCKD_PEER_TOKEN) unless `env` or `nodeEnv` sets another. */
export const TEST_PEER_TOKEN = "testkit-peer-token-of-the-cluster";

export interface LockdClusterOptions {
  readonly nodes: number;
  /** Extra flags for every node. */
  readonly args?: readonly string[];
  /** Environment for every node, on top of `LOCKD_PEER_TOKEN=TEST_PEER_TOKEN`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Environment for one node, on top of `env` (e.g. a different auth or peer token). */
  readonly nodeEnv?: (index: number) => Readonly<Record<string, string>>;
  /** The lockd entry point every node starts from (another build); default LOCKD_MAIN. */
  readonly main?: string;
}

/**
 * A cluster of real lockd processes for failure tests. Each node listens on its own port and is
 * advertised through a FaultProxy in front of it: the peers list names the proxies, so peer links
 * (and clients that follow an `M` redirect) go through them, while tests' own clients connect to the
 * nodes directly. `isolate(i)` cuts every peer link into node i (a partition that clients do not
 * see); `heal()` restores them. Nodes can be killed, stopped, paused and restarted. Every node gets
 * the same peer token (`TEST_PEER_TOKEN`), as lockd needs one with `--peers`.
 */
export class LockdCluster {
  readonly nodes: LockdProcess[] = [];
  readonly proxies: FaultProxy[] = [];

  private constructor() {}

  static async start(options: LockdClusterOptions): Promise<LockdCluster> {
    const cluster = new LockdCluster();
    try {
      for (let i = 0; i < options.nodes; i++) cluster.proxies.push(await FaultProxy.start(1));
      const peers = cluster.proxies.map((proxy) => proxy.address).join(",");
      const started = cluster.proxies.map((proxy, index) =>
        LockdProcess.start({
          args: [
            "--peers",
            peers,
            "--advertise",
            proxy.address,
            "--heartbeat-interval",
            "0.05",
            "--peer-timeout",
            "0.3",
            ...(options.args ?? []),
          ],
          env: { LOCKD_PEER_TOKEN: TEST_PEER_TOKEN, ...options.env, ...options.nodeEnv?.(index) },
          ...(options.main !== undefined ? { main: options.main } : {}),
        }),
      );
      cluster.nodes.push(...(await Promise.all(started)));
      cluster.nodes.forEach((node, i) => {
        cluster.proxies[i]!.retarget(node.port);
      });
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    return cluster;
  }

  /** Waits until node 0 serves and every other node follows it: the cluster as it starts. */
  async settled(): Promise<void> {
    await this.nodes[0]!.waitForServing({ since: 0 });
    await Promise.all(
      this.nodes.slice(1).map((node) => node.waitForFollowing(this.advertised(0), { since: 0 })),
    );
  }

  /** The advertised (proxy) address of node i: what peers and redirects use. */
  advertised(i: number): string {
    return this.proxies[i]!.address;
  }

  /** Connects a raw client straight to node i (not through its proxy). */
  connect(i: number): Promise<LineClient> {
    return LineClient.connect(this.nodes[i]!.port);
  }

  /** The node's view from `I`: role, epoch, active, keys… */
  info(i: number): Promise<Record<string, string>> {
    return nodeInfo(this.nodes[i]!.port);
  }

  /** Cuts every peer link into node i; clients connected directly still reach it. */
  isolate(i: number): void {
    this.proxies[i]!.cut();
  }

  /**
   * Partitions node i from its peers in both directions: the links into it (its proxy) and the links
   * it dialled to the others (their proxies, by the address its handshake claims). With `clients`,
   * clients cannot reach it either (its proxy stops listening); without, they still reach it through
   * its proxy, and both sides may have an active. `heal()` ends it.
   */
  partition(i: number, { clients = false }: { clients?: boolean } = {}): void {
    this.proxies[i]!.cut(clients ? "all" : "peers");
    this.proxies.forEach((proxy, j) => {
      if (j !== i) proxy.cutPeer(this.advertised(i));
    });
  }

  heal(): void {
    for (const proxy of this.proxies) proxy.heal();
  }

  /** Restarts node i on its port and data directory, behind the same proxy; `main`: from another build. */
  async restart(i: number, options?: { main?: string }): Promise<void> {
    await this.nodes[i]!.restart(options);
    this.proxies[i]!.retarget(this.nodes[i]!.port);
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.dispose()));
    await Promise.all(this.proxies.map((proxy) => proxy.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
