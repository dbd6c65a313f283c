import { connect, createServer, type Server, type Socket } from "node:net";

/** Which way bytes flow through the proxy: client to lockd, or lockd to client. */
export type ProxyDirection = "toServer" | "toClient";

/**
 * Whose connections a cut applies to. A connection is a peer link when its first byte is `!` (the
 * peer handshake's `!N`, which a cluster without a client auth token sends first), else a client.
 */
export type CutScope = "all" | "peers" | "clients";

type PairKind = "unknown" | "peer" | "client";

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  kind: PairKind;
  /** For a peer link: the node it claims to be (the address in its `!N`). */
  peer: string | undefined;
}

/**
 * A TCP proxy between a client and a lockd, for failure tests: `cut()` drops every connection
 * and refuses new ones (a partition: it stops listening, so a reconnect fails at once rather than
 * connecting and then being dropped, which a client would briefly count as connected), `heal()`
 * listens again on the same port and lets traffic through, `delayMs` holds every
 * chunk back in both directions (a slow link), `freeze()` stops forwarding without closing
 * anything (a black hole) until `heal()`; `freeze("toClient")` lets requests through but holds the
 * replies (a lost reply). `bytes` counts what was forwarded each way, so a test can tell which of
 * several proxies carried a request.
 */
export class FaultProxy {
  readonly #server: Server;
  readonly #port: number;
  readonly #pairs = new Set<Pair>();
  #cutKind: "peer" | "client" | undefined;
  readonly #cutPeers = new Set<string>();
  #targetPort: number;
  #cut = false;
  #closed = false;
  #relisten: Promise<void> = Promise.resolve();
  readonly #frozen = { toServer: false, toClient: false };
  #held: Array<() => void> = [];
  readonly #bytes = { toServer: 0, toClient: 0 };
  delayMs = 0;

  private constructor(server: Server, targetPort: number) {
    this.#server = server;
    this.#targetPort = targetPort;
    const address = server.address();
    this.#port = typeof address === "object" && address ? address.port : 0;
  }

  static async start(targetPort: number, port = 0): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port }, resolve));
    const proxy = new FaultProxy(server, targetPort);
    server.on("connection", (client) => proxy.#accept(client));
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get connectionCount(): number {
    return this.#pairs.size;
  }

  /** Points new connections at another port (e.g. a restarted node). */
  retarget(port: number): void {
    this.#targetPort = port;
  }

  /**
   * Drops every open connection and refuses new ones until `heal()`; with a scope, only peer links
   * or only clients (see CutScope), and new ones of that kind are dropped at their first bytes.
   */
  cut(scope: CutScope = "all"): void {
    if (scope !== "all") {
      this.#cutKind = scope === "peers" ? "peer" : "client";
      for (const pair of this.#pairs) if (this.#isCut(pair)) this.#drop(pair);
      return;
    }
    if (!this.#cut) this.#server.close();
    this.#cut = true;
    this.dropAll();
  }

  /** Destroys the open connections (the next ones go through). */
  dropAll(): void {
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.#pairs.clear();
  }

  /** Stops forwarding bytes (both ways, or one way) without closing anything, until `heal()`. */
  freeze(direction: ProxyDirection | "both" = "both"): void {
    if (direction !== "toClient") this.#frozen.toServer = true;
    if (direction !== "toServer") this.#frozen.toClient = true;
  }

  /**
   * Drops the peer links dialled by node `address` (the address its `!N` claims) and every new one
   * until `heal()`: with `cut("peers")` on that node's own proxy, a partition in both directions.
   */
  cutPeer(address: string): void {
    this.#cutPeers.add(address);
    for (const pair of this.#pairs) if (this.#isCut(pair)) this.#drop(pair);
  }

  heal(): void {
    const wasCut = this.#cut;
    this.#cut = false;
    this.#cutKind = undefined;
    this.#cutPeers.clear();
    if (wasCut) this.#relisten = this.#listenAgain();
    this.#frozen.toServer = false;
    this.#frozen.toClient = false;
    for (const release of this.#held.splice(0)) release();
  }

  /** Bytes received for forwarding so far, each way (held and delayed bytes included). */
  get bytes(): Readonly<Record<ProxyDirection, number>> {
    return { ...this.#bytes };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.dropAll();
    await this.#relisten;
    if (!this.#server.listening) return;
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Listens on the same port again; retries while the port is briefly unavailable. */
  async #listenAgain(): Promise<void> {
    for (let attempt = 0; !this.#closed && !this.#cut; attempt++) {
      const failed = await new Promise<Error | undefined>((resolve) => {
        const onError = (error: Error) => resolve(error);
        this.#server.once("error", onError);
        this.#server.listen({ host: "127.0.0.1", port: this.#port }, () => {
          this.#server.off("error", onError);
          resolve(undefined);
        });
      });
      if (!failed) return;
      if (attempt >= 100) throw failed;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  #accept(client: Socket): void {
    client.on("error", () => {});
    if (this.#cut) {
      client.destroy();
      return;
    }
    client.pause();
    // Forward each chunk as it comes, as lockd writes it (it sets no-delay on its sockets): Nagle
    // here would hold a small write behind an unacknowledged one for the peer's delayed ACK (40 ms).
    client.setNoDelay(true);
    const upstream = connect({ host: "127.0.0.1", port: this.#targetPort, noDelay: true });
    upstream.on("error", () => client.destroy());
    const pair: Pair = { client, upstream, kind: "unknown", peer: undefined };
    this.#pairs.add(pair);
    const drop = () => this.#drop(pair);
    client.on("close", drop);
    upstream.on("close", drop);
    upstream.once("connect", () => {
      // The first bytes tell a peer link from a client; one cut off by a scoped cut goes no further.
      client.once("data", (chunk: Buffer) => {
        pair.kind = chunk[0] === 0x21 ? "peer" : "client";
        // `!N <node> <nonce>`: the dialling node's claimed address (one write, so one chunk here).
        if (pair.kind === "peer") pair.peer = chunk.toString("latin1", 0, 200).split(" ")[1];
        if (this.#isCut(pair)) drop();
      });
      this.#pipe(client, upstream, "toServer", pair);
      this.#pipe(upstream, client, "toClient", pair);
      client.resume();
    });
  }

  #isCut(pair: Pair): boolean {
    if (pair.kind === "unknown") return false;
    return pair.kind === this.#cutKind || (pair.peer !== undefined && this.#cutPeers.has(pair.peer));
  }

  #drop(pair: Pair): void {
    this.#pairs.delete(pair);
    pair.client.destroy();
    pair.upstream.destroy();
  }

  #pipe(from: Socket, to: Socket, direction: ProxyDirection, pair: Pair): void {
    from.on("data", (chunk: Buffer) => {
      if (this.#isCut(pair)) return;
      this.#bytes[direction] += chunk.length;
      const forward = () => {
        if (!to.destroyed) to.write(chunk);
      };
      const send = () => (this.delayMs > 0 ? setTimeout(forward, this.delayMs) : forward());
      if (this.#frozen[direction]) this.#held.push(send);
      else send();
    });
  }
}
