import { parseSafeInteger } from "./decimal.js";
import type { DecodeError } from "./decode-error.js";
import { keyText } from "./encode-fields.js";
import type { FieldReader } from "./field-reader.js";
import type { ProtocolLimits } from "./limits.js";
import { formatLockMode, parseLockMode } from "./lock-mode.js";
import { formatToken } from "./token.js";

import type { KeyStateReply, UnwatchRequest, WatchRequest } from "./watch-messages.js";

/** The codec of watching a key (watch-messages.ts, docs/protocol.md "Watching a key"). */

/** The most holders a state line may report: a key's shared holders are capped far below this. */
export const MAX_STATE_HOLDERS = 1_000_000_000;

/** The reason a state is inconsistent (free with a token, `x` with two holders…), or undefined. */
export function keyStateProblem(
  state: Pick<KeyStateReply, "token" | "mode" | "holders">,
): string | undefined {
  const { token, mode, holders } = state;
  if (!Number.isSafeInteger(holders) || holders < 0 || holders > MAX_STATE_HOLDERS)
    return `holders must be an integer from 0 to ${MAX_STATE_HOLDERS}`;
  if (mode === undefined)
    return token === 0n && holders === 0 ? undefined : "a free key has token 0 and 0 holders";
  if (token === 0n || holders === 0) return "a held key has a token above 0 and at least one holder";
  if (mode.kind === "exclusive" && holders !== 1) return "an exclusive key has exactly one holder";
  if (mode.kind === "permit" && holders > mode.limit) return "a semaphore has at most its limit of holders";
  return undefined;
}

export function encodeKeyState(reply: KeyStateReply, limits: ProtocolLimits): string {
  const problem = keyStateProblem(reply);
  if (problem !== undefined) throw new RangeError(problem);
  const mode = reply.mode === undefined ? "-" : formatLockMode(reply.mode);
  return `O ${keyText(reply.key, limits)} ${formatToken(reply.token)} ${mode} ${reply.holders}\n`;
}

export function parseWatch(r: FieldReader, op: "O" | "U"): WatchRequest | UnwatchRequest | DecodeError {
  const wrongCount = r.expect(2, 2, `${op} <key>`, 1);
  if (wrongCount) return wrongCount;
  return r.result<WatchRequest | UnwatchRequest>({ op, key: r.key(1) });
}

export function parseKeyState(r: FieldReader): KeyStateReply | DecodeError {
  const wrongCount = r.expect(5, 5, "O <key> <token> <mode|-> <holders>", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const token = r.token(2);
  const modeText = r.fields[3]!;
  const mode = modeText === "-" ? undefined : parseLockMode(modeText);
  if (modeText !== "-" && mode === undefined)
    r.fail("BAD_ARGUMENT", "the mode must be -, x, s or p<permits>");
  const holders = parseSafeInteger(r.fields[4]!) ?? -1;
  const problem = keyStateProblem({ token, mode, holders });
  if (problem !== undefined) r.fail("BAD_ARGUMENT", problem);
  return r.result<KeyStateReply>({ kind: "O", key, token, mode, holders });
}
