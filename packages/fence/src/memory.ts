import { StaleTokenError } from "./errors.js";
import { checkFenceInput } from "./fence-input.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { assertResource } from "./resource.js";
import { decideRead, decideWrite, type FenceDecision, type FenceMarks } from "./rule.js";
import type { FenceReadOptions, FenceWrite, ReadFenceStore } from "./store.js";

/** What a write receives from the memory store. */
export interface MemoryFenceTx {
  readonly resource: string;
  readonly token: bigint;
  /** The highest write token accepted before this call, if any. */
  readonly previousToken: bigint | undefined;
}

/**
 * A store for one process and for tests. Calls for one resource run one at a time (a write or read
 * that awaits holds the resource), so check, write and advance cannot interleave with another call.
 * It runs the rules of rule.ts as they are.
 *
 * What it cannot do: undo the caller's own side effects. If `write` throws, the token is not advanced,
 * but whatever `write` changed before throwing stays changed; keep such writes all-or-nothing yourself.
 */
export class MemoryStore implements ReadFenceStore<MemoryFenceTx> {
  readonly #marks = new Map<string, FenceMarks>();
  readonly #mutex = new KeyedMutex();

  async fence<T>(resource: string, token: bigint, write: FenceWrite<MemoryFenceTx, T>): Promise<Awaited<T>> {
    const checked = checkFenceInput(resource, token, write);
    return this.#run(resource, checked, write, (marks) => decideWrite(marks, checked));
  }

  async fenceRead<T>(
    resource: string,
    token: bigint,
    read: FenceWrite<MemoryFenceTx, T>,
    options: FenceReadOptions = {},
  ): Promise<Awaited<T>> {
    const checked = checkFenceInput(resource, token, read);
    const record = options?.record === true;
    return this.#run(resource, checked, read, (marks) => decideRead(marks, checked, record));
  }

  async current(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return this.#marks.get(resource)?.write;
  }

  async currentRead(resource: string): Promise<bigint | undefined> {
    assertResource(resource);
    return this.#marks.get(resource)?.read;
  }

  /** Decides on the marks, runs `body` if accepted, then stores the new marks: one call at a time. */
  #run<T>(
    resource: string,
    token: bigint,
    body: FenceWrite<MemoryFenceTx, T>,
    decide: (marks: FenceMarks) => FenceDecision,
  ): Promise<Awaited<T>> {
    return this.#mutex.run(resource, async (): Promise<Awaited<T>> => {
      const marks = this.#marks.get(resource) ?? {};
      const decision = decide(marks);
      if (!decision.accepted) {
        const { current, code } = decision.refusal;
        throw new StaleTokenError(resource, token, current, code);
      }
      const result = await body({ resource, token, previousToken: marks.write });
      this.#marks.set(resource, decision.marks);
      return result;
    });
  }
}

export function memoryStore(): MemoryStore {
  return new MemoryStore();
}
