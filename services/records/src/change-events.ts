import { hash, randomUUID } from "node:crypto";
import type { Contact, Group, Member, Suppression, Workspace } from "./model.js";

/**
 * The webhook-facing events of the accounts and audience units (DESIGN §9.2), produced where
 * their writes happen: the repositories below wrap the stores, so every path that changes a
 * contact (API, batch, CSV import, console, unsubscribe links, the manage page, bounces and
 * complaints, a send's contactProperties) emits without its caller knowing. An event is
 * built only after its write returned (committed), and its id is derived from what was
 * written (the contact id and the change's version, `updatedAt`), so the same write
 * announced twice is one event: the stream drops it by message id and the webhooks unit
 * stores one delivery per (event, webhook).
 */
export type DirectoryEventType =
  | "CONTACT_CREATED"
  | "CONTACT_UPDATED"
  | "CONTACT_DELETED"
  | "CONTACT_UNSUBSCRIBED"
  | "CONTACT_RESUBSCRIBED"
  | "CONTACT_PROPERTY_UPDATED"
  | "CONTACT_TAG_ADDED"
  | "CONTACT_TAG_REMOVED"
  | "WORKSPACE_TEAM_MEMBER_JOINED"
  | "WORKSPACE_SENDING_EMAILS_PAUSED"
  | "WORKSPACE_BANNED"
  | "SUPPRESSION_CREATED"
  | "SUPPRESSION_DELETED";

/** Exactly the webhook body: `{ id, type, createdAt, workspaceId, data }`. */
export interface DirectoryEvent {
  id: string;
  type: DirectoryEventType;
  createdAt: string;
  workspaceId: string;
  data: Record<string, unknown>;
}

/**
 * Takes events whose writes have committed; must not throw. The write waits for what it
 * returns (the events recorded for publishing), so a write's answer means its events will
 * go out, and a bulk import cannot run ahead of its events' records in memory.
 */
export type DirectoryEventPublisher = (events: DirectoryEvent[], settles?: ChangeIntent) => void | Promise<void>;

/**
 * What a write is about to change, recorded before it: a process killed after the write
 * committed and before its events were recorded leaves the intent behind, and recovery
 * (`eventsOfIntent`, from the intent and what the store holds now) rebuilds exactly the
 * events the write would have announced — the same ids, so a write whose events did go out
 * is announced once. Publishing the events settles (removes) the intent.
 */
export type ChangeIntent = { id: string; at: string; workspaceId: string } & (
  | { kind: "contacts"; reason?: StatusReason; deleting?: boolean; contacts: Array<{ id: string; before: Contact | null }> }
  | { kind: "property"; propertyId: string; version: string }
  | { kind: "member"; member: Member }
  | { kind: "workspace"; before: Workspace }
  // A contact joining (addedAt: the write's time) or leaving (addedAt: when it had joined) a group.
  | { kind: "membership"; contactId: string; group: Group; joining: boolean; addedAt: string }
  // Suppressions about to be added (creating) or removed, each as written or as it stood.
  | { kind: "suppressions"; creating: boolean; suppressions: Suppression[] }
  // A batch of suppressions about to be added (an import's), by key alone (the _id after
  // "<workspaceId>:"): a tenth of the documents' JSON, for batches of thousands.
  | { kind: "suppression_keys"; keys: string[] }
);

/** Records an intent before its write (throws when it cannot: then nothing is written). */
export type ChangeIntentRecorder = (intent: ChangeIntent) => Promise<void>;

export type IntentBody = ChangeIntent extends infer I ? (I extends ChangeIntent ? Omit<I, "id" | "at"> : never) : never;

/** Why a contact's status left or returned to SUBSCRIBED. */
export type StatusReason = "unsubscribed" | "complaint" | "status_changed";

/** A stable event id from the write's identity: the same write always gets the same id. */
export function eventId(type: DirectoryEventType, ...parts: string[]): string {
  // The one-shot hash: an import announces thousands a batch.
  return `dev_${hash("sha256", [type, ...parts].join("\u0000"), "hex").slice(0, 32)}`;
}

export const time = (d: Date | undefined) => String(d ? new Date(d).getTime() : 0);

export function event(type: DirectoryEventType, workspaceId: string, at: Date, idParts: string[], data: Record<string, unknown>): DirectoryEvent {
  return { id: eventId(type, workspaceId, ...idParts), type, createdAt: at.toISOString(), workspaceId, data };
}

/**
 * Runs one write between its intent and its events: the intent is recorded first, the
 * events (built from the write's answer) settle it; a write that changed nothing settles it
 * with none.
 */
export class Announcer {
  constructor(
    private readonly publish: DirectoryEventPublisher,
    private readonly intend: ChangeIntentRecorder | undefined,
    private readonly now: () => Date,
  ) {}

  async around<R>(body: IntentBody, write: () => Promise<R>, eventsOf: (result: R, at: Date) => DirectoryEvent[]): Promise<R> {
    const intent = { ...body, id: randomUUID(), at: this.now().toISOString() } as ChangeIntent;
    if (this.intend) await this.intend(intent);
    // A write that throws may still have committed (an answer lost on the way): its intent
    // stays for the sweep's recovery, which judges from the store.
    const result = await write();
    const events = eventsOf(result, new Date(intent.at));
    if (events.length || this.intend) await this.publish(events, this.intend ? intent : undefined);
    return result;
  }
}

