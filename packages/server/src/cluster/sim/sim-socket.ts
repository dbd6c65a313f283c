import { EventEmitter } from "node:events";
import type { ClientSocket, ServerAddress } from "@lock/client";
import type { Connection, ConnectionEnd, Host, Network } from "./network.js";

/**
 * An application process on the simulated network: its client dials the nodes and nobody dials it.
 * It never stalls or dies (the nemesis aims at the nodes); `ran` tells the world that application
 * code runs in the current event, so that its promise continuations run before the next one.
 */
export class AppHost implements Host {
  readonly up = true;
  readonly stalled = false;
  readonly generation = 0;

  constructor(
    readonly name: string,
    readonly ran: () => void,
  ) {}

  defer(work: () => void): void {
    this.ran();
    work();
  }

  accept(): ConnectionEnd | undefined {
    return undefined;
  }
}

/**
 * A `net.Socket`, as far as @lock/client uses one, over the simulated network (the client's
 * `connect` option). What the nemesis does to a node reaches the client as it would through the
 * kernel: a node down, cut off or stopped refuses the dial (`error`, then `close`, after a round
 * trip); a node killed or reset closes the connection after what it had sent (`close`); a node
 * stopped or cut off later just goes quiet, which only the client's own timers notice.
 *
 * Writes made before the connection opened wait for it, as a `net.Socket` buffers them; every write
 * is accepted at once (no backpressure in the simulator). `close` after `destroy()` comes on the
 * next tick, as Node emits it.
 */
export class SimSocket extends EventEmitter implements ClientSocket {
  readonly #network: Network;
  /** Sees every write (the simulator learns the client's request ids from them). */
  readonly #onWrite: ((data: string) => void) | undefined;
  #connection: Connection | undefined;
  readonly #unsent: string[] = [];
  #destroyed = false;
  #closed = false;

  constructor(network: Network, host: AppHost, server: ServerAddress, onWrite?: (data: string) => void) {
    super();
    this.#network = network;
    this.#onWrite = onWrite;
    const end: ConnectionEnd = {
      onLine: (text) => {
        if (!this.#closed) this.emit("data", Buffer.from(text));
      },
      onClose: () => this.#close(undefined),
    };
    network.dial(
      host.name,
      server.address,
      end,
      (connection) => this.#opened(connection),
      () => {
        const error = Object.assign(new Error(`connect ECONNREFUSED ${server.address}`), {
          code: "ECONNREFUSED",
        });
        this.#close(error);
      },
    );
  }

  get destroyed(): boolean {
    return this.#destroyed || this.#closed;
  }

  write(data: string): boolean {
    if (this.destroyed) return false;
    this.#onWrite?.(data);
    if (this.#connection === undefined) this.#unsent.push(data);
    else this.#network.send(this.#connection, 0, data);
    return true;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.#destroyed = true;
    if (this.#connection !== undefined) this.#network.close(this.#connection, 0);
    process.nextTick(() => this.#close(undefined));
  }

  #opened(connection: Connection): void {
    // Destroyed while the dial was on its way (the client's connect timeout): hang up at once.
    if (this.destroyed) {
      this.#network.close(connection, 0);
      return;
    }
    this.#connection = connection;
    for (const data of this.#unsent.splice(0)) this.#network.send(connection, 0, data);
    this.emit("connect");
  }

  #close(error: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    if (error !== undefined) this.emit("error", error);
    this.emit("close");
  }
}
