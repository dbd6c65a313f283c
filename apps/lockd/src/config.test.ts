import { describe, expect, it } from "vitest";
import { ConfigError } from "./address.js";
import { parseConfig, usage } from "./config.js";
import { configOver } from "./config.test.support.js";

const files: Record<string, string> = {
  "/secrets/token": "s3cret-token-of-26-letters\n",
  "/secrets/short": "s3cret-token\n",
  "/tls/cert.pem": "CERT",
  "/tls/key.pem": "KEY",
};
const { readFile, config } = configOver(files);

describe("lockd configuration", () => {
  it("defaults to loopback, port 7420 and ./.lockd, no admin, no auth", () => {
    const c = config([]);
    expect(c.listen).toEqual({ host: "127.0.0.1", port: 7420 });
    expect(c.dataDir).toBe(".lockd");
    expect(c.admin).toBeUndefined();
    expect(c.authToken).toBeUndefined();
    expect(c.limits).toEqual({});
  });

  it("reads flags, and LOCKD_* variables where no flag is given", () => {
    const c = config(["--listen", "[::1]:9000", "--max-lease", "60", "--max-pending", "5"], {
      LOCKD_LISTEN: "127.0.0.1:1",
      LOCKD_DATA_DIR: "/var/lib/lockd",
      LOCKD_IDLE_TIMEOUT: "0.5",
    });
    expect(c.listen).toEqual({ host: "::1", port: 9000 });
    expect(c.dataDir).toBe("/var/lib/lockd");
    expect(c.limits).toEqual({ maxLeaseMs: 60_000, maxPendingPerConnection: 5, idleTimeoutMs: 500 });
  });

  it("reads --semaphores (PATTERN=N,...) and refuses a malformed one naming where it came from", () => {
    expect(config([]).semaphores).toEqual([]);
    expect(config(["--semaphores", "tenant:*=5,reports:daily=2,a=b=3"]).semaphores).toEqual([
      { pattern: "tenant:*", limit: 5 },
      { pattern: "reports:daily", limit: 2 },
      { pattern: "a=b", limit: 3 },
    ]);
    expect(config([], { LOCKD_SEMAPHORES: "jobs:*=1" }).semaphores).toEqual([
      { pattern: "jobs:*", limit: 1 },
    ]);
    expect(() => config(["--semaphores", "tenant:*=0"])).toThrow(
      /^--semaphores: "tenant:\*=0" is not PATTERN=N/,
    );
    expect(() => config(["--semaphores", "te*nant=2"])).toThrow(
      /a pattern is a key, or a key prefix and a final \*/,
    );
    expect(() => config([], { LOCKD_SEMAPHORES: "x=1,x=2" })).toThrow(
      /^LOCKD_SEMAPHORES \(--semaphores\): "x" is given twice/,
    );
  });

  it("refuses a non-loopback address without an auth token unless --insecure", () => {
    expect(() => config(["--listen", "0.0.0.0:7420"])).toThrow(ConfigError);
    expect(config(["--listen", "0.0.0.0:7420", "--insecure"]).insecure).toBe(true);
    expect(config(["--listen", "0.0.0.0:7420", "--auth-token-file", "/secrets/token"]).authToken).toBe(
      "s3cret-token-of-26-letters",
    );
    expect(config(["--listen", "10.0.0.5:7420"], { LOCKD_AUTH_TOKEN: "0123456789abcdef" }).authToken).toBe(
      "0123456789abcdef",
    );
  });

  it("refuses a non-loopback admin server without an admin token unless --insecure", () => {
    for (const admin of ["0.0.0.0:7421", "[::]:7421", "10.0.0.5:7421", "lockd-a.internal:7421"]) {
      expect(() => config(["--admin", admin])).toThrow(/^--admin: refusing to serve the admin HTTP server/);
      expect(config(["--admin", admin, "--insecure"]).admin).toBeDefined();
    }
    expect(() => config([], { LOCKD_ADMIN: "0.0.0.0:7421" })).toThrow(/^LOCKD_ADMIN \(--admin\): refusing/);
    const withToken = config(["--admin", "0.0.0.0:7421", "--admin-token-file", "/secrets/token"]);
    expect(withToken.adminToken).toBe("s3cret-token-of-26-letters");
    expect(config(["--admin", "[::]:7421"], { LOCKD_ADMIN_TOKEN: "0123456789abcdef" }).adminToken).toBe(
      "0123456789abcdef",
    );
    expect(() => config(["--admin", "[::1]:7421"], { LOCKD_ADMIN_TOKEN: "short" })).toThrow(
      /^the admin token from LOCKD_ADMIN_TOKEN is shorter than 16 bytes/,
    );
    expect(config(["--admin", "127.0.0.1:7421"]).adminToken).toBeUndefined();
  });

  it("never puts a secret into an error message", () => {
    files["/secrets/bad"] = "has a space";
    expect(() => config(["--auth-token-file", "/secrets/bad"])).toThrow(/printable ASCII/);
    try {
      config(["--auth-token-file", "/secrets/bad"]);
    } catch (error) {
      expect(String(error)).not.toContain("has a space");
    }
    expect(() => config(["--auth-token-file", "/missing"])).toThrow(/cannot read \/missing: ENOENT/);
    expect(() => config(["--auth-token-file", "/secrets/token"], { LOCKD_AUTH_TOKEN: "x" })).toThrow(
      /not both/,
    );
  });

  it("refuses a secret shorter than 16 bytes, naming where it came from but not what it is", () => {
    const refusals = [
      [
        () => config(["--auth-token-file", "/secrets/short"]),
        /--auth-token-file \/secrets\/short is shorter/,
      ],
      [
        () => config([], { LOCKD_AUTH_TOKEN_FILE: "/secrets/short" }),
        /LOCKD_AUTH_TOKEN_FILE \(--auth-token-file\) \/secrets\/short is shorter than 16 bytes/,
      ],
      [
        () => config([], { LOCKD_AUTH_TOKEN: "s3cret-token" }),
        /from LOCKD_AUTH_TOKEN is shorter than 16 bytes/,
      ],
      [() => config([], { LOCKD_AUTH_TOKEN: "" }), /from LOCKD_AUTH_TOKEN is shorter than 16 bytes/],
    ] as const;
    for (const [parse, message] of refusals) {
      expect(parse).toThrow(ConfigError);
      expect(parse).toThrow(message);
      expect(parse).not.toThrow(/s3cret-token/);
    }
  });

  it("loads TLS files only as a pair", () => {
    expect(config(["--tls-cert", "/tls/cert.pem", "--tls-key", "/tls/key.pem"]).tls).toEqual({
      cert: Buffer.from("CERT"),
      key: Buffer.from("KEY"),
    });
    expect(() => config(["--tls-cert", "/tls/cert.pem"])).toThrow(/go together/);
  });

  it("rejects malformed values and unknown flags with a clear error", () => {
    expect(() => config(["--listen", "7420"])).toThrow(/expected host:port/);
    expect(() => config(["--listen", "host:99999"])).toThrow(/expected host:port/);
    expect(() => config([], { LOCKD_ADMIN: "7421" })).toThrow(/^LOCKD_ADMIN \(--admin\): expected host:port/);
    expect(() => config([], { LOCKD_PEERS: "a:1,b" })).toThrow(
      /^LOCKD_PEERS \(--peers\): expected host:port/,
    );
    expect(() => config(["--max-lease=-1"])).toThrow(/non-negative number/);
    expect(() => config(["--max-keys", "lots"])).toThrow(/expected a whole number/);
    expect(() => config(["--bogus"])).toThrow(ConfigError);
  });

  it("refuses durations Node timers cannot wait, naming the flag or the variable it came from", () => {
    const tooLong = "2147483.648"; // 2^31 ms: Node fires such a timer after 1 ms
    for (const flag of [
      "idle-timeout",
      "auth-timeout",
      "shutdown-grace",
      "max-lease",
      "max-wait",
      "heartbeat-interval",
      "peer-timeout",
    ]) {
      const variable = `LOCKD_${flag.toUpperCase().replaceAll("-", "_")}`;
      expect(() => config([`--${flag}`, tooLong])).toThrow(
        new RegExp(`^--${flag}: must be at most 2147483.647 s`),
      );
      expect(() => config([], { [variable]: tooLong })).toThrow(
        new RegExp(`^${variable} \\(--${flag}\\): must be at most 2147483.647 s`),
      );
    }
    expect(() => config(["--idle-timeout", "4294968"])).toThrow(/--idle-timeout: must be at most/);
    expect(() => config(["--max-lease", "99999999999999999999999"])).toThrow(/--max-lease: must be at most/);
    const longest = config(["--idle-timeout", "2147483.647", "--shutdown-grace", "2147483.647"]);
    expect(longest.limits.idleTimeoutMs).toBe(2 ** 31 - 1);
    expect(longest.shutdownGraceMs).toBe(2 ** 31 - 1);
  });

  it("refuses limits no server could work with", () => {
    const refusals: Array<[string[], RegExp]> = [
      [["--max-line-bytes", "0"], /^--max-line-bytes: must be at least 1152 bytes/],
      [["--max-line-bytes", "1"], /^--max-line-bytes: must be at least 1152 bytes/],
      [["--max-key-bytes", "0"], /^--max-key-bytes: must be at least 1, got "0"/],
      [["--max-key-bytes", "64", "--max-line-bytes", "191"], /^--max-line-bytes: must be at least 192 bytes/],
      [["--max-key-bytes", "65536"], /^--max-line-bytes \(default 65536\): must be at least 65664 bytes/],
      [["--max-connections", "0"], /^--max-connections: must be at least 1/],
      [["--max-unauthenticated", "0"], /^--max-unauthenticated: must be at least 1/],
      [["--max-pending", "0"], /^--max-pending: must be at least 1/],
      [["--max-waiters-per-key", "0"], /^--max-waiters-per-key: must be at least 1/],
      [["--max-keys", "0"], /^--max-keys: must be at least 1/],
      [["--max-keys", "1.5"], /^--max-keys: expected a whole number/],
      [["--max-keys", "9007199254740992"], /^--max-keys: must be at most 9007199254740991/],
      [["--max-lease", "0"], /^--max-lease: must be at least 0.001 s/],
      [["--max-wait", "0"], /^--max-wait: must be at least 0.001 s/],
      [["--auth-timeout", "0"], /^--auth-timeout: must be at least 0.001 s/],
      [["--heartbeat-interval", "0"], /^--heartbeat-interval: must be at least 0.001 s/],
      [["--peer-timeout", "0.1"], /^--peer-timeout: must be longer than --heartbeat-interval \(0.1 s\)/],
      [
        ["--heartbeat-interval", "0.5"],
        /^--peer-timeout \(default 0.5\): must be longer than --heartbeat-interval/,
      ],
    ];
    for (const [argv, message] of refusals) expect(() => config(argv), argv.join(" ")).toThrow(message);
    expect(() => config([], { LOCKD_MAX_LINE_BYTES: "1" })).toThrow(
      /^LOCKD_MAX_LINE_BYTES \(--max-line-bytes\): must be at least 1152 bytes/,
    );
    // The smallest workable values are accepted; an idle timeout of 0 means never.
    const smallest = config(
      [
        ["--max-key-bytes", "1"],
        ["--max-line-bytes", "129"],
        ["--max-connections", "1"],
        ["--idle-timeout", "0"],
        ["--heartbeat-interval", "0.001"],
        ["--peer-timeout", "0.002"],
      ].flat(),
    );
    expect(smallest.limits).toMatchObject({
      maxKeyBytes: 1,
      maxLineBytes: 129,
      maxConnections: 1,
      idleTimeoutMs: 0,
    });
    expect([smallest.heartbeatMs, smallest.peerTimeoutMs]).toEqual([1, 2]);
  });

  it("refuses a line limit too short for H with the auth token", () => {
    const token = "t".repeat(200);
    expect(() =>
      config(["--max-key-bytes", "1", "--max-line-bytes", "202"], { LOCKD_AUTH_TOKEN: token }),
    ).toThrow(/^--max-line-bytes: too short for `H <auth token>`/);
    expect(
      config(["--max-key-bytes", "1", "--max-line-bytes", "203"], { LOCKD_AUTH_TOKEN: token }).limits
        .maxLineBytes,
    ).toBe(203);
  });

  it("answers --version before reading any other setting", () => {
    expect(parseConfig(["--version"], {}, readFile)).toEqual({ help: false, version: true });
    expect(parseConfig(["--version", "--listen", "0.0.0.0:1"], {}, readFile)).toEqual({
      help: false,
      version: true,
    });
    expect(usage()).toContain("--version");
  });

  it("refuses an unknown log level, naming the flag or variable it came from", () => {
    expect(config([]).logLevel).toBe("info");
    expect(config(["--log-level", "debug"]).logLevel).toBe("debug");
    expect(config([], { LOCKD_LOG_LEVEL: "silent" }).logLevel).toBe("silent");
    expect(() => config(["--log-level", "bogus"])).toThrow(ConfigError);
    expect(() => config(["--log-level", "bogus"])).toThrow(
      /^--log-level: must be one of fatal, error, warn, info, debug, trace, silent, got "bogus"$/,
    );
    expect(() => config([], { LOCKD_LOG_LEVEL: "INFO" })).toThrow(
      /^LOCKD_LOG_LEVEL \(--log-level\): must be/,
    );
  });

  it("turns the fast I/O paths on with --fast-io or LOCKD_FAST_IO, off by default", () => {
    expect(config([]).fastIo).toBe(false);
    expect(config(["--fast-io"]).fastIo).toBe(true);
    expect(config([], { LOCKD_FAST_IO: "1" }).fastIo).toBe(true);
    expect(config([], { LOCKD_FAST_IO: "true" }).fastIo).toBe(true);
    expect(config([], { LOCKD_FAST_IO: "0" }).fastIo).toBe(false);
  });

  it("documents every flag in --help", () => {
    expect(parseConfig(["--help"], {}, readFile)).toEqual({ help: true });
    for (const flag of [
      "--listen",
      "--data-dir",
      "--admin",
      "--auth-token-file",
      "--tls-cert",
      "--max-connections",
      "--insecure",
      "--fast-io",
    ]) {
      expect(usage()).toContain(flag);
    }
  });
});

describe("lockd configuration: the peer token", () => {
  const peers = ["--peers", "127.0.0.1:7420,127.0.0.1:7421"];
  const peerToken = "peer-token-of-the-cluster";

  it("refuses --peers without a peer token unless --insecure", () => {
    expect(() => config(peers)).toThrow(ConfigError);
    expect(() => config(peers)).toThrow(
      /^--peers: refusing to run a cluster without a peer token: set --peer-token-file \(or LOCKD_PEER_TOKEN\), or pass --insecure$/,
    );
    expect(() => config([], { LOCKD_PEERS: "127.0.0.1:7420" })).toThrow(/^LOCKD_PEERS \(--peers\): refusing/);
    expect(config([...peers, "--insecure"]).peerToken).toBeUndefined();
    expect(config(peers, { LOCKD_INSECURE: "1" }).peers).toEqual(["127.0.0.1:7420", "127.0.0.1:7421"]);
    // A single node needs none.
    expect(config([]).peerToken).toBeUndefined();
  });

  it("reads --coordinator with --cluster-name and --coordinator-lease (default 2 s), and refuses what cannot work", () => {
    const cluster = [...peers, "--insecure"];
    expect(config(cluster).coordinator).toBeUndefined();
    expect(
      config([...cluster, "--coordinator", "etcd://127.0.0.1:2379/lock", "--cluster-name", "eu-1"])
        .coordinator,
    ).toEqual({
      url: "etcd://127.0.0.1:2379/lock",
      origin: "--coordinator",
      clusterName: "eu-1",
      leaseMs: 2_000,
    });
    expect(
      config(cluster, {
        LOCKD_COORDINATOR: "postgres://lockd@db/locks",
        LOCKD_CLUSTER_NAME: "a",
        LOCKD_COORDINATOR_LEASE: "5",
      }).coordinator?.leaseMs,
    ).toBe(5_000);
    expect(() => config(["--coordinator", "etcd://h:1/p", "--cluster-name", "a"])).toThrow(
      /^--coordinator needs --peers/,
    );
    expect(() => config([...cluster, "--coordinator", "etcd://h:1/p"])).toThrow(
      /^--coordinator needs --cluster-name$/,
    );
    expect(() => config([...cluster, "--cluster-name", "a"])).toThrow(/^--cluster-name needs --coordinator$/);
    expect(() => config([...cluster, "--coordinator", "etcd://h:1/p", "--cluster-name", "a b"])).toThrow(
      /^--cluster-name: letters, digits/,
    );
    expect(() =>
      config([
        ...cluster,
        "--coordinator",
        "etcd://h:1/p",
        "--cluster-name",
        "a",
        "--coordinator-lease",
        "0.5",
      ]),
    ).toThrow(/--coordinator-lease/);
    // A password on the command line is visible to every user of the machine; in the environment it is not.
    expect(() =>
      config([...cluster, "--coordinator", "postgres://lockd:hunter2@db/locks", "--cluster-name", "a"]),
    ).toThrow(/^--coordinator: holds a password/);
    expect(() =>
      config([...cluster, "--coordinator", "postgres://lockd:hunter2@db/locks", "--cluster-name", "a"]),
    ).not.toThrow(/hunter2/);
    expect(
      config(cluster, { LOCKD_COORDINATOR: "postgres://lockd:pw@db/locks", LOCKD_CLUSTER_NAME: "a" })
        .coordinator?.url,
    ).toBe("postgres://lockd:pw@db/locks");
  });

  it("reads the peer token from a file or LOCKD_PEER_TOKEN, with the auth token's rules", () => {
    expect(config([...peers, "--peer-token-file", "/secrets/token"]).peerToken).toBe(
      "s3cret-token-of-26-letters",
    );
    expect(config(peers, { LOCKD_PEER_TOKEN_FILE: "/secrets/token" }).peerToken).toBe(
      "s3cret-token-of-26-letters",
    );
    expect(config(peers, { LOCKD_PEER_TOKEN: ` ${peerToken}\n` }).peerToken).toBe(peerToken);
    const refusals = [
      [
        () => config(["--peer-token-file", "/secrets/short"]),
        /peer token from --peer-token-file \/secrets\/short is shorter than 16 bytes/,
      ],
      [
        () => config([], { LOCKD_PEER_TOKEN: "a b c d e f g h i" }),
        /peer token from LOCKD_PEER_TOKEN must be printable ASCII/,
      ],
      [
        () => config(["--peer-token-file", "/secrets/token"], { LOCKD_PEER_TOKEN: peerToken }),
        /set either --peer-token-file or LOCKD_PEER_TOKEN, not both/,
      ],
      [() => config(["--peer-token-file", "/secrets/missing"]), /cannot read \/secrets\/missing: ENOENT/],
    ] as const;
    for (const [parse, message] of refusals) {
      expect(parse).toThrow(ConfigError);
      expect(parse).toThrow(message);
      expect(parse).not.toThrow(/s3cret-token/);
    }
  });

  it("refuses a peer token equal to the auth or admin token, without showing it", () => {
    const same = { LOCKD_PEER_TOKEN: peerToken };
    expect(() => config(peers, { ...same, LOCKD_AUTH_TOKEN: peerToken })).toThrow(
      /^the peer token must differ from the auth token: clients would hold it$/,
    );
    expect(() => config(peers, { ...same, LOCKD_ADMIN_TOKEN: peerToken })).toThrow(
      /^the peer token must differ from the admin token/,
    );
    const c = config(peers, { ...same, LOCKD_AUTH_TOKEN: "another-token-for-clients" });
    expect([c.peerToken, c.authToken]).toEqual([peerToken, "another-token-for-clients"]);
  });

  it("documents --peer-token-file in --help", () => {
    expect(usage()).toContain("--peer-token-file");
    expect(usage()).toContain("LOCKD_PEER_TOKEN_FILE");
  });
});
