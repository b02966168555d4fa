import { badRequest } from "@mailroom/kit/errors.js";
import { requireWorkspaceId } from "@mailroom/records/validation.js";

/** One stored audit entry (DESIGN §9.9), as the AUDIT stream delivered it. */
export interface AuditLogEntry {
  /** "aud_…" */
  _id: string;
  workspaceId: string;
  at: Date;
  actor: { kind: string; id: string; label: string };
  action: string;
  resource: { type: string; id: string };
  requestId: string;
  summary: Record<string, string>;
}

export interface AuditLogQuery {
  workspaceId: string;
  since?: Date;
  until?: Date;
  actor?: { kind?: string; id: string };
  resource?: { type: string; id?: string };
  /** Entries strictly before this (at, id), newest first. */
  before?: { at: Date; id: string };
  limit: number;
}

export interface AuditLogRepository {
  /** Stores an entry once (a redelivered entry changes nothing). */
  insert(entry: AuditLogEntry): Promise<void>;
  /**
   * Stores each entry once, in one write when none is stored yet (the AUDIT consumer's
   * batches): entries already stored, or named twice, change nothing.
   */
  insertMany(entries: AuditLogEntry[]): Promise<void>;
  /** Newest first by (at, id). */
  find(query: AuditLogQuery): Promise<AuditLogEntry[]>;
}

/** Entries are kept a year, then the store drops them (TTL index). */
export const AUDIT_RETENTION_DAYS = 365;
export const AUDIT_PAGE_DEFAULT = 50;
export const AUDIT_PAGE_MAX = 500;

const encodeCursor = (e: AuditLogEntry) => Buffer.from(JSON.stringify([e.at.getTime(), e._id]), "utf8").toString("base64url");

function decodeCursor(token: string): { at: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
    if (typeof at === "number" && Number.isFinite(at) && typeof id === "string" && id) return { at: new Date(at), id };
  } catch {
    // fall through
  }
  throw badRequest("invalid_page_token", "page_token is not one this list returned");
}

/** "<kind>:<id>" or a bare id. */
function parseActor(raw: string): AuditLogQuery["actor"] {
  const at = raw.indexOf(":");
  if (at < 0) return { id: raw };
  const kind = raw.slice(0, at);
  if (!["key", "member", "cli", "system"].includes(kind)) throw badRequest("invalid_actor", `actor "${raw.slice(0, 100)}": kind must be key, member, cli or system`);
  return { kind, id: raw.slice(at + 1) };
}

/** "<type>" or "<type>:<id>". */
function parseResource(raw: string): AuditLogQuery["resource"] {
  const at = raw.indexOf(":");
  return at < 0 ? { type: raw } : { type: raw.slice(0, at), id: raw.slice(at + 1) };
}

/** The audit log's reading side: filters and (at, id) cursor paging, newest first. */
export class AuditLog {
  constructor(private readonly repo: AuditLogRepository) {}

  record(entry: AuditLogEntry): Promise<void> {
    return this.repo.insert(entry);
  }

  /** Several entries in one write (each stored once, however often it is recorded). */
  recordMany(entries: AuditLogEntry[]): Promise<void> {
    return this.repo.insertMany(entries);
  }

  async list(input: { workspaceId: string; since?: Date; until?: Date; actor?: string; resource?: string; pageToken?: string; limit?: number }): Promise<{ entries: AuditLogEntry[]; nextPageToken: string }> {
    requireWorkspaceId(input.workspaceId);
    const limit = input.limit || AUDIT_PAGE_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_PAGE_MAX) throw badRequest("invalid_request", `limit must be between 1 and ${AUDIT_PAGE_MAX}`);
    if (input.since && input.until && input.since.getTime() >= input.until.getTime()) throw badRequest("invalid_request", "since must be before until");
    const found = await this.repo.find({
      workspaceId: input.workspaceId,
      since: input.since,
      until: input.until,
      actor: input.actor ? parseActor(input.actor) : undefined,
      resource: input.resource ? parseResource(input.resource) : undefined,
      before: input.pageToken ? decodeCursor(input.pageToken) : undefined,
      limit: limit + 1,
    });
    const entries = found.slice(0, limit);
    return { entries, nextPageToken: found.length > limit ? encodeCursor(entries[entries.length - 1]) : "" };
  }
}
