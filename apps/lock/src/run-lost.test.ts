import { LineClient, LockdProcess } from "@lock/testkit";
import { expect, it } from "vitest";
import { eventually, LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";

// A command that ignores SIGTERM: lock must escalate to SIGKILL after --kill-after.
const STUBBORN = `process.on("SIGTERM", () => console.log("got SIGTERM")); console.log("ready " + process.pid);
setInterval(() => {}, 1000);`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops lockd (SIGSTOP) until lock exits, and returns lock's exit status. A stopped lockd answers
 * nothing: the lease cannot be renewed and runs out on the client's clock.
 */
async function statusWithLockdStopped(lockd: LockdProcess, cli: LockCli): Promise<number | null> {
  lockd.pause();
  try {
    return await cli.status();
  } finally {
    lockd.resume();
  }
}

it("a lost lock stops the command (SIGTERM, then SIGKILL) and exits 82", async () => {
  await using lockd = await LockdProcess.start();
  const key = `lost-${process.pid}`;
  using cli = LockCli.start(
    ["run", key, "--lease", "1s", "--kill-after", "300ms", "--", "node", "-e", STUBBORN],
    {
      LOCK_SERVERS: lockd.address,
    },
  );
  const pid = Number((await cli.line((line) => line.startsWith("ready "))).split(" ")[1]);
  expect(await statusWithLockdStopped(lockd, cli)).toBe(EXIT_CODES.LOCK_LOST.status);
  expect(cli.stdout).toContain("got SIGTERM");
  expect(cli.stderr.join("")).toMatch(/lock "lost-\d+" \(token \d+\) lost: .*; stopping the command/);
  // lock waited for the command to end: SIGKILL, since it ignored SIGTERM.
  expect(alive(pid)).toBe(false);
  // lockd freed the key when the lease ran out there too.
  using client = await LineClient.connect(lockd.port);
  await eventually(async () => /^Y /.test(await client.request(`Y ${key} 30`)));
});

it("a lost lock stops every process of the command's group, not only the one lock started", async () => {
  await using lockd = await LockdProcess.start();
  // sh starts a helper in the background and waits; both must go when the lock is lost.
  const script = `node -e 'console.log("helper " + process.pid); setInterval(() => {}, 1000)' & wait`;
  using cli = LockCli.start(["run", `lost-group-${process.pid}`, "--lease", "1s", "--", "sh", "-c", script], {
    LOCK_SERVERS: lockd.address,
  });
  const helper = Number((await cli.line((line) => line.startsWith("helper "))).split(" ")[1]);
  expect(await statusWithLockdStopped(lockd, cli)).toBe(EXIT_CODES.LOCK_LOST.status);
  await eventually(() => !alive(helper));
});
