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
