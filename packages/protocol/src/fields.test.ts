import { describe, expect, it } from "vitest";
import {
  isValidAddress,
  isValidId,
  isValidNonce,
  isValidSecret,
  toMessageText,
  utf8ByteLength,
  validateKey,
} from "./fields.js";

describe("validateKey", () => {
  it("accepts any text without space or control characters, `-` included", () => {
    for (const key of ["-", "orders:42", "锁", "🔒", "a\u0085b", "\u00a0", "\ufeff", "x".repeat(1024)]) {
      expect(validateKey(key, 1024)).toBeUndefined();
    }
  });

  it("refuses empty keys, spaces, C0 controls, DEL and lone surrogates", () => {
    for (const key of [
      "",
      " ",
      "a b",
      "a\tb",
      "a\nb",
      "a\rb",
      "\u0000",
      "\u001f",
      "\u007f",
      "\ud800",
      "a\udc00",
      "\ud83d",
    ]) {
      expect(validateKey(key, 1024)).toBe("BAD_KEY");
    }
  });

  it("counts UTF-8 bytes, not characters", () => {
    expect(validateKey("é".repeat(512), 1024)).toBeUndefined();
    expect(validateKey(`${"é".repeat(512)}a`, 1024)).toBe("KEY_TOO_LONG");
    expect(validateKey("€".repeat(3), 9)).toBeUndefined();
    expect(validateKey("€".repeat(3), 8)).toBe("KEY_TOO_LONG");
    expect(validateKey("😀".repeat(2), 8)).toBeUndefined();
    expect(validateKey("😀".repeat(2), 7)).toBe("KEY_TOO_LONG");
  });
});

describe("utf8ByteLength", () => {
  it("agrees with TextEncoder", () => {
    for (const text of ["", "abc", "é", "€", "😀", "a😀é€z", "\u07ff\u0800\uffff"]) {
      expect(utf8ByteLength(text)).toBe(new TextEncoder().encode(text).length);
    }
    expect(utf8ByteLength("ab😀cd", 2, 4)).toBe(4);
  });
});

describe("isValidId", () => {
  it("matches [A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", () => {
    for (const id of ["a", "Z9", "job-1", "a_b.c:d-e", "0", "x".repeat(64)]) expect(isValidId(id)).toBe(true);
    for (const id of ["", "-", "_a", ".a", ":a", "a b", "a/b", "é", "a\u0000", "x".repeat(65), "a\u0100"]) {
      expect(isValidId(id)).toBe(false);
    }
  });
});

describe("secrets and nonces", () => {
  it("are printable ASCII without space, 1-1024 and 1-64 bytes", () => {
    expect(isValidSecret("!~")).toBe(true);
    expect(isValidSecret("s".repeat(1024))).toBe(true);
    expect(isValidSecret("s".repeat(1025))).toBe(false);
    expect(isValidNonce("n".repeat(64))).toBe(true);
    expect(isValidNonce("n".repeat(65))).toBe(false);
    for (const text of ["", "a b", "é", "a\u007f", "a\t"]) {
      expect(isValidSecret(text)).toBe(false);
      expect(isValidNonce(text)).toBe(false);
    }
  });
});

describe("isValidAddress", () => {
  it("takes host:port with a DNS name, IPv4, or bracketed IPv6", () => {
    for (const address of [
      "10.0.0.5:7420",
      "[::1]:7420",
      "[fe80::1%eth0]:1",
      "lockd-1.internal:65535",
      "h:1",
    ]) {
      expect(isValidAddress(address)).toBe(true);
    }
    const bad = [
      "",
      "10.0.0.5",
      ":7420",
      "h:",
      "h:0",
      "h:65536",
      "h:07420",
      "::1:7420",
      "[::1]7420",
      "[]:1",
      "h h:1",
      "h:1a",
    ];
    for (const address of bad) expect(isValidAddress(address)).toBe(false);
  });
});

describe("toMessageText", () => {
  it("turns control characters into spaces and lone surrogates into U+FFFD", () => {
    expect(toMessageText("plain text")).toBe("plain text");
    expect(toMessageText("a\nb\r\nc\u0000\u007f")).toBe("a b  c  ");
    expect(toMessageText("x\ud800y😀")).toBe("x\ufffdy😀");
  });
});
