import { z } from "zod";
import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Contact } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import type { PublicErrorInit } from "../errors.js";

/**
 * Public JSON of contacts (/v1/contacts): request shapes checked here, every rule about
 * values (address syntax, property types, time zones) lives in the directory.
 */

const optionalText = z.string().max(1000).nullish();
const properties = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));

export const createContactSchema = z
  .object({
    email: z.string().min(1, "email is required").max(512),
    firstName: optionalText,
    lastName: optionalText,
    timezone: z.string().max(64).nullish(),
    subscribed: z.boolean().nullish(),
    properties: properties.nullish(),
  })
  .strict();

export const updateContactSchema = createContactSchema.omit({ email: true }).strict();

export const listQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).optional(),
    cursor: z.string().max(200).optional(),
    subscribed: z.enum(["true", "false"]).optional(),
  })
  .strict();

/** zod's first complaint as a 400 body (same shape as every other gateway error). */
export function invalid(error: z.ZodError): PublicErrorInit {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
  return { code: "invalid_request", message: `${where}${issue?.message ?? "invalid request"}` };
}

export const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);

export function contactJson(c: Contact) {
  return {
    id: c.id,
    email: c.email,
    firstName: c.firstName || null,
    lastName: c.lastName || null,
    timezone: c.timezone || null,
    subscribed: c.subscribed,
    properties: (c.properties ?? {}) as JsonObject,
    createdAt: iso(c.createdAt),
    updatedAt: iso(c.updatedAt),
  };
}

/** The request body as ContactInput fields (null means "clear" for names and time zone). */
export function contactInput(email: string, body: z.infer<typeof updateContactSchema>) {
  return {
    email,
    firstName: body.firstName === null ? "" : body.firstName,
    lastName: body.lastName === null ? "" : body.lastName,
    timezone: body.timezone === null ? "" : body.timezone,
    subscribed: body.subscribed ?? undefined,
    properties: (body.properties ?? undefined) as JsonObject | undefined,
  };
}
