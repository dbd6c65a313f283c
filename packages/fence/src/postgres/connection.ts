/**
 * A connection as one fenced call holds it: the pg client, how the call brackets its statements on it
 * (its own transaction, or a savepoint in the caller's: scope.ts), and how to give it back.
 */
import type { ClientBase, PoolClient } from "pg";
import type { KeyedMutex } from "../keyed-mutex.js";
import { CALLER_TRANSACTION, type FenceScope, inTransactionBlock, OWN_TRANSACTION } from "./scope.js";

export interface Connection {
  client: ClientBase;
  /** Our own transaction, or a savepoint in the one the caller has open on `client`. */
  scope: FenceScope;
  /** Give the connection back; `broken` asks the pool to discard it rather than reuse it. */
  release(broken?: Error): void;
}

/** A connection the store checked out of its pool. */
export function poolConnection(client: PoolClient): Connection {
  // Checked out by us, so no transaction of the caller's can be open on it.
  return { client, scope: OWN_TRANSACTION, release: (broken) => client.release(broken) };
}

/** The caller's client, once it is our turn; the caller may have a transaction open on it. */
export async function sharedConnection(client: ClientBase, mutex: KeyedMutex): Promise<Connection> {
  const release = await mutex.lock("");
  try {
    const scope = (await inTransactionBlock(client)) ? CALLER_TRANSACTION : OWN_TRANSACTION;
    // Never "broken": the client is the caller's to end, not ours.
    return { client, scope, release: () => release() };
  } catch (error) {
    // An aborted caller transaction fails the probe (25P02): passed on, the transaction left to them.
    release();
    throw error;
  }
}
