export { type Clock, ManualClock, monotonicClock } from "./clock.js";
export { EarliestTimer } from "./earliest-timer.js";
export { type DeadlineEntry, DeadlineHeap } from "./heap.js";
export { type Timer, type TimerHost, TimerQueue, type TimerQueueOptions } from "./timer-queue.js";
