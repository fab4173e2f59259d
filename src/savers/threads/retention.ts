/**
 * Retention policies: the saver's `retention` option and the options of `sweep()` and
 * `startSweeper()`, checked and resolved to milliseconds and defaults.
 */
import { parseDuration } from "../../duration.js";
import { InvalidInputError } from "../../errors.js";
import { optionKeys, requireKnownNestedOptions, requireKnownOptions } from "../../known-options.js";

/** What a retention policy does to an idle thread. */
export type RetentionStrategy = "delete" | "keep_latest";

/** The saver's `retention` option: what happens to threads nobody wrote to for a while. */
export interface RetentionPolicy {
  /**
   * A thread is idle when its newest checkpoint, in any namespace, is older than this:
   * milliseconds, or a duration such as "30d", "12h", "90m", "1d12h", "2w".
   */
  idleFor: number | string;
  /** "delete" removes an idle thread whole; "keep_latest" keeps its newest `keepLast` checkpoints of each namespace. */
  strategy: RetentionStrategy;
  /** With "keep_latest": checkpoints kept per namespace; default 1. */
  keepLast?: number;
}

/** A policy with its duration in milliseconds and every default applied. */
export interface ResolvedPolicy {
  idleForMs: number;
  strategy: RetentionStrategy;
  keepLast: number;
}

/** Progress of a sweep, reported after each batch. */
export interface SweepProgress {
  /** Idle, unpinned threads examined so far. */
  scanned: number;
  /** Threads removed whole. */
  deleted: number;
  /** Threads whose older checkpoints were removed (keep_latest). */
  pruned: number;
  /** keep_latest: threads that had no more than `keepLast` checkpoints in each namespace already. */
  unchanged: number;
  /**
   * Threads left alone when their turn came: written to meanwhile, pinned meanwhile,
   * or being handled by another sweeper at that moment.
   */
  skipped: number;
}

/** What one sweep did; with `dryRun`, `scanned` is the number of threads it would handle. */
export interface SweepResult extends SweepProgress {
  dryRun: boolean;
}

/** Options of `sweep()`: the saver's `retention`, or what overrides it for this pass. */
export interface SweepOptions extends Partial<RetentionPolicy> {
  /** Idle threads read per batch; default 100. */
  batchSize?: number;
  /**
   * Find the threads the pass would handle and change nothing: `scanned` counts them and
   * `onThread` gets each with the outcome the pass would aim for ("deleted" or "pruned").
   */
  dryRun?: boolean;
  /** Called after each batch with the totals so far. */
  onProgress?: (progress: SweepProgress) => void;
  /** Called after each thread's turn with what happened to it (an audit log, say). */
  onThread?: (threadId: string, outcome: SweepOutcome) => void;
}

/** What a sweep did to one idle thread; see {@link SweepProgress}. */
export type SweepOutcome = "deleted" | "pruned" | "unchanged" | "skipped";

/** Options of `startSweeper()`. */
export interface SweeperOptions extends Omit<SweepOptions, "dryRun"> {
  /** Milliseconds between the end of one pass and the start of the next; the first starts at once. */
  intervalMs: number;
  /**
   * Called with the error of a failed pass (the next pass still runs). By default the
   * error is written to stderr with `console.error`; a pass never rejects unhandled.
   */
  onError?: (error: unknown) => void;
  /** Called with each finished pass's result. */
  onSweep?: (result: SweepResult) => void;
}

/** A running sweeper. */
export interface SweeperHandle {
  /** Stops scheduling passes; resolves when the pass in progress (if any) has ended. */
  stop(): Promise<void>;
}

const STRATEGIES: readonly RetentionStrategy[] = ["delete", "keep_latest"];

const RETENTION_KEYS = optionKeys<RetentionPolicy>({ idleFor: true, strategy: true, keepLast: true });

const SWEEP_KEYS = optionKeys<SweepOptions>({
  idleFor: true,
  strategy: true,
  keepLast: true,
  batchSize: true,
  dryRun: true,
  onProgress: true,
  onThread: true,
});
const SWEEPER_KEYS = optionKeys<SweeperOptions>({
  idleFor: true,
  strategy: true,
  keepLast: true,
  batchSize: true,
  onProgress: true,
  onThread: true,
  intervalMs: true,
  onError: true,
  onSweep: true,
});

/** Milliseconds of an `idleFor` value; InvalidInputError unless it is a positive duration. */
function idleForMs(idleFor: unknown, what = "retention.idleFor"): number {
  const ms = typeof idleFor === "string" ? parseDuration(idleFor) : idleFor;
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) {
    throw new InvalidInputError(
      `${what} must be a positive number of milliseconds or a duration such as "30d", "12h", "90m", got ${JSON.stringify(idleFor) ?? String(idleFor)}`,
    );
  }
  return ms;
}

/** A positive integer `keepLast`; default 1. */
export function keepLastOf(keepLast: unknown, what: string): number {
  if (keepLast === undefined) return 1;
  if (typeof keepLast !== "number" || !Number.isSafeInteger(keepLast) || keepLast < 1) {
    throw new InvalidInputError(`${what} must be a positive integer, got ${String(keepLast)}`);
  }
  return keepLast;
}

/** Checks a policy (the saver's option or a sweep's) and applies its defaults. */
export function resolvePolicy(policy: Partial<RetentionPolicy>, what: string): ResolvedPolicy {
  requireKnownNestedOptions(policy, what, RETENTION_KEYS);
  if (policy.idleFor === undefined) throw new InvalidInputError(`${what}.idleFor is required`);
  const strategy = policy.strategy;
  if (!STRATEGIES.includes(strategy as RetentionStrategy)) {
    throw new InvalidInputError(`${what}.strategy must be "delete" or "keep_latest", got ${String(strategy)}`);
  }
  if (strategy === "delete" && policy.keepLast !== undefined) {
    throw new InvalidInputError(`${what}.keepLast applies to the "keep_latest" strategy only`);
  }
  return {
    idleForMs: idleForMs(policy.idleFor, `${what}.idleFor`),
    strategy: strategy as RetentionStrategy,
    keepLast: keepLastOf(policy.keepLast, `${what}.keepLast`),
  };
}

/**
 * A sweep's policy: its own options over the saver's `retention` (a strategy given
 * without keepLast does not inherit the saver's keepLast).
 */
export function sweepPolicy(
  saverPolicy: RetentionPolicy | undefined,
  options: SweepOptions,
  call: "sweep" | "startSweeper" = "sweep",
): ResolvedPolicy {
  requireKnownOptions(options, call, call === "sweep" ? SWEEP_KEYS : SWEEPER_KEYS);
  if (saverPolicy === undefined && options.idleFor === undefined) {
    throw new InvalidInputError(
      "sweep: no retention policy: pass the saver's retention option or sweep({ idleFor, strategy })",
    );
  }
  const strategy = options.strategy ?? saverPolicy?.strategy;
  const keepLast = options.keepLast ?? (options.strategy === undefined ? saverPolicy?.keepLast : undefined);
  return resolvePolicy(
    { idleFor: options.idleFor ?? saverPolicy?.idleFor, strategy, keepLast } as Partial<RetentionPolicy>,
    "sweep",
  );
}
