/**
 * The background sweepers of `startSweeper()` (see ../periodic.ts for their timer);
 * `close()` stops them all.
 */
import { InvalidInputError } from "../../errors.js";
import { runPeriodically } from "../periodic.js";
import type { SweeperHandle, SweeperOptions, SweepOptions, SweepResult } from "./retention.js";

/** The default `onError` of a sweeper: the pass failed, the next one will try again. */
function logSweepError(error: unknown): void {
  console.error("langgraph-checkpoint-drizzle: a retention sweep failed (the next pass will run):", error);
}

/**
 * Runs `sweep` now and then `intervalMs` after each pass ends (see runPeriodically).
 * A failing pass goes to `onError`, never to an unhandled rejection (an error thrown
 * by `onError` or `onSweep` itself is dropped).
 */
function startSweeper(sweep: (options: SweepOptions) => Promise<SweepResult>, options: SweeperOptions): SweeperHandle {
  const { intervalMs, onError = logSweepError, onSweep, ...sweepOptions } = options ?? ({} as SweeperOptions);
  if (typeof intervalMs !== "number" || !Number.isFinite(intervalMs) || intervalMs < 0) {
    throw new InvalidInputError("startSweeper: intervalMs must be a non-negative number of milliseconds");
  }
  const report = (callback: () => void) => {
    try {
      callback();
    } catch {
      // A throwing callback must not stop the sweeper or escape as an unhandled error.
    }
  };
  return runPeriodically(async () => {
    try {
      const result = await sweep(sweepOptions);
      if (onSweep) report(() => onSweep(result));
    } catch (error) {
      report(() => onError(error));
    }
  }, intervalMs);
}

/** A saver's running sweepers, so that `close()` can stop them all. */
export class SweeperRegistry {
  private readonly running = new Set<SweeperHandle>();

  start(sweep: (options: SweepOptions) => Promise<SweepResult>, options: SweeperOptions): SweeperHandle {
    const inner = startSweeper(sweep, options);
    const handle: SweeperHandle = {
      stop: async () => {
        this.running.delete(handle);
        await inner.stop();
      },
    };
    this.running.add(handle);
    return handle;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running].map((handle) => handle.stop()));
  }
}
