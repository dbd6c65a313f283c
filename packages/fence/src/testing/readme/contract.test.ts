import { memoryStore } from "@lock/fence";
import { describeFenceContract } from "@lock/fence/testing";

// The memory store, tested as any store's author would test theirs.
describeFenceContract("memoryStore()", async () => {
  const store = memoryStore();
  const logs = new Map<string, bigint[]>(); // resource -> the tokens of the writes applied, in order
  return {
    store,
    racers: [store, store, store, store], // one process, no connections: the same store races itself
    appendLog: (_tx, resource, token) => void logs.set(resource, [...(logs.get(resource) ?? []), token]),
    readLog: async (resource) => logs.get(resource) ?? [],
    undoesWrites: false, // it cannot undo what a throwing write already changed
    close: async () => {},
  };
});
