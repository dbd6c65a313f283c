import type { LockMode, SharedHold, SnapshotHolderFrame, SnapshotSharedHolderFrame } from "@lock/protocol";

/** One holder of a snapshot received, as `SnapshotHolders.take` hands it out. */
export interface ReceivedHolder {
  readonly key: string;
  readonly token: bigint;
  readonly remainingMs: number;
  readonly id: string | undefined;
  /** A shared holder's or permit's mode (`!q`); undefined for an exclusive holder (`!h`). */
  readonly mode: LockMode | undefined;
  /** A permit's slot; undefined otherwise. */
  readonly slot: number | undefined;
}

/** Holders per chunk: a chunk goes as soon as its last holder is taken. */
const CHUNK_BITS = 13;
const CHUNK = 1 << CHUNK_BITS;

/** Up to CHUNK holders, column by column. */
interface Chunk {
  readonly keys: string[];
  readonly tokens: bigint[];
  readonly remainingMs: number[];
  readonly ids: Array<string | undefined>;
}

/**
 * The holders of a snapshot being received, kept until it is complete and then loaded (Replica),
 * column by column rather than an object per holder: at millions of holders about 32 bytes each
 * beside the keys, tokens and ids (which the table keeps), where a frame's own object takes 60 to 100
 * (an id added after the object was made takes a second block for its properties). `take` hands the
 * holders out in order, and a chunk of 8192 goes once its last one is taken, so a snapshot being
 * loaded shrinks as the table it fills grows.
 */
export class SnapshotHolders {
  readonly #chunks: Array<Chunk | undefined> = [];
  #length = 0;
  /** Shared holders and permits by position: few, beside the exclusive ones. */
  readonly #shared = new Map<number, SharedHold>();

  get length(): number {
    return this.#length;
  }

  push(frame: SnapshotHolderFrame | SnapshotSharedHolderFrame): void {
    const index = this.#length++;
    if (frame.peer === "q") this.#shared.set(index, { mode: frame.mode, slot: frame.slot });
    let chunk = this.#chunks[index >> CHUNK_BITS];
    if (chunk === undefined) {
      chunk = { keys: [], tokens: [], remainingMs: [], ids: [] };
      this.#chunks.push(chunk);
    }
    chunk.keys.push(frame.key);
    chunk.tokens.push(frame.token);
    chunk.remainingMs.push(frame.remainingMs);
    chunk.ids.push(frame.id);
  }

  /** Holder `index`, handed out once: holders are taken in order, 0 first. */
  take(index: number): ReceivedHolder {
    const chunk = this.#chunks[index >> CHUNK_BITS]!;
    const at = index & (CHUNK - 1);
    const shared = this.#shared.get(index);
    this.#shared.delete(index);
    if (at === chunk.keys.length - 1) this.#chunks[index >> CHUNK_BITS] = undefined;
    return {
      key: chunk.keys[at]!,
      token: chunk.tokens[at]!,
      remainingMs: chunk.remainingMs[at]!,
      id: chunk.ids[at],
      mode: shared?.mode,
      slot: shared?.slot,
    };
  }
}
