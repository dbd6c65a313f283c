import { type CoordinationStore, MemoryCoordinationStore, monotonicClock } from "@lock/server";
import { describeCoordinationContract } from "./contract.test.support.js";

/**
 * The in-memory store (the simulator's) against the same contract as the real ones. Instances
 * share one store, as processes share a server; closing one closes nothing shared.
 */
const shared = new MemoryCoordinationStore(monotonicClock);
const instance = (): CoordinationStore => ({
  description: shared.description,
  takeEpoch: (atLeast) => shared.takeEpoch(atLeast),
  readEpoch: () => shared.readEpoch(),
  acquireLease: (cluster, holder, ttlMs) => shared.acquireLease(cluster, holder, ttlMs),
  renewLease: (lease) => shared.renewLease(lease),
  releaseLease: (lease) => shared.releaseLease(lease),
  readLease: (cluster) => shared.readLease(cluster),
  readDocument: (name) => shared.readDocument(name),
  writeDocument: (name, value, version) => shared.writeDocument(name, value, version),
  watchDocument: (name, onChange) => shared.watchDocument(name, onChange),
  close: () => Promise.resolve(),
});

describeCoordinationContract("memory", { open: instance, ttlMs: 200 });
