import { describe, expect, it } from "vitest";
import { parseCommandLine, type StatusCommand } from "./args.js";
import type { CliError } from "./errors.js";
import { loadSettings } from "./settings.js";

const files: Record<string, string> = {
  "/etc/lock/token": "  secret-token-0123456789\n",
  "/etc/lock/admin": "admin-token-0123456789\n",
  "/etc/lock/ca.pem": "CA",
  "/etc/lock/bad": "has a space",
};
const readFile = (path: string): Buffer => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
  return Buffer.from(text);
};
const settings = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
  loadSettings((parseCommandLine(["status", ...argv], env) as StatusCommand).connection, readFile);

function failure(run: () => unknown): CliError {
  try {
    run();
  } catch (error) {
    return error as CliError;
  }
  throw new Error("did not throw");
}

describe("loadSettings", () => {
  it("reads the secrets from files (trimmed) or from the variables that hold them", () => {
    expect(settings(["--auth-token-file", "/etc/lock/token"]).client.authToken).toBe(
      "secret-token-0123456789",
    );
    expect(settings([], { LOCK_AUTH_TOKEN: "inline-token-0123456789" }).client.authToken).toBe(
      "inline-token-0123456789",
    );
    expect(settings([], { LOCK_ADMIN_TOKEN_FILE: "/etc/lock/admin" }).adminToken).toBe(
      "admin-token-0123456789",
    );
  });

  it("uses 127.0.0.1:7420 when no server is given, and says so", () => {
    expect(settings([])).toMatchObject({ client: { servers: ["127.0.0.1:7420"] }, serversDefaulted: true });
    expect(settings(["--servers", "a:1"])).toMatchObject({
      client: { servers: ["a:1"] },
      serversDefaulted: false,
    });
  });

  it("reads the TLS files into the client's tls options", () => {
    expect(settings([], { LOCK_TLS_CA_FILE: "/etc/lock/ca.pem" }).client.tls).toEqual({
      ca: Buffer.from("CA"),
    });
    expect(settings(["--tls"]).client.tls).toEqual({});
    expect(settings([]).client.tls).toBeUndefined();
  });

  it("refuses a file and a variable for one secret, an unreadable file, an unusable secret, never showing it", () => {
    expect(
      failure(() => settings(["--auth-token-file", "/etc/lock/token"], { LOCK_AUTH_TOKEN: "x" })).message,
    ).toMatch(/either --auth-token-file or LOCK_AUTH_TOKEN/);
    const missing = failure(() => settings(["--auth-token-file", "/nope"]));
    expect(missing).toMatchObject({ code: "USAGE", message: "--auth-token-file: cannot read /nope: ENOENT" });
    const bad = failure(() => settings([], { LOCK_AUTH_TOKEN_FILE: "/etc/lock/bad" }));
    expect(bad.message).toMatch(/from LOCK_AUTH_TOKEN_FILE \/etc\/lock\/bad must be/);
    expect(bad.message).not.toContain("has a space");
  });
});
