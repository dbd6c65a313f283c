import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { COORDINATOR_ERROR_CODES, CoordinatorUrlError } from "./errors.js";
import { openCoordinationStore } from "./open.js";
import { parseCoordinatorUrl } from "./url.js";

describe("parseCoordinatorUrl", () => {
  it("reads etcd members, the prefix and TLS files, and describes them without credentials", () => {
    expect(parseCoordinatorUrl("etcd://10.0.0.1:2379,10.0.0.2:2380,[::1]/apps/lock")).toEqual({
      kind: "etcd",
      endpoints: ["10.0.0.1:2379", "10.0.0.2:2380", "[::1]:2379"],
      prefix: "/apps/lock/",
      tls: false,
      user: undefined,
      files: {},
      description: "etcd://10.0.0.1:2379,10.0.0.2:2380,[::1]:2379/apps/lock/",
    });
    const tls = parseCoordinatorUrl("etcds://lockd@etcd.internal:2379?ca=/etc/ca.pem&cert=/c.pem&key=/k.pem");
    expect(tls).toMatchObject({
      tls: true,
      user: "lockd",
      prefix: "/lock/",
      files: { ca: "/etc/ca.pem", cert: "/c.pem", key: "/k.pem" },
      description: "etcds://etcd.internal:2379/lock/",
    });
  });

  it("reads a PostgreSQL URL, its schema, and leaves user and password out of the description", () => {
    const target = parseCoordinatorUrl(
      "postgresql://lockd:s3cret@db.internal:6432/coord?sslmode=require&schema=lockd_prod",
    );
    expect(target).toEqual({
      kind: "postgres",
      connectionString: "postgresql://lockd:s3cret@db.internal:6432/coord?sslmode=require",
      schema: "lockd_prod",
      description: "postgres://db.internal:6432/coord?schema=lockd_prod",
    });
    expect(parseCoordinatorUrl("postgres://db/coord")).toMatchObject({ schema: "lock_coordination" });
  });

  it.each([
    ["redis://127.0.0.1:6379", /must start with etcd:\/\//],
    ["etcd://user:pw@h:2379", /carries a password/],
    ["etcd://h:99999", /bad endpoint/],
    ["etcd://h:2379,,h2:2379", /bad endpoint/],
    ["etcd://h:2379?ca=/ca.pem", /without TLS/],
    ["etcds://h:2379?cert=/c.pem", /both cert and key/],
    ["etcds://h:2379?token=x", /unknown parameter/],
    ["postgres://db", /names no database/],
    ["postgres://db/coord?schema=Robert%27);DROP", /not a plain lower-case identifier/],
  ])("refuses %s with COORDINATOR_BAD_URL", (url, message) => {
    expect(() => parseCoordinatorUrl(url)).toThrow(message);
    expect(() => parseCoordinatorUrl(url)).toThrow(CoordinatorUrlError);
    try {
      parseCoordinatorUrl(url);
    } catch (error) {
      expect((error as CoordinatorUrlError).code).toBe("COORDINATOR_BAD_URL");
      expect(String(error)).not.toContain("pw");
    }
  });
});

describe("openCoordinationStore", () => {
  const noFile = (path: string): Buffer => {
    throw Object.assign(new Error(`ENOENT ${path}`), { code: "ENOENT" });
  };

  it("reads the password from a file or a variable, never both, and needs a user for etcd", async () => {
    const env = { LOCKD_COORDINATOR_PASSWORD_FILE: "/run/secrets/pw" };
    const store = openCoordinationStore("etcd://lockd@127.0.0.1:2379", {
      env,
      readFile: () => Buffer.from("pw\n"),
    });
    expect(store.description).toBe("etcd://127.0.0.1:2379/lock/");
    await store.close();
    expect(() => openCoordinationStore("etcd://lockd@127.0.0.1:2379", { env: {} })).toThrow(
      /names user lockd/,
    );
    const given = openCoordinationStore("etcd://lockd@127.0.0.1:2379", {
      env: {},
      password: "from-the-caller",
    });
    await given.close();
    expect(() =>
      openCoordinationStore("etcd://127.0.0.1:2379", { env: { LOCKD_COORDINATOR_PASSWORD: "x".repeat(20) } }),
    ).toThrow(/names no user/);
    expect(() =>
      openCoordinationStore("postgres://db/coord", {
        env: { ...env, LOCKD_COORDINATOR_PASSWORD: "x" },
      }),
    ).toThrow(/not both/);
    expect(() => openCoordinationStore("etcd://h:2379", { callTimeoutMs: 0 })).toThrow(/callTimeoutMs/);
    expect(() =>
      openCoordinationStore("postgres://u:p@db/coord", { env: { LOCKD_COORDINATOR_PASSWORD: "x" } }),
    ).toThrow(/carries a password/);
    expect(() => openCoordinationStore("etcds://h:2379?ca=/nope.pem", { env: {}, readFile: noFile })).toThrow(
      "cannot read the CA file /nope.pem: ENOENT",
    );
  });

  it("opens a PostgreSQL store described without its credentials", async () => {
    const store = openCoordinationStore("postgres://lockd:hunter2@127.0.0.1:5432/test", { env: {} });
    expect(store.description).toBe("postgres://127.0.0.1:5432/test?schema=lock_coordination");
    await store.close();
  });
});

it("documents every error code in README.md", async () => {
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  expect(COORDINATOR_ERROR_CODES.filter((code) => !readme.includes(`\`${code}\``))).toEqual([]);
});
