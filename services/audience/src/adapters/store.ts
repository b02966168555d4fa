import type { SecretKeys } from "@mailroom/kit/secrets.js";
import type { Store } from "@mailroom/store/port.js";
import type { DirectoryRepositories } from "@mailroom/records/ports.js";
import { ApiKeyStore } from "./api-key-store.js";
import { ContactStore } from "./contact-store.js";
import { ContactEventStore } from "./contact-event-store.js";
import { MemberStore } from "./member-store.js";
import { PropertyStore } from "./property-store.js";
import { SenderStore } from "./sender-store.js";
import { SuppressionStore } from "./suppression-store.js";
import { TemplateStore } from "./template-store.js";
import { UsageStore } from "./usage-store.js";
import { WorkspaceStore } from "./workspace-store.js";

/** Every collection the directory keeps (tests snapshot them all). */
export const DIRECTORY_COLLECTIONS = [
  "workspaces", "api_keys", "sender_emails", "domains", "members", "contact_properties", "contacts", "contact_events", "suppressions", "templates", "template_versions", "usage",
  "directory_event_outbox", "contact_engagement", "contact_engagement_totals", "contact_engagement_recent", "team_tokens", "sessions", "audit_log",
] as const;

/**
 * The repositories over one store; each creates the indexes its queries need (idempotent).
 * `secrets` seal what must not be stored in plain text (DKIM private keys).
 */
export async function openStoreRepositories(store: Store, secrets: SecretKeys): Promise<DirectoryRepositories> {
  const [workspaces, apiKeys, senders, members, properties, contacts, contactEvents, suppressions, templates, usage] = await Promise.all([
    WorkspaceStore.open(store), ApiKeyStore.open(store), SenderStore.open(store, secrets), MemberStore.open(store), PropertyStore.open(store),
    ContactStore.open(store), ContactEventStore.open(store), SuppressionStore.open(store), TemplateStore.open(store), UsageStore.open(store),
  ]);
  return { workspaces, apiKeys, senders, members, properties, contacts, contactEvents, suppressions, templates, usage };
}
