/**
 * The fencing rules as pure functions, written once: the memory store runs them as they are, and the
 * Postgres and Redis stores implement them in SQL and Lua, tested against these functions.
 *
 * A resource keeps two marks: the highest token of an accepted write, and the highest token of a
 * recorded read since that write. Tokens come from one sequence per lockd node (every grant, each
 * reader's and each permit's included, gets a token above every earlier grant's), so a lower token
 * always belongs to an earlier grant, and an equal token to the same one.
 *
 * - A write is accepted when its token is not below the write mark (a newer writer wrote: the
 *   exclusive rule) and not below the read mark (a newer reader read: the writer's exclusive grant
 *   ended before that reader's shared grant began). It sets the write mark and clears the read mark:
 *   every later write must be at least this write's token, which is at least any read recorded
 *   before it, so those reads can refuse nothing more.
 * - A read is accepted when its token is not below the write mark (a newer writer wrote: the
 *   reader's shared grant ended before that writer's exclusive one began). With `record`, it raises
 *   the read mark to its token, so a writer whose grant is older than this reader's is refused from
 *   then on. Only an accepted read is recorded; a refused one (below the write mark) could not refuse
 *   any write the write mark does not refuse already.
 */

export interface FenceMarks {
  /** The highest token of an accepted write, if any. */
  readonly write?: bigint;
  /** The highest token of a read recorded since the last accepted write, if any. */
  readonly read?: bigint;
}

/** Why a token was refused: the error code, and the mark that refused it. */
export interface FenceRefusal {
  readonly code: "FENCE_STALE_TOKEN" | "FENCE_NEWER_READ" | "FENCE_STALE_READ";
  /** Which mark refused the token: a newer write or a newer recorded read. */
  readonly refusedBy: "write" | "read";
  /** That mark's token. */
  readonly current: bigint;
}

export type FenceDecision =
  | { readonly accepted: true; readonly marks: FenceMarks }
  | { readonly accepted: false; readonly refusal: FenceRefusal };

export function decideWrite(marks: FenceMarks, token: bigint): FenceDecision {
  if (marks.write !== undefined && token < marks.write) {
    return refuse("FENCE_STALE_TOKEN", "write", marks.write);
  }
  if (marks.read !== undefined && token < marks.read) {
    return refuse("FENCE_NEWER_READ", "read", marks.read);
  }
  return { accepted: true, marks: { write: token } };
}

export function decideRead(marks: FenceMarks, token: bigint, record: boolean): FenceDecision {
  if (marks.write !== undefined && token < marks.write) {
    return refuse("FENCE_STALE_READ", "write", marks.write);
  }
  if (!record || (marks.read !== undefined && marks.read >= token)) return { accepted: true, marks };
  return { accepted: true, marks: { ...marks, read: token } };
}

function refuse(code: FenceRefusal["code"], refusedBy: FenceRefusal["refusedBy"], current: bigint) {
  return { accepted: false, refusal: { code, refusedBy, current } } as const;
}
