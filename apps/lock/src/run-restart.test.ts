import { LockdProcess } from "@lock/testkit";
import { expect, it } from "vitest";
import { eventually, LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";

// lock run --wait while lockd is down: the wait covers a restart (the command runs once lockd is
// back), and lock says on stderr why it is waiting; a wait shorter than the outage exits 83.

const SAYS_WAITING = "cannot reach lockd";

it("lock run --wait waits through a lockd restart and then runs the command", async () => {
  await using lockd = await LockdProcess.start();
  const address = lockd.address;
  await lockd.kill("SIGKILL");
  using cli = LockCli.start(
    [
      "run",
      `restart-${process.pid}`,
      "--wait",
      "30s",
      "--",
      "node",
      "-e",
      'console.log("ran", process.env.LOCK_TOKEN)',
    ],
    { LOCK_SERVERS: address },
  );
  let exited = false;
  void cli.exited.then(() => (exited = true));
  // It tried, found no lockd, and keeps trying within --wait (it does not exit 83 at once).
  await eventually(() => exited || cli.stderr.join("").includes(SAYS_WAITING));
  expect(cli.stderr.join("")).toContain(
    `${SAYS_WAITING} (${address}: ECONNREFUSED); trying again until --wait 30.0s runs out`,
  );
  await lockd.restart();
  expect(await cli.status()).toBe(0);
  expect(cli.stdout.find((line) => line.startsWith("ran "))).toMatch(/^ran \d+$/);
});

it("lock run --wait exits 83 when lockd stays down for the whole wait", async () => {
  await using lockd = await LockdProcess.start();
  const address = lockd.address;
  await lockd.kill("SIGKILL");
  const result = await LockCli.run(
    ["run", `down-${process.pid}`, "--wait", "300ms", "--", "node", "-e", 'console.log("ran")'],
    {
      LOCK_SERVERS: address,
    },
  );
  expect(result.code).toBe(EXIT_CODES.NO_SERVER.status);
  expect(result.stdout).not.toContain("ran");
  expect(result.stderr).toContain(SAYS_WAITING);
  expect(result.stderr).toContain("no lockd server could be reached: connect ECONNREFUSED");
});
