// The time source every room reads instead of `new Date()`, so that tests can move time.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
