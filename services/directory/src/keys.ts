import { createHash, randomBytes } from "node:crypto";
import { appError, badRequest, conflict, errorInfoOf, notFound } from "../../kit/src/errors.js";
import { newId } from "../../kit/src/ids.js";
import { DuplicateKeyError } from "../../kit/src/store/port.js";
import type { ApiKeyDoc, DirectoryRepos } from "./store.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

/** `api_user` is what the public API needs; `admin` is for operator tooling. */
export const KNOWN_SCOPES = ["api_user", "admin"] as const;
export const KEY_PREFIX = "mr_live_";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Keys the gateway would accept in a Bearer header; anything else is malformed. */
export const KEY_SHAPE = /^[A-Za-z0-9_\-.~+/=]{8,256}$/;

export interface AuthResult {
  workspaceId: string;
  keyId: string;
  scopes: string[];
}

/** `mr_live_` + 32 base62 characters from the CSPRNG (rejection sampling: no modulo bias). */
export function generateApiKey(): string {
  let out = "";
  while (out.length < 32) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && out.length < 32) out += BASE62[byte % 62];
    }
  }
  return KEY_PREFIX + out;
}

export const hashApiKey = (plain: string): string => createHash("sha256").update(plain, "utf8").digest("hex");

/** The non-secret part shown in listings: never more than half of the key. */
export function displayPrefix(plain: string): string {
  return plain.slice(0, Math.min(KEY_PREFIX.length + 4, Math.floor(plain.length / 2)));
}

const unauthenticated = (code: string, message: string) => appError({ code, httpStatus: 401, message });

export function checkScopes(scopes: string[]): string[] {
  const list = scopes.length ? [...new Set(scopes)] : ["api_user"];
  const unknown = list.filter((s) => !(KNOWN_SCOPES as readonly string[]).includes(s));
  if (unknown.length) {
    throw badRequest("invalid_scope", `Unknown scope(s): ${unknown.join(", ")}; known scopes: ${KNOWN_SCOPES.join(", ")}`);
  }
  return list;
}

export class ApiKeys {
  constructor(
    private readonly repos: DirectoryRepos,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
  ) {}

  /**
   * Creates a key and returns the plain key once. `fixedKey` (bootstrap, tests) is hashed
   * like a generated one.
   */
  async create(workspaceId: string, opts: { name?: string; scopes?: string[]; fixedKey?: string }): Promise<{ key: ApiKeyDoc; plain: string }> {
    await this.workspaces.get(workspaceId);
    const scopes = checkScopes(opts.scopes ?? []);
    const plain = opts.fixedKey || generateApiKey();
    if (!KEY_SHAPE.test(plain)) throw badRequest("invalid_request", "API key must be 8-256 characters of [A-Za-z0-9_-.~+/=]");
    const doc: ApiKeyDoc = {
      _id: newId("key"),
      workspaceId,
      name: (opts.name ?? "").trim().slice(0, 200),
      prefix: displayPrefix(plain),
      hash: hashApiKey(plain),
      scopes,
      createdAt: this.now(),
      revokedAt: null,
    };
    try {
      await this.repos.apiKeys.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw conflict("api_key_exists", "This API key already exists");
      throw err;
    }
    return { key: doc, plain };
  }

  /** Bootstrap: makes sure a fixed key exists for this workspace with these scopes. */
  async ensure(workspaceId: string, plain: string, scopes: string[]): Promise<void> {
    const existing = await this.repos.apiKeys.findOne({ hash: hashApiKey(plain) });
    if (!existing) {
      try {
        await this.create(workspaceId, { name: "bootstrap", scopes, fixedKey: plain });
        return;
      } catch (err) {
        // Another process loading the same bootstrap won the insert: check what it wrote.
        if (errorInfoOf(err)?.code !== "api_key_exists") throw err;
        return this.ensure(workspaceId, plain, scopes);
      }
    }
    if (existing.workspaceId !== workspaceId) {
      throw conflict("api_key_exists", `A bootstrap key of workspace ${workspaceId} already belongs to another workspace`);
    }
    const wanted = checkScopes(scopes);
    if (existing.revokedAt) return; // a revoked key stays revoked
    if (JSON.stringify([...existing.scopes].sort()) !== JSON.stringify([...wanted].sort())) {
      await this.repos.apiKeys.updateOne({ _id: existing._id }, { $set: { scopes: wanted } });
    }
  }

  async list(workspaceId: string): Promise<ApiKeyDoc[]> {
    return this.repos.apiKeys.find({ workspaceId: requireWorkspaceId(workspaceId) }, { sort: { _id: 1 }, limit: 1_000 });
  }

  async revoke(workspaceId: string, keyId: string): Promise<void> {
    const key = await this.repos.apiKeys.findOne({ _id: keyId, workspaceId: requireWorkspaceId(workspaceId) });
    if (!key) throw notFound("api_key_not_found", `API key ${keyId} not found`);
    if (key.revokedAt) return;
    await this.repos.apiKeys.updateOne({ _id: keyId, workspaceId, revokedAt: null }, { $set: { revokedAt: this.now() } });
  }

  /**
   * Resolves a plain key to its workspace and scopes. Malformed, unknown and revoked keys
   * (and keys of a deleted workspace) all get the same 401 so nothing about them leaks.
   */
  async authenticate(plain: string, requiredScopes: string[] = []): Promise<AuthResult> {
    if (typeof plain !== "string" || !KEY_SHAPE.test(plain)) throw unauthenticated("unauthorized", "Invalid API key");
    const key = await this.repos.apiKeys.findOne({ hash: hashApiKey(plain) });
    if (!key || key.revokedAt) throw unauthenticated("unauthorized", "Invalid API key");
    if (!(await this.workspaces.find(key.workspaceId))) throw unauthenticated("unauthorized", "Invalid API key");
    const missing = requiredScopes.filter((s) => !key.scopes.includes(s));
    if (missing.length) {
      throw unauthenticated("insufficient_scope", `Insufficient scope: requires ${missing.join(", ")}`);
    }
    return { workspaceId: key.workspaceId, keyId: key._id, scopes: key.scopes };
  }
}
