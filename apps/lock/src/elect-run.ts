import { type Leadership, LockClient } from "@lock/client";
import type { RunCommand } from "./args.js";
import { formatDuration } from "./duration.js";
import { CliError } from "./errors.js";
import { type Holding, noticeWhileNoServer, type RunIo, supervise, waitEnded } from "./run.js";
import type { Settings } from "./settings.js";
import { SignalRelay } from "./signal-relay.js";
import { signalExitStatus } from "./supervisor.js";

/**
 * `lock run --elect`: campaigns for leadership of KEY and runs the command only while leader, with
 * LOCK_KEY, LOCK_TERM and LOCK_TOKEN (the term: the grant's fencing token) in its environment.
 *
 * The campaign waits as long as it takes (or --wait: exit 81), across restarts of lockd too: a
 * standby should outlast its servers (lock says once on stderr when it cannot reach any). A lost
 * leadership (lease not renewed in time, or refused) stops the command as a lost lock does
 * (SIGTERM, then SIGKILL after --kill-after); lock then exits 82, or with --recampaign stands for
 * election again, unless a signal was passed on to the command meanwhile (the operator is stopping
 * it). When the command ends by itself, lock resigns (a standby takes over at once) and exits with
 * its status. Signals behave as in a plain `lock run`.
 */
export async function runWhileLeader(command: RunCommand, settings: Settings, io: RunIo): Promise<number> {
  const client = new LockClient(settings.client);
  const signals = new SignalRelay();
  try {
    for (;;) {
      const leader = await campaign(client, command, signals, io);
      if (typeof leader === "number") return leader;
      // A signal that came as the election did: the caller gave up, so the command does not start.
      if (signals.received !== undefined) return signalExitStatus(signals.received);
      io.stderr(`lock: elected leader of ${leader.key} (term ${leader.term}); starting the command`);
      try {
        return await supervise(leadershipHolding(leader), command, signals, io);
      } catch (error) {
        // From here a signal ends lock (the next campaign), not the command that is gone.
        signals.stopForwarding();
        const lost = error instanceof CliError && error.code === "LOCK_LOST";
        if (!lost || !command.elect?.recampaign || signals.forwarded !== undefined) throw error;
        io.stderr(`lock: leadership of ${leader.key} (term ${leader.term}) lost; campaigning again`);
      }
    }
  } finally {
    signals.dispose();
    await client.close();
  }
}

async function campaign(
  client: LockClient,
  command: RunCommand,
  signals: SignalRelay,
  io: RunIo,
): Promise<Leadership | number> {
  const waitMs = typeof command.waitMs === "number" ? command.waitMs : 0;
  const until = waitMs > 0 ? `--wait ${formatDuration(waitMs)} runs out` : "elected";
  const stopNotice = noticeWhileNoServer(client, io, until);
  try {
    return await client.elect(command.key, { leaseMs: command.leaseMs, waitMs, signal: signals.abort });
  } catch (error) {
    return waitEnded(error, signals, command.key);
  } finally {
    stopNotice();
  }
}

function leadershipHolding(leader: Leadership): Holding {
  const term = leader.term.toString();
  return {
    key: leader.key,
    env: { LOCK_KEY: leader.key, LOCK_TOKEN: term, LOCK_TERM: term },
    signal: leader.signal,
    name: `leadership of ${leader.key}`,
    release: () => leader.resign(),
  };
}
