/**
 * Plain types and constants shared by the console's modules (no imports, so nothing here
 * can form a cycle). Page modules usually import them through layout.ts and session.ts.
 */

/** Where the console is served; page modules register paths relative to it. */
export const CONSOLE_PREFIX = "/console";

/** A one-shot message shown at the top of the next page. Plain text (escaped when shown). */
export interface Flash {
  kind: "ok" | "error";
  message: string;
}

export interface ConsoleSession {
  /** A member signed in (magic link, OpenID Connect), or an API key (bootstrap, development). */
  kind: "member" | "key";
  workspaceId: string;
  workspaceName: string;
  /** The key of a key session; "" for a member. */
  keyId: string;
  keyName: string;
  /** The key's scopes; for a member, those of the role (VIEWER: api_read; others api_user too). */
  scopes: string[];
  /** The member's role, or the key's effective role (the lower of its own and its owner's). */
  role: "OWNER" | "ADMIN" | "EDITOR" | "VIEWER";
  /** The member of a member session (and its address). */
  memberId?: string;
  memberEmail?: string;
  /** The team's session ("ses_…") of a member session. */
  sessionId?: string;
  /** Who acts, as the audit log names it: "member:<mbr_…>" or "key:<key_…>". */
  actor: string;
  /** EDITOR and above may change things; a VIEWER (or an `api_read` key) only looks. */
  canEdit: boolean;
  /** Goes into every form (csrfField) and the x-csrf-token header of scripted requests. */
  csrfToken: string;
  expiresAt: Date;
}
