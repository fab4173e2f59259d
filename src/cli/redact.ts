/**
 * Hiding the passwords of database URLs wherever the CLI prints one: in `status`, in
 * "cannot reach ..." and in any error message that quotes a URL or a password; and the
 * server a URL names, to tell which one a connection error is about.
 */
import { type DatabaseFamily, databaseFamily } from "../database-family.js";

/** Query parameters that carry a secret: password, password1, sslpassword, passwd, pwd, token, secret. */
const SECRET_PARAM = /pass(word|wd)?|pwd|secret|token/i;

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

interface Userinfo {
  /** Index of the "@" that ends the userinfo, relative to the text after "scheme://". */
  at: number;
  user: string;
  /** Undefined when the userinfo has no ":". */
  password?: string;
}

/**
 * The userinfo of "scheme://user:password@host/...". A password may hold "@", ":",
 * "/", "?" or "#" unencoded, so the userinfo ends at the last "@" before the first
 * "/", "?" or "#" that follows the first "@". When in doubt this hides too much,
 * never too little.
 */
function userinfoOf(rest: string): Userinfo | undefined {
  const firstAt = rest.indexOf("@");
  if (firstAt < 0) return undefined;
  const afterFirst = rest.slice(firstAt).search(/[/?#]/);
  const end = afterFirst < 0 ? rest.length : firstAt + afterFirst;
  const at = rest.lastIndexOf("@", end - 1);
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(":");
  if (colon < 0) return { at, user: userinfo };
  return { at, user: userinfo.slice(0, colon), password: userinfo.slice(colon + 1) };
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Replaces the value of every query parameter whose name says it is a secret. */
function redactParams(text: string): string {
  return text.replace(/([?&])([^=&#]*)=([^&#]*)/g, (whole, separator: string, name: string) =>
    SECRET_PARAM.test(decoded(name)) ? `${separator}${name}=***` : whole,
  );
}

/**
 * A URL with its passwords hidden: "postgres://app:top@secret@host/db" becomes
 * "postgres://app:***@host/db", "mysql://host/db?password=x" becomes
 * "mysql://host/db?password=***". Text that is not a "scheme://" URL (an SQLite path)
 * is returned as it is, apart from secret query parameters.
 */
export function redactUrl(url: string): string {
  const scheme = SCHEME.exec(url)?.[0];
  if (scheme === undefined) return redactParams(url);
  const rest = url.slice(scheme.length);
  const userinfo = userinfoOf(rest);
  if (userinfo?.password === undefined) return scheme + redactParams(rest);
  return `${scheme}${userinfo.user}:***@${redactParams(rest.slice(userinfo.at + 1))}`;
}

/** The secrets a URL holds (its password and secret parameters), raw and percent-decoded. */
function urlSecrets(url: string): string[] {
  const secrets = new Set<string>();
  const scheme = SCHEME.exec(url)?.[0];
  const rest = scheme === undefined ? url : url.slice(scheme.length);
  const password = scheme === undefined ? undefined : userinfoOf(rest)?.password;
  if (password !== undefined) secrets.add(password).add(decoded(password));
  for (const [, name, value] of rest.matchAll(/[?&]([^=&#]*)=([^&#]*)/g)) {
    if (SECRET_PARAM.test(decoded(name))) secrets.add(value).add(decoded(value));
  }
  // A one- or two-character secret would turn ordinary words of a message into "***".
  return [...secrets].filter((secret) => secret.length >= 3).sort((a, b) => b.length - a.length);
}

/** The port a server of each family listens on unless its URL names one. */
const DEFAULT_PORTS: Record<DatabaseFamily, number | undefined> = { postgres: 5432, mysql: 3306, sqlite: undefined };

/** The family a URL names (databaseFamily), or undefined for a scheme no family has. */
function familyOf(url: string): DatabaseFamily | undefined {
  try {
    return databaseFamily(url);
  } catch {
    return undefined;
  }
}

/**
 * The host (lower case, without IPv6 brackets) and port a server URL names, its
 * scheme's default port when it names none; undefined for an SQLite path or file URL.
 */
export function serverOf(url: string): { host: string; port: number } | undefined {
  const scheme = SCHEME.exec(url)?.[0];
  const family = familyOf(url);
  const defaultPort = family === undefined ? undefined : DEFAULT_PORTS[family];
  if (scheme === undefined || defaultPort === undefined) return undefined;
  const rest = url.slice(scheme.length);
  const afterUserinfo = rest.slice((userinfoOf(rest)?.at ?? -1) + 1);
  const authority = afterUserinfo.split(/[/?#]/, 1)[0];
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(authority);
  if (!match) return undefined;
  return {
    host: decoded(match[1].replace(/^\[|\]$/g, "")).toLowerCase(),
    port: match[2] === undefined ? defaultPort : Number(match[2]),
  };
}

/** Every URL in a message redacted, and the secrets of `urls` (the ones the command uses) hidden wherever they appear. */
export function redactText(text: string, urls: readonly string[] = []): string {
  // A URL in a sentence ends before the punctuation that follows it ("cannot reach <url>: ...").
  let result = text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]*[^\s"'<>.,;:)]/gi, (found) => redactUrl(found));
  // Longest first: one URL's secret may hold another's.
  const secrets = urls.flatMap(urlSecrets).sort((a, b) => b.length - a.length);
  for (const secret of secrets) result = result.split(secret).join("***");
  return result;
}
