import { describe, expect, it } from "vitest";
import { ConfigError } from "./address.js";
import { configOver } from "./config.test.support.js";

/** A fake file system: the config files below, and the secrets they point at. */
const files: Record<string, string> = {
  "/secrets/peer": "peer-token-of-the-whole-cluster\n",
  "/etc/lockd/lockd.toml": `
listen = "127.0.0.1:7430"
data-dir = "/var/lib/lockd"
peers = ["127.0.0.1:7430", "127.0.0.1:7431"]
peer-token-file = "/secrets/peer"
peer-timeout = 0.3
heartbeat-interval = "0.05"
max-keys = 1000
insecure = false
`,
  "/etc/lockd/lockd.yaml": `
listen: 127.0.0.1:7430
data-dir: /var/lib/lockd
peers: [127.0.0.1:7430, 127.0.0.1:7431]
peer-token-file: /secrets/peer
peer-timeout: 0.3
heartbeat-interval: "0.05"
max-keys: 1000
insecure: false
`,
  "/etc/lockd/lockd.json": JSON.stringify({
    listen: "127.0.0.1:7430",
    "data-dir": "/var/lib/lockd",
    peers: "127.0.0.1:7430,127.0.0.1:7431",
    "peer-token-file": "/secrets/peer",
    "peer-timeout": 0.3,
    "heartbeat-interval": "0.05",
    "max-keys": 1000,
    insecure: false,
  }),
  "/etc/lockd/empty.yaml": "",
};
const { config } = configOver(files);

/** The message of the ConfigError that `run` throws. */
function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe("LOCKD_CONFIG");
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

/** A config file holding just `key = value` (TOML), at a path of its own. */
function tomlFile(key: string, value: string): string {
  const path = `/tmp/${key}.toml`;
  files[path] = `${key} = ${value}\n`;
  return path;
}

describe("lockd config file (--config)", () => {
  it("reads the same settings from TOML, YAML and JSON as from the flags", () => {
    const fromFlags = config([
      ...["--listen", "127.0.0.1:7430", "--data-dir", "/var/lib/lockd"],
      ...["--peers", "127.0.0.1:7430,127.0.0.1:7431", "--peer-token-file", "/secrets/peer"],
      ...["--peer-timeout", "0.3", "--heartbeat-interval", "0.05", "--max-keys", "1000"],
    ]);
    expect(fromFlags.peerTimeoutMs).toBe(300);
    for (const file of ["lockd.toml", "lockd.yaml", "lockd.json"]) {
      expect(config(["--config", `/etc/lockd/${file}`]), file).toEqual(fromFlags);
      expect(config([], { LOCKD_CONFIG: `/etc/lockd/${file}` }), file).toEqual(fromFlags);
    }
  });

  it("takes a flag over its variable, the variable over the file, the file over the default", () => {
    const file = ["--config", "/etc/lockd/lockd.toml"];
    expect(config(file).maxClockSkewMs).toBe(500); // not in the file: the default
    expect(config(file).limits.maxKeys).toBe(1000);
    expect(config(file, { LOCKD_MAX_KEYS: "20" }).limits.maxKeys).toBe(20);
    expect(config([...file, "--max-keys", "30"], { LOCKD_MAX_KEYS: "20" }).limits.maxKeys).toBe(30);
    // Booleans too: the variable decides when set, whatever the file says.
    const insecureFile = tomlFile("insecure", "true");
    expect(config(["--config", insecureFile]).insecure).toBe(true);
    expect(config(["--config", insecureFile], { LOCKD_INSECURE: "0" }).insecure).toBe(false);
    expect(config(["--config", insecureFile, "--insecure"], { LOCKD_INSECURE: "0" }).insecure).toBe(true);
    // An empty YAML file sets nothing.
    expect(config(["--config", "/etc/lockd/empty.yaml"])).toEqual(config([]));
  });

  it("range-checks a value from the file exactly as the flag, naming the file and the key", () => {
    const cases: Array<[key: string, fileValue: string, flagValue: string]> = [
      ["peer-timeout", "0", "0"],
      ["idle-timeout", "4294968", "4294968"],
      ["shutdown-grace", "1.2345", "1.2345"],
      ["heartbeat-interval", "-1", "-1"],
      ["max-keys", "0", "0"],
      ["max-pending", '"many"', "many"],
      ["max-connections", "1.5", "1.5"],
      ["node-id", "256", "256"],
      ["max-clock-skew", "61", "61"],
      ["max-line-bytes", "1", "1"],
      ["listen", '"localhost"', "localhost"],
      ["log-level", '"verbose"', "verbose"],
    ];
    for (const [key, fileValue, flagValue] of cases) {
      const path = tomlFile(key, fileValue);
      const fromFlag = errorOf(() => config([`--${key}=${flagValue}`]));
      const fromFile = errorOf(() => config(["--config", path]));
      expect(fromFlag.startsWith(`--${key}`), fromFlag).toBe(true);
      // `--peer-timeout: must be…` from the flag, `/tmp/x.toml: peer-timeout (--peer-timeout): must be…` from the file.
      expect(fromFile, key).toBe(`${path}: ${key} (--${key})${fromFlag.slice(`--${key}`.length)}`);
    }
  });

  it("rejects unknown keys (a misspelt flag would silently keep its default)", () => {
    expect(errorOf(() => config(["--config", tomlFile("peer-timout", "0.3")]))).toMatch(
      /^\/tmp\/peer-timout\.toml: unknown key "peer-timout"; the keys are lockd's flag names: listen, advertise, /,
    );
    for (const key of ["config", "help", "version", "auth-token"]) {
      expect(errorOf(() => config(["--config", tomlFile(key, '"x"')]))).toMatch(/unknown key/);
    }
  });

  it("rejects values of the wrong shape, files it cannot read or parse, and unknown file types", () => {
    expect(errorOf(() => config(["--config", tomlFile("max-keys", "true")]))).toBe(
      "/tmp/max-keys.toml: max-keys (--max-keys): expected a string or a number, got boolean true",
    );
    expect(errorOf(() => config(["--config", tomlFile("insecure", '"yes"')]))).toBe(
      '/tmp/insecure.toml: insecure (--insecure): expected true or false, got string "yes"',
    );
    expect(errorOf(() => config(["--config", tomlFile("listen", "[1, 2]")]))).toMatch(
      /listen \(--listen\): expected a string or a number, got a list$/,
    );
    expect(errorOf(() => config(["--config", tomlFile("peers", "[1, 2]")]))).toMatch(
      /expected a list of strings, got a list$/,
    );
    expect(errorOf(() => config(["--config", tomlFile("admin", "{ host = 1 }")]))).toMatch(/got a table$/);
    files["/tmp/list.json"] = "[1]";
    expect(errorOf(() => config(["--config", "/tmp/list.json"]))).toMatch(/expected a table of lockd's flag/);
    files["/tmp/broken.toml"] = "listen = ";
    expect(errorOf(() => config(["--config", "/tmp/broken.toml"]))).toMatch(/^\/tmp\/broken\.toml: /);
    files["/tmp/twice.yaml"] = "listen: a:1\nlisten: b:2\n";
    expect(errorOf(() => config(["--config", "/tmp/twice.yaml"]))).toMatch(/^\/tmp\/twice\.yaml: .*unique/i);
    expect(errorOf(() => config(["--config", "/etc/lockd/missing.toml"]))).toBe(
      "--config: cannot read /etc/lockd/missing.toml: ENOENT",
    );
    expect(errorOf(() => config([], { LOCKD_CONFIG: "/etc/lockd/lockd.ini" }))).toBe(
      'LOCKD_CONFIG (--config): /etc/lockd/lockd.ini: expected a .toml, .yaml, .yml or .json file, got ".ini"',
    );
  });
});
