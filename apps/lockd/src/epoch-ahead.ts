import type { TakenEpoch } from "@lock/server";

/** `/status`'s `epochAhead`: the epoch a node took ahead of its clock, until the clock catches up. */
export interface EpochAheadStatus {
  readonly epoch: string;
  /** How far the epoch's round (less the lead a hold covers) was ahead of the clock when taken. */
  readonly aheadSeconds: number;
  /** When the node started, or starts, granting from it (ISO 8601). */
  readonly servingFrom: string;
  /** When this machine's clock reaches the epoch's round; its tokens run ahead until then. */
  readonly clockCatchesUpAt: string;
}

export function epochAheadStatus(taken: TakenEpoch | undefined): EpochAheadStatus | null {
  if (taken === undefined) return null;
  return {
    epoch: taken.epoch.toString(),
    aheadSeconds: Math.round((taken.clockCatchesUpMs - taken.takenAtMs) / 1000),
    servingFrom: new Date(taken.servesFromMs).toISOString(),
    clockCatchesUpAt: new Date(taken.clockCatchesUpMs).toISOString(),
  };
}

/** The log line for it: loud, since a wrong clock (or a copied epoch file) is for the operator to fix. */
export function epochAheadLog(ahead: EpochAheadStatus, file: string): { fields: object; message: string } {
  return {
    fields: { file, ...ahead },
    message:
      `epoch ahead of clock: ${file} (or a peer) put this node's epoch ${ahead.aheadSeconds} s ahead of its clock; ` +
      `it grants from ${ahead.servingFrom} anyway, and its tokens run ahead of the clock until ` +
      `${ahead.clockCatchesUpAt}: check the clock (docs/operations.md, "Data directory")`,
  };
}
