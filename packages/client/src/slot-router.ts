import { keySlot, type Reply, type Request, type SlotMap, type SlotRedirectReply } from "@lock/protocol";
import type { ReplyHandler, Ticket } from "./connection.js";
import type { Emitter } from "./events.js";
import type { ResolvedOptions } from "./options.js";
import type { Timer, TimerQueue } from "./timers.js";
import { emitRedirect, type Router, Transport } from "./transport.js";

/**
 * Routes each request to the cluster that serves its key, when several clusters share one key
 * space (docs/protocol.md, "Key slots"). A client starts with one Transport for its configured
 * servers (`home`) and sends everything there, as a one-cluster client always has. The first `S`
 * reply shows the servers use a slot map: from then on the client asks for the map (`K`), keeps
 * one Transport per cluster (each with that cluster's addresses, its own failover and
 * redirects), and sends every keyed request to its slot's cluster. An `S` naming a newer map than
 * the client's is a hint for that slot until the newer map arrives.
 *
 * Everything a request's handler later says about its ticket (served, redirected, draining,
 * withdraw, a cancel alongside) goes to the Transport that carried it.
 */
export class SlotRouter implements Router {
  readonly home: Transport;
  readonly #options: ResolvedOptions;
  readonly #timers: TimerQueue;
  readonly #events: Emitter;
  readonly #clusters = new Map<string, Transport>();
  /** Clusters whose Transport knows only the address an `S` named: replaced once the map names them all. */
  readonly #fromHint = new Set<string>();
  /** Replaced Transports: what they carry still completes; closed with the client. */
  readonly #retired: Transport[] = [];
  readonly #carriedBy = new WeakMap<Ticket, Transport>();
  #map: SlotMap | undefined;
  /** Slots that an `S` reply gave to a cluster the map (if any) did not: newer news than the map. */
  readonly #hints = new Map<number, SlotRedirectReply>();
  #asking = false;
  #closed = false;

  constructor(options: ResolvedOptions, timers: TimerQueue, events: Emitter) {
    this.#options = options;
    this.#timers = timers;
    this.#events = events;
    this.home = new Transport(options, timers, events);
  }

  /** The slot map in use, once an `S` showed the servers have one and `K` brought it. */
  get map(): SlotMap | undefined {
    return this.#map;
  }

  /** Every Transport: the configured servers' and each other cluster's. */
  get transports(): Transport[] {
    return [this.home, ...[...this.#clusters.values()].filter((transport) => transport !== this.home)];
  }

  get size(): number {
    return Math.max(...this.transports.map((transport) => transport.size));
  }

  get lastError(): Error | undefined {
    return this.home.lastError ?? this.transports.find((transport) => transport.lastError)?.lastError;
  }

  send(request: Request, handler: ReplyHandler, address?: string): Ticket | undefined {
    return this.#carry(this.#transportFor(request), (transport) => transport.send(request, handler, address));
  }

  sendAlongside(ticket: Ticket, request: Request, handler: ReplyHandler): Ticket | undefined {
    const transport = this.#carriedBy.get(ticket) ?? this.home;
    return this.#carry(transport, (it) => it.sendAlongside(ticket, request, handler));
  }

  withdraw(ticket: Ticket): boolean {
    return (this.#carriedBy.get(ticket) ?? this.home).withdraw(ticket);
  }

  redirected(ticket: Ticket, address: string): void {
    (this.#carriedBy.get(ticket) ?? this.home).redirected(ticket, address);
  }

  served(ticket: Ticket): void {
    (this.#carriedBy.get(ticket) ?? this.home).served(ticket);
  }

  draining(ticket: Ticket): void {
    (this.#carriedBy.get(ticket) ?? this.home).draining(ticket);
  }

  /** Wakes once any cluster's node is known to be the active: the waiting request is routed anew. */
  whenActive(wake: () => void, notAddress: string | undefined): Timer {
    let woken = false;
    const timers: Timer[] = [];
    const once = () => {
      if (woken) return;
      woken = true;
      for (const timer of timers) timer.cancel();
      wake();
    };
    for (const transport of this.transports) timers.push(transport.whenActive(once, notAddress));
    return {
      cancel: () => {
        for (const timer of timers) timer.cancel();
      },
    };
  }

  /**
   * `S`: the request's slot belongs to `reply.cluster` in map `reply.version`. The next send of a
   * key of that slot goes there; a map newer than the client's is fetched. False if the client's
   * map, newer than the node's, sends the request right back to the node's cluster (the node has
   * not read the commit of a move to it yet): sent again at once, it would bounce until the
   * redirect limit, so it asks again after a pause.
   */
  slotMoved(ticket: Ticket, reply: SlotRedirectReply): boolean {
    const map = this.#map;
    if (map === undefined || reply.version > map.version) {
      this.#hints.set(reply.slot, reply);
      this.#askForMap(ticket);
    }
    emitRedirect(this.#events, ticket, reply.address);
    return this.#transportFor(ticket.request) !== (this.#carriedBy.get(ticket) ?? this.home);
  }

  close(): void {
    this.#closed = true;
    for (const transport of [...this.transports, ...this.#retired]) transport.close();
  }

  #carry(transport: Transport, send: (transport: Transport) => Ticket | undefined): Ticket | undefined {
    const ticket = send(transport);
    // Tickets not found here are home's: a one-cluster client records nothing per request.
    if (ticket !== undefined && transport !== this.home) this.#carriedBy.set(ticket, transport);
    return ticket;
  }

  #transportFor(request: Request): Transport {
    const key = "key" in request ? request.key : request.op === "B" ? request.keys[0] : undefined;
    if (key === undefined || (this.#map === undefined && this.#hints.size === 0)) return this.home;
    const slot = keySlot(key);
    const hint = this.#hints.get(slot);
    if (hint !== undefined) {
      const known = this.#clusters.has(hint.cluster);
      const transport = this.#cluster(hint.cluster, [hint.address]);
      if (!known) this.#fromHint.add(hint.cluster);
      return transport;
    }
    const map = this.#map;
    if (map === undefined) return this.home;
    const cluster = map.rangeOf(slot).cluster;
    return this.#cluster(cluster, map.clusters.get(cluster)!);
  }

  /** The Transport of `cluster`, created on first use with `addresses` (redirects add others). */
  #cluster(cluster: string, addresses: readonly string[]): Transport {
    let transport = this.#clusters.get(cluster);
    if (transport === undefined) {
      // The configured servers may be one cluster's: that cluster reuses their connections.
      const configured = this.#options.servers;
      transport = configured.every((address) => addresses.includes(address))
        ? this.home
        : new Transport({ ...this.#options, servers: [...addresses] }, this.#timers, this.#events);
      this.#clusters.set(cluster, transport);
    }
    return transport;
  }

  /** Asks the node that answered `S` for the map (`K`), one question at a time. */
  #askForMap(ticket: Ticket): void {
    if (this.#asking || this.#closed) return;
    const transport = this.#carriedBy.get(ticket) ?? this.home;
    const handler: ReplyHandler = {
      onReply: (reply: Reply) => {
        this.#asking = false;
        if (reply.kind === "K" && reply.map !== undefined) this.#useMap(reply.map);
      },
      onLost: () => {
        this.#asking = false;
      },
    };
    this.#asking = transport.send({ op: "K" }, handler) !== undefined;
  }

  #useMap(map: SlotMap): void {
    if (this.#map !== undefined && map.version <= this.#map.version) return;
    this.#map = map;
    for (const [slot, hint] of this.#hints) if (hint.version <= map.version) this.#hints.delete(slot);
    for (const cluster of this.#fromHint) {
      const transport = this.#clusters.get(cluster);
      if (transport !== undefined && transport !== this.home) this.#retired.push(transport);
      this.#clusters.delete(cluster);
    }
    this.#fromHint.clear();
  }
}
