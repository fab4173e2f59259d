/**
 * Background WAL checkpoints for better-sqlite3 files. SQLite copies the write-ahead log
 * back into the database file (a checkpoint) on the connection that commits past 1,000
 * pages: a few milliseconds every few hundred writes, run on the application's thread,
 * about an eighth of a SQLite write's cost in the benchmark. Under sustained writes a
 * worker thread with its own connection to the file runs those checkpoints instead
 * (PASSIVE: they never block a writer or a reader), so the writer's own checkpoint finds
 * little left to copy. While the worker runs, the connection's own threshold is raised
 * (WRITER_THRESHOLD_PAGES) and then put back.
 *
 * The worker starts after a burst of writes on a connection to a file, one per
 * connection, never keeps the process alive, and stops after half a minute without writes or when
 * the saver closes the connection it opened. If it cannot run (no file, not in WAL mode,
 * no driver in a worker), checkpoints simply stay where SQLite puts them.
 */
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { Worker } from "node:worker_threads";

/** Write statements on a connection before its worker starts: short-lived databases never get one. */
const START_AFTER_WRITES = 500;
/** At most one checkpoint per this many milliseconds: each one syncs the database file. */
const PACE_MS = 20;
/**
 * The connection's own checkpoint threshold while a worker runs, in pages (SQLite's
 * default is 1,000): measured, the writer kept running about every second checkpoint
 * itself at 1,000 and gained 2-4%; at 4,000, 6-13%. A safety net if the worker falls
 * behind; the log file grows to about 16 MiB instead of 4.
 */
const WRITER_THRESHOLD_PAGES = 4_000;
/** A worker with no write to follow for this long stops (a pause between a user's turns keeps it). */
const IDLE_EXIT_MS = 30_000;

/** Slots of the shared signal: writes since the last checkpoint (0 or 1), "stop", checkpoints run. */
const WROTE = 0;
const STOP = 1;
const DONE = 2;

/**
 * The worker, as CommonJS source for `eval`: the driver's path comes from this process,
 * so it loads the copy the application uses. It waits for a write, checkpoints, rests
 * PACE_MS, and leaves when told to or when idle; any failure ends it quietly.
 */
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const signal = new Int32Array(workerData.signal);
const db = new Database(workerData.file, { fileMustExist: true });
let idle = 0;
try {
  while (Atomics.load(signal, ${STOP}) === 0) {
    if (Atomics.wait(signal, ${WROTE}, 0, 1000) === "timed-out") {
      idle += 1000;
      if (idle >= workerData.idleExitMs) break;
      continue;
    }
    idle = 0;
    Atomics.store(signal, ${WROTE}, 0);
    db.pragma("wal_checkpoint(PASSIVE)");
    Atomics.add(signal, ${DONE}, 1);
    Atomics.wait(signal, ${STOP}, 0, workerData.paceMs);
  }
} finally {
  db.close();
}
`;

/** The slice of a better-sqlite3 database the checkpointer reads. */
export interface WalDatabase {
  name: string;
  memory: boolean;
  pragma(source: string, options: { simple: true }): unknown;
}

/** The driver's entry file, resolved as this module resolves it; undefined if it cannot be. */
function driverPath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve("better-sqlite3");
  } catch {
    return undefined;
  }
}

/** One connection's checkpointer: counts writes, and runs a worker while they keep coming. */
class WalCheckpointer {
  private writes = 0;
  private signal?: Int32Array;
  private worker?: Worker;
  /** Set when a worker failed: this connection's checkpoints stay inline. */
  private failed = false;

  constructor(private readonly database: WalDatabase) {}

  /** After a write statement on the file: wakes the worker, or counts towards starting one. */
  wrote(): void {
    const signal = this.signal;
    if (signal) {
      if (Atomics.load(signal, WROTE) === 0) {
        Atomics.store(signal, WROTE, 1);
        Atomics.notify(signal, WROTE);
      }
      return;
    }
    if (this.failed || ++this.writes < START_AFTER_WRITES) return;
    this.writes = 0;
    this.start();
  }

  /** Checkpoints the current worker has run (0 without one). */
  checkpoints(): number {
    return this.signal ? Atomics.load(this.signal, DONE) : 0;
  }

  /** Asks the worker to stop (it finishes a checkpoint under way first). */
  stop(): void {
    const signal = this.signal;
    if (!signal) return;
    Atomics.store(signal, STOP, 1);
    Atomics.notify(signal, WROTE);
    Atomics.notify(signal, STOP);
  }

  private start(): void {
    const driver = driverPath();
    if (!driver || !this.inWalMode()) return;
    const signal = new Int32Array(new SharedArrayBuffer(12));
    let worker: Worker;
    try {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          driver,
          file: resolve(this.database.name),
          signal: signal.buffer,
          paceMs: PACE_MS,
          idleExitMs: IDLE_EXIT_MS,
        },
      });
    } catch {
      this.failed = true;
      return;
    }
    worker.unref();
    worker.on("error", () => {
      this.failed = true;
    });
    const threshold = this.writerThreshold(WRITER_THRESHOLD_PAGES);
    worker.on("exit", () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.signal = undefined;
      if (threshold !== undefined) this.writerThreshold(threshold);
    });
    this.worker = worker;
    this.signal = signal;
  }

  /** Sets the connection's wal_autocheckpoint; the value it had, or undefined if it is closed. */
  private writerThreshold(pages: number): number | undefined {
    try {
      const previous = Number(this.database.pragma("wal_autocheckpoint", { simple: true }));
      this.database.pragma(`wal_autocheckpoint = ${pages}`, { simple: true });
      return previous;
    } catch {
      return undefined;
    }
  }

  /** Whether the connection is open and in WAL mode (checkpoints exist only there). */
  private inWalMode(): boolean {
    try {
      return this.database.pragma("journal_mode", { simple: true }) === "wal";
    } catch {
      return false;
    }
  }
}

const checkpointers = new WeakMap<WalDatabase, WalCheckpointer>();

/** The checkpointer of a better-sqlite3 connection; undefined for an in-memory database. */
export function walCheckpointerOf(
  database: WalDatabase,
): Pick<WalCheckpointer, "wrote" | "stop" | "checkpoints"> | undefined {
  if (database.memory) return undefined;
  let checkpointer = checkpointers.get(database);
  if (!checkpointer) {
    checkpointer = new WalCheckpointer(database);
    checkpointers.set(database, checkpointer);
  }
  return checkpointer;
}
