import type { Reply, Request, SlotRedirectReply } from "@lock/protocol";
import { Connection, type ConnectionListener, type ReplyHandler, Ticket } from "./connection.js";
import { NoServerError, ProtocolError } from "./errors.js";
import type { Emitter } from "./events.js";
import type { ResolvedOptions } from "./options.js";
import { type PoolSlot, ServerPool } from "./server-pool.js";
import { EarliestTimer, type Timer, type TimerQueue } from "./timers.js";

/** What requests need from the connections; Transport implements it, unit tests fake it. */
export interface Router {
  /** Registered connections: how many an acquire may try before it gives up. */
  readonly size: number;
  /** The latest connection error, to explain why no connection is usable. */
  readonly lastError: Error | undefined;
  send(request: Request, handler: ReplyHandler, address?: string): Ticket | undefined;
  sendAlongside(ticket: Ticket, request: Request, handler: ReplyHandler): Ticket | undefined;
  withdraw(ticket: Ticket): boolean;
  redirected(ticket: Ticket, address: string): void;
  /**
   * `S`: another cluster serves the request's key; the next send of it goes there (SlotRouter).
   * False if the next send would go back to the cluster that answered `S`: its node is behind the
   * client's map (it has not read a move's commit yet), so the request asks again after a pause.
   */
  slotMoved?(ticket: Ticket, reply: SlotRedirectReply): boolean;
  served(ticket: Ticket): void;
  draining(ticket: Ticket): void;
  /**
   * Calls `wake` once, as soon as a node other than `notAddress` is known to be the active (it says
   * so, or it answered a request itself): a request waiting out a pause between actives can go now.
   */
  whenActive(wake: () => void, notAddress: string | undefined): Timer;
}

/** The `redirect` event for `ticket`'s request, sent on to `to` (by `M`, or `S` to another cluster). */
export function emitRedirect(events: Emitter, ticket: Ticket, to: string): void {
  if (!events.listens("redirect")) return;
  const request = ticket.request;
  const key = "key" in request ? request.key : "-";
  events.emit("redirect", { from: ticket.connection?.address ?? "", to, op: request.op, key });
}

/**
 * The connections of one client: the ServerPool's decisions carried out on real sockets. It routes
 * each request to a ready connection, parks requests while connections are still opening, keeps
 * reconnecting slots that went down, and while a connection is silent (a stopped active) probes the
 * other nodes with `I` and drops the silent one once another says it is the active, so that what it
 * carried moves there. Retry decisions stay with the requests' handlers.
 *
 * Ordering: requests sent to one connection are written in `send` order. A ticket is parked only
 * while a fitting connection is opening; parked tickets go out in `send` order once one is ready.
 */
export class Transport implements Router, ConnectionListener {
  readonly pool: ServerPool;
  readonly #options: ResolvedOptions;
  readonly #timers: TimerQueue;
  readonly #events: Emitter;
  readonly #connections = new Map<PoolSlot, Connection>();
  #parked: Ticket[] = [];
  readonly #reconnectTimer: EarliestTimer;
  #closed = false;
  readonly #probeTimer: EarliestTimer;
  /** Slots with an `I` probe on its way: one at a time each. */
  readonly #probing = new Set<PoolSlot>();
  /** Requests pausing between actives (whenActive), with the node that cannot wake them. */
  readonly #waiting = new Map<() => void, string | undefined>();
  readonly #searchTimer: EarliestTimer;

  constructor(options: ResolvedOptions, timers: TimerQueue, events: Emitter) {
    this.#options = options;
    this.#timers = timers;
    this.#events = events;
    this.#reconnectTimer = new EarliestTimer(timers, () => this.#connectDue());
    this.#probeTimer = new EarliestTimer(timers, () => this.#probe());
    this.#searchTimer = new EarliestTimer(timers, () => this.#search());
    this.pool = new ServerPool(options.servers, {
      reconnectIntervalMs: options.reconnectIntervalMs,
      reconnectJitterMs: options.reconnectJitterMs,
      hintIntervalMs: options.retryIntervalMs,
      answerTimeoutMs: options.answerTimeoutMs,
      random: options.random,
    });
    // Next tick, so that listeners attached right after construction see the first events. A
    // request sent before then connects at once (see send).
    process.nextTick(() => this.#connectDue());
  }

  get lastError(): Error | undefined {
    return this.pool.lastError;
  }

  /** Registered connections: how many an acquire may try before it gives up. */
  get size(): number {
    return this.pool.size;
  }

  /**
   * Sends `request` on the next ready connection (one to `address`, if given), or parks it while one
   * is opening. With none ready or opening, the connections that are down are opened now (at most
   * once per `retryIntervalMs` each) and it waits for them. Returns undefined, sending nothing, when
   * no connection is ready or opening even so: every one was tried. Throws if it cannot be encoded.
   */
  send(request: Request, handler: ReplyHandler, address?: string): Ticket | undefined {
    if (this.#closed) return undefined;
    const ticket = new Ticket(request, handler, address);
    const slot = this.pool.pick(address);
    if (slot !== undefined) {
      this.#connections.get(slot)!.send(ticket);
      return ticket;
    }
    if (address !== undefined) this.pool.ensure(address, this.#timers.clock.now());
    else if (!this.pool.isConnecting()) this.pool.wanted(this.#timers.clock.now());
    this.#connectDue();
    if (!this.pool.isConnecting(address)) return undefined;
    this.#parked.push(ticket);
    return ticket;
  }

  /** Sends `request` on the connection that carried `ticket`, if it is still open. */
  sendAlongside(ticket: Ticket, request: Request, handler: ReplyHandler): Ticket | undefined {
    const connection = ticket.connection;
    if (connection === undefined || !connection.isReady) return undefined;
    const companion = new Ticket(request, handler, connection.address);
    connection.send(companion);
    return companion;
  }

  /** Takes back a ticket the server has not seen (parked or unwritten). False once written. */
  withdraw(ticket: Ticket): boolean {
    const parkedAt = this.#parked.indexOf(ticket);
    if (parkedAt >= 0) {
      this.#parked.splice(parkedAt, 1);
      ticket.state = "withdrawn";
      return true;
    }
    return ticket.connection?.withdraw(ticket) ?? false;
  }

  /** The node that carried `ticket` redirected it to `address`: prefer that node from now on. */
  redirected(ticket: Ticket, address: string): void {
    const from = ticket.connection?.address;
    if (from !== undefined && from !== address) this.pool.standby(from);
    this.pool.ensure(address, this.#timers.clock.now());
    this.#connectDue();
    emitRedirect(this.#events, ticket, address);
  }

  /** The node that carried `ticket` answered it itself. */
  served(ticket: Ticket): void {
    const slot = ticket.connection?.slot;
    if (slot?.standby || slot?.distrusted) this.pool.serving(slot);
    if (slot !== undefined && this.#waiting.size > 0) this.#activeFound(slot.address);
  }

  whenActive(wake: () => void, notAddress: string | undefined): Timer {
    this.#waiting.set(wake, notAddress);
    // While requests wait for an active, the nodes are asked for their role (as for a silent one).
    if (this.#options.answerTimeoutMs > 0) this.#searchTimer.schedule(this.#timers.clock.now());
    return { cancel: () => this.#waiting.delete(wake) };
  }

  /** The node that carried `ticket` is shutting down: send it nothing more. */
  draining(ticket: Ticket): void {
    const slot = ticket.connection?.slot;
    if (slot !== undefined) this.pool.draining(slot);
  }

  /** Closes every connection; parked and outstanding requests are reported lost. */
  close(): void {
    this.#closed = true;
    this.#reconnectTimer.cancel();
    this.#probeTimer.cancel();
    this.#searchTimer.cancel();
    this.#waiting.clear();
    for (const connection of this.#connections.values()) connection.destroy();
    this.#failParked(() => true);
  }

  ready(connection: Connection): void {
    const slot = connection.slot;
    const reconnect = slot.everReady;
    this.pool.ready(slot);
    this.#events.emit("connect", { address: slot.address, connection: slot.index, reconnect });
    const parked = this.#parked;
    this.#parked = [];
    for (const ticket of parked) {
      if (ticket.address === undefined || ticket.address === slot.address) {
        // Round-robin again rather than piling every parked request on the first connection.
        const target = this.pool.pick(ticket.address) ?? slot;
        this.#connections.get(target)!.send(ticket);
      } else {
        this.#parked.push(ticket);
      }
    }
  }

  silent(connection: Connection): void {
    this.pool.silent(connection.slot, this.#timers.clock.now());
    this.#probe();
  }

  spoke(connection: Connection): void {
    this.pool.spoke(connection.slot);
  }

  hasAlternatives(connection: Connection): boolean {
    return this.pool.slots.some((slot) => slot.address !== connection.address);
  }

  closed(connection: Connection, error: Error | undefined): void {
    const slot = connection.slot;
    this.#connections.delete(slot);
    this.#probing.delete(slot);
    const wasReady = slot.state === "ready" || slot.state === "draining";
    const retryInMs = this.pool.down(slot, this.#timers.clock.now(), error);
    // Open, then closed without a byte back: whatever accepted it did not reach a lockd.
    if (wasReady && !connection.receivedAny) this.pool.distrust(slot);
    if (this.#closed) return;
    const ref = { address: slot.address, connection: slot.index, retryInMs };
    if (error instanceof ProtocolError) this.#events.emit("protocolError", { ...ref, error });
    if (wasReady) this.#events.emit("disconnect", { ...ref, error });
    else this.#events.emit("connectFailed", { ...ref, error: error ?? new Error("connection failed") });
    // Parked requests that no opening connection can carry any more have nowhere to go.
    this.#failParked((ticket) => !this.pool.isConnecting(ticket.address));
    this.#scheduleReconnect();
  }

  #failParked(hopeless: (ticket: Ticket) => boolean): void {
    const failed = this.#parked.filter(hopeless);
    if (failed.length === 0) return;
    this.#parked = this.#parked.filter((ticket) => !hopeless(ticket));
    const error = this.pool.lastError;
    for (const ticket of failed) {
      ticket.state = "dropped";
      ticket.handler.onLost(ticket, false, error);
    }
  }

  #connectDue(): void {
    if (this.#closed) return;
    for (const slot of this.pool.dueForConnect(this.#timers.clock.now())) {
      this.pool.connecting(slot, this.#timers.clock.now());
      this.#events.emit("connecting", {
        address: slot.address,
        connection: slot.index,
        attempt: slot.failedAttempts + 1,
        reconnect: slot.everReady,
      });
      this.#connections.set(slot, new Connection(slot, this.#options, this.#timers, this));
    }
    this.#scheduleReconnect();
  }

  /** A probe round, if one is due, and the timer for the next while a slot is silent. */
  #probe(): void {
    if (this.#closed) return;
    for (const slot of this.pool.probeTargets(this.#timers.clock.now())) this.#ask(slot);
    // Probing may have brought idle slots forward.
    this.#connectDue();
    this.#probeTimer.schedule(this.pool.nextProbeAt());
  }

  /** Sends `I` on the slot's connection unless a probe is on its way there already. */
  #ask(slot: PoolSlot): void {
    const connection = this.#connections.get(slot);
    if (connection === undefined || this.#probing.has(slot)) return;
    this.#probing.add(slot);
    connection.send(new Ticket({ op: "I" }, this.#probeReply, slot.address));
  }

  /** A search round while requests wait for an active: every ready node is asked its role. */
  #search(): void {
    if (this.#closed || this.#waiting.size === 0) return;
    const asked = new Set<string>();
    for (const slot of this.pool.slots) {
      if (slot.state !== "ready" || asked.has(slot.address)) continue;
      asked.add(slot.address);
      this.#ask(slot);
    }
    const interval = Math.max(1, this.#options.answerTimeoutMs / 5);
    this.#searchTimer.schedule(this.#timers.clock.now() + interval);
  }

  /** The node at `address` serves: wake the requests it may wake. */
  #activeFound(address: string): void {
    for (const [wake, notAddress] of [...this.#waiting]) {
      if (notAddress === address) continue;
      this.#waiting.delete(wake);
      wake();
    }
  }

  readonly #probeReply: ReplyHandler = {
    onReply: (reply: Reply, ticket: Ticket) => {
      const connection = ticket.connection;
      if (connection === undefined) return;
      this.#probing.delete(connection.slot);
      if (reply.kind !== "I" || reply.fields.get("role") !== "active") return;
      if (this.#waiting.size > 0) {
        // It answers, and says it is the active: send there directly, not through a redirect.
        this.pool.serving(connection.slot);
        this.#activeFound(connection.address);
      }
      for (const silent of this.pool.claimsActive(connection.slot)) {
        const error = new NoServerError(
          `${silent.address} did not answer for ${this.#options.answerTimeoutMs} ms, and ${connection.address} is the active`,
        );
        this.#connections.get(silent)?.destroy(error, true);
      }
    },
    onLost: (ticket: Ticket) => {
      if (ticket.connection !== undefined) this.#probing.delete(ticket.connection.slot);
    },
  };

  #scheduleReconnect(): void {
    this.#reconnectTimer.schedule(this.pool.nextConnectAt());
  }
}
