/** How many epochs one takeEpoch call may take (lockd takes one, or two at a promotion). */
export const MAX_EPOCHS_PER_CALL = 1024;

/** Refuses a count no caller means: a bug, thrown at once rather than sent to the store. */
export function checkEpochCount(count: number): void {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_EPOCHS_PER_CALL)
    throw new RangeError(`takeEpoch takes 1 to ${MAX_EPOCHS_PER_CALL} epochs at once, not ${count}`);
}
