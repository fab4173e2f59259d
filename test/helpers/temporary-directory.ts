/**
 * Vitest global setup: every test run gets a temporary directory of its own, removed
 * when the run ends, whatever the tests left in it (SQLite files, transfer files,
 * scratch apps, files of the processes the tests start). TMPDIR is inherited by the
 * test workers and by every process they start, so os.tmpdir() points there.
 */
import { chmodSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export default function setup(): () => void {
  const directory = mkdtempSync(join(realpathSync(tmpdir()), "lgcd-test-run-"));
  // Tests that run the CLI as "nobody" reach their own directories inside it.
  chmodSync(directory, 0o711);
  process.env.TMPDIR = directory;
  return () => rmSync(directory, { recursive: true, force: true });
}
