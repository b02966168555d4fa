import { randomUUID } from "node:crypto";
import { AppError, badRequest, type AppErrorInit } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { checkListLimit, type Contacts } from "./contacts.js";
import type { ContactEvent, Page } from "@mailroom/records/model.js";
import type { ContactEventPublisher, ContactEventRepository } from "@mailroom/records/ports.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

/**
 * Letters, digits, "_", "-", ".", ":" (the official client's rule); dots separate non-empty
 * parts (`user.signup`), so a name never has an empty part.
 */
const EVENT_NAME = /^[A-Za-z0-9_\-:]+(?:\.[A-Za-z0-9_\-:]+)*$/;
const NAME_MAX = 200;
const MESSAGE_ID = /^[\x21-\x7e]{1,200}$/;
const PROPERTIES_MAX_BYTES = 32 * 1024;
export const EVENTS_BATCH_MAX = 100;
const EVENTS_CURSOR = /^cev_[0-9a-z]{26}$/;

export interface EventInput {
  name: string;
  email: string;
  /** Written onto the contact (built-ins by API slug, custom properties created when missing). */
  traits?: Record<string, unknown>;
  properties?: Record<string, unknown>;
  /** ISO 8601 date-time, or Unix time (seconds; milliseconds above 1e11) as a number or digits. */
  timestamp?: string | number;
  messageId?: string;
}

export interface EventResult {
  index: number;
  messageId: string;
  status: "accepted" | "duplicate" | "failed";
  event?: ContactEvent;
  error?: AppErrorInit;
}

export function parseEventTime(raw: string | number | undefined, now: Date): Date {
  if (raw === undefined || raw === "") return now;
  const text = typeof raw === "string" ? raw.trim() : "";
  const numeric = typeof raw === "number" ? raw : /^\d+(\.\d+)?$/.test(text) ? Number(text) : undefined;
  let at: Date;
  if (numeric !== undefined) at = new Date(numeric > 1e11 ? numeric : numeric * 1000);
  else if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) at = new Date(text);
  else throw badRequest("invalid_event", `timestamp ${JSON.stringify(raw).slice(0, 60)} is neither an ISO 8601 date nor Unix time`);
  if (Number.isNaN(at.getTime())) throw badRequest("invalid_event", `timestamp ${JSON.stringify(raw).slice(0, 60)} is not a valid time`);
  return at;
}

function checkObject(field: string, value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw badRequest("invalid_event", `${field} must be an object`);
  if (Buffer.byteLength(JSON.stringify(value)) > PROPERTIES_MAX_BYTES) throw badRequest("invalid_event", `${field} exceeds ${PROPERTIES_MAX_BYTES / 1024} KB`);
  return value as Record<string, unknown>;
}

/**
 * Events about contacts (POST /v1/events): each is stored once per (workspace, messageId),
 * its traits are written onto the contact (created when missing), and it is announced on
 * the event stream for webhooks and automations.
 */
export class ContactEvents {
  constructor(
    private readonly repo: ContactEventRepository,
    private readonly contacts: Contacts,
    private readonly workspaces: WorkspaceLookup,
    private readonly publish: ContactEventPublisher = () => {},
    private readonly now: Clock = systemClock,
  ) {}

  /** Each event succeeds or fails on its own; results keep the input order. */
  async record(workspaceId: string, inputs: EventInput[]): Promise<EventResult[]> {
    await this.workspaces.get(workspaceId);
    if (!inputs.length) throw badRequest("invalid_request", "events must hold at least one event");
    if (inputs.length > EVENTS_BATCH_MAX) throw badRequest("invalid_request", `At most ${EVENTS_BATCH_MAX} events per batch`);
    const results: EventResult[] = [];
    for (const [index, input] of inputs.entries()) {
      const messageId = typeof input?.messageId === "string" && input.messageId ? input.messageId : randomUUID();
      try {
        results.push({ index, messageId, ...(await this.recordOne(workspaceId, input, messageId)) });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        results.push({ index, messageId, status: "failed", error: err.toInit() });
      }
    }
    return results;
  }

  private async recordOne(workspaceId: string, input: EventInput, messageId: string): Promise<Pick<EventResult, "status" | "event">> {
    const name = typeof input?.name === "string" ? input.name : "";
    if (!name || name.length > NAME_MAX || !EVENT_NAME.test(name)) {
      throw badRequest("invalid_event", `event ${JSON.stringify(name).slice(0, 80)} must be 1-${NAME_MAX} letters, digits, "_", "-", ":" and "." between parts`);
    }
    if (!MESSAGE_ID.test(messageId)) throw badRequest("invalid_event", "messageId must be 1-200 visible ASCII characters");
    if (typeof input.email !== "string" || !input.email) throw badRequest("invalid_event", "identify.email is required");
    const traits = checkObject("identify.traits", input.traits);
    const properties = checkObject("properties", input.properties);
    const receivedAt = this.now();
    const timestamp = parseEventTime(input.timestamp, receivedAt);
    const known = await this.repo.findByMessageId(workspaceId, messageId);
    if (known) return { status: "duplicate", event: known };
    const { contact } = await this.contacts.upsert(workspaceId, { email: input.email, properties: traits }, { createMissingProperties: true });
    const event: ContactEvent = {
      _id: newId("cev"), workspaceId, contactId: contact._id, email: contact.email, name, properties, timestamp, messageId, receivedAt,
    };
    if (!(await this.repo.insert(event))) {
      return { status: "duplicate", event: (await this.repo.findByMessageId(workspaceId, messageId)) ?? undefined };
    }
    this.publish(event);
    return { status: "accepted", event };
  }

  /** One contact's events, newest first. */
  async list(workspaceId: string, contactId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<ContactEvent>> {
    requireWorkspaceId(workspaceId);
    await this.contacts.getById(workspaceId, contactId);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !EVENTS_CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const docs = await this.repo.page(workspaceId, contactId, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
