import { appError, badRequest, conflict } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import type { OperatorHold, Workspace, WorkspaceFlags } from "@mailroom/records/model.js";
import type { WorkspaceRepository } from "@mailroom/records/ports.js";
import { requireTimeZone, requireWorkspaceId, systemClock, workspaceNotFound, type Clock } from "@mailroom/records/validation.js";

export const DEFAULT_MONTHLY_LIMIT = 100_000;
const WORKSPACE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export interface WorkspaceInput {
  id?: string;
  name: string;
  timezone?: string;
  flags?: Partial<WorkspaceFlags>;
  /** Undefined means the default limit. */
  monthlyLimit?: number;
  sendingAccountNew?: boolean;
}

export interface WorkspacePatch {
  name?: string;
  timezone?: string;
  flags?: Partial<WorkspaceFlags>;
  monthlyLimit?: number;
  sendingAccountNew?: boolean;
}

const REASON_MAX = 500;

function checkReason(reason: string | undefined): string {
  const r = (reason ?? "").trim();
  if (r.length > REASON_MAX || /[\u0000-\u001f\u007f]/.test(r)) throw badRequest("invalid_request", `reason must be at most ${REASON_MAX} characters on one line`);
  return r;
}

const withReason = (text: string, hold: OperatorHold) => (hold.reason ? `${text}: ${hold.reason}` : text);

/** A paused or banned workspace may not send: the refusal its sends get (usage reservations). */
export function assertMaySend(ws: Workspace): void {
  if (ws.banned) {
    throw appError({ code: "workspace_banned", httpStatus: 403, message: withReason("This workspace is banned by the server's operator", ws.banned) });
  }
  if (ws.sendingPaused) {
    throw appError({ code: "sending_paused", httpStatus: 403, message: withReason("Sending is paused for this workspace by the server's operator", ws.sendingPaused) });
  }
}

/** A banned workspace's keys are refused (Authenticate). */
export function assertNotBanned(ws: Workspace): void {
  if (ws.banned) {
    throw appError({ code: "workspace_banned", httpStatus: 403, message: withReason("This workspace is banned by the server's operator", ws.banned) });
  }
}

const noFlags: WorkspaceFlags = { broadcastEarlyAccess: false, emailApiAddon: false, verified: false };

function checkLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 0) throw badRequest("invalid_request", "monthlyLimit must be a non-negative integer");
  return limit;
}

function checkName(name: string): string {
  const n = (name ?? "").trim();
  if (!n || n.length > 200) throw badRequest("invalid_request", "workspace name is required (at most 200 characters)");
  return n;
}

export class Workspaces {
  constructor(private readonly repo: WorkspaceRepository, private readonly now: Clock = systemClock) {}

  async create(input: WorkspaceInput): Promise<Workspace> {
    const id = input.id || newId("ws");
    if (!WORKSPACE_ID.test(id)) throw badRequest("invalid_request", `workspace id "${id}" must be 1-64 letters, digits, "_" or "-"`);
    const at = this.now();
    const doc: Workspace = {
      _id: id,
      name: checkName(input.name),
      timezone: requireTimeZone(input.timezone || "UTC"),
      flags: { ...noFlags, ...stripUndefined(input.flags ?? {}) },
      monthlyLimit: checkLimit(input.monthlyLimit ?? DEFAULT_MONTHLY_LIMIT),
      sendingAccountNew: input.sendingAccountNew ?? false,
      createdAt: at,
      updatedAt: at,
    };
    if (!(await this.repo.insert(doc))) throw conflict("workspace_exists", `Workspace ${id} already exists`);
    return doc;
  }

  async find(id: string): Promise<Workspace | null> {
    return this.repo.find(requireWorkspaceId(id));
  }

  async get(id: string): Promise<Workspace> {
    const ws = await this.find(id);
    if (!ws) throw workspaceNotFound(id);
    return ws;
  }

  /** Applies the given fields; an update that changes nothing leaves the document alone. */
  async update(id: string, patch: WorkspacePatch): Promise<Workspace> {
    const ws = await this.get(id);
    const set: Partial<Omit<Workspace, "_id">> = {};
    if (patch.name !== undefined && checkName(patch.name) !== ws.name) set.name = checkName(patch.name);
    if (patch.timezone !== undefined && requireTimeZone(patch.timezone) !== ws.timezone) set.timezone = patch.timezone;
    if (patch.monthlyLimit !== undefined && checkLimit(patch.monthlyLimit) !== ws.monthlyLimit) set.monthlyLimit = patch.monthlyLimit;
    if (patch.sendingAccountNew !== undefined && patch.sendingAccountNew !== ws.sendingAccountNew) set.sendingAccountNew = patch.sendingAccountNew;
    if (patch.flags) {
      const flags = { ...ws.flags, ...stripUndefined(patch.flags) };
      if (JSON.stringify(flags) !== JSON.stringify(ws.flags)) set.flags = flags;
    }
    if (Object.keys(set).length === 0) return ws;
    set.updatedAt = this.now();
    const updated = await this.repo.update(id, set);
    if (!updated) throw workspaceNotFound(id);
    return updated;
  }

  /**
   * Operator pause of sending (CLI). Setting the state the workspace already has changes
   * nothing (`changed` false): the event (WORKSPACE_SENDING_EMAILS_PAUSED, emitted by the
   * store wrapper on the write) goes out once per pause.
   */
  async setSendingPaused(id: string, paused: boolean, reason?: string): Promise<{ workspace: Workspace; changed: boolean }> {
    return this.setHold(id, "sendingPaused", paused, reason);
  }

  /** Operator ban (CLI); WORKSPACE_BANNED once per ban. */
  async setBanned(id: string, banned: boolean, reason?: string): Promise<{ workspace: Workspace; changed: boolean }> {
    return this.setHold(id, "banned", banned, reason);
  }

  private async setHold(id: string, field: "sendingPaused" | "banned", on: boolean, reasonInput?: string): Promise<{ workspace: Workspace; changed: boolean }> {
    const reason = checkReason(reasonInput);
    const ws = await this.get(id);
    if (Boolean(ws[field]) === on) return { workspace: ws, changed: false };
    const at = this.now();
    const updated = await this.repo.update(id, { [field]: on ? { reason, at } : null, updatedAt: at });
    if (!updated) throw workspaceNotFound(id);
    return { workspace: updated, changed: true };
  }

  async list(): Promise<Workspace[]> {
    return this.repo.list(10_000);
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
