import { appError } from "@mailroom/kit/errors.js";
import type { WorkspaceInfo } from "./ports.js";

/**
 * Broadcast endpoints need the early-access flag, the Email API add-on and a verified
 * workspace, checked in that order (design §6), on every call.
 */
export function assertBroadcastAccess(ws: WorkspaceInfo): void {
  if (!ws.broadcastEarlyAccess) {
    throw appError({ code: "broadcast_api_not_enabled", httpStatus: 403, message: "The broadcast API is in early access and not enabled for this workspace" });
  }
  if (!ws.emailApiAddon) {
    throw appError({ code: "broadcast_api_addon_required", httpStatus: 402, message: "The broadcast API needs the Email API add-on" });
  }
  if (!ws.verified) {
    throw appError({ code: "broadcast_api_workspace_not_verified", httpStatus: 403, message: "The workspace must be verified to use the broadcast API" });
  }
}

/**
 * An operator's pause or ban (the accounts unit's workspace state, DESIGN §9.2) stops the
 * workspace's sends: scheduling and test sends are refused with its code; a broadcast
 * already sending holds (sending.ts) until sending is resumed.
 */
export function sendingHold(ws: WorkspaceInfo): { code: "sending_paused" | "workspace_banned"; message: string } | undefined {
  const why = ws.holdReason ? `: ${ws.holdReason}` : "";
  if (ws.banned) return { code: "workspace_banned", message: `This workspace is banned by the server's operator${why}` };
  if (ws.sendingPaused) return { code: "sending_paused", message: `Sending is paused for this workspace by the server's operator${why}` };
  return undefined;
}

export function assertMaySend(ws: WorkspaceInfo): void {
  const hold = sendingHold(ws);
  if (hold) throw appError({ ...hold, httpStatus: 403 });
}
