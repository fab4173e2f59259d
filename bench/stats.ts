/** Small statistics and timing helpers. */

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (sorted.length - 1) * p;
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export const median = (values: number[]): number => percentile(values, 0.5);

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export const now = (): number => performance.now();

export async function timed<T>(run: () => Promise<T>): Promise<[T, number]> {
  const start = now();
  const result = await run();
  return [result, now() - start];
}

/** A progress line on stderr, rewritten in place on a terminal and one line per update otherwise. */
export function progress(message: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${message}`);
  else process.stderr.write(`${message}\n`);
}

/** Ends a progress line started with {@link progress}. */
export function progressDone(message: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${message}\n`);
  else process.stderr.write(`${message}\n`);
}

/** Calls `tick` every `ms` until the returned function is called. */
export function every(ms: number, tick: () => void): () => void {
  const timer = setInterval(tick, ms);
  timer.unref();
  return () => clearInterval(timer);
}

export function formatNumber(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return "n/a";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Milliseconds with a precision that suits the magnitude. */
export function formatMs(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  if (value >= 100) return `${formatNumber(value, 0)} ms`;
  if (value >= 10) return `${formatNumber(value, 1)} ms`;
  return `${formatNumber(value, 2)} ms`;
}

export function formatBytes(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  if (value >= 1024 * 1024 * 1024) return `${formatNumber(value / 1024 / 1024 / 1024, 2)} GiB`;
  if (value >= 1024 * 1024) return `${formatNumber(value / 1024 / 1024, 1)} MiB`;
  if (value >= 1024) return `${formatNumber(value / 1024, 1)} KiB`;
  return `${formatNumber(value, 0)} B`;
}
