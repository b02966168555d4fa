import type { Template, Workspace } from "./model.js";

/**
 * What the audience unit asks the accounts unit (adapters/accounts-client.ts answers over
 * Connect; the in-process test wiring with the accounts' own use cases). Errors are the
 * accounts unit's: an unknown workspace is `workspace_not_found` (404), a template
 * `template_not_found`.
 */

export interface WorkspaceLookup {
  get(workspaceId: string): Promise<Workspace>;
}

export interface SenderLookup {
  /** The workspace's sender addresses and domains (verified or not). */
  list(workspaceId: string): Promise<{ emails: Array<{ email: string; verified: boolean }>; domains: Array<{ domain: string; verified: boolean }> }>;
  /** Whether `from` is one of the workspace's verified senders; the verified lists when not. */
  check(workspaceId: string, from: string): Promise<{ allowed: boolean; address: string; allowedEmails: string[]; allowedDomains: string[] }>;
}

export interface TemplateLookup {
  get(workspaceId: string, name: string): Promise<Pick<Template, "name" | "kind">>;
}

/** The monthly usage reservation (all or nothing), as AccountsService.ReserveUsage. */
export interface UsageReserver {
  reserve(workspaceId: string, count: number): Promise<{ granted: boolean; used: number; limit: number; period: string }>;
}
