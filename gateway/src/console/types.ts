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
  workspaceId: string;
  workspaceName: string;
  keyId: string;
  keyName: string;
  scopes: string[];
  /** An `api_user` key may change things; an `api_read` key only looks. */
  canEdit: boolean;
  /** Goes into every form (csrfField) and the x-csrf-token header of scripted requests. */
  csrfToken: string;
  expiresAt: Date;
}
