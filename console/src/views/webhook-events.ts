/**
 * What a webhook will receive, for the console: each event it is subscribed to, whether
 * anything produces that event on this server today, what fires it, and its recent deliveries
 * of that event. The names and producers mirror DESIGN §9.2 and the webhooks unit's
 * (services/webhooks/src/domain; the gateway may not import a unit's files): the service
 * validates subscriptions, so a stale line here only mislabels a row.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DeliveryState, type Delivery } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import type { Tone } from "../layout.js";
import { html, type Html } from "./html.js";
import { badge, time } from "./page-parts.js";

export interface EventInfo {
  /** What makes it fire (and which unit produces it). */
  when: string;
  /** Set when nothing produces it yet: what brings it. */
  unavailable?: string;
}

export const EVENT_INFO: Readonly<Record<string, EventInfo>> = {
  EMAIL_SENT: { when: "An email is accepted and queued (email service)." },
  EMAIL_DELIVERED: { when: "The receiving server answered 250 (delivery)." },
  EMAIL_DEFERRED: { when: "A temporary failure; delivery retries (delivery)." },
  EMAIL_BOUNCED: { when: "A permanent failure or a bounce message (delivery, inbound)." },
  EMAIL_COMPLAINED: { when: "A spam complaint (inbound)." },
  EMAIL_OPENED: { when: "The open pixel is loaded (gateway)." },
  EMAIL_CLICKED: { when: "A tracked link is followed (gateway)." },
  EMAIL_UNSUBSCRIBED: { when: "The recipient unsubscribes from a message (gateway, inbound)." },
  EMAIL_FAILED: { when: "Given up, or the address is suppressed (delivery)." },
  EMAIL_RECEIVED: { when: "Mail arrives for an inbound domain's address whose rule is webhook (inbound)." },
  BROADCAST_STARTED: { when: "A broadcast starts sending (broadcast service)." },
  BROADCAST_COMPLETED: { when: "Every recipient of a broadcast has an outcome (broadcast service)." },
  AUTOMATION_RUN_STARTED: { when: "A contact enters an automation (automation)." },
  AUTOMATION_RUN_COMPLETED: { when: "A run finishes its last step (automation)." },
  AUTOMATION_RUN_EXITED: { when: "A run leaves early: exit step, unsubscribe, deletion, suppression (automation)." },
  CONTACT_CREATED: { when: "A contact is created by any path (audience)." },
  CONTACT_UPDATED: { when: "A contact's fields, properties or status change (audience)." },
  CONTACT_DELETED: { when: "A contact is deleted or erased (audience)." },
  CONTACT_UNSUBSCRIBED: { when: "A contact's status leaves SUBSCRIBED: unsubscribe link, API, console, complaint (audience)." },
  CONTACT_RESUBSCRIBED: { when: "A contact's status returns to SUBSCRIBED (audience)." },
  CONTACT_PROPERTY_UPDATED: { when: "A custom property is created or changed (audience)." },
  CONTACT_TAG_ADDED: { when: "A contact joins a group (audience)." },
  CONTACT_TAG_REMOVED: { when: "A contact leaves a group; deleting a group sends none (audience)." },
  WORKSPACE_TEAM_MEMBER_JOINED: { when: "A member is added to the workspace (accounts)." },
  WORKSPACE_SENDING_EMAILS_PAUSED: { when: "The operator pauses the workspace's sending (accounts)." },
  WORKSPACE_BANNED: { when: "The operator bans the workspace (accounts)." },
  TESTING_CONNECTION: { when: "You send a test event (webhooks)." },
  SUPPRESSION_CREATED: { when: "An address or domain is suppressed by any path: API, import, console, bounce, complaint, unsubscribe (audience)." },
  SUPPRESSION_DELETED: { when: "A suppression is lifted: API, console, a resubscribe (audience)." },
};

const STATE_TONE: Record<number, Tone> = { [DeliveryState.SUCCEEDED]: "ok", [DeliveryState.PENDING]: "info", [DeliveryState.FAILED]: "bad", [DeliveryState.HELD]: "warn" };

function lastOf(d: Delivery): Html {
  const state = badge(DeliveryState[d.state] ?? "UNKNOWN", STATE_TONE[d.state] ?? "info");
  const code = d.lastAttempt && d.lastAttempt.statusCode ? html` <span class="muted">${d.lastAttempt.statusCode}</span>` : "";
  return html`${state}${code} ${time(d.createdAt && timestampDate(d.createdAt))}`;
}

/**
 * The "Events it receives" table: one row per subscribed event (in the order subscribed), with
 * "fires" or "not available yet", what fires it, and among `deliveries` (newest first) how many
 * were of that event and the newest one's state, response code and time.
 */
export function eventsTable(subscribed: readonly string[], deliveries: readonly Delivery[], labelledBy: string): Html {
  const byType = new Map<string, Delivery[]>();
  for (const d of deliveries) byType.set(d.eventType, [...(byType.get(d.eventType) ?? []), d]);
  const rows = subscribed.map((event) => {
    const info = EVENT_INFO[event];
    const fires = info?.unavailable ? badge(`not available yet: ${info.unavailable}`, "warn") : badge("fires", "ok");
    const mine = byType.get(event) ?? [];
    const recent = mine.length ? html`${mine.length} · last ${lastOf(mine[0]!)}` : html`<span class="muted">none yet</span>`;
    return html`<tr data-event="${event}"><td data-label="Event"><code>${event}</code></td><td data-label="Fires today">${fires}</td>
<td data-label="When">${info?.when ?? ""}</td><td data-label="Recent deliveries">${recent}</td></tr>`;
  });
  if (!rows.length) return html`<p class="muted">This webhook is subscribed to no event.</p>`;
  return html`<div class="table-wrap"><table class="data stack" aria-labelledby="${labelledBy}"><thead><tr><th>Event</th><th>Fires today</th><th>When</th><th>Recent deliveries</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/**
 * A contact's webhook history: its CONTACT_* events that reached webhooks (newest first), each
 * once, with the webhooks it went to and how each delivery stands. `names` maps webhook ids
 * to what the console calls them.
 */
export function contactWebhookHistory(deliveries: readonly Delivery[], names: ReadonlyMap<string, string>, labelledBy: string): Html {
  const byEvent = new Map<string, Delivery[]>();
  for (const d of deliveries) byEvent.set(d.eventId, [...(byEvent.get(d.eventId) ?? []), d]);
  if (byEvent.size === 0) return html`<p class="muted">No webhook has received an event about this contact yet (deliveries are kept 8 days).</p>`;
  const rows = [...byEvent.values()].map((group) => {
    const first = group[0]!;
    const sent = group.map((d, i) => html`${i ? html`<br>` : ""}${names.get(d.webhookId) ?? d.webhookId} ${badge(DeliveryState[d.state] ?? "UNKNOWN", STATE_TONE[d.state] ?? "info")}${d.lastAttempt?.statusCode ? html` <span class="muted">${d.lastAttempt.statusCode}</span>` : ""}`);
    return html`<tr data-event-id="${first.eventId}"><td data-label="Event"><code>${first.eventType}</code></td>
<td data-label="When">${time(first.createdAt && timestampDate(first.createdAt))}</td><td data-label="Webhooks">${sent}</td></tr>`;
  });
  return html`<div class="table-wrap"><table class="data stack" aria-labelledby="${labelledBy}"><thead><tr><th>Event</th><th>When</th><th>Webhooks</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}
