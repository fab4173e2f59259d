/**
 * The one escaping function for text that reaches a terminal. Thread ids, metadata,
 * decoded values and error messages come from the database or from a driver: a
 * crafted row must not move the cursor, recolour or rewrite what the operator sees
 * (ESC and CSI sequences, U+009B as a one-byte CSI) nor reorder it (bidirectional
 * controls such as U+202E).
 */

// C0, DEL, C1, Arabic letter mark, LRM/RLM, line/paragraph separators, bidi embeddings
// and overrides (U+202A-U+202E), bidi isolates (U+2066-U+2069).
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_EXCEPT_NEWLINE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes.
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Record<string, string> = { "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r" };

/** JSON's escape for a character, so escaped text inside a JSON string still parses to the original. */
function escapeChar(char: string): string {
  return SHORT[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * Replaces every control and bidirectional character with its JSON escape (`\u001b`,
 * `\u202e`, `\n`). `keepNewlines` lets the line breaks of a multi-line block through;
 * anything taken from a row is escaped with newlines included first (see `cell`).
 */
export function escapeTerminal(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(options.keepNewlines ? UNSAFE_EXCEPT_NEWLINE : UNSAFE, escapeChar);
}
