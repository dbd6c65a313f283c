/**
 * Wire fixtures shared by the tests: valid lines with the value they decode to, and bad lines with
 * the error they must produce. Lines are given without their "\n"; the tests add it.
 */
import type { DecodeError } from "./decode-error.js";
import { DEFAULT_LIMITS } from "./limits.js";
import type { ErrorCode, Reply, Request, RequestOp } from "./messages.js";
import type { PeerFrame } from "./peer.js";
import { utf8 } from "./testing.test.data.js";
import { BAD_WATCH_REPLIES, BAD_WATCH_REQUESTS, WATCH_REPLIES, WATCH_REQUESTS } from "./watch.test.data.js";

export interface Fixture<T> {
  readonly line: string;
  readonly value: T;
  /** The encoder's canonical form when it differs from `line` (leading zeros, trailing space…). */
  readonly encoded?: string;
}

export interface BadLine {
  /** The line's bytes, or its text (UTF-8 encoded by the tests). */
  readonly line: string | Uint8Array;
  readonly code: ErrorCode;
  readonly op?: RequestOp | "?";
  readonly key?: string;
  readonly id?: string;
}

/** The fields of a DecodeError that a BadLine pins down, for toStrictEqual. */
export function errorShape(line: BadLine): Pick<DecodeError, "kind" | "code" | "op" | "key" | "id"> {
  return { kind: "error", code: line.code, op: line.op ?? "?", key: line.key ?? "-", id: line.id };
}

export const TOKEN_2_53 = 2n ** 53n;
export const MAX_U64 = 2n ** 64n - 1n;

// Keys of exactly DEFAULT_LIMITS.maxKeyBytes bytes, in 2-byte and 4-byte characters.
export const KEY_1024_TWO_BYTE = "é".repeat(512);
export const KEY_1024_FOUR_BYTE = "😀".repeat(256);

// Peer nonces and proofs: 64 lowercase hex digits.
export const HEX_A = "0123456789abcdef".repeat(4);
export const HEX_B = "f".repeat(64);

export const REQUEST_FIXTURES: readonly Fixture<Request | PeerFrame>[] = [
  ...WATCH_REQUESTS,
  { line: "A jobs:nightly 30 0", value: { op: "A", key: "jobs:nightly", leaseMs: 30_000, waitMs: 0 } },
  {
    line: "A orders:42 30 0 job-1",
    value: { op: "A", key: "orders:42", leaseMs: 30_000, waitMs: 0, id: "job-1" },
  },
  {
    line: "A orders:42 0.25 1.5 a_b.c:d-E9",
    value: { op: "A", key: "orders:42", leaseMs: 250, waitMs: 1500, id: "a_b.c:d-E9" },
  },
  { line: "A - 007 0.001", value: { op: "A", key: "-", leaseMs: 7000, waitMs: 1 }, encoded: "A - 7 0.001" },
  {
    line: "A k 9999999999.999 1.50",
    value: { op: "A", key: "k", leaseMs: 9_999_999_999_999, waitMs: 1500 },
    encoded: "A k 9999999999.999 1.5",
  },
  { line: "A 锁/ключ/🔒 30 0", value: { op: "A", key: "锁/ключ/🔒", leaseMs: 30_000, waitMs: 0 } },
  {
    line: "A \ufeffbom\u00a0nbsp\u0085 1 0",
    value: { op: "A", key: "\ufeffbom\u00a0nbsp\u0085", leaseMs: 1000, waitMs: 0 },
  },
  {
    line: `A ${KEY_1024_TWO_BYTE} 1 0`,
    value: { op: "A", key: KEY_1024_TWO_BYTE, leaseMs: 1000, waitMs: 0 },
  },
  {
    line: `A ${KEY_1024_FOUR_BYTE} 1 0`,
    value: { op: "A", key: KEY_1024_FOUR_BYTE, leaseMs: 1000, waitMs: 0 },
  },
  { line: "Y orders:42 30", value: { op: "Y", key: "orders:42", leaseMs: 30_000 } },
  { line: "Y orders:42 30 job-2", value: { op: "Y", key: "orders:42", leaseMs: 30_000, id: "job-2" } },
  {
    line: "Q report:7 s 30 5 job-3",
    value: {
      op: "Q",
      key: "report:7",
      mode: { kind: "shared" },
      leaseMs: 30_000,
      waitMs: 5_000,
      id: "job-3",
    },
  },
  {
    line: "Q tenant:9 p5 2.5 0 w.1",
    value: {
      op: "Q",
      key: "tenant:9",
      mode: { kind: "permit", limit: 5 },
      leaseMs: 2_500,
      waitMs: 0,
      id: "w.1",
    },
  },
  {
    line: "Q k x 1 1 a",
    value: { op: "Q", key: "k", mode: { kind: "exclusive" }, leaseMs: 1_000, waitMs: 1_000, id: "a" },
  },
  {
    line: "W k p65535 30 b",
    value: { op: "W", key: "k", mode: { kind: "permit", limit: 65_535 }, leaseMs: 30_000, id: "b" },
  },
  {
    line: "B {acct}:a 30 5 tx.1 {acct}:b {acct}:c",
    value: {
      op: "B",
      keys: ["{acct}:a", "{acct}:b", "{acct}:c"],
      leaseMs: 30_000,
      waitMs: 5_000,
      id: "tx.1",
    },
  },
  { line: "B k 1.5 0 a", value: { op: "B", keys: ["k"], leaseMs: 1_500, waitMs: 0, id: "a" } },
  // Keys go as sent, in any order and with repeats: the server sorts and de-duplicates them.
  {
    line: "B b 30 0 id b a",
    value: { op: "B", keys: ["b", "b", "a"], leaseMs: 30_000, waitMs: 0, id: "id" },
  },
  { line: "R orders:42 1099511627777", value: { op: "R", key: "orders:42", token: 1_099_511_627_777n } },
  { line: "R k 0", value: { op: "R", key: "k", token: 0n } },
  { line: "R k 9007199254740993", value: { op: "R", key: "k", token: TOKEN_2_53 + 1n } },
  { line: "R k 18446744073709551615", value: { op: "R", key: "k", token: MAX_U64 } },
  {
    line: "X orders:42 1099511627777 60",
    value: { op: "X", key: "orders:42", token: 1_099_511_627_777n, leaseMs: 60_000 },
  },
  // The acquire's request id proves ownership from another connection.
  {
    line: "R orders:42 1099511627777 job-1",
    value: { op: "R", key: "orders:42", token: 1_099_511_627_777n, id: "job-1" },
  },
  {
    line: "X orders:42 1099511627777 60 job-1",
    value: { op: "X", key: "orders:42", token: 1_099_511_627_777n, leaseMs: 60_000, id: "job-1" },
  },
  { line: "C orders:42 job-2", value: { op: "C", key: "orders:42", id: "job-2" } },
  { line: "P", value: { op: "P" } },
  { line: "P hello", value: { op: "P", nonce: "hello" } },
  { line: "H s3cr3t!~#=", value: { op: "H", secret: "s3cr3t!~#=" } },
  { line: "I", value: { op: "I" } },
  { line: `!N 10.0.0.5:7420 ${HEX_A}`, value: { peer: "N", node: "10.0.0.5:7420", nonce: HEX_A } },
  { line: `!C ${HEX_B}`, value: { peer: "C", nonce: HEX_B } },
  {
    line: `!N 10.0.0.5:7420 ${HEX_A} 2`,
    value: { peer: "N", node: "10.0.0.5:7420", nonce: HEX_A, version: 2 },
  },
  { line: `!C ${HEX_B} 2`, value: { peer: "C", nonce: HEX_B, version: 2 } },
  { line: `!V ${HEX_A}`, value: { peer: "V", proof: HEX_A } },
  {
    line: "!J 10.0.0.5:7420 active 1 9",
    value: { peer: "J", node: "10.0.0.5:7420", role: "active", epoch: 1n, highest: 9n },
  },
  {
    line: "!B lockd-2.internal:7420 standby 7 10.0.0.5:7420 8",
    value: {
      peer: "B",
      node: "lockd-2.internal:7420",
      role: "standby",
      epoch: 7n,
      active: "10.0.0.5:7420",
      highest: 8n,
    },
  },
  {
    line: "!B [::1]:7421 standby 7 - 1099511627775",
    value: { peer: "B", node: "[::1]:7421", role: "standby", epoch: 7n, highest: 1_099_511_627_775n },
  },
  {
    line: "!B 10.0.0.6:7420 standby 7 10.0.0.5:7420 8 1",
    value: {
      peer: "B",
      node: "10.0.0.6:7420",
      role: "standby",
      epoch: 7n,
      active: "10.0.0.5:7420",
      highest: 8n,
      synced: true,
    },
  },
  {
    line: "!B 10.0.0.7:7420 standby 0 - 3 0",
    value: { peer: "B", node: "10.0.0.7:7420", role: "standby", epoch: 0n, highest: 3n, synced: false },
  },
  { line: "!S 7 1234", value: { peer: "S", epoch: 7n, seq: 1234 } },
  {
    line: "!h orders:42 7696581394433 29500 job-1",
    value: { peer: "h", key: "orders:42", token: 7_696_581_394_433n, remainingMs: 29_500, id: "job-1" },
  },
  { line: "!h k 1 0", value: { peer: "h", key: "k", token: 1n, remainingMs: 0 } },
  {
    line: "!q report:7 7696581394435 1200 s - r-1",
    value: {
      peer: "q",
      key: "report:7",
      token: 7696581394435n,
      remainingMs: 1200,
      mode: { kind: "shared" },
      slot: undefined,
      id: "r-1",
    },
  },
  {
    line: "!q tenant:9 5 0 p3 2 -",
    value: {
      peer: "q",
      key: "tenant:9",
      token: 5n,
      remainingMs: 0,
      mode: { kind: "permit", limit: 3 },
      slot: 2,
    },
  },
  {
    line: "!Q 12 tenant:9 6 30000 p3 0 j-1",
    value: {
      peer: "Q",
      seq: 12,
      key: "tenant:9",
      token: 6n,
      leaseMs: 30000,
      mode: { kind: "permit", limit: 3 },
      slot: 0,
      id: "j-1",
    },
  },
  {
    line: "!Q 13 report:7 7 1 s - -",
    value: {
      peer: "Q",
      seq: 13,
      key: "report:7",
      token: 7n,
      leaseMs: 1,
      mode: { kind: "shared" },
      slot: undefined,
    },
  },
  { line: "!s 1234 2", value: { peer: "s", seq: 1234, count: 2 } },
  {
    line: "!G 1235 orders:43 7696581394434 30000 job-9",
    value: {
      peer: "G",
      seq: 1235,
      key: "orders:43",
      token: 7_696_581_394_434n,
      leaseMs: 30_000,
      id: "job-9",
    },
  },
  { line: "!G 0 k 1 1", value: { peer: "G", seq: 0, key: "k", token: 1n, leaseMs: 1 } },
  {
    line: "!F 1236 orders:42 7696581394433",
    value: { peer: "F", seq: 1236, key: "orders:42", token: 7_696_581_394_433n },
  },
  {
    line: "!X 1237 orders:43 7696581394434 60000",
    value: { peer: "X", seq: 1237, key: "orders:43", token: 7_696_581_394_434n, leaseMs: 60_000 },
  },
  { line: "!P 1238 8", value: { peer: "P", seq: 1238, epoch: 8n } },
  { line: "!O 1239 8", value: { peer: "O", seq: 1239, epoch: 8n } },
  { line: "!K 9007199254740991", value: { peer: "K", seq: Number.MAX_SAFE_INTEGER } },
];

const INFO_LINE =
  "I version=0.1.0 role=active node=127.0.0.1:7420 active=127.0.0.1:7420 epoch=1 keys=0 waiters=0 connections=1 uptime_ms=5210";

export const REPLY_FIXTURES: readonly Fixture<Reply>[] = [
  ...WATCH_REPLIES,
  {
    line: "A jobs:nightly 1099511627777",
    value: { kind: "A", key: "jobs:nightly", token: 1_099_511_627_777n },
  },
  {
    line: "A orders:42 1099511627777 job-1",
    value: { kind: "A", key: "orders:42", token: 1_099_511_627_777n, id: "job-1" },
  },
  { line: "T orders:42 job-2", value: { kind: "T", key: "orders:42", id: "job-2" } },
  { line: "T k", value: { kind: "T", key: "k" } },
  { line: "Y k 18446744073709551615 x", value: { kind: "Y", key: "k", token: MAX_U64, id: "x" } },
  { line: "Y k 9007199254740992", value: { kind: "Y", key: "k", token: TOKEN_2_53 } },
  { line: "N orders:42", value: { kind: "N", key: "orders:42" } },
  { line: "N k id.7", value: { kind: "N", key: "k", id: "id.7" } },
  {
    line: "Q report:7 12 - job-3",
    value: { kind: "Q", key: "report:7", token: 12n, slot: undefined, id: "job-3" },
  },
  { line: "Q tenant:9 13 4 w.1", value: { kind: "Q", key: "tenant:9", token: 13n, slot: 4, id: "w.1" } },
  { line: "W k 14 65534 b", value: { kind: "W", key: "k", token: 14n, slot: 65_534, id: "b" } },
  { line: "B {acct}:a 15 tx.1", value: { kind: "B", key: "{acct}:a", token: 15n, id: "tx.1" } },
  { line: "R orders:42 1", value: { kind: "R", key: "orders:42", released: true } },
  { line: "R orders:42 0", value: { kind: "R", key: "orders:42", released: false } },
  { line: "X orders:42 1", value: { kind: "X", key: "orders:42", extended: true } },
  { line: "X orders:42 0", value: { kind: "X", key: "orders:42", extended: false } },
  { line: "C orders:42 1", value: { kind: "C", key: "orders:42", cancelled: true } },
  { line: "C orders:42 0", value: { kind: "C", key: "orders:42", cancelled: false } },
  { line: "P", value: { kind: "P" } },
  { line: "P hello", value: { kind: "P", nonce: "hello" } },
  { line: "H", value: { kind: "H" } },
  {
    line: INFO_LINE,
    value: {
      kind: "I",
      fields: new Map(
        INFO_LINE.split(" ")
          .slice(1)
          .map((f) => f.split("=") as [string, string]),
      ),
    },
  },
  { line: "I", value: { kind: "I", fields: new Map() } },
  {
    line: "I empty= a=b=c",
    value: {
      kind: "I",
      fields: new Map([
        ["empty", ""],
        ["a", "b=c"],
      ]),
    },
  },
  {
    line: "M A orders:42 10.0.0.5:7420 job-1",
    value: { kind: "M", op: "A", key: "orders:42", address: "10.0.0.5:7420", id: "job-1" },
  },
  { line: "M P - [::1]:7420", value: { kind: "M", op: "P", key: "-", address: "[::1]:7420" } },
  {
    line: "E A orders:42 BAD_DURATION - lease must be decimal seconds with at most 3 fraction digits",
    value: {
      kind: "E",
      op: "A",
      key: "orders:42",
      code: "BAD_DURATION",
      message: "lease must be decimal seconds with at most 3 fraction digits",
    },
  },
  {
    line: 'E ? - BAD_SYNTAX - unknown verb "Z"',
    value: { kind: "E", op: "?", key: "-", code: "BAD_SYNTAX", message: 'unknown verb "Z"' },
  },
  {
    line: "E A k NO_ACTIVE job-1  retry  shortly ",
    value: { kind: "E", op: "A", key: "k", code: "NO_ACTIVE", id: "job-1", message: " retry  shortly " },
  },
  { line: "E H - AUTH_FAILED -", value: { kind: "E", op: "H", key: "-", code: "AUTH_FAILED", message: "" } },
  {
    line: "E H - AUTH_FAILED - ",
    value: { kind: "E", op: "H", key: "-", code: "AUTH_FAILED", message: "" },
    encoded: "E H - AUTH_FAILED -",
  },
];

const bytes = (...parts: Array<string | number[]>) =>
  new Uint8Array(parts.flatMap((part) => (typeof part === "string" ? [...utf8(part)] : part)));

/** Invalid UTF-8, and lines over the default line limit: framing errors, the same on both sides. */
export const BAD_FRAMING: readonly BadLine[] = [
  { line: bytes("A ", [0xff], " 30 0"), code: "BAD_ENCODING" },
  { line: bytes("A ", [0xc0, 0xaf], " 30 0"), code: "BAD_ENCODING" }, // overlong "/"
  { line: bytes("A ", [0xed, 0xa0, 0x80], " 30 0"), code: "BAD_ENCODING" }, // a surrogate
  { line: bytes("P ", [0xe2, 0x82]), code: "BAD_ENCODING" }, // truncated sequence
  { line: bytes([0x80]), code: "BAD_ENCODING" },
  // One byte over the limit once the "\n" is counted.
  { line: `P ${"x".repeat(DEFAULT_LIMITS.maxLineBytes - 2)}`, code: "LINE_TOO_LONG" },
  { line: `P ${"x".repeat(DEFAULT_LIMITS.maxLineBytes - 3)}\r`, code: "LINE_TOO_LONG" },
  { line: `A ${"é".repeat((DEFAULT_LIMITS.maxLineBytes - 6) / 2)} 1 0`, code: "LINE_TOO_LONG" },
];

export const BAD_REQUESTS: readonly BadLine[] = [
  ...BAD_WATCH_REQUESTS,
  ...BAD_FRAMING,
  { line: "R k +5", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k -5", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 05", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 00", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 123456789012345678901", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 18446744073709551616", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 99999999999999999999", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 1e5", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k 0x10", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "R k ", code: "BAD_TOKEN", op: "R", key: "k" },
  { line: "X k 1.5 30", code: "BAD_TOKEN", op: "X", key: "k" },
  { line: "R k  5", code: "BAD_TOKEN", op: "R", key: "k", id: "5" },
  { line: "R k 5 ", code: "BAD_ID", op: "R", key: "k" },
  { line: "R k 5 id extra", code: "BAD_SYNTAX", op: "R", key: "k" },
  { line: "R k 5 bad!", code: "BAD_ID", op: "R", key: "k" },
  { line: "X k 5 60 bad!", code: "BAD_ID", op: "X", key: "k" },
  { line: "R k", code: "BAD_SYNTAX", op: "R", key: "k" },
  { line: "C k", code: "BAD_SYNTAX", op: "C", key: "k" },
  { line: "C k -x", code: "BAD_ID", op: "C", key: "k" },
  { line: "X k 5 1.2345", code: "BAD_DURATION", op: "X", key: "k" },
  { line: "A orders:42 -5 0 job-1", code: "BAD_DURATION", op: "A", key: "orders:42", id: "job-1" },
  { line: "A orders:42 -5 0", code: "BAD_DURATION", op: "A", key: "orders:42" },
  { line: "A k 1e3 0", code: "BAD_DURATION", op: "A", key: "k" },
  { line: "A k 1. 0", code: "BAD_DURATION", op: "A", key: "k" },
  { line: "A k .5 0", code: "BAD_DURATION", op: "A", key: "k" },
  { line: "A k 12345678901 0", code: "BAD_DURATION", op: "A", key: "k" },
  { line: "A k 30 +1 j", code: "BAD_DURATION", op: "A", key: "k", id: "j" },
  { line: "Y k 1,5", code: "BAD_DURATION", op: "Y", key: "k" },
  { line: "A k 30 0 -", code: "BAD_ID", op: "A", key: "k" },
  { line: "A k 30 0 bad/id", code: "BAD_ID", op: "A", key: "k" },
  { line: `A k 30 0 ${"a".repeat(65)}`, code: "BAD_ID", op: "A", key: "k" },
  { line: "Y k 30 _x", code: "BAD_ID", op: "Y", key: "k" },
  { line: "Q k s 30 5", code: "BAD_SYNTAX", op: "Q", key: "k" },
  { line: "Q k r 30 5 a", code: "BAD_ARGUMENT", op: "Q", key: "k", id: "a" },
  { line: "Q k p0 30 5 a", code: "BAD_ARGUMENT", op: "Q", key: "k", id: "a" },
  { line: "Q k p05 30 5 a", code: "BAD_ARGUMENT", op: "Q", key: "k", id: "a" },
  { line: "Q k p65536 30 5 a", code: "BAD_ARGUMENT", op: "Q", key: "k", id: "a" },
  { line: "Q k s 30 x a", code: "BAD_DURATION", op: "Q", key: "k", id: "a" },
  { line: "W k s 30", code: "BAD_SYNTAX", op: "W", key: "k" },
  { line: "B k 30 0", code: "BAD_SYNTAX", op: "B", key: "k" },
  { line: "B k 30 x a b", code: "BAD_DURATION", op: "B", key: "k", id: "a" },
  { line: "B k 30 0 a b\u0002", code: "BAD_KEY", op: "B", key: "k", id: "a" },
  { line: "B k 30 0 bad/id b", code: "BAD_ID", op: "B", key: "k" },
  { line: "W k S 30 a", code: "BAD_ARGUMENT", op: "W", key: "k", id: "a" },
  { line: `A ${KEY_1024_TWO_BYTE}x 30 0`, code: "KEY_TOO_LONG", op: "A" },
  { line: `A ${KEY_1024_FOUR_BYTE}a 30 0 j`, code: "KEY_TOO_LONG", op: "A", id: "j" },
  { line: `R ${"a".repeat(1025)} 1`, code: "KEY_TOO_LONG", op: "R" },
  { line: "A k\u0001 30 0", code: "BAD_KEY", op: "A" },
  { line: "A k\u007f 30 0", code: "BAD_KEY", op: "A" },
  { line: "A k\t 30 0", code: "BAD_KEY", op: "A" },
  { line: "A  30 0 j", code: "BAD_KEY", op: "A", id: "j" },
  { line: "A k\r 30 0", code: "BAD_KEY", op: "A" },
  { line: "P a\rb", code: "BAD_ARGUMENT", op: "P" },
  { line: "\r\r", code: "BAD_SYNTAX" }, // only one "\r" before the "\n" is stripped
  { line: "Z", code: "BAD_SYNTAX" },
  { line: "AA k 1 0", code: "BAD_SYNTAX" },
  { line: "a k 1 0", code: "BAD_SYNTAX" },
  { line: " A k 1 0", code: "BAD_SYNTAX" },
  { line: "\ufeffA k 1 0", code: "BAD_SYNTAX" },
  { line: "I x", code: "BAD_SYNTAX", op: "I" },
  { line: "H", code: "BAD_SYNTAX", op: "H" },
  { line: "H two words", code: "BAD_SYNTAX", op: "H" },
  { line: "H caf\u00e9", code: "BAD_ARGUMENT", op: "H" },
  { line: `P ${"n".repeat(65)}`, code: "BAD_ARGUMENT", op: "P" },
  { line: "X k 5", code: "BAD_SYNTAX", op: "X", key: "k" },
  { line: "A k 30 0 id extra", code: "BAD_SYNTAX", op: "A", key: "k" },
  { line: "A k\u0000 30", code: "BAD_SYNTAX", op: "A" },
  { line: "!J 10.0.0.5 active 1 1", code: "BAD_ARGUMENT" },
  { line: "!J 10.0.0.5:7420 leader 1 1", code: "BAD_ARGUMENT" },
  { line: "!J 10.0.0.5:7420 active -1 1", code: "BAD_ARGUMENT" },
  { line: "!J 10.0.0.5:7420 active 1", code: "BAD_SYNTAX" },
  { line: "!B 10.0.0.5:70000 active 1 - 1", code: "BAD_ARGUMENT" },
  { line: "!B 10.0.0.5:7420 active 1 nowhere 1", code: "BAD_ARGUMENT" },
  { line: "!B 10.0.0.5:7420 standby 1 - 1 yes", code: "BAD_ARGUMENT" },
  { line: "!B 10.0.0.5:7420 standby 1 - 1 1 1", code: "BAD_SYNTAX" },
  // Epochs beyond the token layout's 40 bits would overflow every token made from them.
  { line: "!B 10.0.0.5:7420 standby 18446744073709551615 - 1", code: "BAD_ARGUMENT" },
  { line: "!B 10.0.0.5:7420 standby 1 - 1099511627776", code: "BAD_ARGUMENT" },
  { line: "!S 1099511627776 1", code: "BAD_ARGUMENT" },
  { line: "!S 1 2 3", code: "BAD_SYNTAX" },
  { line: "!P 1 1099511627776", code: "BAD_ARGUMENT" },
  { line: "!O 1 1099511627776", code: "BAD_ARGUMENT" },
  { line: "!G 1 k 01 30 x", code: "BAD_TOKEN" },
  { line: "!G 1 k 5 1.5", code: "BAD_DURATION" },
  { line: "!G 1 k 5 30 -", code: "BAD_ID" },
  { line: "!F 1 k\u0001 5", code: "BAD_KEY" },
  { line: "!h k 5", code: "BAD_SYNTAX" },
  { line: "!q k 5 1 x - -", code: "BAD_ARGUMENT" },
  { line: "!q k 5 1 s 0 -", code: "BAD_ARGUMENT" },
  { line: "!q k 5 1 p3 3 -", code: "BAD_ARGUMENT" },
  { line: "!q k 5 1 p3 - -", code: "BAD_ARGUMENT" },
  { line: "!q k 5 1 s -", code: "BAD_SYNTAX" },
  { line: "!Q 1 k 5 30 p2 1 -x", code: "BAD_ID" },
  { line: "!Q 1 k 5 30 s - - extra", code: "BAD_SYNTAX" },
  { line: "!Q 1 k 5 30 p0 0 -", code: "BAD_ARGUMENT" },
  { line: "!s 2 -3", code: "BAD_ARGUMENT" },
  { line: "!s 2", code: "BAD_SYNTAX" },
  { line: "!K 18446744073709551616", code: "BAD_ARGUMENT" },
  { line: "!Z 1", code: "BAD_SYNTAX" },
  { line: "!", code: "BAD_SYNTAX" },
  { line: "!NN 10.0.0.5:7420", code: "BAD_SYNTAX" },
  { line: `!N 10.0.0.5 ${HEX_A}`, code: "BAD_ARGUMENT" },
  { line: "!N 10.0.0.5:7420 0123", code: "BAD_ARGUMENT" },
  { line: `!N 10.0.0.5:7420 ${HEX_A.toUpperCase()}`, code: "BAD_ARGUMENT" },
  { line: `!N 10.0.0.5:7420`, code: "BAD_SYNTAX" },
  { line: `!C ${HEX_A}0`, code: "BAD_ARGUMENT" },
  { line: `!C ${HEX_A} ${HEX_B}`, code: "BAD_ARGUMENT" },
  { line: `!C ${HEX_A} 2 3`, code: "BAD_SYNTAX" },
  { line: `!N 10.0.0.5:7420 ${HEX_A} 02`, code: "BAD_ARGUMENT" },
  { line: `!N 10.0.0.5:7420 ${HEX_A} 2 3`, code: "BAD_SYNTAX" },
  { line: `!V ${"g".repeat(64)}`, code: "BAD_ARGUMENT" },
  { line: "!V", code: "BAD_SYNTAX" },
];

export const BAD_REPLIES: readonly BadLine[] = [
  ...BAD_WATCH_REPLIES,
  ...BAD_FRAMING,
  { line: "A k 1099511627777 bad!", code: "BAD_ID", op: "A", key: "k" },
  { line: "A k -1 job", code: "BAD_TOKEN", op: "A", key: "k", id: "job" },
  { line: "Y k 18446744073709551616", code: "BAD_TOKEN", op: "Y", key: "k" },
  { line: "T k 5 6", code: "BAD_SYNTAX", op: "A", key: "k" },
  { line: "N", code: "BAD_SYNTAX", op: "Y" },
  { line: "N k\u0002", code: "BAD_KEY", op: "Y" },
  { line: "Q k 12 65535 a", code: "BAD_ARGUMENT", op: "Q", key: "k", id: "a" },
  { line: "Q k 12 01 a", code: "BAD_ARGUMENT", op: "Q", key: "k", id: "a" },
  { line: "W k 12 -", code: "BAD_SYNTAX", op: "W", key: "k" },
  { line: "B k 12", code: "BAD_SYNTAX", op: "B", key: "k" },
  { line: "B k 12 a b", code: "BAD_SYNTAX", op: "B", key: "k" },
  { line: "R k 2", code: "BAD_ARGUMENT", op: "R", key: "k" },
  { line: "R k true", code: "BAD_ARGUMENT", op: "R", key: "k" },
  { line: "X k", code: "BAD_SYNTAX", op: "X", key: "k" },
  { line: "H x", code: "BAD_SYNTAX", op: "H" },
  { line: "P \u00e9", code: "BAD_ARGUMENT", op: "P" },
  { line: "I version", code: "BAD_ARGUMENT", op: "I" },
  { line: "I =x", code: "BAD_ARGUMENT", op: "I" },
  { line: "I a=1 a=2", code: "BAD_ARGUMENT", op: "I" },
  { line: "I a=1  b=2", code: "BAD_ARGUMENT", op: "I" },
  { line: "M Z k 10.0.0.5:7420", code: "BAD_ARGUMENT", op: "?", key: "k" },
  { line: "M A k nowhere j", code: "BAD_ARGUMENT", op: "A", key: "k", id: "j" },
  { line: "M A k", code: "BAD_SYNTAX", op: "A", key: "k" },
  { line: "E A k NOPE - msg", code: "BAD_ARGUMENT", op: "A", key: "k" },
  { line: "E A k BAD_KEY bad! msg", code: "BAD_ID", op: "A", key: "k" },
  { line: "E A k", code: "BAD_SYNTAX", op: "A", key: "k" },
  { line: "E ! k BAD_KEY - m", code: "BAD_ARGUMENT", key: "k" },
  { line: "Z", code: "BAD_SYNTAX" },
  { line: "!J 10.0.0.5:7420 active 1 1", code: "BAD_SYNTAX" },
];
