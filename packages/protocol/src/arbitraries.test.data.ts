/** fast-check arbitraries for every message type, drawing fields across their whole valid range. */
import fc from "fast-check";
import { MAX_DURATION_MS } from "./duration.js";
import { KEY_1024_FOUR_BYTE, KEY_1024_TWO_BYTE } from "./fixtures.test.data.js";
import { KEY_SLOTS } from "./key-slot.js";
import { ERROR_CODES, type ErrorCode, type Reply, type Request, type RequestOp } from "./messages.js";
import type { NodeRole, PeerFrame } from "./peer.js";
import { SlotMap } from "./slot-map.js";
import { MAX_EPOCH, MAX_TOKEN } from "./token.js";

/** The whole u64 range, plus the values where number and bigint arithmetic part ways. */
export const u64 = fc.oneof(
  fc.bigInt({ min: 0n, max: MAX_TOKEN }),
  fc.constantFrom(0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n, MAX_TOKEN - 1n, MAX_TOKEN),
);

/** Every epoch the token layout can hold (40 bits), with its ends. */
export const epoch = fc.oneof(fc.bigInt({ min: 0n, max: MAX_EPOCH }), fc.constantFrom(0n, 1n, MAX_EPOCH));

export const durationMs = fc.oneof(
  fc.integer({ min: 0, max: MAX_DURATION_MS }),
  fc.integer({ min: 0, max: 100_000 }),
  fc.constantFrom(0, 1, 10, 100, 999, 1000, 1001, MAX_DURATION_MS),
);

export const safeInteger = fc.oneof(fc.nat(), fc.constantFrom(0, Number.MAX_SAFE_INTEGER), fc.maxSafeNat());

/** Any Unicode text without space or control characters, and keys right at the byte limit. */
export const key = fc.oneof(
  { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 40 }).map(replaceForbidden), weight: 8 },
  {
    arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }).map(replaceForbidden),
    weight: 4,
  },
  { arbitrary: fc.constantFrom("-", KEY_1024_TWO_BYTE, KEY_1024_FOUR_BYTE, "a".repeat(1024)), weight: 1 },
);

const isControl = (c: string) => c < " " || c === "\u007f";

/** Replaces the characters a key may not hold (space, C0 controls, DEL) with "_". */
function replaceForbidden(text: string): string {
  return [...text].map((c) => (c === " " || isControl(c) ? "_" : c)).join("");
}

export const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/);
export const nonce = fc.stringMatching(/^[!-~]{1,64}$/);
export const secret = fc.oneof(fc.stringMatching(/^[!-~]{1,64}$/), fc.constant("s".repeat(1024)));
export const op = fc.constantFrom<RequestOp>("A", "Y", "R", "X", "C", "P", "H", "I", "K");
export const role = fc.constantFrom<NodeRole>("active", "standby");
export const errorCode = fc.constantFrom(...(Object.keys(ERROR_CODES) as ErrorCode[]));

const port = fc.integer({ min: 1, max: 65_535 });
export const address = fc.oneof(
  fc.tuple(fc.ipV4(), port).map(([host, p]) => `${host}:${p}`),
  fc.tuple(fc.ipV6(), port).map(([host, p]) => `[${host}]:${p}`),
  fc.tuple(fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,40}$/), port).map(([host, p]) => `${host}:${p}`),
);

/** Free text for `E` messages: anything but control characters and lone surrogates. */
export const message = fc
  .string({ unit: "binary", maxLength: 80 })
  .map((text) => [...text].filter((c) => !isControl(c)).join(""));

const infoFields = fc
  .uniqueArray(
    fc.tuple(fc.stringMatching(/^[!-<>-~]{1,16}$/), key.map((v) => v.slice(0, 20)).filter(isWholeText)),
    {
      selector: ([name]) => name,
      maxLength: 10,
    },
  )
  .map((entries) => new Map(entries));

// Cutting a key may split a surrogate pair; such a value cannot go on the wire.
function isWholeText(text: string): boolean {
  return !/[\ud800-\udbff]$/.test(text);
}

/** fc.record with plain prototypes (what the decoders build) and the named keys left out at times. */
function record<T>(
  model: { [K in keyof T]: fc.Arbitrary<T[K]> },
  optional: readonly string[] = [],
): fc.Arbitrary<object> {
  const requiredKeys = Object.keys(model).filter((name) => !optional.includes(name)) as (keyof T)[];
  return fc.record(model, { requiredKeys, noNullPrototype: true });
}

const clusterName = fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/);

/** A valid slot map: 1 to 8 clusters, the slots cut into ranges at random points, some moving. */
export const slotMap = fc
  .record({
    version: fc.bigInt({ min: 1n, max: MAX_TOKEN }),
    names: fc.uniqueArray(clusterName, { minLength: 1, maxLength: 8 }),
    cuts: fc.uniqueArray(fc.integer({ min: 1, max: KEY_SLOTS - 1 }), { maxLength: 20 }),
    addresses: fc.array(address, { minLength: 1, maxLength: 3 }),
    picks: fc.array(fc.nat(), { minLength: 42, maxLength: 42 }),
  })
  .map(({ version, names, cuts, addresses, picks }) => {
    const bounds = [0, ...cuts.sort((a, b) => a - b), KEY_SLOTS];
    const ranges = bounds.slice(0, -1).map((from, i) => {
      const cluster = names[picks[i]! % names.length]!;
      const target = names[picks[i + 21]! % names.length]!;
      const range = { from, to: bounds[i + 1]! - 1, cluster };
      return target === cluster ? range : { ...range, movingTo: target };
    });
    return SlotMap.of(version, new Map(names.map((name) => [name, addresses])), ranges);
  });

export const request = fc.oneof(
  record({ op: fc.constant("K") }),
  record({ op: fc.constant("A"), key, leaseMs: durationMs, waitMs: durationMs, id }, ["id"]),
  record({ op: fc.constant("Y"), key, leaseMs: durationMs, id }, ["id"]),
  record({ op: fc.constant("R"), key, token: u64, id }, ["id"]),
  record({ op: fc.constant("X"), key, token: u64, leaseMs: durationMs, id }, ["id"]),
  record({ op: fc.constant("C"), key, id }),
  record({ op: fc.constant("P"), nonce }, ["nonce"]),
  record({ op: fc.constant("H"), secret }),
  record({ op: fc.constant("I") }),
) as fc.Arbitrary<Request>;

export const reply = fc.oneof(
  record({ kind: fc.constantFrom("A", "Y"), key, token: u64, id }, ["id"]),
  record({ kind: fc.constantFrom("T", "N"), key, id }, ["id"]),
  record({ kind: fc.constant("R"), key, released: fc.boolean() }),
  record({ kind: fc.constant("X"), key, extended: fc.boolean() }),
  record({ kind: fc.constant("C"), key, cancelled: fc.boolean() }),
  record({ kind: fc.constant("P"), nonce }, ["nonce"]),
  record({ kind: fc.constant("H") }),
  record({ kind: fc.constant("I"), fields: infoFields }),
  record({ kind: fc.constant("M"), op, key, address, id }, ["id"]),
  record({ kind: fc.constant("K"), map: fc.option(slotMap, { nil: undefined }) }),
  record(
    {
      kind: fc.constant("S"),
      op,
      key,
      slot: fc.integer({ min: 0, max: KEY_SLOTS - 1 }),
      version: u64,
      cluster: clusterName,
      address,
      id,
    },
    ["id"],
  ),
  record(
    {
      kind: fc.constant("E"),
      op: fc.oneof(op, fc.constant("?" as const)),
      key,
      code: errorCode,
      id,
      message,
    },
    ["id"],
  ),
) as fc.Arbitrary<Reply>;

/** A peer nonce or proof: 64 lowercase hex digits. */
export const peerHex = fc.stringMatching(/^[0-9a-f]{64}$/);

export const peerFrame = fc.oneof(
  record({ peer: fc.constant("N"), node: address, nonce: peerHex, version: fc.nat() }, ["version"]),
  record({ peer: fc.constant("C"), nonce: peerHex, version: fc.nat() }, ["version"]),
  record({ peer: fc.constant("V"), proof: peerHex }),
  record({ peer: fc.constant("J"), node: address, role, epoch, highest: epoch }),
  record({ peer: fc.constant("B"), node: address, role, epoch, active: address, highest: epoch }, ["active"]),
  record({ peer: fc.constant("S"), epoch, seq: safeInteger }),
  record({ peer: fc.constant("h"), key, token: u64, remainingMs: safeInteger, id }, ["id"]),
  record({ peer: fc.constant("s"), seq: safeInteger, count: safeInteger }),
  record({ peer: fc.constant("K"), seq: safeInteger }),
  record({ peer: fc.constant("G"), seq: safeInteger, key, token: u64, leaseMs: safeInteger, id }, ["id"]),
  record({ peer: fc.constant("F"), seq: safeInteger, key, token: u64 }),
  record({ peer: fc.constant("X"), seq: safeInteger, key, token: u64, leaseMs: safeInteger }),
  record({ peer: fc.constantFrom("P", "O"), seq: safeInteger, epoch }),
) as fc.Arbitrary<PeerFrame>;
