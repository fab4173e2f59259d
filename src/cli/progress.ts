/**
 * Progress bars on stderr for the commands that go through many threads (--progress /
 * --no-progress).
 */
import cliProgress from "cli-progress";
import type { CliIo } from "./io.js";

export interface Progress {
  update(value: number): void;
  increment(): void;
  stop(): void;
}

const silent: Progress = { update() {}, increment() {}, stop() {} };

/**
 * A progress bar on stderr. `mode` is the --progress / --no-progress flag: undefined
 * shows the bar only on a terminal, true shows it anyway (one line every few seconds
 * when stderr is a file or pipe), false never.
 */
export function startProgress(io: CliIo, total: number, label: string, mode: boolean | undefined): Progress {
  const shown = progressShown(io, mode);
  if (!shown) return silent;
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {value}/{total} threads | {duration_formatted}`,
      // cli-progress writes to a terminal stream; any writable serves it.
      stream: io.stderr as NodeJS.WriteStream,
      noTTYOutput: mode === true,
      notTTYSchedule: 1000,
      hideCursor: true,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  let current = 0;
  bar.start(total, 0);
  return {
    update(value) {
      current = value;
      if (value > bar.getTotal()) bar.setTotal(value);
      bar.update(value);
    },
    increment() {
      this.update(current + 1);
    },
    stop() {
      bar.stop();
    },
  };
}

/** Whether a bar would be shown (so a command can skip counting for it otherwise). */
export function progressShown(io: CliIo, mode: boolean | undefined): boolean {
  return mode ?? io.stderr.isTTY === true;
}
