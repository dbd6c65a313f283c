import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  AbortError,
  AuthError,
  CLIENT_ERROR_CODES,
  ClientClosedError,
  InvalidArgumentError,
  LockError,
  LockLostError,
  LockServerError,
  LockTimeoutError,
  NoServerError,
  ProtocolError,
} from "./index.js";

const cause = new Error("underlying");
const EVERY_ERROR: LockError[] = [
  new LockTimeoutError("k", 100, { cause }),
  new NoServerError("none", { cause }),
  new LockLostError("k", 1n, "refused", { cause }),
  new ProtocolError("bad line", { cause }),
  new AuthError("refused", { cause }),
  new ClientClosedError({ cause }),
  new AbortError("acquire", cause),
  new LockServerError("TOO_MANY_WAITERS", "queue full", { cause }),
  new InvalidArgumentError("bad key", { cause }),
];

describe("errors", () => {
  it("every class has a literal name, a documented code, and passes its cause through", () => {
    const codes = new Set<string>();
    for (const error of EVERY_ERROR) {
      expect(error).toBeInstanceOf(LockError);
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe(error.constructor.name);
      expect(Object.keys(CLIENT_ERROR_CODES)).toContain(error.code);
      expect(error.cause).toBe(cause);
      codes.add(error.code);
    }
    // One class per code: every code has a class that carries it.
    expect([...codes].sort()).toEqual(Object.keys(CLIENT_ERROR_CODES).sort());
  });

  it("README.md documents every error code", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const missing = Object.keys(CLIENT_ERROR_CODES).filter((code) => !readme.includes(`| \`${code}\``));
    expect(missing).toEqual([]);
  });

  it("carries the details callers match on", () => {
    expect(new LockServerError("TOO_MANY_WAITERS", "full")).toMatchObject({ serverCode: "TOO_MANY_WAITERS" });
    expect(new LockLostError("orders:42", 7n, "refused")).toMatchObject({ key: "orders:42", token: 7n });
    expect(new LockTimeoutError("orders:42", 5_000)).toMatchObject({ key: "orders:42" });
    expect(new AbortError("acquire", "reason").name).toBe("AbortError");
  });
});
