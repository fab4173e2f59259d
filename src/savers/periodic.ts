/**
 * The background work of the saver and the store (retention sweeps, the store's expiry):
 * a task run at once and then an interval after each run ends, so runs never overlap,
 * on a timer that never keeps the process alive.
 */

/** A task started by `runPeriodically`. */
export interface PeriodicTask {
  /** Stops the timer and waits for a run under way. */
  stop(): Promise<void>;
}

/** The longest delay setTimeout holds (a signed 32-bit count of milliseconds, 24.8 days). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Runs `task` now and then `intervalMs` after each run ends. The task reports its own
 * failures; a rejection that still escapes it is dropped here, never left unhandled.
 */
export function runPeriodically(task: () => Promise<void>, intervalMs: number): PeriodicTask {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const schedule = (delay: number) => {
    if (stopped) return;
    // setTimeout runs a longer delay after 1 ms: a longer wait goes in steps it holds.
    const step = Math.min(delay, MAX_TIMEOUT_MS);
    timer = setTimeout(() => {
      timer = undefined;
      if (delay > step) return schedule(delay - step);
      running = task()
        .catch(() => {})
        .then(() => {
          running = undefined;
          schedule(intervalMs);
        });
    }, step);
    timer.unref();
  };
  schedule(0);
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
