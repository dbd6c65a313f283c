// The client's timers run on the shared TimerQueue (one heap, one host timer).
export { EarliestTimer, type Timer, TimerQueue } from "@lock/deadline-heap";
