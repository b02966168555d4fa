import { createHash, randomBytes } from "node:crypto";
import { appError, badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import type { ApiKey, Member, MemberRole } from "@mailroom/records/model.js";
import type { ApiKeyRepository, MemberRepository } from "@mailroom/records/ports.js";
import { assertNotBanned, type Workspaces } from "./workspaces.js";
import { appErrorCode, requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

/**
 * `api_user`: the public API, reading, changing and sending (implies `api_read`);
 * `api_read`: the public API's reading routes only; `admin`: operator tooling.
 */
export const KNOWN_SCOPES = ["api_user", "api_read", "admin"] as const;
/**
 * Key roles, each a set of scopes. EDITOR and VIEWER are the public API's (the official
 * client's); ADMIN (operator CLI only) is `api_user` + `admin` on a key that has an owner
 * member who is OWNER or ADMIN: it reads the audit log (GET /v1/audit-log).
 */
export const ROLE_SCOPES = { ADMIN: ["api_user", "admin"], EDITOR: ["api_user"], VIEWER: ["api_read"] } as const;
export type KeyRole = keyof typeof ROLE_SCOPES;

/**
 * A key's own role from its scopes: ADMIN only for an owned key with `api_user` and `admin`
 * (an unowned operator key with `admin` stays EDITOR: nobody answers for it), EDITOR when it
 * may change and send (api_user), VIEWER otherwise. Authenticate caps it by the owner's role.
 */
export const roleOf = (scopes: string[], owned = false): KeyRole =>
  scopes.includes("api_user") ? (owned && scopes.includes("admin") ? "ADMIN" : "EDITOR") : "VIEWER";

export function parseRole(raw: unknown): KeyRole {
  if (raw === "ADMIN" || raw === "EDITOR" || raw === "VIEWER") return raw;
  throw badRequest("invalid_role", `role ${JSON.stringify(raw)} is not one of ADMIN, EDITOR, VIEWER`);
}

/** An ADMIN key needs an owner who is OWNER or ADMIN (the key never acts above its owner). */
function checkKeyRole(role: KeyRole, owner: Member | undefined): void {
  if (role !== "ADMIN") return;
  if (!owner) throw badRequest("invalid_role", "role ADMIN needs an owner member who is OWNER or ADMIN (--owner <member>)");
  if (RANK[ownerRole(owner)] < RANK.ADMIN) {
    throw badRequest("invalid_role", `role ADMIN needs an owner who is OWNER or ADMIN; ${owner.email} is ${ownerRole(owner)}`);
  }
}

/** The scopes a key acts with: `api_user` implies `api_read`. */
export function effectiveScopes(scopes: string[]): string[] {
  return scopes.includes("api_user") && !scopes.includes("api_read") ? [...scopes, "api_read"] : scopes;
}

export const KEY_LIST_MAX = 100;
export const KEY_PREFIX = "mr_live_";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Keys the gateway would accept in a Bearer header; anything else is malformed. */
export const KEY_SHAPE = /^[A-Za-z0-9_\-.~+/=]{8,256}$/;

export interface AuthResult {
  workspaceId: string;
  keyId: string;
  scopes: string[];
  /** The lower of the key's role and its owner's. */
  role: MemberRole;
  /** The owning member ("" when the key has none). */
  memberId: string;
}

const RANK: Record<MemberRole, number> = { OWNER: 3, ADMIN: 2, EDITOR: 1, VIEWER: 0 };
const ownerRole = (m: Member): MemberRole => m.role ?? "EDITOR";
const ownerActive = (m: Member): boolean => (m.status ?? "ACTIVE") === "ACTIVE";

/**
 * A key's scopes capped by its owner's role: a VIEWER owner leaves only reading; `admin`
 * (operator tooling) stays only with an OWNER or ADMIN owner.
 */
function cappedScopes(scopes: string[], owner: MemberRole): string[] {
  const kept = scopes.filter((s) => (s === "api_user" ? RANK[owner] >= RANK.EDITOR : s === "admin" ? RANK[owner] >= RANK.ADMIN : true));
  // Writing taken away leaves reading.
  return scopes.includes("api_user") && !kept.includes("api_user") && !kept.includes("api_read") ? [...kept, "api_read"] : kept;
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

/** Known scopes, each once. An empty list stays empty: a key without scopes can do nothing. */
export function checkScopes(scopes: string[]): string[] {
  const list = [...new Set(scopes)];
  const unknown = list.filter((s) => !(KNOWN_SCOPES as readonly string[]).includes(s));
  if (unknown.length) {
    throw badRequest("invalid_scope", `Unknown scope(s): ${unknown.join(", ")}; known scopes: ${KNOWN_SCOPES.join(", ")}`);
  }
  return list;
}

/** A key's use is written at most this often (per key and process): "last used" is to the minute, not a write per request. */
export const LAST_USED_EVERY_MS = 60_000;
/** Keys whose last write is remembered; past it, entries older than a minute are forgotten. */
const LAST_USED_REMEMBERED = 10_000;

export class ApiKeys {
  /** keyId -> when this process last wrote its use (ms). */
  private readonly usesWritten = new Map<string, number>();

  constructor(
    private readonly repo: ApiKeyRepository,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
    /** Keys' owners; without it a key cannot be given an owner. */
    private readonly members?: Pick<MemberRepository, "findByPublicId" | "list">,
  ) {}

  /** An ACTIVE member of the workspace, as a key's owner. */
  private async owner(workspaceId: string, memberId: string): Promise<Member> {
    const email = memberId.includes("@") ? memberId.trim().toLowerCase() : "";
    const m = !this.members
      ? null
      : email
        ? ((await this.members.list(workspaceId, 10_000)).find((x) => x.email === email) ?? null)
        : await this.members.findByPublicId(workspaceId, memberId);
    if (!m || !ownerActive(m)) throw notFound("member_not_found", `Member ${memberId.slice(0, 100)} is no active member of this workspace`);
    return m;
  }

  /**
   * Creates a key and returns the plain key once. `fixedKey` (bootstrap, tests) is hashed
   * like a generated one.
   */
  async create(workspaceId: string, opts: { name?: string; scopes?: string[]; role?: string; fixedKey?: string; ownerMemberId?: string }): Promise<{ key: ApiKey; plain: string }> {
    await this.workspaces.get(workspaceId);
    const owner = opts.ownerMemberId ? await this.owner(workspaceId, opts.ownerMemberId) : undefined;
    if (opts.role && opts.scopes?.length) throw badRequest("invalid_request", "Give a role or scopes, not both");
    const role = opts.role ? parseRole(opts.role) : undefined;
    if (role) checkKeyRole(role, owner);
    const scopes = role ? [...ROLE_SCOPES[role]] : checkScopes(opts.scopes ?? []);
    const plain = opts.fixedKey || generateApiKey();
    if (!KEY_SHAPE.test(plain)) throw badRequest("invalid_request", "API key must be 8-256 characters of [A-Za-z0-9_-.~+/=]");
    const doc: ApiKey = {
      _id: newId("key"),
      workspaceId,
      name: (opts.name ?? "").trim().slice(0, 200),
      prefix: displayPrefix(plain),
      hash: hashApiKey(plain),
      scopes,
      createdAt: this.now(),
      updatedAt: this.now(),
      revokedAt: null,
      ...(owner ? { ownerMemberId: owner.publicId } : {}),
    };
    if (!(await this.repo.insert(doc))) throw conflict("api_key_exists", "This API key already exists");
    return { key: doc, plain };
  }

  /** Bootstrap: makes sure a fixed key exists for this workspace with these scopes. */
  async ensure(workspaceId: string, plain: string, scopes: string[], name = "bootstrap"): Promise<void> {
    const existing = await this.repo.findByHash(hashApiKey(plain));
    if (!existing) {
      try {
        await this.create(workspaceId, { name, scopes, fixedKey: plain });
        return;
      } catch (err) {
        // Another process loading the same bootstrap won the insert: check what it wrote.
        if (appErrorCode(err) !== "api_key_exists") throw err;
        return this.ensure(workspaceId, plain, scopes, name);
      }
    }
    if (existing.workspaceId !== workspaceId) {
      throw conflict("api_key_exists", `A bootstrap key of workspace ${workspaceId} already belongs to another workspace`);
    }
    const wanted = checkScopes(scopes);
    if (existing.revokedAt) return; // a revoked key stays revoked
    if (JSON.stringify([...existing.scopes].sort()) !== JSON.stringify([...wanted].sort())) {
      await this.repo.setScopes(existing._id, wanted);
    }
  }

  /** The workspace a plain key belongs to, if it exists (bootstrap validation). */
  async ownerOf(plain: string): Promise<string | undefined> {
    return (await this.repo.findByHash(hashApiKey(plain)))?.workspaceId;
  }

  async list(workspaceId: string): Promise<ApiKey[]> {
    return this.repo.list(requireWorkspaceId(workspaceId), 1_000);
  }

  /** One page by creation time, from `startAt` (inclusive); `nextStartAt` starts the next page. */
  async page(workspaceId: string, opts: { limit?: number; newestFirst?: boolean; startAt?: Date }): Promise<{ items: ApiKey[]; hasMore: boolean; nextStartAt?: Date }> {
    requireWorkspaceId(workspaceId);
    const limit = opts.limit || KEY_LIST_MAX;
    if (!Number.isInteger(limit) || limit < 1 || limit > KEY_LIST_MAX) throw badRequest("invalid_request", `limit must be between 1 and ${KEY_LIST_MAX}`);
    if (opts.startAt && Number.isNaN(opts.startAt.getTime())) throw badRequest("invalid_request", "startAt is not a valid date");
    const docs = await this.repo.page(workspaceId, { startAt: opts.startAt, limit: limit + 1, newestFirst: opts.newestFirst ?? true });
    const hasMore = docs.length > limit;
    return { items: docs.slice(0, limit), hasMore, ...(hasMore ? { nextStartAt: docs[limit].createdAt } : {}) };
  }

  async get(workspaceId: string, keyId: string): Promise<ApiKey> {
    const key = typeof keyId === "string" && keyId ? await this.repo.find(requireWorkspaceId(workspaceId), keyId) : null;
    if (!key) throw notFound("api_key_not_found", `API key ${String(keyId).slice(0, 100)} not found`);
    return key;
  }

  /**
   * A key as the API and the console's sessions read it (GetApiKey): refused while its
   * workspace is banned (403 workspace_banned), so a ban also ends console sessions.
   * Operator paths (revoke, update) use `get`.
   */
  async getActive(workspaceId: string, keyId: string): Promise<ApiKey> {
    const key = await this.get(workspaceId, keyId);
    const ws = await this.workspaces.find(workspaceId);
    if (ws) assertNotBanned(ws);
    return key;
  }

  /** Renames a key or changes its role; a revoked key cannot change. */
  async update(workspaceId: string, keyId: string, changes: { name?: string; role?: string }): Promise<ApiKey> {
    const key = await this.get(workspaceId, keyId);
    if (key.revokedAt) throw conflict("api_key_revoked", `API key ${keyId} is revoked`);
    const set: { name?: string; scopes?: string[] } = {};
    if (changes.name !== undefined) {
      if (typeof changes.name !== "string" || !changes.name.trim()) throw badRequest("invalid_request", "displayName cannot be empty");
      set.name = changes.name.trim().slice(0, 200);
    }
    if (changes.role !== undefined) {
      const role = parseRole(changes.role);
      if (role === "ADMIN") checkKeyRole(role, key.ownerMemberId ? await this.owner(workspaceId, key.ownerMemberId) : undefined);
      // Other scopes stay (an unowned key's operator `admin`); the role's part is replaced. On an
      // owned key `admin` is the ADMIN role's, so another role takes it away.
      const others = key.scopes.filter((s) => s !== "api_user" && s !== "api_read" && !(s === "admin" && key.ownerMemberId));
      set.scopes = [...new Set([...others, ...ROLE_SCOPES[role]])];
    }
    if (!Object.keys(set).length) return key;
    const updated = await this.repo.update(workspaceId, keyId, { ...set, updatedAt: this.now() });
    if (!updated) throw notFound("api_key_not_found", `API key ${keyId} not found`);
    return updated;
  }

  /** Revokes a key (idempotent) and answers it as it is now. */
  async revoke(workspaceId: string, keyId: string): Promise<ApiKey> {
    const key = await this.get(workspaceId, keyId);
    if (key.revokedAt) return key;
    const at = this.now();
    await this.repo.revoke(workspaceId, keyId, at);
    return { ...key, revokedAt: at };
  }

  /**
   * Resolves a plain key to its workspace and scopes. Malformed, unknown and revoked keys
   * (and keys of a deleted workspace) all get the same 401 so nothing about them leaks.
   */
  async authenticate(plain: string, requiredScopes: string[] = []): Promise<AuthResult> {
    if (typeof plain !== "string" || !KEY_SHAPE.test(plain)) throw unauthenticated("unauthorized", "Invalid API key");
    const key = await this.repo.findByHash(hashApiKey(plain));
    if (!key || key.revokedAt) throw unauthenticated("unauthorized", "Invalid API key");
    const ws = await this.workspaces.find(key.workspaceId);
    if (!ws) throw unauthenticated("unauthorized", "Invalid API key");
    assertNotBanned(ws);
    let role: MemberRole = roleOf(key.scopes, Boolean(key.ownerMemberId));
    let own = key.scopes;
    if (key.ownerMemberId) {
      // A removed (or no longer active) owner takes its keys with it.
      const owner = this.members ? await this.members.findByPublicId(key.workspaceId, key.ownerMemberId) : null;
      if (!owner || !ownerActive(owner)) throw unauthenticated("unauthorized", "Invalid API key");
      if (RANK[ownerRole(owner)] < RANK[role]) role = ownerRole(owner);
      own = cappedScopes(key.scopes, ownerRole(owner));
    }
    const scopes = effectiveScopes(own);
    const missing = requiredScopes.filter((s) => !scopes.includes(s));
    if (missing.length) {
      throw unauthenticated("insufficient_scope", `Insufficient scope: requires ${missing.join(", ")}`);
    }
    this.noteUse(key);
    return { workspaceId: key.workspaceId, keyId: key._id, scopes, role, memberId: key.ownerMemberId ?? "" };
  }

  /**
   * Records that the key authenticated, coalesced: a write when this process has not written
   * its use for a minute (and the stored use is older than that). Not awaited: a failed write
   * only leaves "last used" a little older, never fails the request.
   */
  private noteUse(key: ApiKey): void {
    const now = this.now();
    const ms = now.getTime();
    const written = this.usesWritten.get(key._id) ?? key.lastUsedAt?.getTime() ?? -Infinity;
    if (ms - written < LAST_USED_EVERY_MS) return;
    if (this.usesWritten.size >= LAST_USED_REMEMBERED) {
      for (const [id, at] of this.usesWritten) if (ms - at >= LAST_USED_EVERY_MS) this.usesWritten.delete(id);
    }
    this.usesWritten.set(key._id, ms);
    this.repo.touchLastUsed(key._id, now).catch(() => this.usesWritten.delete(key._id));
  }
}
