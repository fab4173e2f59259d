/** JSON values as the saver stores them in metadata columns and filters compare them. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A filter's entries as the text of one JSON object: how a dialect that compares whole documents takes a filter. */
export const filterDocument = (entries: [string, JsonValue][]): string => JSON.stringify(Object.fromEntries(entries));
