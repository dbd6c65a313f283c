import { describe, expect, it } from "vitest";
import { parseCommandLine, type RunCommand } from "./args.js";
import { formatDuration, MAX_CLI_DURATION_MS, parseDuration } from "./duration.js";
import { CliError } from "./errors.js";

function usage(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    parseCommandLine(argv, env);
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).code).toBe("USAGE");
    expect((error as CliError).status).toBe(2);
    return (error as Error).message;
  }
  throw new Error(`parsed: ${argv.join(" ")}`);
}

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseCommandLine(argv, env) as RunCommand;

describe("parseDuration", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["1.5s", 1_500],
    ["0.1s", 100],
    ["2m", 120_000],
    ["1.5m", 90_000],
    ["1h", 3_600_000],
    ["30", 30_000],
    ["0.25", 250],
    ["0", 0],
    ["2147483647ms", MAX_CLI_DURATION_MS],
  ])("%s is %d ms", (text, ms) => {
    expect(parseDuration(text, "--lease")).toBe(ms);
  });

  it.each(["", "s", "-1s", "1.5ms", "0.0001s", "1e3", "10 s", "1d", "1.s", "2147483648ms", "30S"])(
    "refuses %j, naming the flag",
    (text) => {
      expect(() => parseDuration(text, "--lease")).toThrow(/--lease/);
    },
  );

  it("formats durations for people", () => {
    expect([850, 12_345, 245_000, 7_380_000, 90_000_000].map(formatDuration)).toEqual([
      "850ms",
      "12.3s",
      "4m05s",
      "2h03m",
      "1d01h",
    ]);
  });
});

describe("parseCommandLine: lock run", () => {
  it("takes the key, the flags and the command after --, untouched", () => {
    expect(
      run(["run", "jobs:nightly", "--lease", "10s", "--", "sh", "-c", "echo --lease $LOCK_TOKEN"]),
    ).toMatchObject({
      kind: "run",
      key: "jobs:nightly",
      leaseMs: 10_000,
      waitMs: undefined,
      killAfterMs: 5_000,
      command: ["sh", "-c", "echo --lease $LOCK_TOKEN"],
    });
  });

  it("has defaults: 30 s lease, wait as long as it takes, SIGKILL 5 s after SIGTERM", () => {
    expect(run(["run", "k", "--", "true"])).toMatchObject({
      leaseMs: 30_000,
      waitMs: undefined,
      killAfterMs: 5_000,
    });
  });

  it("flags may come before the command name and the key", () => {
    expect(
      run(["--servers", "a:1", "run", "--wait", "2m", "k", "--kill-after", "1s", "--", "true"]),
    ).toMatchObject({
      key: "k",
      waitMs: 120_000,
      killAfterMs: 1_000,
      connection: { servers: ["a:1"] },
    });
  });

  it("--no-wait tries once", () => {
    expect(run(["run", "k", "--no-wait", "--", "true"]).waitMs).toBe("none");
  });

  it.each([
    [["run", "--", "true"], /needs a KEY/],
    [["run", "k"], /put the command after --/],
    [["run", "k", "true"], /put the command after --/],
    [["run", "k", "--"], /no command after --/],
    [["run", "k", "--wait", "1s", "--no-wait", "--", "true"], /--wait or --no-wait/],
    [["run", "k", "--wait", "0", "--", "true"], /--wait must be more than 0/],
    [["run", "k", "--lease", "0s", "--", "true"], /--lease must be at least 1s \(got 0s\)/],
    [["run", "k", "--lease", "1ms", "--", "true"], /--lease must be at least 1s \(got 1ms\)/],
    [["run", "k", "--lease", "999ms", "--", "true"], /--lease must be at least 1s/],
    [["run", "k", "--lease", "soon", "--", "true"], /--lease: expected a duration/],
    [["run", "a b", "--", "true"], /^KEY "a b" contains a space at index 1 \(a key may not contain spaces/],
    [["run", "", "--", "true"], /^KEY "" is empty$/],
    [["run", "k\r", "--", "true"], /^KEY "k\\r" contains the control character U\+000D at index 1/],
    [["run", "k", "--json", "--", "true"], /--json is not a flag of lock run/],
    [["run", "k", "--leese", "1s", "--", "true"], /Unknown option '--leese'/],
    [["status", "--", "true"], /takes no command/],
    [["frobnicate"], /unknown command "frobnicate"/],
    [[], /a command is missing/],
  ])("%j is a usage error", (argv, message) => {
    expect(usage(argv)).toMatch(message);
  });

  it("takes a lease of 1s, the shortest lock run can keep", () => {
    expect(run(["run", "k", "--lease", "1s", "--", "true"]).leaseMs).toBe(1_000);
  });

  it.each([
    [
      ["run", "k", "--wait", "-1", "--", "true"],
      '--wait: expected a duration such as 500ms, 30s, 2m or 1h, got "-1"',
    ],
    [
      ["run", "k", "--lease", "-5s", "--", "true"],
      '--lease: expected a duration such as 500ms, 30s, 2m or 1h, got "-5s"',
    ],
    [
      ["run", "k", "--wait=-1", "--", "true"],
      '--wait: expected a duration such as 500ms, 30s, 2m or 1h, got "-1"',
    ],
    [["run", "k", "--wait", "--no-wait", "--", "true"], "--wait needs a value, got the flag --no-wait"],
    [["run", "k", "--", "true", "--wait"], undefined],
    [["status", "--timeout"], "--timeout needs a value"],
    [["status", "--json=yes"], "--json takes no value"],
    [
      ["locks", "--admin", "a:1", "--prefix", "-x"],
      '--prefix: "-x" starts with a dash; write --prefix=-x if you mean it',
    ],
  ])("explains a flag's missing or dashed value in lock's words: %j", (argv, message) => {
    if (message === undefined) {
      // After --, everything is the command's.
      expect(run(argv).command).toEqual(["true", "--wait"]);
      return;
    }
    const text = usage(argv);
    expect(text).toBe(message);
    expect(text).not.toMatch(/ambiguous|Did you forget|XYZ/);
  });
});

describe("parseCommandLine: settings from flags and LOCK_* variables", () => {
  it("reads LOCK_SERVERS and the other variables; a flag wins over its variable", () => {
    const env = {
      LOCK_SERVERS: "10.0.0.5:7420, 10.0.0.6:7420",
      LOCK_AUTH_TOKEN_FILE: "/etc/lock/token",
      LOCK_ADMIN: "10.0.0.5:7421",
      LOCK_TLS_CA_FILE: "/etc/lock/ca.pem",
    };
    expect(run(["run", "k", "--", "true"], env).connection).toMatchObject({
      servers: ["10.0.0.5:7420", "10.0.0.6:7420"],
      authTokenFile: { value: "/etc/lock/token", origin: "LOCK_AUTH_TOKEN_FILE" },
      tls: true,
      tlsCaFile: "/etc/lock/ca.pem",
    });
    const flagged = run(
      ["run", "k", "--servers", "[::1]:7420", "--auth-token-file", "/t", "--", "true"],
      env,
    );
    expect(flagged.connection).toMatchObject({
      servers: ["[::1]:7420"],
      authTokenFile: { value: "/t", origin: "--auth-token-file" },
    });
  });

  it("TLS is off unless asked for: --tls, LOCK_TLS=1, or a CA or client certificate", () => {
    expect(run(["run", "k", "--", "true"]).connection.tls).toBe(false);
    expect(run(["run", "k", "--tls", "--", "true"]).connection.tls).toBe(true);
    expect(run(["run", "k", "--", "true"], { LOCK_TLS: "1" }).connection.tls).toBe(true);
    expect(run(["run", "k", "--", "true"], { LOCK_TLS: "0" }).connection.tls).toBe(false);
    expect(usage(["run", "k", "--", "true"], { LOCK_TLS: "yes" })).toMatch(/LOCK_TLS must be 1 or 0/);
    expect(usage(["run", "k", "--tls-cert-file", "c.pem", "--", "true"])).toMatch(
      /both --tls-cert-file and --tls-key-file/,
    );
  });

  it("an empty variable counts as unset", () => {
    expect(run(["run", "k", "--", "true"], { LOCK_SERVERS: "" }).connection.servers).toEqual([]);
  });

  it("refuses an address that is not host:port, naming the flag and variable", () => {
    expect(usage(["status"], { LOCK_SERVERS: "10.0.0.5" })).toMatch(
      /--servers \(LOCK_SERVERS\): expected host:port, got "10.0.0.5"/,
    );
    expect(usage(["status", "--admin", "a:1,"])).toMatch(/--admin \(LOCK_ADMIN\)/);
  });
});

describe("parseCommandLine: status, locks, help, version", () => {
  it("lock status [--json] [--timeout]", () => {
    expect(parseCommandLine(["status", "--json", "--timeout", "500ms"], {})).toMatchObject({
      kind: "status",
      json: true,
      connection: { timeoutMs: 500 },
    });
  });

  it("lock locks needs --admin; --prefix and --limit (1 to 1000000, default 100)", () => {
    expect(usage(["locks"])).toMatch(/--admin/);
    expect(parseCommandLine(["locks", "--admin", "a:1"], {})).toMatchObject({
      kind: "locks",
      prefix: "",
      limit: 100,
    });
    expect(
      parseCommandLine(["locks", "--prefix", "jobs:", "--limit", "5000"], { LOCK_ADMIN: "a:1" }),
    ).toMatchObject({
      prefix: "jobs:",
      limit: 5000,
    });
    for (const limit of ["0", "1000001", "ten", "-1", "1.5"]) {
      expect(usage(["locks", "--admin", "a:1", "--limit", limit])).toMatch(/--limit/);
    }
  });

  it("--help and --version win over everything else but an unknown command", () => {
    expect(parseCommandLine(["--help"], {})).toEqual({ kind: "help", command: undefined });
    expect(parseCommandLine(["run", "--help"], {})).toEqual({ kind: "help", command: "run" });
    expect(parseCommandLine(["--version", "status"], {})).toEqual({ kind: "version" });
    expect(usage(["nope", "--help"])).toMatch(/unknown command/);
  });
});
