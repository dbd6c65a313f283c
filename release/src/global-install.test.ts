import { execFile, execFileSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@lock/testkit";
import { parse as parseToml, stringify as toToml } from "smol-toml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { InstalledLockd } from "./installed-lockd.js";
import { LocalRegistry } from "./local-registry.js";

const UNIT = join(REPO_ROOT, "deploy", "systemd", "lockd.service");
/** Where npm puts lockd with its default global prefix: the unit's ExecStart runs it from there. */
const UNIT_LOCKD = "/usr/local/bin/lockd";
const hasSystemdAnalyze = (() => {
  try {
    execFileSync("systemd-analyze", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    console.warn(
      "skipping the systemd unit's checks: systemd-analyze is not installed (Debian package systemd; .ci/deploy-tools.sh installs it)",
    );
    return false;
  }
})();

/**
 * The unit's ExecStart (continuation lines joined) as arguments, for lockd installed in the prefix:
 * the specifiers %S (state directories) and %d (credentials) replaced by scratch folders.
 */
function unitCommand(replacements: Record<string, string>): string[] {
  const unit = readFileSync(UNIT, "utf8").replace(/\\\n\s*/g, " ");
  const line = /^ExecStart=(.*)$/m.exec(unit)![1]!;
  return line
    .split(/\s+/)
    .filter(Boolean)
    .map((word) =>
      Object.entries(replacements).reduce((text, [from, to]) => text.replaceAll(from, to), word),
    );
}

/**
 * The third documented path (docs/operations.md, "Install"): `npm install -g` of the packed lockd
 * and @lock/cli into a prefix of their own, outside the workspace, then a 3-node cluster started
 * from config files made from deploy/config/lockd.toml (one TOML, one YAML, one JSON), looked at
 * and used with the installed `lock`. The `@lock/*` dependencies come from a loopback registry
 * serving the packed tarballs (local-registry.ts), everything else from the usual registry.
 */
const run = promisify(execFile);
const packed = inject("packed");
const tarballOf = (name: string) => packed.find((entry) => entry.name === name)!.tarball;

let prefix: string;
let registry: LocalRegistry;
const nodes: InstalledLockd[] = [];
/** Three loopback "hosts" (127.a.b.11 to .13), all on lockd's standard ports: no port to pick or race for. */
const hostPrefix = `127.${randomInt(1, 255)}.${randomInt(0, 256)}`;
const hosts = [11, 12, 13].map((n) => `${hostPrefix}.${n}`);
const servers = hosts.map((host) => `${host}:7420`);

beforeAll(async () => {
  prefix = mkdtempSync(join(tmpdir(), "lockd-global-"));
  registry = await LocalRegistry.start(packed);
  await run(
    "npm",
    [
      ...["install", "--global", "--prefix", prefix, `--@lock:registry=${registry.url}`],
      ...["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
      tarballOf("lockd"),
      tarballOf("@lock/cli"),
    ],
    { cwd: prefix },
  );
});

afterAll(async () => {
  await Promise.all(nodes.map((node) => node.stop()));
  await registry?.stop();
  if (prefix !== undefined) rmSync(prefix, { recursive: true, force: true });
});

/** The installed bins, with the running Node first on the PATH (their shebang is `env node`). */
const bin = (name: string) => join(prefix, "bin", name);
const env = () => ({ PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` });

/** One node's config: the example's settings, with this node's addresses and scratch paths. */
function nodeConfig(index: number, secrets: string): Record<string, unknown> {
  const example = parseToml(readFileSync(join(REPO_ROOT, "deploy", "config", "lockd.toml"), "utf8"));
  return {
    ...example,
    listen: servers[index],
    peers: servers,
    admin: `${hosts[index]}:7421`,
    "data-dir": join(prefix, `data-${index}`),
    "auth-token-file": join(secrets, "auth-token"),
    "peer-token-file": join(secrets, "peer-token"),
    "admin-token-file": join(secrets, "admin-token"),
  };
}

describe("lockd installed globally from its packed tarball", () => {
  it("installs lockd and lock into the prefix, with nothing from the workspace", async () => {
    const { stdout } = await run(bin("lockd"), ["--version"], { env: env() });
    expect(stdout).toMatch(/^\d+\.\d+\.\d+/);
    const installed = join(prefix, "lib", "node_modules", "lockd");
    // Its dependencies resolve inside the prefix (npm's global layout), not from the repository.
    const { stdout: resolved } = await run(
      process.execPath,
      ["--input-type=module", "-e", 'console.log(import.meta.resolve("@lock/server"))'],
      { cwd: installed },
    );
    expect(resolved.trim()).toBe(`file://${installed}/node_modules/@lock/server/dist/index.js`);
  });

  it.skipIf(!hasSystemdAnalyze)(
    "has a systemd unit that verifies (systemd-analyze verify) and is hardened (security --offline)",
    async () => {
      // The unit as it stands on a machine where npm put lockd, with lockd where this install put it.
      const folder = mkdtempSync(join(prefix, "unit-"));
      const unit = join(folder, "lockd.service");
      writeFileSync(unit, readFileSync(UNIT, "utf8").replaceAll(UNIT_LOCKD, bin("lockd")));
      // verify exits 0 on some warnings (an unknown key is ignored): any output fails the check.
      const verify = await run("systemd-analyze", ["verify", unit]);
      expect(verify.stdout + verify.stderr).toBe("");
      // An exposure level of at most 2.0 ("OK"); the unit gets 1.4 with systemd 252.
      const security = await run("systemd-analyze", ["security", "--offline=true", "--threshold=20", unit]);
      expect(security.stdout).toMatch(/Overall exposure level for lockd\.service: [0-9.]+ OK/);
    },
  );

  it("starts a 3-node cluster from TOML, YAML and JSON config files (the first under the systemd unit's command line); lock status and lock run use it", async () => {
    const secrets = join(prefix, "etc");
    mkdirSync(secrets, { mode: 0o700 });
    for (const name of ["auth-token", "peer-token", "admin-token"]) {
      writeFileSync(join(secrets, name), `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    }
    const files = [
      ["lockd.toml", (config: Record<string, unknown>) => toToml(config)],
      ["lockd.yaml", (config: Record<string, unknown>) => toYaml(config)],
      ["lockd.json", (config: Record<string, unknown>) => JSON.stringify(config, null, 2)],
    ] as const;
    const paths = files.map(([name, format], index) => {
      const path = join(secrets, `node-${index}-${name}`);
      writeFileSync(path, format(nodeConfig(index, secrets)));
      return path;
    });
    // Node 0 runs the systemd unit's ExecStart: its flags (tokens from %d, data in %S/lockd) over the file.
    const credentials = join(prefix, "credentials");
    mkdirSync(credentials);
    for (const name of ["auth-token", "peer-token", "admin-token"])
      copyFileSync(join(secrets, name), join(credentials, name));
    const [command, ...unitArgs] = unitCommand({
      [UNIT_LOCKD]: bin("lockd"),
      "/etc/lockd/lockd.toml": paths[0]!,
      "%S": join(prefix, "state"),
      "%d": credentials,
    });
    const commands = paths.map((path, index) => (index === 0 ? unitArgs : ["--config", path]));
    nodes.push(
      ...(await Promise.all(commands.map((args) => InstalledLockd.start(command!, args, { env: env() })))),
    );
    expect(nodes[0]!.logs.find((line) => line.msg === "lockd ready")).toMatchObject({
      dataDir: join(prefix, "state", "lockd"),
    });
    // The first in --peers is the active once the nodes have heard each other; the others follow it.
    await nodes[0]!.waitForLog("serving");
    await Promise.all(nodes.slice(1).map((node) => node.waitForLog("following active")));

    const lockEnv = {
      ...env(),
      LOCK_SERVERS: servers.join(","),
      LOCK_AUTH_TOKEN_FILE: join(secrets, "auth-token"),
      LOCK_ADMIN: hosts.map((host) => `${host}:7421`).join(","),
      LOCK_ADMIN_TOKEN_FILE: join(secrets, "admin-token"),
    };
    const { stdout } = await run(bin("lock"), ["status", "--json"], { env: lockEnv });
    const status = JSON.parse(stdout);
    expect(status.active).toBe(servers[0]);
    expect(status.nodes.map((node: { role: string; state: string }) => [node.state, node.role])).toEqual([
      ["up", "active"],
      ["up", "standby"],
      ["up", "standby"],
    ]);
    const job = await run(
      bin("lock"),
      [
        "run",
        "jobs:nightly",
        "--no-wait",
        "--",
        process.execPath,
        "-e",
        "console.log(process.env.LOCK_TOKEN)",
      ],
      { env: lockEnv },
    );
    expect(job.stdout).toMatch(/^\d+\n$/);

    for (const node of nodes.splice(0)) expect(await node.stop()).toEqual({ code: 0, signal: null });
  });
});
