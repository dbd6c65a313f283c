import { AbortError, type ClientEvents, type Lock, LockClient } from "@lock/client";
import type { RunCommand } from "./args.js";
import { formatDuration } from "./duration.js";
import { CliError } from "./errors.js";
import { cliErrorFrom } from "./lock-errors.js";
import type { Settings } from "./settings.js";
import { SignalRelay } from "./signal-relay.js";
import { exitStatusOf, Supervisor, signalExitStatus } from "./supervisor.js";

export interface RunIo {
  readonly env: NodeJS.ProcessEnv;
  /** Where lock's own messages go (`lock: …` lines). */
  readonly stderr: (line: string) => void;
}

/**
 * `lock run`: acquires the lock, runs the command with LOCK_KEY and LOCK_TOKEN in its environment
 * while the client keeps the lease extended, and releases it when the command ends. Resolves with
 * lock's exit status: the command's (128 + n if signal n killed it), or one of lock's own (exit-codes.ts).
 *
 * With --wait, the wait also covers a lockd that cannot be reached for a while (a restart): the
 * client keeps trying until the wait runs out (`waitForReady`), and lock says once on stderr that it
 * is waiting for a server. Without --wait (wait as long as it takes for the lock) an unreachable
 * server still ends lock at once with NO_SERVER, so a wrong address does not hang it.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP while waiting for the lock give up the wait (nothing runs; exit
 * 128 + n, as if the signal had killed lock); while the command runs they are passed on to it, and
 * lock keeps the lease until the command has exited.
 *
 * A lost lock (the lease could not be renewed before it ran out, or the server refused the renewal)
 * stops the command: SIGTERM, then SIGKILL after `killAfterMs`, and lock exits LOCK_LOST whatever
 * the command's own status, since its work ran partly without the lock.
 */
export async function runUnderLock(command: RunCommand, settings: Settings, io: RunIo): Promise<number> {
  const client = new LockClient(settings.client);
  const signals = new SignalRelay();
  try {
    const lock = await acquire(client, command, signals, io);
    if (typeof lock === "number") return lock;
    // A signal that came as the grant did: the caller gave up, so the command does not start.
    if (signals.received !== undefined) return signalExitStatus(signals.received);
    return await supervise(lockHolding(lock), command, signals, io);
  } finally {
    signals.dispose();
    await client.close();
  }
}

async function acquire(
  client: LockClient,
  command: RunCommand,
  signals: SignalRelay,
  io: RunIo,
): Promise<Lock | number> {
  const options = { leaseMs: command.leaseMs, autoExtend: true, signal: signals.abort, ...command.hold };
  const { waitMs } = command;
  const stopNotice =
    typeof waitMs === "number"
      ? noticeWhileNoServer(client, io, `--wait ${formatDuration(waitMs)} runs out`)
      : () => {};
  try {
    if (waitMs === "none") {
      const lock = await client.tryAcquire(command.key, options);
      if (lock === null) throw new CliError("BUSY", `${command.key} is locked by someone else (--no-wait)`);
      return lock;
    }
    // A wait that was given covers a restart of lockd too; "as long as it takes" does not, so that
    // a wrong address fails at once.
    const waitForReady = waitMs !== undefined;
    return await client.acquire(command.key, { ...options, waitMs: waitMs ?? 0, waitForReady });
  } catch (error) {
    return waitEnded(error, signals, command.key);
  } finally {
    stopNotice();
  }
}

/** A wait (for a lock, or an election) that failed: 128 + n if signal n ended it, else lock's error. */
export function waitEnded(error: unknown, signals: SignalRelay, key: string): number {
  if (error instanceof AbortError && signals.received !== undefined)
    return signalExitStatus(signals.received);
  throw cliErrorFrom(error, key);
}

/**
 * Says once on stderr when no connection is open or opening any more (every lockd address failed),
 * so that someone watching a `lock run --wait` that seems stuck knows why (it keeps trying `until`).
 * Returns the unsubscribe.
 */
export function noticeWhileNoServer(client: LockClient, io: RunIo, until: string): () => void {
  const listener = ({ address, error }: ClientEvents["connectFailed"]) => {
    if (client.connections.some(({ state }) => state === "ready" || state === "connecting")) return;
    client.off("connectFailed", listener);
    const reason = (error as NodeJS.ErrnoException).code ?? error.message;
    io.stderr(`lock: cannot reach lockd (${address}: ${reason}); trying again until ${until}`);
  };
  client.on("connectFailed", listener);
  return () => client.off("connectFailed", listener);
}

/** What lock run holds while the command runs: a lock, or (--elect) a leadership. */
export interface Holding {
  readonly key: string;
  /** Added to the command's environment: LOCK_KEY, LOCK_TOKEN, … */
  readonly env: Readonly<Record<string, string>>;
  /** Aborts when it is lost; the reason (a LockLostError) says why. */
  readonly signal: AbortSignal;
  /** What was lost, for lock's message: `the lock on KEY`, `leadership of KEY`. */
  readonly name: string;
  /** Gives it up, once the command has ended. */
  release(): Promise<unknown>;
}

function lockHolding(lock: Lock): Holding {
  const slot: Record<string, string> = lock.slot === undefined ? {} : { LOCK_SLOT: String(lock.slot) };
  return {
    key: lock.key,
    env: { LOCK_KEY: lock.key, LOCK_TOKEN: lock.token.toString(), ...slot },
    get signal() {
      return lock.signal;
    },
    name: `the lock on ${lock.key}`,
    release: () => lock.release(),
  };
}

/**
 * Runs the command while `held` lasts: stops it (SIGTERM, then SIGKILL after --kill-after) if
 * `held` is lost meanwhile, and throws LOCK_LOST then; otherwise releases `held` once the command
 * has exited, and resolves with the command's status.
 */
export async function supervise(
  held: Holding,
  command: RunCommand,
  signals: SignalRelay,
  io: RunIo,
): Promise<number> {
  const child = new Supervisor(command.command, { ...io.env, ...held.env });
  signals.forwardTo((signal) => child.signal(signal));
  const lostSignal = held.signal;
  let finished = false;
  let lost = false;
  const onLost = () => {
    // Lost only counts while the command runs: work that ended before the loss held the lock.
    if (finished) return;
    lost = true;
    // The reason names the key and token: `lock "k" (token 7) lost: the lease ran out before …`.
    io.stderr(
      `lock: ${(lostSignal.reason as Error).message}; ` +
        `stopping the command (SIGTERM, SIGKILL after ${formatDuration(command.killAfterMs)})`,
    );
    child.terminate(command.killAfterMs);
  };
  if (lostSignal.aborted) onLost();
  else lostSignal.addEventListener("abort", onLost, { once: true });
  const exit = await child.exited;
  finished = true;
  lostSignal.removeEventListener("abort", onLost);
  if (lost) throw new CliError("LOCK_LOST", `the command was stopped because ${held.name} was lost`);
  if (exit.kind === "failed")
    io.stderr(`lock: cannot run ${command.command[0]}: ${exit.error.code ?? exit.error.message}`);
  try {
    await held.release();
  } catch (error) {
    // The command's status is what matters; the lease frees the key in any case.
    io.stderr(
      `lock: could not confirm the release of ${held.key} (${(error as Error).message}); ` +
        `its lease frees it within ${formatDuration(command.leaseMs)}`,
    );
  }
  return exitStatusOf(exit);
}
