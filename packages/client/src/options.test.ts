import { splitAddress } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "./errors.js";
import { RequestIds } from "./ids.js";
import { checkDuration, checkKey, DEFAULT_OPTIONS, resolveOptions, serverName } from "./options.js";

describe("options", () => {
  it("fills in the documented defaults", () => {
    expect(resolveOptions({ servers: ["10.0.0.5:7420"] })).toEqual({
      servers: ["10.0.0.5:7420"],
      authToken: undefined,
      tls: undefined,
      connectTimeoutMs: 5_000,
      reconnectIntervalMs: 3_000,
      reconnectJitterMs: 1_000,
      keepAliveMs: 30_000,
      answerTimeoutMs: 250,
      releaseRetryMs: 5_000,
      retryIntervalMs: 200,
      maxKeyBytes: 1_024,
      waitForReady: false,
    });
    expect(DEFAULT_OPTIONS.releaseRetryMs).toBe(5_000);
    expect(DEFAULT_OPTIONS.retryIntervalMs).toBe(200);
  });

  it("turns tls: true into Node's defaults and passes tls options through", () => {
    expect(resolveOptions({ servers: ["a:1"], tls: true }).tls).toEqual({});
    expect(resolveOptions({ servers: ["a:1"], tls: { ca: "pem" } }).tls).toEqual({ ca: "pem" });
    expect(resolveOptions({ servers: ["a:1"], tls: false }).tls).toBeUndefined();
  });

  it.each([
    [{ servers: [] }],
    [{ servers: ["no-port"] }],
    [{ servers: ["a:0"] }],
    [{ servers: ["a:1"], authToken: "has space" }],
    [{ servers: ["a:1"], reconnectIntervalMs: -1 }],
    [{ servers: ["a:1"], connectTimeoutMs: 0 }],
    [{ servers: ["a:1"], keepAliveMs: 1.5 }],
    [{ servers: ["a:1"], answerTimeoutMs: -1 }],
    [{ servers: ["a:1"], reconnectJitterMs: -1 }],
    [{ servers: ["a:1"], waitForReady: "yes" as unknown as boolean }],
  ])("refuses unusable options: %j", (options) => {
    expect(() => resolveOptions(options)).toThrow(InvalidArgumentError);
  });

  it("checks keys as the server would, before anything is sent", () => {
    expect(() => checkKey("orders:42", 1024)).not.toThrow();
    expect(() => checkKey("-", 1024)).not.toThrow();
    for (const bad of ["", "a b", "tab\there", "nl\n"]) {
      expect(() => checkKey(bad, 1024)).toThrow(InvalidArgumentError);
    }
    const error = (() => {
      try {
        checkKey("ü".repeat(6), 10);
      } catch (e) {
        return e as InvalidArgumentError;
      }
    })();
    expect(error?.code).toBe("LOCK_INVALID_ARGUMENT");
    expect(error?.cause).toBe("KEY_TOO_LONG");
  });

  it("says what is wrong with a bad key, and where", () => {
    const message = (key: string) => {
      try {
        checkKey(key, 1024);
      } catch (e) {
        return [(e as InvalidArgumentError).message, (e as InvalidArgumentError).cause];
      }
      return undefined;
    };
    const rule = "(a key may not contain spaces or control characters)";
    expect(message("")).toEqual(['key "" is empty', "BAD_KEY"]);
    expect(message("orders 42")).toEqual([`key "orders 42" contains a space at index 6 ${rule}`, "BAD_KEY"]);
    expect(message("tab\there")).toEqual([
      `key "tab\\there" contains the control character U+0009 at index 3 ${rule}`,
      "BAD_KEY",
    ]);
    expect(message("crlf\r")).toEqual([
      `key "crlf\\r" contains the control character U+000D at index 4 ${rule}`,
      "BAD_KEY",
    ]);
    expect(message("lone\ud800")?.[0]).toMatch(/lone surrogate U\+D800 at index 4/);
    // What the protocol allows stays allowed: other Unicode, a surrogate pair, a leading dash.
    expect(message("caf\u00e9:\u{1F512}:-")).toBeUndefined();
  });

  it("checks durations: integer ms within what the wire carries", () => {
    expect(checkDuration("leaseMs", 250, 1)).toBe(250);
    for (const bad of [0, -1, 1.5, Number.NaN, "30", 10_000_000_000_000]) {
      expect(() => checkDuration("leaseMs", bad, 1)).toThrow(InvalidArgumentError);
    }
  });

  it("splits addresses for net.connect and sends SNI only for host names", () => {
    expect(splitAddress("10.0.0.5:7420")).toEqual({ host: "10.0.0.5", port: 7420 });
    expect(splitAddress("[::1]:7420")).toEqual({ host: "::1", port: 7420 });
    expect(splitAddress("lock.internal:1")).toEqual({ host: "lock.internal", port: 1 });
    expect(serverName("lock.internal")).toBe("lock.internal");
    expect(serverName("10.0.0.5")).toBeUndefined();
    expect(serverName("::1")).toBeUndefined();
  });
});

describe("RequestIds", () => {
  it("makes protocol-valid ids, unique per call and per client", () => {
    const pattern = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
    const a = new RequestIds();
    const b = new RequestIds();
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const id = a.next();
      expect(id).toMatch(pattern);
      ids.add(id);
      ids.add(b.next());
    }
    expect(ids.size).toBe(20_000);
    expect(a.prefix).not.toBe(b.prefix);
  });
});
