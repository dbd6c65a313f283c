import type { TimerQueue } from "@lock/deadline-heap";
import type { ClusterLink, LinkEvents } from "../link.js";
import { OutgoingSession } from "../peer/outgoing-session.js";
import type { PeerKey } from "../peer/peer-auth.js";
import type { Connection, Network } from "./network.js";

/**
 * A ClusterLink over the simulated network (network.ts): what PeerLink does over a socket, with the
 * same OutgoingSession on each connection (the peer handshake, `hello()` once it is done, the
 * acknowledgements' checks). It redials `retryMs` after a failed dial or a close. Disconnects,
 * delays, cuts and resets come from the network. Unlike PeerLink it has no handshake timeout: the
 * simulated network never accepts a connection it then leaves hanging.
 */
export class MemoryLink implements ClusterLink {
  readonly address: string;
  readonly #self: string;
  readonly #network: Network;
  readonly #events: LinkEvents;
  readonly #timers: TimerQueue;
  readonly #retryMs: number;
  readonly #key: PeerKey;
  #connection: Connection | undefined;
  #session: OutgoingSession | undefined;
  #connected = false;
  #closed = false;

  constructor(
    network: Network,
    self: string,
    address: string,
    events: LinkEvents,
    options: { timers: TimerQueue; retryMs: number; key: PeerKey },
  ) {
    this.#network = network;
    this.#self = self;
    this.address = address;
    this.#events = events;
    this.#timers = options.timers;
    this.#retryMs = options.retryMs;
    this.#key = options.key;
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
        const key = this.#key;
        this.#session = new OutgoingSession(
          { key, self: this.#self, peer: this.address, authToken: undefined },
          this,
          this.#events,
          {
            write: (lines) => this.#network.send(opened, 0, lines),
            connected: () => {
              this.#connected = true;
            },
            drop: () => {
              if (this.#connection === opened) this.reset();
            },
          },
        );
        this.#session.open();
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
    this.#session = undefined;
    this.#connected = false;
    if (wasConnected) this.#events.onDisconnect(this);
    this.#redial();
  }

  #receive(connection: Connection, text: string): void {
    for (const line of text.split("\n")) {
      if (line === "" || this.#connection !== connection) continue;
      if (!this.#session?.receive(line)) return;
    }
  }
}
