/**
 * @lock/protocol micro-benchmark: encode and decode throughput of the wire codec, in frames/s, for a
 * realistic mix. Requests: acquires with ids and releases with 19-20 digit tokens. Replies: grants
 * with those tokens and release outcomes. Decoding runs on one large multi-frame buffer fed in
 * 64 KiB chunks, as a socket would deliver it, so lines straddle chunk boundaries.
 *
 *   taskset -c 0 node bench/dist/protocol-bench.js [--seconds 1] [--frames 100000]
 *
 * Single-threaded, in this process; pin it (taskset) for steadier figures. Each figure is the median
 * of several timed rounds after a warm-up.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  composeToken,
  encodeReply,
  encodeRequest,
  LineDecoder,
  type Reply,
  ReplyDecoder,
  type Request,
  RequestDecoder,
} from "@lock/protocol";
import { formatRate, printRow } from "./report.js";

const CHUNK_BYTES = 64 * 1024;
const ROUNDS = 7;

const { values: options } = parseArgs({
  options: {
    seconds: { type: "string", default: "1" },
    frames: { type: "string", default: "100000" },
  },
});
const secondsPerMeasurement = Number(options.seconds);
const frameCount = Number(options.frames);

// Epochs in the millions put tokens at 19-20 digits, the bigint-heavy end of the range.
const bigToken = (i: number) => composeToken(BigInt(12_000_000 + (i % 1000)), BigInt(1_000_000_007 + i));

/** Per 10 frames: 5 acquires with ids, 5 releases, over 10,000 keys. */
function requestMix(count: number): Request[] {
  return Array.from({ length: count }, (_, i): Request => {
    const key = `orders:${i % 10_000}`;
    return i % 2 === 0
      ? { op: "A", key, leaseMs: 30_000, waitMs: 2_500, id: `job-${i}` }
      : { op: "R", key, token: bigToken(i) };
  });
}

/** Per 10 frames: 5 grants with ids, 5 release outcomes. */
function replyMix(count: number): Reply[] {
  return Array.from({ length: count }, (_, i): Reply => {
    const key = `orders:${i % 10_000}`;
    return i % 2 === 0
      ? { kind: "A", key, token: bigToken(i), id: `job-${i}` }
      : { kind: "R", key, released: true };
  });
}

function chunksOf(bytes: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += CHUNK_BYTES)
    chunks.push(bytes.subarray(start, start + CHUNK_BYTES));
  return chunks;
}

/**
 * Runs `pass` (which handles `framesPerPass` frames) until `seconds` have gone, in ROUNDS rounds
 * after a warm-up round, and returns the median rate in frames/s.
 */
function measure(framesPerPass: number, pass: () => number): number {
  let sink = 0;
  const runFor = (ms: number) => {
    const start = process.hrtime.bigint();
    let passes = 0;
    let elapsedNs = 0n;
    do {
      sink += pass();
      passes++;
      elapsedNs = process.hrtime.bigint() - start;
    } while (elapsedNs < BigInt(Math.round(ms * 1e6)));
    return (passes * framesPerPass) / (Number(elapsedNs) / 1e9);
  };
  const roundMs = (secondsPerMeasurement * 1000) / ROUNDS;
  runFor(roundMs);
  const rates = Array.from({ length: ROUNDS }, () => runFor(roundMs)).sort((a, b) => a - b);
  // The results feed `sink` so no pass can be optimised away; a wrong count means a broken bench.
  if (sink <= 0) throw new Error("benchmark produced no frames");
  return rates[Math.floor(ROUNDS / 2)]!;
}

function report(name: string, rate: number, bytesPerFrame: number): void {
  printRow(name, {
    frames: formatRate(rate),
    MB_per_s: (rate * bytesPerFrame) / 1e6,
    ns_per_frame: 1e9 / rate,
  });
}

/** The CPUs this process may run on, from Linux's /proc; undefined elsewhere. */
function allowedCpus(): string | undefined {
  try {
    return /^Cpus_allowed_list:\s*(.+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  } catch {
    return undefined;
  }
}

function main(): void {
  const requests = requestMix(frameCount);
  const replies = replyMix(frameCount);
  const requestBytes = Buffer.from(requests.map((r) => encodeRequest(r)).join(""));
  const replyBytes = Buffer.from(replies.map((r) => encodeReply(r)).join(""));
  const requestChunks = chunksOf(requestBytes);
  const replyChunks = chunksOf(replyBytes);
  const bytesPerRequest = requestBytes.length / frameCount;
  const bytesPerReply = replyBytes.length / frameCount;

  const cpus = allowedCpus();
  console.log(
    `protocol bench: single-threaded, node ${process.version}, cpus allowed: ${cpus ?? "unknown"} ` +
      `(${cpus !== undefined && /^\d+$/.test(cpus) ? "pinned" : "unpinned; pin with taskset -c 0"}), ` +
      `${frameCount.toLocaleString("en-US")} frames per pass, ${CHUNK_BYTES / 1024} KiB chunks, ` +
      `${secondsPerMeasurement}s per figure (median of ${ROUNDS})`,
  );
  console.log(
    `mix: requests 50% "A <key> 30 2.5 <id>" / 50% "R <key> <token>" (${bytesPerRequest.toFixed(1)} B avg); ` +
      `replies 50% "A <key> <token> <id>" / 50% "R <key> 1" (${bytesPerReply.toFixed(1)} B avg)`,
  );

  const encode =
    <T>(values: readonly T[], encodeOne: (value: T) => string) =>
    () => {
      let length = 0;
      for (const value of values) {
        const line = encodeOne(value);
        // Reading a character flattens V8's rope strings, as writing them to a socket would.
        if (line.charCodeAt(line.length - 1) === 0x0a) length += line.length;
      }
      return length;
    };
  const decode =
    (chunks: readonly Buffer[], newDecoder: () => { push(chunk: Uint8Array): unknown[] }) => () => {
      const decoder = newDecoder();
      let frames = 0;
      for (const chunk of chunks) frames += decoder.push(chunk).length;
      if (frames !== frameCount) throw new Error(`decoded ${frames} frames, expected ${frameCount}`);
      return frames;
    };

  report(
    "encode requests (encodeRequest)",
    measure(
      frameCount,
      encode(requests, (r) => encodeRequest(r)),
    ),
    bytesPerRequest,
  );
  report(
    "encode replies (encodeReply)",
    measure(
      frameCount,
      encode(replies, (r) => encodeReply(r)),
    ),
    bytesPerReply,
  );
  report(
    "split lines only (LineDecoder)",
    measure(
      frameCount,
      decode(requestChunks, () => new LineDecoder()),
    ),
    bytesPerRequest,
  );
  report(
    "decode requests (RequestDecoder)",
    measure(
      frameCount,
      decode(requestChunks, () => new RequestDecoder()),
    ),
    bytesPerRequest,
  );
  report(
    "decode replies (ReplyDecoder)",
    measure(
      frameCount,
      decode(replyChunks, () => new ReplyDecoder()),
    ),
    bytesPerReply,
  );
}

main();
