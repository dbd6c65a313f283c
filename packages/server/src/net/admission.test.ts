import { describe, expect, it } from "vitest";
import { Admission } from "./admission.js";

/** A server's view: the open connections, and the ones it was told to evict. */
function harness(maxConnections: number, maxUnauthenticated: number) {
  const open = new Set<string>();
  const evicted: string[] = [];
  const destroyed: string[] = [];
  const admission = new Admission<string>(
    { maxConnections, maxUnauthenticated },
    () => open.size,
    (name, immediately) => {
      evicted.push(name);
      if (immediately) {
        destroyed.push(name);
        open.delete(name);
      }
    },
  );
  const connect = (name: string, mustAuthenticate = true): boolean => {
    if (!admission.admit(mustAuthenticate)) return false;
    open.add(name);
    if (mustAuthenticate) admission.awaitingAuthentication(name);
    return true;
  };
  const close = (name: string) => {
    open.delete(name);
    admission.settled(name);
  };
  return { admission, evicted, destroyed, connect, close };
}

describe("Admission", () => {
  it("without an auth token, refuses only past maxConnections", () => {
    const { connect, close, evicted } = harness(2, 1);
    expect([connect("a", false), connect("b", false), connect("c", false)]).toEqual([true, true, false]);
    close("a");
    expect(connect("c", false)).toBe(true);
    expect(evicted).toEqual([]);
  });

  it("evicts the oldest unauthenticated connection when the unauthenticated slots are full", () => {
    const { connect, evicted, admission } = harness(10, 2);
    connect("a");
    connect("b");
    expect(connect("c")).toBe(true);
    expect(connect("d")).toBe(true);
    expect(evicted).toEqual(["a", "b"]);
    expect(admission.unauthenticatedCount).toBe(2);
  });

  it("never evicts an authenticated connection; refuses when they hold every slot", () => {
    const { connect, evicted, admission } = harness(2, 2);
    connect("a");
    connect("b");
    admission.settled("a");
    expect(connect("c")).toBe(true); // full: takes b's slot, b has not authenticated
    admission.settled("c");
    expect(evicted).toEqual(["b"]);
    // b is still closing and a and c hold the rest: nothing left to take.
    expect(connect("d")).toBe(false);
    expect(evicted).toEqual(["b"]);
  });

  it("frees an evicted slot at once when every slot is taken, so a flood never holds more than the cap", () => {
    const { connect, evicted, destroyed } = harness(3, 2);
    connect("a");
    connect("b");
    expect(connect("c")).toBe(true); // the unauthenticated slots are full: a may linger to read its error
    expect(destroyed).toEqual([]);
    for (let i = 0; i < 100; i++) expect(connect(`flood${i}`)).toBe(true);
    expect(evicted).toHaveLength(101);
    expect(destroyed).toHaveLength(100); // every one of those made room under maxConnections
  });
});
