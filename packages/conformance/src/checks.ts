import { AssertionError } from "node:assert/strict";
import { nodeInfo } from "@lock/testkit";
import type {
  AcquireOutcome,
  AdapterProcess,
  ExtendOutcome,
  FailureCode,
  Granted,
  ReleaseOutcome,
} from "./adapter-process.js";
import { LEASE_MS, WAIT_MS } from "./case.js";

/** Fails the case with `message` unless `condition` holds. */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new AssertionError({ message });
}

/** The grant, or a failure that says what the client answered instead. */
export function expectGranted(outcome: AcquireOutcome, what: string): Granted {
  check(outcome.ok, `${what}: expected a grant, the client answered ${describe(outcome)}`);
  return outcome;
}

/** The grant, whose token must be above `previous` (an earlier grant of the key, or of the cluster). */
export function expectGrantedAfter(outcome: AcquireOutcome, previous: Granted, what: string): Granted {
  const lock = expectGranted(outcome, what);
  check(
    lock.token > previous.token,
    `${what}: token ${lock.token} is not above the earlier ${previous.token}`,
  );
  return lock;
}

/** Checks that the call failed with `code` (and, for `server_error`, lockd's `serverCode`). */
export function expectFailure(
  outcome: AcquireOutcome | ReleaseOutcome | ExtendOutcome,
  code: FailureCode,
  what: string,
  serverCode?: string,
): void {
  const matches =
    !outcome.ok && outcome.code === code && (serverCode === undefined || outcome.serverCode === serverCode);
  check(
    matches,
    `${what}: expected ${code}${serverCode ? ` (${serverCode})` : ""}, the client answered ${describe(outcome)}`,
  );
}

/** Checks that a release succeeded and reported whether the lock was still held. */
export function expectReleased(outcome: ReleaseOutcome, released: boolean, what: string): void {
  check(
    outcome.ok && outcome.released === released,
    `${what}: expected the release to report ${released}, the client answered ${describe(outcome)}`,
  );
}

export function expectExtended(outcome: ExtendOutcome, what: string): void {
  check(outcome.ok, `${what}: expected the extension to succeed, the client answered ${describe(outcome)}`);
}

/** Acquires `key`, which must be granted, and releases it, which must report it was still held. */
export async function acquireAndRelease(client: AdapterProcess, key: string, what: string): Promise<Granted> {
  const lock = expectGranted(await client.acquire(key, LEASE_MS, WAIT_MS), `${what}: acquire`);
  expectReleased(await client.release(lock.lock), true, `${what}: release`);
  return lock;
}

function describe(outcome: AcquireOutcome | ReleaseOutcome | ExtendOutcome): string {
  return JSON.stringify(outcome, (_key, value) => (typeof value === "bigint" ? value.toString() : value));
}

/** A node's `I` fields, asked over a connection of its own. */
export { nodeInfo };

/** Keys held and acquires queued on the node at `port`. */
export async function nodeCounts(
  port: number,
): Promise<{ keys: number; waiters: number; connections: number }> {
  const info = await nodeInfo(port);
  return { keys: Number(info.keys), waiters: Number(info.waiters), connections: Number(info.connections) };
}
