import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";

/**
 * Secrets at rest (DKIM private keys, webhook signing tokens, …), sealed with AES-256-GCM
 * under a key derived from MAILROOM_SECRET by HKDF with a purpose label, so one stolen
 * store file reveals nothing and a key for one purpose opens nothing else.
 *
 * A sealed value reads `mrs1.<keyId>.<base64url(nonce ‖ ciphertext ‖ tag)>`. The key id
 * names the secret that sealed it (a short HMAC of the derived key, never the key), which
 * is what makes rotation possible: with MAILROOM_SECRET_PREVIOUS set, values sealed under
 * the old secret still open, new ones are sealed under the current secret, and
 * `needsReseal` tells a store which records to rewrite.
 */

/**
 * HKDF purpose labels, one per kind of secret: a value sealed for one purpose does not open
 * under another. Add a label here for a new kind; never rename one (stored values use it).
 *
 * Webhooks, for example, keep each endpoint's signing token sealed:
 *   const stored = sealSecret(secretKeysOf(config), SECRET_PURPOSES.webhookToken, token);
 *   const token = openStoredSecret(secretKeysOf(config), SECRET_PURPOSES.webhookToken, stored);
 * and, where the store opens, rewrite values for which needsReseal() is true (plaintext
 * from before, or sealed under MAILROOM_SECRET_PREVIOUS), as the accounts unit's SenderStore does.
 */
export const SECRET_PURPOSES = {
  dkimPrivateKey: "dkim-private-key",
  webhookToken: "webhook-token",
  /** The web console's session cookie (sealed: workspace, key id, CSRF secret). */
  consoleSession: "console-session",
  /** The web console's CSRF tokens and signed flash/pre-session cookies. */
  consoleCsrf: "console-csrf",
} as const;

/** The secrets of this process: `current` seals; `current` and `previous` open. */
export interface SecretKeys {
  current: string;
  previous?: string;
}

export class SecretError extends Error {}

const FORMAT = "mrs1";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_SALT = "mailroom/v1";

interface DerivedKey {
  id: string;
  key: Buffer;
}

const derived = new Map<string, DerivedKey>();

/**
 * A 32-byte key for one purpose ("dkim-private-key", "tracking-token", …) derived from a
 * Mailroom secret with HKDF-SHA256. Cached: callers may derive on every use.
 */
export function deriveKey(secret: string, purpose: string): Buffer {
  return derivedKey(secret, purpose).key;
}

function derivedKey(secret: string, purpose: string): DerivedKey {
  const cacheKey = `${purpose}\0${secret}`;
  let d = derived.get(cacheKey);
  if (!d) {
    const key = Buffer.from(hkdfSync("sha256", secret, HKDF_SALT, `mailroom/${purpose}`, 32));
    const id = createHmac("sha256", key).update("key-id").digest("base64url").slice(0, 8);
    d = { id, key };
    if (derived.size > 64) derived.clear();
    derived.set(cacheKey, d);
  }
  return d;
}

/** Keys that open values of a purpose, current first. */
function openingKeys(keys: SecretKeys, purpose: string): DerivedKey[] {
  const out = [derivedKey(keys.current, purpose)];
  if (keys.previous && keys.previous !== keys.current) out.push(derivedKey(keys.previous, purpose));
  return out;
}

/** Seals `plaintext` for `purpose` under the current secret. */
export function sealSecret(keys: SecretKeys, purpose: string, plaintext: string): string {
  const { id, key } = derivedKey(keys.current, purpose);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([nonce, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `${FORMAT}.${id}.${body.toString("base64url")}`;
}

/** Whether a stored value is sealed (as opposed to a legacy plaintext value). */
export function isSealed(value: string): boolean {
  return value.startsWith(`${FORMAT}.`);
}

/**
 * The plaintext of a sealed value. Throws SecretError when no configured secret sealed it
 * (MAILROOM_SECRET changed without MAILROOM_SECRET_PREVIOUS) or it was altered.
 */
export function openSecret(keys: SecretKeys, purpose: string, sealed: string): string {
  const [format, id, body] = sealed.split(".");
  if (format !== FORMAT || !id || body === undefined) throw new SecretError(`not a sealed ${purpose} value`);
  const key = openingKeys(keys, purpose).find((k) => k.id === id);
  if (!key) {
    throw new SecretError(
      `the ${purpose} was sealed with a secret this process does not have (key id ${id}); ` +
        `set MAILROOM_SECRET_PREVIOUS to the secret used before the last rotation`,
    );
  }
  const raw = Buffer.from(body, "base64url");
  if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SecretError(`sealed ${purpose} value is truncated`);
  try {
    const decipher = createDecipheriv("aes-256-gcm", key.key, raw.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretError(`sealed ${purpose} value does not authenticate (altered, or sealed for another purpose)`);
  }
}

/** Whether a stored value should be rewritten: plaintext, or sealed under a previous secret. */
export function needsReseal(keys: SecretKeys, purpose: string, stored: string): boolean {
  if (!isSealed(stored)) return true;
  return stored.split(".")[1] !== derivedKey(keys.current, purpose).id;
}

/** The value to keep in memory from a stored one: plaintext passes through (not yet migrated). */
export function openStoredSecret(keys: SecretKeys, purpose: string, stored: string): string {
  return isSealed(stored) ? openSecret(keys, purpose, stored) : stored;
}

/** The secrets of a loaded config. */
export function secretKeysOf(config: { secret: string; previousSecret?: string }): SecretKeys {
  return { current: config.secret, previous: config.previousSecret };
}
