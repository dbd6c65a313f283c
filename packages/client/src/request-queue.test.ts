import type { Reply, Request } from "@lock/protocol";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Outgoing, RequestQueue } from "./request-queue.js";

const acquire = (key: string, id: string): Request => ({ op: "A", key, leaseMs: 30_000, waitMs: 0, id });
const release = (key: string, token = 7n): Request => ({ op: "R", key, token });

function queued(queue: RequestQueue<Outgoing>, ...requests: Request[]): Outgoing[] {
  return requests.map((request) => {
    const item = new Outgoing(request);
    queue.push(item);
    return item;
  });
}

describe("RequestQueue", () => {
  it("hands out everything queued as one batch, in push order, and marks it written", () => {
    const queue = new RequestQueue<Outgoing>();
    const [a, r] = queued(queue, acquire("k1", "c.1"), release("k2"));
    expect(queue.hasWrites).toBe(true);
    expect(queue.takeWrites(123)).toBe("A k1 30 0 c.1\nR k2 7\n");
    expect(a!.state).toBe("written");
    expect(r!.writtenAt).toBe(123);
    expect(queue.hasWrites).toBe(false);
    expect(queue.takeWrites(124)).toBe("");
    expect(queue.outstanding).toBe(2);
  });

  it("matches replies with an id by id, whatever order they come back in", () => {
    const queue = new RequestQueue<Outgoing>();
    const [first, second] = queued(queue, acquire("k", "c.1"), acquire("k", "c.2"));
    queue.takeWrites(0);
    // The second acquire's short wait ran out before the first was granted.
    expect(queue.match({ kind: "T", key: "k", id: "c.2" })).toBe(second);
    expect(queue.match({ kind: "A", key: "k", token: 5n, id: "c.1" })).toBe(first);
    expect(queue.outstanding).toBe(0);
  });

  it("matches replies without an id to the oldest request with the same (verb, key)", () => {
    const queue = new RequestQueue<Outgoing>();
    const [r1, x1, r2, other] = queued(
      queue,
      release("k", 1n),
      { op: "X", key: "k", token: 1n, leaseMs: 1000 },
      release("k", 2n),
      release("j", 3n),
    );
    queue.takeWrites(0);
    expect(queue.match({ kind: "R", key: "j", released: true })).toBe(other);
    expect(queue.match({ kind: "R", key: "k", released: true })).toBe(r1);
    expect(queue.match({ kind: "R", key: "k", released: false })).toBe(r2);
    expect(queue.match({ kind: "X", key: "k", extended: true })).toBe(x1);
  });

  it("matches M and E replies by their echoed verb, key and id", () => {
    const queue = new RequestQueue<Outgoing>();
    const [a, r, ping] = queued(queue, acquire("k", "c.1"), release("k"), { op: "P" });
    queue.takeWrites(0);
    const redirect: Reply = { kind: "M", op: "R", key: "k", address: "10.0.0.6:7420" };
    expect(queue.match(redirect)).toBe(r);
    const error: Reply = { kind: "E", op: "A", key: "k", id: "c.1", code: "TOO_MANY_WAITERS", message: "" };
    expect(queue.match(error)).toBe(a);
    expect(queue.match({ kind: "M", op: "P", key: "-", address: "10.0.0.6:7420" })).toBe(ping);
  });

  it("matches a reply without an id to a request that had one when nothing else fits", () => {
    const queue = new RequestQueue<Outgoing>();
    const [acquireItem, cancel] = queued(queue, acquire("k", "c.1"), { op: "C", key: "k", id: "c.1" });
    queue.takeWrites(0);
    // `C key 1` carries no id; the acquire's `T` does.
    expect(queue.match({ kind: "C", key: "k", cancelled: true })).toBe(cancel);
    expect(queue.match({ kind: "T", key: "k", id: "c.1" })).toBe(acquireItem);
    // A server error for an acquire line it could not parse as far as the id.
    const [noId] = queued(queue, acquire("q", "c.9"));
    queue.takeWrites(0);
    expect(queue.match({ kind: "E", op: "A", key: "q", code: "BAD_DURATION", message: "" })).toBe(noId);
  });

  it("keeps requests that share a verb and an id apart: two extensions of one lock, oldest first", () => {
    const queue = new RequestQueue<Outgoing>();
    const extend = (token: bigint): Request => ({ op: "X", key: "k", token, leaseMs: 1000, id: "c.1" });
    const [x1, x2, x3] = queued(queue, extend(1n), extend(1n), extend(1n));
    queue.takeWrites(0);
    // `X key 1` carries no id, `M X key address id` does: both go to the oldest outstanding one.
    expect(queue.match({ kind: "X", key: "k", extended: true })).toBe(x1);
    expect(queue.match({ kind: "M", op: "X", key: "k", address: "10.0.0.6:7420", id: "c.1" })).toBe(x2);
    expect(queue.outstanding).toBe(1);
    const [x4] = queued(queue, extend(1n));
    queue.takeWrites(0);
    expect(queue.takeAll().written).toEqual([x3, x4]);
  });

  it("matches a reply without an id to the oldest request of its (verb, key), with or without an id", () => {
    const queue = new RequestQueue<Outgoing>();
    const [withId, withoutId] = queued(queue, { op: "R", key: "k", token: 1n, id: "c.1" }, release("k", 2n));
    queue.takeWrites(0);
    expect(queue.match({ kind: "R", key: "k", released: true })).toBe(withId);
    expect(queue.match({ kind: "R", key: "k", released: false })).toBe(withoutId);
  });

  it("returns undefined for a reply that answers nothing, and for E ? lines", () => {
    const queue = new RequestQueue<Outgoing>();
    queued(queue, acquire("k", "c.1"), release("k"));
    queue.takeWrites(0);
    expect(queue.match({ kind: "A", key: "k", token: 1n, id: "c.2" })).toBeUndefined();
    expect(queue.match({ kind: "R", key: "other", released: true })).toBeUndefined();
    expect(queue.match({ kind: "X", key: "k", extended: true })).toBeUndefined();
    const fatal: Reply = { kind: "E", op: "?", key: "-", code: "IDLE_TIMEOUT", message: "" };
    expect(queue.match(fatal)).toBeUndefined();
    expect(queue.outstanding).toBe(2);
  });

  it("withdraws only what was not written, and leaves it out of the batch", () => {
    const queue = new RequestQueue<Outgoing>();
    const [a, r] = queued(queue, acquire("k", "c.1"), release("j"));
    expect(queue.withdraw(a!)).toBe(true);
    expect(a!.state).toBe("withdrawn");
    expect(queue.takeWrites(0)).toBe("R j 7\n");
    expect(queue.withdraw(r!)).toBe(false);
    expect(queue.match({ kind: "A", key: "k", token: 1n, id: "c.1" })).toBeUndefined();
    expect(queue.outstanding).toBe(1);
  });

  it("takeAll splits unwritten (safe to resend) from written (outcome unknown), in send order", () => {
    const queue = new RequestQueue<Outgoing>();
    const [a1, r1, a2] = queued(queue, acquire("k", "c.1"), release("j"), acquire("m", "c.2"));
    queue.takeWrites(0);
    const [r2] = queued(queue, release("z"));
    const answered = queue.match({ kind: "R", key: "j", released: true });
    expect(answered).toBe(r1);
    const { unwritten, written } = queue.takeAll();
    expect(unwritten).toEqual([r2]);
    expect(written).toEqual([a1, a2]);
    expect([a1, a2, r2].map((item) => item!.state)).toEqual(["dropped", "dropped", "dropped"]);
    expect(queue.outstanding).toBe(0);
    expect(queue.takeWrites(0)).toBe("");
  });

  it("refuses to queue a request the codec cannot encode", () => {
    const queue = new RequestQueue<Outgoing>();
    expect(() => queued(queue, release("has space"))).toThrow();
    expect(queue.outstanding).toBe(0);
    expect(queue.hasWrites).toBe(false);
  });

  it("pairs every reply with its request for any interleaving (property)", () => {
    // Requests over a few keys; replies come back in a random order that keeps, per (verb, key)
    // without an id, the send order, which is all the protocol promises.
    const step = fc.record({ op: fc.constantFrom("A", "R", "X"), key: fc.constantFrom("a", "b", "c") });
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.infiniteStream(fc.nat()),
        (steps, picks) => {
          const queue = new RequestQueue<Outgoing>();
          const items = steps.map(({ op, key }, index) => {
            const request: Request =
              op === "A"
                ? acquire(key, `c.${index}`)
                : op === "R"
                  ? release(key, BigInt(index))
                  : { op: "X", key, token: BigInt(index), leaseMs: 1_000 };
            const item = new Outgoing(request);
            queue.push(item);
            return item;
          });
          queue.takeWrites(0);
          const pending = [...items];
          const iterator = picks[Symbol.iterator]();
          while (pending.length > 0) {
            // Only the oldest pending request of each (verb, key) without an id may be answered next.
            const answerable = pending.filter(
              (item) =>
                item.request.op === "A" ||
                pending.find(
                  (other) => other.request.op === item.request.op && keyOf(other) === keyOf(item),
                ) === item,
            );
            const chosen = answerable[iterator.next().value % answerable.length]!;
            pending.splice(pending.indexOf(chosen), 1);
            expect(queue.match(replyTo(chosen.request))).toBe(chosen);
          }
          expect(queue.outstanding).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

function keyOf(item: Outgoing): string {
  return "key" in item.request ? item.request.key : "-";
}

function replyTo(request: Request): Reply {
  switch (request.op) {
    case "A":
      return { kind: "A", key: request.key, token: 1n, id: request.id! };
    case "R":
      return { kind: "R", key: request.key, released: true };
    case "X":
      return { kind: "X", key: request.key, extended: true };
    default:
      throw new Error(`no reply for ${request.op}`);
  }
}
