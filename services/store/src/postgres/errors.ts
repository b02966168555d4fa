/** What the store and its collections tell from a failed statement (SQLSTATE, a broken connection), and the hash of generated names. */
import { createHash } from "node:crypto";

export const sha1 = (s: string) => createHash("sha1").update(s).digest("hex");

export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown })?.code === "23505";
}

export function isDeadlock(err: unknown): boolean {
  return (err as { code?: unknown })?.code === "40P01";
}

/** The connection broke (as opposed to the statement failing): a read may run again on another. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === "string" ? e.code : "";
  // 08: connection exception; 57P01-03: the server terminated the backend or is shutting down.
  if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return true;
  if (["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT"].includes(code)) return true;
  return typeof e?.message === "string" && /Connection terminated|connection error|not queryable/i.test(e.message);
}
