import { z } from "zod";

/**
 * The requests of POST /v1/workspaces/:id/api-keys (and its update), shared by the gateway's
 * routes and the console's "Create a key" form. The console's form offers ADMIN keys and an
 * owner as well (the /v1 API's client knows EDITOR and VIEWER only), so it parses the name
 * with the same field and checks its roles itself.
 */

/** The roles a key created through /v1 may have. */
export const V1_KEY_ROLES = ["EDITOR", "VIEWER"] as const;

/** Longest key name. */
export const API_KEY_NAME_MAX = 200;

/** A key's name (`displayName` in /v1). */
export const apiKeyNameSchema = z.string().min(1, "displayName is required").max(API_KEY_NAME_MAX);

export const createApiKeySchema = z.strictObject({ displayName: apiKeyNameSchema, role: z.enum(V1_KEY_ROLES) }).meta({ id: "CreateApiKeyRequest" });

export const updateApiKeySchema = z
  .strictObject({ displayName: z.string().min(1).max(API_KEY_NAME_MAX).optional(), role: z.enum(V1_KEY_ROLES).optional() })
  .meta({ id: "UpdateApiKeyRequest" });
