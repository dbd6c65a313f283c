import type { TimerQueue } from "@lock/deadline-heap";
import { isDecodeError, isPeerFrame, parseRequestLine } from "@lock/protocol";
import type { ClusterLink, LinkEvents } from "../link.js";
import type { Connection, Network } from "./network.js";

/**
 * A ClusterLink over the simulated network (network.ts): what PeerLink does over a socket,
 * without the handshake (hosts of the simulated network are who they say they are). It dials, sends
 * `hello()` once connected, passes acknowledgements on, and redials `retryMs` after a failed dial or
 * a close. Disconnects, delays, cuts and resets come from the network.
 */
export class MemoryLink implements ClusterLink {
  readonly address: string;
  readonly #self: string;
  readonly #network: Network;
  readonly #events: LinkEvents;
  readonly #timers: TimerQueue;
  readonly #retryMs: number;
  #connection: Connection | undefined;
  #connected = false;
  #closed = false;
  #lastAck = -1;

  constructor(
    network: Network,
    self: string,
    address: string,
    events: LinkEvents,
    options: { timers: TimerQueue; retryMs: number },
  ) {
    this.#network = network;
    this.#self = self;
    this.address = address;
    this.#events = events;
    this.#timers = options.timers;
    this.#retryMs = options.retryMs;
    this.#dial();
  }

  get connected(): boolean {
    return this.#connected;
  }

  send(lines: string): void {
    if (this.#connected && this.#connection) this.#network.send(this.#connection, 0, lines);
  }

  flush(): void {}

  /** The simulated network takes every write at once. */
  readonly queuedBytes = 0;

  reset(): void {
    const connection = this.#connection;
    if (!connection) return;
    this.#network.close(connection, 0);
    this.#closedLocally(connection);
  }

  close(): void {
    this.#closed = true;
    this.reset();
  }

  #dial(): void {
    if (this.#closed) return;
    let connection: Connection | undefined;
    this.#network.dial(
      this.#self,
      this.address,
      {
        onLine: (text) => {
          if (connection !== undefined) this.#receive(connection, text);
        },
        onClose: () => {
          if (connection !== undefined) this.#closedLocally(connection);
        },
      },
      (opened) => {
        if (this.#closed) {
          this.#network.close(opened, 0);
          return;
        }
        connection = opened;
        this.#connection = opened;
        this.#connected = true;
        this.#lastAck = -1;
        this.send(this.#events.hello());
        this.#events.onConnect(this);
      },
      () => this.#redial(),
    );
  }

  #redial(): void {
    if (!this.#closed) this.#timers.after(this.#retryMs, () => this.#dial());
  }

  #closedLocally(connection: Connection): void {
    if (this.#connection !== connection) return;
    const wasConnected = this.#connected;
    this.#connection = undefined;
    this.#connected = false;
    if (wasConnected) this.#events.onDisconnect(this);
    this.#redial();
  }

  #receive(connection: Connection, text: string): void {
    for (const line of text.split("\n")) {
      if (line === "" || this.#connection !== connection) continue;
      if (line.startsWith("E ")) {
        this.#events.onRefused(this, line);
        this.reset();
        return;
      }
      const frame = parseRequestLine(line);
      if (isDecodeError(frame) || !isPeerFrame(frame) || frame.peer !== "K") {
        this.#events.onViolation(this, `${JSON.stringify(line.slice(0, 40))} from the peer`);
        this.reset();
        return;
      }
      if (frame.seq < this.#lastAck) {
        this.#events.onViolation(this, `!K ${frame.seq} after !K ${this.#lastAck}`);
        this.reset();
        return;
      }
      this.#lastAck = frame.seq;
      this.#events.onAck(this, frame.seq);
    }
  }
}
