import { badRequest, notFound } from "@mailroom/kit/errors.js";
import type { DeliveryCounters } from "./deliverer.js";
import type { CapturedEntry, CapturedMail, PacingRepository } from "./ports.js";

/** Pacing keys hold broadcast and workspace ids as subject tokens: ids are limited to what a token may hold. */
const PACING_ID = /^[A-Za-z0-9_\-]{1,128}$/;

export function isPacingId(id: string): boolean {
  return PACING_ID.test(id);
}

/** One delivery route and its health in this process (DESIGN §9.7). */
export interface RouteStatus {
  name: string;
  kind: string;
  /** Without credentials. */
  target: string;
  weight: number;
  lanes: string[];
  workspaces: string[];
  provider: string;
  down: boolean;
  downUntil?: Date;
  lastError: string;
  sent: number;
  deferred: number;
  bounced: number;
  failed: number;
  latencyMs: number;
}

export interface DeliveryStatus {
  /** "relay", "direct" or "capture". */
  mode: string;
  routes: RouteStatus[];
  /** Direct delivery's EHLO name and source address ("" when not sending direct / the host's default). */
  ehloName: string;
  localAddress: string;
  relay: string;
  capturing: boolean;
  counters: DeliveryCounters;
  pausedBroadcasts: string[];
  workspaceRates: Array<{ workspaceId: string; messagesPerSecond: number }>;
  relayMessagesPerSecond: number;
  processId: string;
}

/** The admin face of the delivery workers: pacing switches, status, captured mail. */
export class DeliveryAdmin {
  constructor(
    private readonly deps: {
      pacing: PacingRepository;
      capture?: CapturedMail;
      counters: DeliveryCounters;
      relay: { description: string; capturing: boolean; rate: number };
      processId: string;
      mode?: string;
      /** The routes and their health now; absent: a transport without routes (tests). */
      routes?: () => RouteStatus[];
      direct?: { ehloName: string; localAddress?: string };
    },
  ) {}

  async pauseBroadcast(broadcastId: string): Promise<void> {
    await this.deps.pacing.setPaused(checkId("broadcast_id", broadcastId), true);
  }

  async resumeBroadcast(broadcastId: string): Promise<void> {
    await this.deps.pacing.setPaused(checkId("broadcast_id", broadcastId), false);
  }

  async setWorkspaceRate(workspaceId: string, messagesPerSecond: number): Promise<void> {
    if (!Number.isFinite(messagesPerSecond) || messagesPerSecond < 0 || messagesPerSecond > 1_000_000) {
      throw badRequest("invalid_rate", "messages_per_second must be a number between 0 (no limit) and 1000000");
    }
    await this.deps.pacing.setWorkspaceRate(checkId("workspace_id", workspaceId), messagesPerSecond);
  }

  status(): DeliveryStatus {
    return {
      mode: this.deps.mode ?? "",
      routes: this.deps.routes?.() ?? [],
      ehloName: this.deps.direct?.ehloName ?? "",
      localAddress: this.deps.direct?.localAddress ?? "",
      relay: this.deps.relay.description,
      capturing: this.deps.relay.capturing,
      counters: { ...this.deps.counters },
      pausedBroadcasts: this.deps.pacing.pausedBroadcasts(),
      workspaceRates: this.deps.pacing.workspaceRates(),
      relayMessagesPerSecond: this.deps.relay.rate,
      processId: this.deps.processId,
    };
  }

  async listCaptured(limit: number, workspaceId: string, query = "", cursor = ""): Promise<{ entries: CapturedEntry[]; nextCursor: string }> {
    if (limit < 0 || limit > 500) throw badRequest("invalid_limit", "limit must be between 1 and 500 (0 for the default, 50)");
    if (workspaceId) checkId("workspace_id", workspaceId);
    if (query.length > 200) throw badRequest("invalid_request", "query must be at most 200 characters");
    if (cursor && !CAPTURED_ID.test(cursor)) throw badRequest("invalid_cursor", "cursor must be a next_cursor this service returned");
    if (!this.deps.capture) return { entries: [], nextCursor: "" };
    const { entries, more } = await this.deps.capture.list(limit || 50, { workspaceId: workspaceId || undefined, query: query || undefined, before: cursor || undefined });
    return { entries, nextCursor: more ? entries[entries.length - 1].id : "" };
  }

  /** Forgets the captured mail; 0 when mail is not captured. */
  async clearCaptured(): Promise<number> {
    return this.deps.capture ? this.deps.capture.clear() : 0;
  }

  async getCaptured(id: string) {
    if (!this.deps.capture) throw notFound("captured_message_not_found", "mail is not captured: an SMTP relay is configured");
    if (!CAPTURED_ID.test(id)) throw badRequest("invalid_id", "id must look like cap_<26 characters>");
    const found = await this.deps.capture.get(id);
    if (!found) throw notFound("captured_message_not_found", `no captured message ${id}`);
    return found;
  }
}

const CAPTURED_ID = /^cap_[0-9a-z]{26}$/;

function checkId(field: string, id: string): string {
  if (!isPacingId(id)) throw badRequest(`invalid_${field}`, `${field} must be 1-128 letters, digits, '_' or '-'`);
  return id;
}
