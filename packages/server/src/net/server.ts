import { createServer as createTcpServer, type Server, type Socket } from "node:net";
import {
  type ConnectionOptions,
  createSecureContext,
  createServer as createTlsServer,
  type TLSSocket,
  Server as TlsServer,
} from "node:tls";
import { TimerQueue } from "@lock/deadline-heap";
import { encodeReply, formatAddress, MAX_NODE_ID } from "@lock/protocol";
import { readIntoSharedBuffer } from "@lock/socket-io";
import {
  type Cluster,
  type ClusterEvents,
  type ClusterNode,
  type ClusterServerHooks,
  type ClusterTiming,
  type CoordinationOptions,
  createClusterNode,
  DEFAULT_CLUSTER_TIMING,
  PeerKey,
  peerLinks,
} from "../cluster/index.js";
import { type Clock, monotonicClock } from "../engine/clock.js";
import type { EngineJournal } from "../engine/engine.js";
import type { SemaphoreRule } from "../engine/semaphore-rules.js";
import { LingerBudget } from "../io/close.js";
import { resolveLimits, type ServerLimits } from "../limits.js";
import { LockNode, type LockNodeOptions } from "../node.js";
import type { ServerObserver } from "../observer.js";
import type { SlotGate } from "../slots/slot-gate.js";
import type { SlotMoveEvents, SlotMoves } from "../slots/slot-moves.js";
import { Admission } from "./admission.js";
import { SecretChecker } from "./auth.js";
import { ClientConnection, type ConnectionContext } from "./connection.js";
import { type PendingHandshake, TlsHandshakes, tlsHandshakeTimeoutMs } from "./tls-handshakes.js";

/** How long a peer link's handshake may take (at least one peer timeout) before the link redials. */
const PEER_HANDSHAKE_TIMEOUT_MS = 2_000;
/** Refused sockets that may wait for the client's close at once; more are destroyed at once. */
const MAX_LINGERING_REFUSALS = 64;
/** Unsent bytes after which a slow peer's link is dropped (it resyncs with a snapshot). */
const PEER_MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

export interface TlsFiles {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export interface LockServerOptions {
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** TCP port; 0 picks a free one. Default 7420. */
  readonly port?: number;
  readonly dataDir: string;
  /** The address clients and peers should use for this node; default `host:port` as bound. */
  readonly advertise?: string;
  /** When set, clients must send `H <authToken>` first. */
  readonly authToken?: string;
  readonly tls?: TlsFiles;
  readonly limits?: Partial<ServerLimits>;
  /** Keys that are semaphores of a fixed number of permits, by pattern (lockd's `--semaphores`). */
  readonly semaphores?: readonly SemaphoreRule[];
  readonly version?: string;
  readonly clock?: Clock;
  readonly journal?: EngineJournal;
  readonly observer?: ServerObserver;
  /** Run as one node of an active/standby cluster. */
  readonly cluster?: LockClusterOptions;
  /**
   * The token epoch's node id, 0..255 (docs/protocol.md, "Fencing tokens"). Default: this node's
   * position in the peers list, or 0 for a single node. Set it when several clusters' tokens meet
   * at the same resources: every node of every such cluster needs its own.
   */
  readonly nodeId?: number;
  /** Bound on this machine's wall-clock error, for epoch rounds (docs/consistency.md). Default 500 ms. */
  readonly maxClockSkewMs?: number;
  /** Wall clock for epoch rounds; `Date.now` unless a test injects one. */
  readonly wallNow?: () => number;
  /**
   * Several clusters over one key space: the slot map this node serves by (lockd `--slot-map`,
   * kept up to date from the coordination store). A keyed request for another cluster's slot is
   * answered `S`; `K` answers the map. With a coordinator, the node also takes part in slot moves.
   */
  readonly slots?: SlotGate;
  /** What slot moves report (with `slots` and a coordinator). */
  readonly slotMoveEvents?: SlotMoveEvents;
}

export interface LockClusterOptions {
  /** Every node's advertised `host:port`, highest priority first; includes this node's `advertise`. */
  readonly peers: readonly string[];
  /**
   * The cluster's peer token (at least 16 random bytes in lockd; never the client auth token):
   * peer links prove it in a challenge-response handshake, and only they may send peer frames.
   * Without it the handshake's key is empty and anyone who reaches the port can join the cluster.
   */
  readonly peerToken?: string;
  readonly timing?: Partial<ClusterTiming>;
  /** How long a handoff waits for the successor's acknowledgement. Default 2 s. */
  readonly handoffTimeoutMs?: number;
  readonly events?: Partial<ClusterEvents>;
  /** TLS options for dialling peers (e.g. `ca`), when the cluster runs TLS. */
  readonly tls?: ConnectionOptions;
  /**
   * With a coordination store (`lockd --coordinator`): a node is the active only while it holds
   * the cluster's ownership lease there, and takes its epochs from the store's counter.
   */
  readonly coordination?: CoordinationOptions;
}

export const DEFAULT_PORT = 7420;

/**
 * A single lockd node serving the lock protocol over TCP or TLS. `start()` takes a new token epoch
 * from the data directory before it accepts a connection; `close()` answers queued acquires with
 * `SHUTTING_DOWN`, closes every connection and releases the data directory.
 */
export class LockServer {
  readonly node: LockNode;
  /** Set when this server is a cluster node. */
  readonly cluster: Cluster | undefined;
  /** With a slot map (`slots` option): which keys this node's cluster serves. */
  readonly slots: SlotGate | undefined;
  readonly limits: ServerLimits;
  readonly #server: Server;
  readonly #connections: Set<ClientConnection>;
  readonly #admission: Admission<ClientConnection | PendingHandshake>;
  /** TLS connections accepted whose handshake has not finished (counted like connections). */
  readonly #handshakes = new TlsHandshakes();
  readonly #refusals = new LingerBudget(MAX_LINGERING_REFUSALS);
  /** How peer links dial, when they use TLS: replaced by `reloadTls`, read at each dial. */
  readonly #peerTls: PeerTls;
  #closing: Promise<void> | undefined;
  /** With a slot map and a coordinator: this node's part in slot moves (what it drains, for /slots). */
  readonly slotMoves: SlotMoves | undefined;
  #idleSweep: NodeJS.Timeout | undefined;

  private constructor(
    built: {
      node: LockNode;
      cluster?: Cluster | undefined;
      slots?: SlotGate | undefined;
      slotMoves?: SlotMoves;
    },
    server: Server,
    limits: ServerLimits,
    connections: Set<ClientConnection>,
    peerTls: PeerTls,
  ) {
    this.#peerTls = peerTls;
    this.node = built.node;
    this.cluster = built.cluster;
    this.slots = built.slots;
    this.slotMoves = built.slotMoves;
    this.#connections = connections;
    this.#server = server;
    this.limits = limits;
    this.#admission = new Admission<ClientConnection | PendingHandshake>(
      limits,
      () => this.#connections.size + this.#handshakes.size,
      (unproved, immediately) => unproved.evict(immediately),
    );
  }

  static async start(options: LockServerOptions): Promise<LockServer> {
    const limits = resolveLimits(options.limits);
    const host = options.host ?? "127.0.0.1";
    const server = options.tls
      ? createTlsServer({
          cert: options.tls.cert,
          key: options.tls.key,
          handshakeTimeout: tlsHandshakeTimeoutMs(limits.authTimeoutMs),
        })
      : // Paused on accept: with the fast paths on (`useFastIo`, lockd's --fast-io) each connection
        // moves to a socket that reads into a shared buffer; otherwise it is resumed as it is.
        createTcpServer({ pauseOnConnect: true });
    server.maxConnections = Number.MAX_SAFE_INTEGER; // counted below, to refuse with an error line
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port: options.port ?? DEFAULT_PORT }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const bound = server.address();
    const port = typeof bound === "object" && bound ? bound.port : (options.port ?? DEFAULT_PORT);
    const advertise = options.advertise ?? formatAddress(host, port);
    const connections = new Set<ClientConnection>();
    let built: { node: LockNode; cluster?: Cluster | undefined; slotMoves?: SlotMoves };
    const peerTls: PeerTls = { current: options.cluster?.tls ?? (options.tls ? {} : undefined) };
    try {
      built = buildNode(options, limits, advertise, connections, peerTls);
    } catch (error) {
      server.close();
      throw error;
    }
    const lockServer = new LockServer(
      { ...built, slots: options.slots },
      server,
      limits,
      connections,
      peerTls,
    );
    lockServer.#accept(options);
    lockServer.cluster?.start();
    return lockServer;
  }

  get port(): number {
    const bound = this.#server.address();
    return typeof bound === "object" && bound ? bound.port : 0;
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Reply bytes waiting for slow readers, over every connection (a gauge; walks the connections). */
  get unsentBytes(): number {
    let total = 0;
    for (const connection of this.#connections) total += connection.unsentBytes;
    return total;
  }

  /** Connections not read from because they do not read their replies. */
  get backloggedCount(): number {
    let count = 0;
    for (const connection of this.#connections) if (connection.backlogged) count += 1;
    return count;
  }

  /** Connections that have not authenticated yet (always 0 without an auth token). */
  get unauthenticatedCount(): number {
    return this.#admission.unauthenticatedCount;
  }

  /**
   * New TLS material without a restart (lockd's SIGHUP): `files` is served to every TLS connection
   * accepted from now on, and peers are dialled with `peerTls` (e.g. a new `ca`) from their next
   * dial on. Connections already open keep the context they were made with: no client is dropped.
   * Both are checked before either is used: an unusable certificate, key or CA throws and changes
   * nothing. Only for a server started with `tls`.
   */
  reloadTls(files: TlsFiles, peerTls?: ConnectionOptions): void {
    if (!(this.#server instanceof TlsServer)) throw new Error("this server was started without TLS");
    const served = { cert: files.cert, key: files.key };
    // setSecureContext builds its context from the same options: if this one builds, so does that.
    createSecureContext(served);
    if (peerTls !== undefined) createSecureContext(peerTls);
    this.#server.setSecureContext(served);
    if (peerTls !== undefined && this.#peerTls.current !== undefined) this.#peerTls.current = peerTls;
  }

  /** Stops serving: queued acquires get `SHUTTING_DOWN`, connections close within `graceMs`. */
  close(graceMs = 2_000): Promise<void> {
    this.#closing ??= this.#shutdown(graceMs);
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #accept(options: LockServerOptions): void {
    const auth = options.authToken === undefined ? undefined : new SecretChecker(options.authToken);
    const ctx: ConnectionContext = {
      node: this.node,
      limits: this.limits,
      protocolLimits: { maxLineBytes: this.limits.maxLineBytes, maxKeyBytes: this.limits.maxKeyBytes },
      auth,
      version: options.version ?? "0.0.0",
      ...(this.slots ? { slots: this.slots } : {}),
      connectionCount: () => this.#connections.size,
      cluster: this.cluster,
      onAuthenticated: (connection) => this.#admission.settled(connection),
      onClose: (connection) => {
        this.#connections.delete(connection);
        this.#admission.settled(connection);
      },
    };
    // One sweep for all connections instead of a socket timeout each, which would be re-armed on
    // every read and write. A connection is closed between 1 and 1.5 idle timeouts after its last
    // complete line: bytes of an unfinished line do not count, so a trickled line cannot hold a slot.
    const idleMs = this.limits.idleTimeoutMs;
    if (idleMs > 0) {
      this.#idleSweep = setInterval(
        () => {
          for (const connection of this.#connections) connection.sweepIdle();
        },
        Math.max(5, Math.floor(idleMs / 2)),
      );
      this.#idleSweep.unref();
    }
    if (options.tls) this.#acceptTls(ctx);
    else
      this.#server.on("connection", (socket: Socket) => {
        if (this.#closing) this.#refuse(socket, "SHUTTING_DOWN");
        else if (!this.#admission.admit(auth !== undefined)) this.#refuse(socket, "TOO_MANY_CONNECTIONS");
        else this.#serve(this.#connectTcp(socket, ctx), ctx);
      });
  }

  /**
   * TLS: a connection is counted and capped from its TCP accept, before its handshake, and until
   * the handshake ends it can be evicted like an unauthenticated one (nothing can be said to it
   * before TLS: it is destroyed). The handshake times out after at most `--auth-timeout`.
   */
  #acceptTls(ctx: ConnectionContext): void {
    this.#server.on("connection", (raw: Socket) => {
      // Nothing can be said before TLS: a socket that gets no slot is destroyed (and counted).
      if (this.#closing || raw.remoteAddress === undefined) {
        raw.destroy();
        return;
      }
      if (!this.#admission.admit(true)) {
        this.node.observer.error("TOO_MANY_CONNECTIONS");
        raw.destroy();
        return;
      }
      const handshake = this.#handshakes.accepted(raw, (gone) => this.#admission.settled(gone));
      this.#admission.awaitingAuthentication(handshake);
    });
    this.#server.on("secureConnection", (socket: TLSSocket) => {
      const handshake = this.#handshakes.finished(socket);
      if (handshake === undefined) {
        socket.destroy(); // evicted, or closed, during the handshake
        return;
      }
      this.#admission.settled(handshake);
      if (this.#closing) this.#refuse(socket, "SHUTTING_DOWN");
      else this.#serve(new ClientConnection(socket, ctx), ctx);
    });
    // A failed or timed-out handshake concerns one socket, never the server. With a listener here,
    // Node leaves the socket open: close it, or a handshake that never finishes keeps it forever.
    this.#server.on("tlsClientError", (_error: Error, socket: TLSSocket) => socket.destroy());
  }

  #serve(connection: ClientConnection, ctx: ConnectionContext): void {
    this.#connections.add(connection);
    if (ctx.auth !== undefined) this.#admission.awaitingAuthentication(connection);
  }

  #connectTcp(socket: Socket, ctx: ConnectionContext): ClientConnection {
    let connection: ClientConnection | undefined;
    const reading = readIntoSharedBuffer(socket, (chunk) => connection?.receive(chunk));
    if (reading) {
      connection = new ClientConnection(reading, ctx, "external");
      return connection;
    }
    connection = new ClientConnection(socket, ctx);
    socket.resume();
    return connection;
  }

  async #shutdown(graceMs: number): Promise<void> {
    if (this.#idleSweep) clearInterval(this.#idleSweep);
    // A cluster's active hands its role to a standby first, so clients move with no gap.
    const cluster = this.cluster;
    if (cluster) await new Promise<void>((resolve) => cluster.stop(resolve));
    this.slotMoves?.close();
    if (this.node.role === "standby" && this.node.activeAddress !== undefined) await readWhatArrived();
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#handshakes.destroyAll();
    for (const connection of this.#connections)
      connection.shutdown("SHUTTING_DOWN", "the server is shutting down");
    const grace = setTimeout(() => {
      for (const connection of this.#connections) connection.destroy();
    }, graceMs);
    await stopped;
    clearTimeout(grace);
    this.node.close();
  }

  /** Answers a connection that gets no slot with an error line (counted like any `E` reply), then closes it. */
  #refuse(socket: Socket, code: "TOO_MANY_CONNECTIONS" | "SHUTTING_DOWN"): void {
    this.node.observer.error(code);
    socket.on("error", () => {});
    const message =
      code === "SHUTTING_DOWN" ? "the server is shutting down" : "the server is at its connection limit";
    socket.write(encodeReply({ kind: "E", op: "?", key: "-", code, message }));
    this.#refusals.end(socket);
    // Accepted paused: read (and drop) until the client closes, so the socket does close.
    socket.resume();
  }
}

/** The node this server serves: a single LockNode, or a cluster node (createClusterNode) when `options.cluster` is set. */
function buildNode(
  options: LockServerOptions,
  limits: ServerLimits,
  advertise: string,
  connections: ReadonlySet<ClientConnection>,
  peerTls: PeerTls,
): { node: LockNode } | ClusterNode {
  const position = options.cluster?.peers.indexOf(advertise) ?? 0;
  if (options.nodeId === undefined && position > MAX_NODE_ID) {
    throw new RangeError(`a cluster of more than ${MAX_NODE_ID + 1} nodes needs explicit node ids`);
  }
  const clock = options.clock ?? monotonicClock;
  const node: LockNodeOptions = {
    dataDir: options.dataDir,
    limits,
    advertise,
    nodeId: options.nodeId ?? Math.max(0, position),
    ...(options.maxClockSkewMs !== undefined ? { maxClockSkewMs: options.maxClockSkewMs } : {}),
    ...(options.wallNow ? { wallNow: options.wallNow } : {}),
    clock,
    timers: new TimerQueue(clock),
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.semaphores ? { semaphores: options.semaphores } : {}),
  };
  const cluster = options.cluster;
  if (!cluster)
    return { node: new LockNode({ ...node, ...(options.journal ? { journal: options.journal } : {}) }) };
  const timing = { ...DEFAULT_CLUSTER_TIMING, ...cluster.timing };
  // Undefined: an empty key, so anyone who reaches the port can join (lockd: only with --insecure).
  const coordination = cluster.coordination;
  const key = new PeerKey(cluster.peerToken, undefined, coordination?.cluster);
  return createClusterNode({
    node,
    cluster: {
      peers: cluster.peers,
      timing,
      key,
      links: peerLinks({
        self: advertise,
        authToken: options.authToken,
        key,
        tls: peerTls.current && (() => peerTls.current!),
        retryMs: timing.heartbeatMs,
        handshakeTimeoutMs: Math.max(PEER_HANDSHAKE_TIMEOUT_MS, timing.peerTimeoutMs),
        maxBufferedBytes: PEER_MAX_BUFFERED_BYTES,
      }),
      handoffTimeoutMs: cluster.handoffTimeoutMs ?? 2_000,
      ...(cluster.coordination ? { coordination: cluster.coordination } : {}),
    },
    ...(options.slots
      ? {
          slots: {
            gate: options.slots,
            ...(options.slotMoveEvents ? { events: options.slotMoveEvents } : {}),
          },
        }
      : {}),
    hooks: connectionHooks(connections),
    events: {
      roleChanged: cluster.events?.roleChanged ?? (() => {}),
      following: cluster.events?.following ?? (() => {}),
      peerRefused: cluster.events?.peerRefused ?? (() => {}),
      peerRejected: cluster.events?.peerRejected ?? (() => {}),
      peerLinkDropped: cluster.events?.peerLinkDropped ?? (() => {}),
      epochRefused: cluster.events?.epochRefused ?? (() => {}),
      stalled: cluster.events?.stalled ?? (() => {}),
      serving: cluster.events?.serving ?? (() => {}),
      peerLiveness: cluster.events?.peerLiveness ?? (() => {}),
      ...(cluster.events?.leaseRefused ? { leaseRefused: cluster.events.leaseRefused } : {}),
      ...(cluster.events?.coordinatorUnavailable
        ? { coordinatorUnavailable: cluster.events.coordinatorUnavailable }
        : {}),
    },
  });
}

/** What the cluster's role changes need of the server's connections. */
function connectionHooks(connections: ReadonlySet<ClientConnection>): ClusterServerHooks {
  return {
    redirectPending: (address) => {
      for (const connection of connections) connection.redirectPending(address);
    },
    pauseClients: () => {
      for (const connection of connections) connection.pauseReading();
    },
    resumeClients: () => {
      for (const connection of connections) connection.resumeReading();
    },
  };
}

/**
 * Lets one round of socket reads run. Handed off, this node answers requests with a redirect to its
 * successor: those that arrived while it was not reading (the handoff) are read and answered here,
 * instead of being dropped unread with their connections. The first immediate runs in the current
 * loop iteration's check phase; the second only after the next poll phase, which reads them.
 */
async function readWhatArrived(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** The TLS options peer links dial with (undefined: plain TCP), replaced by a reload. */
interface PeerTls {
  current: ConnectionOptions | undefined;
}
