import type { RequestOp } from "@lock/protocol";
import type { LockLostError } from "./errors.js";

/** Identifies one of the client's connections in events: its address and slot number. */
export interface ConnectionRef {
  readonly address: string;
  /** The connection's slot (0-based; a single address has slots 0 and 1). */
  readonly connection: number;
}

/** Every event a LockClient emits, by name, with its payload. */
export interface ClientEvents {
  /** A connection opens (first time or again). */
  connecting: ConnectionRef & { readonly attempt: number; readonly reconnect: boolean };
  /** A connection is open (and authenticated) and takes requests. */
  connect: ConnectionRef & { readonly reconnect: boolean };
  /** A connection attempt failed; the next one is in `retryInMs`. */
  connectFailed: ConnectionRef & { readonly error: Error; readonly retryInMs: number };
  /** An open connection closed; requests it carried move to other connections. */
  disconnect: ConnectionRef & { readonly error: Error | undefined; readonly retryInMs: number };
  /** A node answered with a redirect (`M`): the request moves to the active at `to`. */
  redirect: { readonly from: string; readonly to: string; readonly op: RequestOp; readonly key: string };
  /** An acquire is re-sent (same request id) because its connection dropped or was shutting down. */
  retry: {
    readonly key: string;
    readonly id: string;
    readonly attempt: number;
    readonly error: Error | undefined;
  };
  /** A held lock was lost (extension refused, lease ran out unconfirmed); `lock.signal` aborted. */
  lockLost: { readonly key: string; readonly token: bigint; readonly error: LockLostError };
  /** A connection was dropped because the server broke the protocol. */
  protocolError: ConnectionRef & { readonly error: Error };
  /** `close()` finished. */
  close: Record<string, never>;
}

export type ClientEventName = keyof ClientEvents;
export type ClientEventListener<K extends ClientEventName> = (event: ClientEvents[K]) => void;

/**
 * A small typed event emitter. Listeners run synchronously in registration order; one that throws
 * does not stop the others or the client: its error is rethrown on a microtask, as an uncaught
 * exception, like a throwing listener of a DOM EventTarget.
 */
export class Emitter {
  readonly #listeners = new Map<ClientEventName, Set<ClientEventListener<never>>>();

  on<K extends ClientEventName>(name: K, listener: ClientEventListener<K>): this {
    let set = this.#listeners.get(name);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(name, set);
    }
    set.add(listener as ClientEventListener<never>);
    return this;
  }

  off<K extends ClientEventName>(name: K, listener: ClientEventListener<K>): this {
    this.#listeners.get(name)?.delete(listener as ClientEventListener<never>);
    return this;
  }

  once<K extends ClientEventName>(name: K, listener: ClientEventListener<K>): this {
    const wrapper: ClientEventListener<K> = (event) => {
      this.off(name, wrapper);
      listener(event);
    };
    return this.on(name, wrapper);
  }

  /** True if anyone listens: lets hot paths skip building an event nobody reads. */
  listens(name: ClientEventName): boolean {
    return (this.#listeners.get(name)?.size ?? 0) > 0;
  }

  emit<K extends ClientEventName>(name: K, event: ClientEvents[K]): void {
    const set = this.#listeners.get(name);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        (listener as ClientEventListener<K>)(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
