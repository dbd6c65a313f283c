import { fence, fenceRead, memoryStore, StaleTokenError } from "@lock/fence";

const store = memoryStore(); // postgresStore() and redisStore() apply the same rule
let balance = 100;
// From client.acquire("accounts:9") and, later, client.acquire("accounts:9", { mode: "shared" }).
const writer = { token: 41n, key: "accounts:9", mode: "exclusive" } as const;
const reader = { token: 42n, key: "accounts:9", mode: "shared" } as const;

// The reader reads and records its read: a writer granted before it is refused from now on.
console.log("read", await fenceRead(store, "accounts:9", reader, () => balance, { record: true })); // read 100
try {
  // The writer stalled past its lease and wakes up after the reader's grant.
  await fence(store, "accounts:9", writer, () => {
    balance = 0;
  });
} catch (error) {
  if (!(error instanceof StaleTokenError)) throw error;
  console.log(error.code, error.currentToken); // FENCE_NEWER_READ 42n
}
// The next writer is newer than the reader: it writes, and a reader that stalls past it is refused.
await fence(store, "accounts:9", 43n, () => {
  balance = 90;
});
try {
  await fenceRead(store, "accounts:9", reader, () => balance);
} catch (error) {
  if (!(error instanceof StaleTokenError)) throw error;
  console.log(error.code, error.currentToken); // FENCE_STALE_READ 43n
}
console.log("balance", balance); // balance 90
