/**
 * Opens the file an export writes to. It holds whole conversations, so it is created
 * readable by its owner only (0600), never written through a symbolic link (a link
 * planted at the path would make the export overwrite whatever it points to), and an
 * existing file is replaced only when the caller says so.
 */
import { constants, createWriteStream, lstatSync, openSync, type WriteStream } from "node:fs";
import { InvalidInputError } from "../errors.js";

export interface ExportFileOptions {
  /** Replace a file that exists (its permissions are kept); otherwise an existing file is an error. */
  overwrite: boolean;
}

/** Where the platform has no O_NOFOLLOW (Windows), the lstat check below stands alone. */
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false; // nothing there yet
  }
}

/** Opens `path` for writing an export, with the checks above; errors are InvalidInputErrors saying why. */
export function openExportFile(path: string, options: ExportFileOptions): WriteStream {
  const link = () => new InvalidInputError(`"${path}" is a symbolic link: an export is never written through one`);
  if (isSymlink(path)) throw link();
  // O_EXCL refuses any existing path, a link included; O_NOFOLLOW refuses a link made since the check.
  const flags =
    constants.O_WRONLY | constants.O_CREAT | NOFOLLOW | (options.overwrite ? constants.O_TRUNC : constants.O_EXCL);
  let fd: number;
  try {
    fd = openSync(path, flags, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw link();
    if (code === "EEXIST") {
      throw new InvalidInputError(
        `"${path}" already exists: it is not overwritten unless asked (--force on the command line, overwrite: true in code)`,
      );
    }
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidInputError(`cannot create "${path}": ${reason}`, { cause: error });
  }
  return createWriteStream(path, { fd });
}
