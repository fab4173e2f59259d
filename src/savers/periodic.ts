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
    timer = setTimeout(() => {
      timer = undefined;
      running = task()
        .catch(() => {})
        .then(() => {
          running = undefined;
          schedule(intervalMs);
        });
    }, delay);
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
