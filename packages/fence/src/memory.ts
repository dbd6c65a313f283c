import { StaleTokenError } from "./errors.js";
import { checkFenceInput } from "./fence-input.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { assertResource } from "./resource.js";
import type { FenceStore, FenceWrite } from "./store.js";

/** What a write receives from the memory store. */
export interface MemoryFenceTx {
  readonly resource: string;
  readonly token: bigint;
  /** The highest token accepted before this write, if any. */
  readonly previousToken: bigint | undefined;
}

/**
 * A store for one process and for tests. Calls for one resource run one at a time (a write that awaits
 * holds the resource), so check, write and advance cannot interleave with another writer.
 *
 * What it cannot do: undo the caller's own side effects. If `write` throws, the token is not advanced,
 * but whatever `write` changed before throwing stays changed; keep such writes all-or-nothing yourself.
 */
export class MemoryStore implements FenceStore<MemoryFenceTx> {
  readonly #accepted = new Map<string, bigint>();
  readonly #mutex = new KeyedMutex();

  async fence<T>(resource: string, token: bigint, write: FenceWrite<MemoryFenceTx, T>): Promise<Awaited<T>> {
    const checked = checkFenceInput(resource, token, write);
    return this.#mutex.run(resource, async (): Promise<Awaited<T>> => {
      const previousToken = this.#accepted.get(resource);
      if (previousToken !== undefined && checked < previousToken) {
        throw new StaleTokenError(resource, checked, previousToken);
      }
      const result = await write({ resource, token: checked, previousToken });
      this.#accepted.set(resource, checked);
      return result;
    });
  }

  async current(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return this.#accepted.get(resource);
  }
}

export function memoryStore(): MemoryStore {
  return new MemoryStore();
}
