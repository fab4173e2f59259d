/**
 * Opens the file an export writes to. It holds whole conversations, so it is created
 * readable by its owner only (0600), never written through a symbolic link (a link
 * planted at the path would make the export overwrite whatever it points to), and an
 * existing file is replaced only when the caller says so.
 *
 * The export is written under a temporary name beside the path and moved there only
 * once it is whole: an export that fails or is interrupted leaves no partial file, and
 * a file it was to replace stays as it was.
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  createWriteStream,
  fchmodSync,
  fchownSync,
  fsyncSync,
  linkSync,
  lstatSync,
  openSync,
  renameSync,
  type Stats,
  unlinkSync,
  type WriteStream,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { InvalidInputError } from "../errors.js";

export interface ExportFileOptions {
  /** Replace a file that exists (its permissions are kept); otherwise an existing file is an error. */
  overwrite: boolean;
}

/** The stream an export writes, and how it ends: moved into place, or removed. */
export interface ExportFile {
  stream: WriteStream;
  /** Moves the whole file to its path (after the last write). */
  commit(): Promise<void>;
  /** Removes what was written; the path stays as it was. */
  discard(): Promise<void>;
}

/** Where the platform has no O_NOFOLLOW (Windows), the lstat check below stands alone. */
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** Temporary files being written: removed if the process exits first (the CLI exits so on SIGINT). */
const unfinished = new Set<string>();
let cleanupInstalled = false;

function removeUnfinished(): void {
  for (const path of unfinished) {
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
  }
  unfinished.clear();
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined; // nothing there yet
  }
}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Opens `path` for writing an export, with the checks above; errors are InvalidInputErrors saying why. */
export function openExportFile(path: string, options: ExportFileOptions): ExportFile {
  const link = () => new InvalidInputError(`"${path}" is a symbolic link: an export is never written through one`);
  const exists = () =>
    new InvalidInputError(
      `"${path}" already exists: it is not overwritten unless asked (--force on the command line, overwrite: true in code)`,
    );
  const cannot = (error: unknown) =>
    new InvalidInputError(`cannot create "${path}": ${reasonOf(error)}`, { cause: error });
  const existing = statOrUndefined(path);
  if (existing?.isSymbolicLink()) throw link();
  if (existing && !options.overwrite) throw exists();
  if (existing && !existing.isFile()) return inPlace(path, link, cannot);

  const temp = createTemporary(path, existing, cannot);
  const moveIn = (from: string) => (options.overwrite ? renameSync(from, path) : place(from, path, exists));
  return temporaryExport(temp, moveIn, cannot);
}

/**
 * A new temporary file beside `path`: a random name, created exclusively and never through a
 * link (a name planted in advance is refused, not followed), removed if the process exits
 * first; with the mode (and owner, where allowed) of the file it is to replace.
 */
function createTemporary(path: string, existing: Stats | undefined, cannot: (error: unknown) => Error) {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString("hex")}.tmp`);
  let fd: number;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o600);
  } catch (error) {
    throw cannot(error);
  }
  if (!cleanupInstalled) {
    process.on("exit", removeUnfinished);
    cleanupInstalled = true;
  }
  unfinished.add(temp);
  if (existing) {
    try {
      fchmodSync(fd, existing.mode & 0o7777);
      fchownSync(fd, existing.uid, existing.gid);
    } catch {
      // another user's file: it becomes this user's, mode kept
    }
  }
  return { path: temp, fd };
}

/** The export written to the temporary file: `commit` syncs it and moves it in with `moveIn`; `discard` removes it. */
function temporaryExport(
  temp: { path: string; fd: number },
  moveIn: (from: string) => void,
  cannot: (error: unknown) => Error,
): ExportFile {
  const { path, fd } = temp;
  const stream = createWriteStream(path, { fd, autoClose: false });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    closeSync(fd);
  };
  const remove = () => {
    unfinished.delete(path);
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
  };
  return {
    stream,
    async commit() {
      try {
        await new Promise<void>((resolve, reject) => {
          stream.once("error", reject);
          stream.once("finish", resolve);
          stream.end();
        });
        fsyncSync(fd);
        close();
        moveIn(path);
      } catch (error) {
        try {
          close();
        } catch {}
        remove();
        throw error instanceof InvalidInputError ? error : cannot(error);
      }
      unfinished.delete(path);
    },
    async discard() {
      // The descriptor is closed only once the stream is done with it: a write still in
      // flight would otherwise land in whatever file reuses the number.
      await new Promise<void>((resolve) => {
        if (stream.closed) resolve();
        else {
          stream.once("close", () => resolve());
          stream.destroy();
        }
      });
      try {
        close();
      } catch {}
      remove();
    },
  };
}

/** Puts the finished file at `path` unless something is there by now: a hard link never replaces one. */
function place(temp: string, path: string, exists: () => Error): void {
  try {
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") throw exists();
    // A file system without hard links: the check just made stands alone.
    if (statOrUndefined(path)) throw exists();
    renameSync(temp, path);
    return;
  }
  unlinkSync(temp);
}

/** A device or a FIFO given with --force (/dev/null, a named pipe): there is no file to replace, it is written as it is. */
function inPlace(path: string, link: () => Error, cannot: (error: unknown) => Error): ExportFile {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") throw link();
    throw cannot(error);
  }
  const stream = createWriteStream(path, { fd });
  const end = () => new Promise<void>((resolve) => stream.end(resolve));
  return { stream, commit: end, discard: end };
}
