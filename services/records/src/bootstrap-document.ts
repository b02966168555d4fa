import { z } from "zod";
import { badRequest } from "@mailroom/kit/errors.js";

/** The MAILROOM_BOOTSTRAP document (DESIGN.md §5). */
const workspaceSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  timezone: z.string().optional(),
  // scopes omitted: ["api_user"]; an empty list gives the key no scope at all.
  apiKeys: z.array(z.object({ key: z.string(), scopes: z.array(z.string()).optional(), name: z.string().optional() })).default([]),
  verifiedEmails: z.array(z.string()).default([]),
  verifiedDomains: z.array(z.string()).default([]),
  // An address (an EDITOR; the workspace's first member is its OWNER) or { email, role }.
  members: z.array(z.union([z.string(), z.object({ email: z.string(), role: z.enum(["OWNER", "ADMIN", "EDITOR", "VIEWER"]).optional() })])).default([]),
  flags: z.object({
    broadcastEarlyAccess: z.boolean().optional(),
    emailApiAddon: z.boolean().optional(),
    verified: z.boolean().optional(),
  }).optional(),
  monthlyLimit: z.number().int().min(0).optional(),
  sendingAccountNew: z.boolean().optional(),
  contactProperties: z.array(z.object({ slug: z.string(), type: z.string() })).default([]),
  contacts: z.array(z.object({
    email: z.string(),
    firstName: z.string().optional(),
    lastName: z.string().optional(),
    timezone: z.string().optional(),
    status: z.string().optional(),
    /** Older documents: `subscribed: true/false` means status SUBSCRIBED / UNSUBSCRIBED (status wins). */
    subscribed: z.boolean().optional(),
    properties: z.record(z.string(), z.unknown()).optional(),
  })).default([]),
  templates: z.array(z.object({
    name: z.string(),
    subject: z.string(),
    html: z.string(),
    text: z.string().optional(),
    previewText: z.string().optional(),
    displayName: z.string().optional(),
    fromEmail: z.string().optional(),
    fromName: z.string().optional(),
    replyTo: z.array(z.object({ email: z.string(), name: z.string().optional() })).optional(),
  })).default([]),
});

export const bootstrapSchema = z.object({ workspaces: z.array(workspaceSchema) });
export type BootstrapDocument = z.infer<typeof bootstrapSchema>;
export type BootstrapWorkspace = z.infer<typeof workspaceSchema>;

export const memberEmail = (m: string | { email: string }): string => (typeof m === "string" ? m : m.email);

/** The document parsed and checked against the schema (not yet against the stores), or invalid_bootstrap (400). */
export function parseBootstrap(raw: unknown): BootstrapDocument {
  const parsed = bootstrapSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw badRequest("invalid_bootstrap", `bootstrap is invalid: ${first.join("; ")}`);
  }
  return parsed.data;
}

/** JSON text → the document; a syntax error names only its position (the text may hold an API key). */
export function parseBootstrapJson(json: string): BootstrapDocument {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    // V8's message quotes the text around the error, which may be an API key: keep only the position.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw badRequest("invalid_bootstrap", `bootstrap is not valid JSON${position ? ` (at character ${position})` : ""}`);
  }
  return parseBootstrap(raw);
}
