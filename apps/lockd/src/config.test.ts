import { describe, expect, it } from "vitest";
import { ConfigError } from "./address.js";
import { type LockdConfig, parseConfig, usage } from "./config.js";

const files: Record<string, string> = {
  "/secrets/token": "s3cret-token-of-26-letters\n",
  "/secrets/short": "s3cret-token\n",
  "/tls/cert.pem": "CERT",
  "/tls/key.pem": "KEY",
};
const readFile = (path: string) => {
  const content = files[path];
  if (content === undefined) throw Object.assign(new Error("no such file"), { code: "ENOENT" });
  return Buffer.from(content);
};

function config(argv: string[], env: NodeJS.ProcessEnv = {}): LockdConfig {
  const parsed = parseConfig(argv, env, readFile);
  if (parsed.help) throw new Error("unexpected --help");
  return parsed.config;
}

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
    expect(() => config(["--max-lease=-1"])).toThrow(/non-negative number/);
    expect(() => config(["--max-keys", "lots"])).toThrow(/non-negative number/);
    expect(() => config(["--bogus"])).toThrow(ConfigError);
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
    ]) {
      expect(usage()).toContain(flag);
    }
  });
});
