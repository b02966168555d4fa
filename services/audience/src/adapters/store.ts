import type { Store } from "@mailroom/store/port.js";
import type { AudienceRepositories } from "@mailroom/records/ports.js";
import { CHANGE_INTENTS_COLLECTION, CHANGE_OUTBOX_COLLECTION } from "@mailroom/records/change-publisher.js";
import { ContactStore } from "./contact-store.js";
import { ContactEventStore } from "./contact-event-store.js";
import { PropertyStore } from "./property-store.js";
import { SuppressionStore } from "./suppression-store.js";
import { ENGAGEMENT_COLLECTION, ENGAGEMENT_RECENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION } from "./engagement-store.js";

/**
 * Every collection the audience unit keeps (tests snapshot them; a store written before the
 * split hands them over on first start, @mailroom/records/adopt.ts). The change outbox and
 * intents come too: events a stopped directory had not published yet go out from here.
 */
export const AUDIENCE_COLLECTIONS = [
  "contact_properties", "contacts", "contact_events", "suppressions",
  ENGAGEMENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION, ENGAGEMENT_RECENT_COLLECTION,
  "groups", "segments", "topics", "forms", "form_confirmations", "directory_migrations",
  CHANGE_OUTBOX_COLLECTION, CHANGE_INTENTS_COLLECTION,
] as const;

/** The repositories over one store; each creates the indexes its queries need (idempotent). */
export async function openAudienceStores(store: Store): Promise<AudienceRepositories> {
  const [properties, contacts, contactEvents, suppressions] = await Promise.all([
    PropertyStore.open(store), ContactStore.open(store), ContactEventStore.open(store), SuppressionStore.open(store),
  ]);
  return { properties, contacts, contactEvents, suppressions };
}
