import { AppError, badRequest, notFound } from "@mailroom/kit/errors.js";

/** True for IANA zone names the runtime knows ("Europe/Paris", "UTC"). */
export function isTimeZone(tz: string): boolean {
  if (!tz || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export function requireTimeZone(tz: string, field = "timezone"): string {
  if (!isTimeZone(tz)) throw badRequest("invalid_timezone", `${field} "${tz}" is not an IANA time zone (e.g. "Europe/Paris")`);
  return tz;
}

/** Every per-workspace call names its workspace; an empty id is a caller bug. */
export function requireWorkspaceId(workspaceId: string): string {
  if (typeof workspaceId !== "string" || !workspaceId) throw badRequest("invalid_request", "workspace_id is required");
  return workspaceId;
}

export const workspaceNotFound = (id: string) => notFound("workspace_not_found", `Workspace ${id} not found`);

export type Clock = () => Date;
export const systemClock: Clock = () => new Date();

/** The code of a domain error (AppError), for callers that tolerate one outcome. */
export const appErrorCode = (err: unknown): string | undefined => (err instanceof AppError ? err.code : undefined);

export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 500;

export function checkListLimit(limit: number | undefined, max = LIST_MAX_LIMIT, fallback = LIST_DEFAULT_LIMIT): number {
  if (limit === undefined || limit === 0) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw badRequest("invalid_request", `limit must be between 1 and ${max}`);
  return limit;
}
