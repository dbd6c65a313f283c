// The engine's clock is the one every deadline in the project runs on.
export { type Clock, ManualClock, monotonicClock } from "@lock/deadline-heap";
