/**
 * The read rule (rule.ts) as a suite every ReadFenceStore runs against its real server: the stalled
 * writer and the stalled reader, and a fast-check model test that drives random sequences of writes,
 * reads and recorded reads through the store and through decideWrite()/decideRead(), which must agree
 * on every outcome and on the marks left. Shipped in `@lock/fence/testing`.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StaleTokenError } from "../errors.js";
import { fence, fenceRead } from "../fence.js";
import { decideRead, decideWrite, type FenceDecision, type FenceMarks } from "../rule.js";
import type { ReadFenceStore } from "../store.js";
import type { ContractFixture } from "./contract.js";
import { BOUNDARY_TOKENS } from "./tokens.js";
import { uniqueName } from "./unique-name.js";

/** A ContractFixture whose store implements the read rule, and the read the suite fences. */
export interface ReadContractFixture<Tx, ReadTx = Tx> extends ContractFixture<Tx> {
  store: ReadFenceStore<Tx, ReadTx>;
  /** Reads the resource's applied log through `tx`: bigint[], or a promise of it. */
  readLogIn(tx: ReadTx, resource: string): bigint[] | Promise<bigint[]>;
}

type Step = { kind: "write" | "read" | "record"; token: bigint };
type Outcome = "accepted" | { code: string; current: bigint };

// Few tokens, so that equal ones meet often, spread over the places where number types run out.
const steps = fc.array(
  fc.record({
    kind: fc.constantFrom<Step["kind"]>("write", "read", "record"),
    token: fc.constantFrom(...BOUNDARY_TOKENS, 1n, 2n),
  }),
  { minLength: 1, maxLength: 12 },
);

export function describeReadFenceContract<Tx, ReadTx>(
  name: string,
  setup: () => Promise<ReadContractFixture<Tx, ReadTx>>,
): void {
  describe(`${name}: the read rule`, () => {
    let fixture: ReadContractFixture<Tx, ReadTx>;
    beforeAll(async () => {
      fixture = await setup();
    });
    afterAll(() => fixture?.close());

    const write = (resource: string, token: bigint) =>
      fence(fixture.store, resource, token, (tx) => fixture.appendLog(tx, resource, token));
    const read = (resource: string, token: bigint, record: boolean) =>
      fenceRead(fixture.store, resource, token, (tx) => fixture.readLogIn(tx, resource), { record });

    it("refuses a stalled writer once a newer reader recorded its read (FENCE_NEWER_READ)", async () => {
      const resource = uniqueName("stalled-writer");
      await write(resource, 10n); // an earlier writer
      // Writer 11 is granted, stalls past its lease; reader 12 is granted and reads, recording it.
      expect(await read(resource, 12n, true)).toEqual([10n]);
      const late = write(resource, 11n);
      await expect(late).rejects.toBeInstanceOf(StaleTokenError);
      await expect(late).rejects.toMatchObject({
        code: "FENCE_NEWER_READ",
        refusedBy: "read",
        resource,
        presentedToken: 11n,
        currentToken: 12n,
      });
      expect(await fixture.readLog(resource)).toEqual([10n]);
      // The next writer (13) is newer than the reader: accepted, and the read mark has done its work.
      await write(resource, 13n);
      expect([await fixture.store.current(resource), await fixture.store.currentRead(resource)]).toEqual([
        13n,
        undefined,
      ]);
    });

    it("refuses a stalled reader once a newer writer wrote (FENCE_STALE_READ), without calling the read", async () => {
      const resource = uniqueName("stalled-reader");
      // Reader 20 is granted and stalls; writer 21 is granted after its lease and writes.
      await write(resource, 21n);
      const readLog = vi.fn((tx: ReadTx) => fixture.readLogIn(tx, resource));
      const late = fenceRead(fixture.store, resource, 20n, readLog, { record: true });
      await expect(late).rejects.toMatchObject({
        name: "StaleTokenError",
        code: "FENCE_STALE_READ",
        refusedBy: "write",
        presentedToken: 20n,
        currentToken: 21n,
      });
      expect(readLog).not.toHaveBeenCalled();
      expect(await fixture.store.currentRead(resource)).toBeUndefined();
      // The writer itself reads its own writes: an equal token is the same grant.
      expect(await read(resource, 21n, false)).toEqual([21n]);
    });

    it("lets readers overlap: an older reader still reads after a newer one recorded", async () => {
      const resource = uniqueName("readers");
      await write(resource, 1n);
      expect(await read(resource, 5n, true)).toEqual([1n]);
      expect(await read(resource, 4n, true)).toEqual([1n]); // both are live readers of one phase
      expect(await fixture.store.currentRead(resource)).toBe(5n);
    });

    it("checks but does not record a read without record: an older writer still writes", async () => {
      const resource = uniqueName("unrecorded");
      expect(await read(resource, 8n, false)).toEqual([]);
      expect(await fixture.store.currentRead(resource)).toBeUndefined();
      expect(await fixture.store.current(resource)).toBeUndefined();
      await write(resource, 7n);
      expect(await fixture.readLog(resource)).toEqual([7n]);
    });

    it("records nothing when the read throws", async () => {
      const resource = uniqueName("read-throws");
      const failure = new Error("the read failed");
      const attempt = fenceRead(
        fixture.store,
        resource,
        9n,
        () => {
          throw failure;
        },
        { record: true },
      );
      await expect(attempt).rejects.toBe(failure);
      expect(await fixture.store.currentRead(resource)).toBeUndefined();
      await write(resource, 8n);
    });

    it("refuses malformed input in the store's fenceRead() itself, calling nothing", async () => {
      const resource = uniqueName("read-unchecked");
      const readLog = vi.fn(() => []);
      for (const bad of ["abc", 5, -1n]) {
        await expect(fixture.store.fenceRead(resource, bad as bigint, readLog)).rejects.toMatchObject({
          code: "FENCE_BAD_TOKEN",
        });
      }
      await expect(fixture.store.fenceRead("", 1n, readLog)).rejects.toMatchObject({
        code: "FENCE_BAD_RESOURCE",
      });
      await expect(fixture.store.fenceRead(resource, 1n, "SELECT" as never)).rejects.toMatchObject({
        code: "FENCE_BAD_ARGUMENT",
      });
      await expect(fixture.store.currentRead("")).rejects.toMatchObject({ code: "FENCE_BAD_RESOURCE" });
      expect(readLog).not.toHaveBeenCalled();
      expect(await fixture.store.currentRead(resource)).toBeUndefined();
    });

    it("agrees with decideWrite()/decideRead() on every outcome and on the marks left (model, property)", async () => {
      await fc.assert(
        fc.asyncProperty(steps, async (sequence) => {
          const resource = uniqueName("model");
          let marks: FenceMarks = {};
          const applied: bigint[] = [];
          for (const step of sequence) {
            const decision: FenceDecision =
              step.kind === "write"
                ? decideWrite(marks, step.token)
                : decideRead(marks, step.token, step.kind === "record");
            const attempt =
              step.kind === "write"
                ? write(resource, step.token)
                : read(resource, step.token, step.kind === "record");
            const outcome = await outcomeOf(attempt);
            if (decision.accepted) {
              marks = decision.marks;
              if (step.kind === "write") applied.push(step.token);
              expect(outcome, `${step.kind} ${step.token}`).toBe("accepted");
            } else {
              const { code, current } = decision.refusal;
              expect(outcome, `${step.kind} ${step.token}`).toEqual({ code, current });
            }
          }
          expect(await fixture.readLog(resource)).toEqual(applied);
          expect(await fixture.store.current(resource)).toBe(marks.write);
          expect(await fixture.store.currentRead(resource)).toBe(marks.read);
        }),
        { numRuns: 40 },
      );
    });
  });
}

async function outcomeOf(attempt: Promise<unknown>): Promise<Outcome> {
  try {
    await attempt;
    return "accepted";
  } catch (error) {
    if (!(error instanceof StaleTokenError)) throw error;
    return { code: error.code, current: error.currentToken };
  }
}
