import type { SecretKeys } from "@mailroom/kit/secrets.js";
import type { Store } from "@mailroom/store/port.js";
import type { AccountsRepositories } from "@mailroom/records/ports.js";
import { ApiKeyStore } from "./api-key-store.js";
import { MemberStore } from "./member-store.js";
import { SenderStore } from "./sender-store.js";
import { TemplateStore } from "./template-store.js";
import { UsageStore } from "./usage-store.js";
import { WorkspaceStore } from "./workspace-store.js";

/**
 * Every collection the accounts unit keeps (tests snapshot them; a store written before the
 * split hands them over on first start, adapters/adopt.ts).
 */
export const ACCOUNTS_COLLECTIONS = [
  "workspaces", "api_keys", "sender_emails", "domains", "members", "templates", "template_versions", "usage", "team_tokens", "sessions", "audit_log",
] as const;

/**
 * The repositories over one store; each creates the indexes its queries need (idempotent).
 * `secrets` seal what must not be stored in plain text (DKIM private keys).
 */
export async function openAccountsStores(store: Store, secrets: SecretKeys): Promise<AccountsRepositories> {
  const [workspaces, apiKeys, senders, members, templates, usage] = await Promise.all([
    WorkspaceStore.open(store), ApiKeyStore.open(store), SenderStore.open(store, secrets), MemberStore.open(store), TemplateStore.open(store), UsageStore.open(store),
  ]);
  return { workspaces, apiKeys, senders, members, templates, usage };
}
