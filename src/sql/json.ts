/** JSON values as the saver stores them in metadata columns and filters compare them. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
