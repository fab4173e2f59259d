/**
 * A new SQLite database file made private before a driver opens it: the file holds whole
 * conversations, and SQLite gives its -wal and -shm files the database file's mode.
 */
import { closeSync, constants, openSync } from "node:fs";

/**
 * Creates `path` empty with mode 0600 (an empty file is an empty SQLite database), never
 * through a symlink. A file already there keeps its mode: the application chose it.
 */
export function createPrivateDatabaseFile(path: string): void {
  if (path === ":memory:" || path === "") return;
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch {
    // There already (a file, or a link the application made): the driver opens it as before.
    // Any other failure (no such folder, no permission) is the driver's to report.
    return;
  }
  closeSync(fd);
}
