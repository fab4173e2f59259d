/**
 * The store's background sweeper: a timer that removes expired items every interval,
 * never keeping the process alive, one pass at a time.
 */

/** Runs `sweep` every `intervalMs`, the first pass at once, when started. */
export class Sweeper {
  private running: { timer: NodeJS.Timeout; pass?: Promise<unknown> } | undefined;

  constructor(
    private readonly sweep: () => Promise<unknown>,
    private readonly intervalMs: number,
  ) {}

  /** Idempotent; a failed pass is reported with `console.error` and the next one runs as planned. */
  start(): void {
    if (this.running) return;
    const running: { timer?: NodeJS.Timeout; pass?: Promise<unknown> } = {};
    const pass = () => {
      if (running.pass) return;
      running.pass = this.sweep()
        .catch((error) => console.error("DrizzleStore: sweeping expired items failed", error))
        .finally(() => {
          running.pass = undefined;
        });
    };
    running.timer = setInterval(pass, this.intervalMs);
    running.timer.unref();
    this.running = running as { timer: NodeJS.Timeout };
    pass();
  }

  /** Stops the timer, waiting for a pass under way. */
  async stop(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    if (!running) return;
    clearInterval(running.timer);
    await running.pass;
  }
}
