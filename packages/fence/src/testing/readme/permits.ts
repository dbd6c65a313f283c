import { FenceError, fence, memoryStore, slotResource } from "@lock/fence";

const store = memoryStore();
// Two live permits of client.acquire("tenant:7", { permits: 5 }), granted one after the other.
const first = { token: 50n, key: "tenant:7", slot: 0 };
const second = { token: 51n, key: "tenant:7", slot: 1 };
const done: string[] = [];
await fence(store, slotResource(second), second, () => done.push("slot 1"));
await fence(store, slotResource(first), first, () => done.push("slot 0")); // its own slot: accepted
console.log(slotResource(first), done); // tenant:7 slot 0 [ 'slot 1', 'slot 0' ]
try {
  await fence(store, "tenant:7", first, () => done.push("the whole key"));
} catch (error) {
  if (!(error instanceof FenceError)) throw error;
  console.log(error.code); // FENCE_SLOT_MISMATCH
}
