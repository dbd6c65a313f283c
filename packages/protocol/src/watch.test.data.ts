/** Wire fixtures of watching a key (`O`, `U`; docs/protocol.md, "Watching a key"), spread into fixtures.test.data.ts. */
import type { BadLine, Fixture } from "./fixtures.test.data.js";
import type { Reply, Request } from "./messages.js";

export const WATCH_REQUESTS: readonly Fixture<Request>[] = [
  { line: "O orders:42", value: { op: "O", key: "orders:42" } },
  { line: "O -", value: { op: "O", key: "-" } },
  { line: "U orders:42", value: { op: "U", key: "orders:42" } },
];

export const WATCH_REPLIES: readonly Fixture<Reply>[] = [
  {
    line: "O orders:42 0 - 0",
    value: { kind: "O", key: "orders:42", token: 0n, mode: undefined, holders: 0 },
  },
  {
    line: "O orders:42 123942448241049601 x 1",
    value: {
      kind: "O",
      key: "orders:42",
      token: 123942448241049601n,
      mode: { kind: "exclusive" },
      holders: 1,
    },
  },
  {
    line: "O report:7 42 s 2",
    value: { kind: "O", key: "report:7", token: 42n, mode: { kind: "shared" }, holders: 2 },
  },
  {
    line: "O tenant:9 45 p3 3",
    value: { kind: "O", key: "tenant:9", token: 45n, mode: { kind: "permit", limit: 3 }, holders: 3 },
  },
  { line: "U orders:42 1", value: { kind: "U", key: "orders:42", watched: true } },
  { line: "U orders:42 0", value: { kind: "U", key: "orders:42", watched: false } },
  {
    line: "M O orders:42 10.0.0.5:7420",
    value: { kind: "M", op: "O", key: "orders:42", address: "10.0.0.5:7420" },
  },
  {
    line: "E O orders:42 TOO_MANY_CONNECTION_WATCHES - 1024 watches",
    value: {
      kind: "E",
      op: "O",
      key: "orders:42",
      code: "TOO_MANY_CONNECTION_WATCHES",
      message: "1024 watches",
    },
  },
];

export const BAD_WATCH_REQUESTS: readonly BadLine[] = [
  { line: "O", code: "BAD_SYNTAX", op: "O" },
  { line: "O k extra", code: "BAD_SYNTAX", op: "O", key: "k" },
  { line: "U k\u0001", code: "BAD_KEY", op: "U" },
  // A watch carries no id: nothing in its replies could be matched by one.
  { line: "O k id-1", code: "BAD_SYNTAX", op: "O", key: "k" },
];

export const BAD_WATCH_REPLIES: readonly BadLine[] = [
  { line: "O k 0 x 1", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k 5 - 0", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k 5 x 2", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k 5 p2 3", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k 5 s 0", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k 5 q 1", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k 5 s 01", code: "BAD_ARGUMENT", op: "O", key: "k" },
  { line: "O k -5 x 1", code: "BAD_TOKEN", op: "O", key: "k" },
  { line: "O k 5 x", code: "BAD_SYNTAX", op: "O", key: "k" },
  { line: "U k 2", code: "BAD_ARGUMENT", op: "U", key: "k" },
];
