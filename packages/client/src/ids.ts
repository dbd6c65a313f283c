import { randomBytes } from "node:crypto";

/** Random bytes drawn 4 KiB at a time: a fresh `randomBytes` call per acquire would cost microseconds. */
const POOL_BYTES = 4096;
const SECRET_BYTES = 8;

/**
 * Request ids for acquires, e.g. `k4f9c2a1e07b3d5e8.1z.9b1f03c4d2e8a7f6`: a random per-client prefix
 * and a counter, so no two acquire calls anywhere share an id (a retry finds its own grant and nobody
 * else's), and 64 fresh random bits, because the id is also the proof of ownership: lockd lets a
 * release or extension from another connection (after a reconnect or a failover) through only with
 * the acquire's id, so it must not be guessable from another of this client's ids. Always matches
 * the protocol's `[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}`.
 */
export class RequestIds {
  readonly prefix: string;
  #counter = 0;
  #pool = Buffer.alloc(0);
  #offset = 0;

  constructor(prefix = `k${randomBytes(8).toString("hex")}`) {
    this.prefix = prefix;
  }

  next(): string {
    this.#counter += 1;
    if (this.#offset + SECRET_BYTES > this.#pool.length) {
      this.#pool = randomBytes(POOL_BYTES);
      this.#offset = 0;
    }
    const secret = this.#pool.toString("hex", this.#offset, this.#offset + SECRET_BYTES);
    this.#offset += SECRET_BYTES;
    return `${this.prefix}.${this.#counter.toString(36)}.${secret}`;
  }
}
