import { randomBytes } from "node:crypto";

/**
 * Request ids for acquires: a random per-client prefix and a counter, e.g. `k4f9c2a1e07b3d5e8.1z`.
 * The prefix keeps two clients (or two processes) apart, the counter keeps two calls of one client
 * apart, so no two acquire calls anywhere share an id: a retry finds its own grant and nobody
 * else's. Always matches the protocol's `[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}`.
 */
export class RequestIds {
  readonly prefix: string;
  #counter = 0;

  constructor(prefix = `k${randomBytes(8).toString("hex")}`) {
    this.prefix = prefix;
  }

  next(): string {
    this.#counter += 1;
    return `${this.prefix}.${this.#counter.toString(36)}`;
  }
}
