/**
 * What `close()` leaves of a saver or store: every later call that would reach the
 * database is refused with a SaverClosedError before it does, the same on every driver.
 */
import { SaverClosedError } from "../errors.js";

/** Whether `close()` was called; read by every call, so a plain boolean and nothing awaited. */
export class ClosedState {
  closed = false;

  constructor(private readonly what: "DrizzleSaver" | "DrizzleStore") {}

  /** The error of `call` made after `close()`. */
  error(call: string): SaverClosedError {
    return new SaverClosedError(`${call}: the ${this.what} is closed (its close() was called)`);
  }

  /** Throws the error of `call` once closed (the first statement of an async call: a rejection). */
  check(call: string): void {
    if (this.closed) throw this.error(call);
  }

  /** The rejection of `call`, for a method that returns a promise without being async. */
  rejected<T>(call: string): Promise<T> {
    return Promise.reject(this.error(call));
  }
}
