/**
 * The behaviour every FenceStore owes its users, as one suite each adapter's test file runs against
 * real servers: the Kleppmann scenario, stale refusal, rollback of a throwing write, u64 boundaries,
 * a property over the whole range, and a race of parallel writers checked on the applied sequence.
 * Shipped as `@lock/fence/testing` for authors of other stores.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FenceError, StaleTokenError } from "../errors.js";
import { fence } from "../fence.js";
import type { FenceStore } from "../store.js";
import { MAX_TOKEN } from "../token.js";
import {
  type KleppmannParticipants,
  outcomeOf,
  runKleppmannScenario,
  simulatedGrants,
  type WriteOutcome,
} from "./kleppmann.js";
import { BOUNDARY_TOKENS, shuffled, tokenPairs } from "./tokens.js";
import { uniqueName } from "./unique-name.js";

/** What describeFenceContract() needs to test a store: the store, its racers and a log to write to. */
export interface ContractFixture<Tx> {
  /** The store under test. Every resource the suite uses is a fresh random name. */
  store: FenceStore<Tx>;
  /**
   * Stores for the same data on separate connections (or `store` itself, repeated, for a store without
   * connections), racing each other: a few, such as 4.
   */
  racers: readonly FenceStore<Tx>[];
  /**
   * The fenced write the suite uses: append `token` to the resource's applied log, through `tx`, so
   * that it takes effect exactly when the store applies the write (or, like Redis commands, returns a
   * promise of it).
   */
  appendLog(tx: Tx, resource: string, token: bigint): unknown;
  /** The resource's applied log, in the order the writes took effect. */
  readLog(resource: string): Promise<bigint[]>;
  /** Whether the effects of a write that throws are undone (the memory store cannot undo them). */
  undoesWrites: boolean;
  /** Called once after the suite: close connections, drop what setup created. */
  close(): Promise<void>;
}

/** Writes `token` to `resource` through fence(); "refused" on StaleTokenError, other errors propagate. */
export async function fencedAppend<Tx>(
  fixture: ContractFixture<Tx>,
  store: FenceStore<Tx>,
  resource: string,
  token: bigint,
): Promise<WriteOutcome> {
  return outcomeOf(fence(store, resource, token, (tx) => fixture.appendLog(tx, resource, token)));
}

export function storeParticipants<Tx>(
  fixture: ContractFixture<Tx>,
  firstToken: bigint,
): KleppmannParticipants {
  const resource = uniqueName("kleppmann");
  return {
    getToken: simulatedGrants(firstToken),
    write: (token) => fencedAppend(fixture, fixture.store, resource, token),
    applied: () => fixture.readLog(resource),
  };
}

/**
 * What plain JavaScript can hand a store that fence() would refuse. The SQL text targets a table that
 * does not exist, so a store that still interpolated it would fail the test without harming the
 * shared server; postgres/store.test.ts aims the same text at a real table.
 */
export const MALFORMED_TOKENS: readonly unknown[] = [
  `1); DROP TABLE IF EXISTS ${uniqueName("no_such_table")}; COMMIT; --`,
  "abc",
  "007",
  "-1",
  5,
  1.5,
  -1n,
  MAX_TOKEN + 1n,
  null,
  undefined,
];

export const MALFORMED_RESOURCES: readonly unknown[] = ["", "x".repeat(513), "a\u0000b", 42, undefined];

/** Writes a store must refuse (FENCE_BAD_ARGUMENT) before it touches its data: none is a function. */
export const NOT_WRITES: readonly unknown[] = [undefined, null, "UPDATE orders SET status = 'paid'", 42, {}];

/**
 * Declares the suite, as a vitest `describe` named after `name`: call it at the top level of a test
 * file. `setup` runs once, in `beforeAll`, and the fixture's `close()` in `afterAll`.
 */
export function describeFenceContract<Tx>(name: string, setup: () => Promise<ContractFixture<Tx>>): void {
  describe(`${name}: the FenceStore contract`, () => {
    let fixture: ContractFixture<Tx>;
    beforeAll(async () => {
      fixture = await setup();
    });
    afterAll(() => fixture?.close());

    it("refuses client 1's late write after client 2 wrote with a newer token (Kleppmann)", async () => {
      await runKleppmannScenario(storeParticipants(fixture, 2n ** 63n - 1n));
    });

    it("accepts a first token and the same token again, returning the write's result", async () => {
      const resource = uniqueName("equal");
      for (const token of [0n, 0n, 7n, 7n]) {
        await expect(fence(fixture.store, resource, token, () => "written")).resolves.toBe("written");
      }
      expect(await fixture.store.current(resource)).toBe(7n);
    });

    it("refuses a stale token and applies nothing of the write", async () => {
      const resource = uniqueName("stale");
      await fencedAppend(fixture, fixture.store, resource, 10n);
      const refusal = fence(fixture.store, resource, "9", (tx) => fixture.appendLog(tx, resource, 9n));
      await expect(refusal).rejects.toBeInstanceOf(StaleTokenError);
      await expect(refusal).rejects.toMatchObject({
        code: "FENCE_STALE_TOKEN",
        resource,
        presentedToken: 9n,
        currentToken: 10n,
      });
      expect(await fixture.readLog(resource)).toEqual([10n]);
      expect(await fixture.store.current(resource)).toBe(10n);
    });

    it("does not call the write at all for a token that is already stale", async () => {
      const resource = uniqueName("stale-write");
      await fencedAppend(fixture, fixture.store, resource, 10n);
      const write = vi.fn((tx: Tx) => fixture.appendLog(tx, resource, 9n));
      await expect(fence(fixture.store, resource, 9n, write)).rejects.toBeInstanceOf(StaleTokenError);
      expect(write).not.toHaveBeenCalled();
      expect(await fixture.readLog(resource)).toEqual([10n]);
    });

    it("leaves no token advance (and no write, where it can undo it) when the write throws", async () => {
      const resource = uniqueName("throws");
      await fencedAppend(fixture, fixture.store, resource, 5n);
      const failure = new Error("the write failed half-way");
      const attempt = fence(fixture.store, resource, 6n, (tx) => {
        fixture.appendLog(tx, resource, 6n);
        throw failure;
      });
      await expect(attempt).rejects.toBe(failure);
      expect(await fixture.store.current(resource)).toBe(5n);
      const log = await fixture.readLog(resource);
      expect(log).toEqual(fixture.undoesWrites ? [5n] : [5n, 6n]);
      // The resource still works, and 6 was never recorded, so 5 is not stale.
      expect(await fencedAppend(fixture, fixture.store, resource, 5n)).toBe("accepted");
    });

    it("validates the token before touching the store", async () => {
      const resource = uniqueName("invalid");
      for (const bad of [5, -1n, MAX_TOKEN + 1n, "1e3", " 5", "05"]) {
        const attempt = fence(fixture.store, resource, bad as bigint, () => "never");
        await expect(attempt).rejects.toMatchObject({ name: "FenceError", code: "FENCE_BAD_TOKEN" });
        await expect(attempt).rejects.toBeInstanceOf(FenceError);
      }
      expect(await fixture.store.current(resource)).toBeUndefined();
    });

    it("refuses a malformed token or resource in the store itself, without fence(), calling nothing", async () => {
      const resource = uniqueName("unchecked");
      for (const bad of MALFORMED_TOKENS) {
        const write = vi.fn(() => "never");
        const attempt = fixture.store.fence(resource, bad as bigint, write);
        await expect(attempt, String(bad)).rejects.toMatchObject({
          name: "FenceError",
          code: "FENCE_BAD_TOKEN",
        });
        expect(write).not.toHaveBeenCalled();
      }
      for (const bad of MALFORMED_RESOURCES) {
        const write = vi.fn(() => "never");
        const attempt = fixture.store.fence(bad as string, 1n, write);
        await expect(attempt).rejects.toMatchObject({ name: "FenceError", code: "FENCE_BAD_RESOURCE" });
        expect(write).not.toHaveBeenCalled();
        await expect(fixture.store.current(bad as string)).rejects.toMatchObject({
          code: "FENCE_BAD_RESOURCE",
        });
      }
      expect(await fixture.store.current(resource)).toBeUndefined();
    });

    it("refuses a write that is not a function in the store itself, advancing nothing", async () => {
      const resource = uniqueName("not-a-write");
      for (const bad of NOT_WRITES) {
        const attempt = fixture.store.fence(resource, 1n, bad as () => never);
        await expect(attempt, String(bad)).rejects.toMatchObject({
          name: "FenceError",
          code: "FENCE_BAD_ARGUMENT",
        });
      }
      expect(await fixture.store.current(resource)).toBeUndefined();
    });

    it("compares every pair of boundary tokens (0, 2^53±1, 2^63-1, 2^63, 2^64-1) like BigInt does", async () => {
      await Promise.all(
        BOUNDARY_TOKENS.flatMap((first) =>
          BOUNDARY_TOKENS.map((second) => expectComparison(fixture, first, second)),
        ),
      );
    });

    it("compares tokens across the whole u64 range like BigInt does (property)", async () => {
      await fc.assert(
        fc.asyncProperty(tokenPairs, ([first, second]) => expectComparison(fixture, first, second)),
        { numRuns: 40 },
      );
    });

    it("never applies a lower token after a higher one while parallel writers race", async () => {
      const resource = uniqueName("race");
      // Interleaved tokens around 2^63, dealt to the racers in random order: most arrive stale.
      const tokens = shuffled(
        Array.from({ length: 6 * fixture.racers.length }, (_, i) => 2n ** 63n - 12n + BigInt(i)),
      );
      const accepted: bigint[] = [];
      const refused: StaleTokenError[] = [];
      await Promise.all(
        fixture.racers.map(async (racer, index) => {
          for (let k = index; k < tokens.length; k += fixture.racers.length) {
            const token = tokens[k]!;
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
            try {
              await fence(racer, resource, token, (tx) => fixture.appendLog(tx, resource, token));
              accepted.push(token);
            } catch (error) {
              if (!(error instanceof StaleTokenError)) throw error;
              refused.push(error);
            }
          }
        }),
      );
      const log = await fixture.readLog(resource);
      expect(log).toEqual([...log].sort(compareBigints)); // the applied sequence never goes down
      expect([...log].sort(compareBigints)).toEqual([...accepted].sort(compareBigints));
      expect(accepted.length + refused.length).toBe(tokens.length);
      expect(refused.length).toBeGreaterThan(0);
      for (const refusal of refused) expect(refusal.currentToken).toBeGreaterThan(refusal.presentedToken);
      const highest = [...tokens].sort(compareBigints).at(-1);
      expect(await fixture.store.current(resource)).toBe(highest);
    });
  });
}

async function expectComparison<Tx>(
  fixture: ContractFixture<Tx>,
  first: bigint,
  second: bigint,
): Promise<void> {
  const resource = uniqueName("compare");
  expect(await fencedAppend(fixture, fixture.store, resource, first)).toBe("accepted");
  const expected: WriteOutcome = second >= first ? "accepted" : "refused";
  expect(await fencedAppend(fixture, fixture.store, resource, second), `${first} then ${second}`).toBe(
    expected,
  );
  expect(await fixture.store.current(resource)).toBe(second >= first ? second : first);
}

export function compareBigints(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
