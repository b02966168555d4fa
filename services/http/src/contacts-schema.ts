import { z } from "zod";
import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ContactSource, ContactStatus, type Contact, type ContactInput } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ContactInputSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";

/**
 * Public JSON of contacts (/v1/contacts) in the official client's shape: built-in and custom
 * properties share one flat `properties` object keyed by API slug. Request shapes are
 * checked here; every rule about values (address syntax, property types, statuses) lives in
 * the audience unit.
 */

export const CONTACT_STATUSES = ["SUBSCRIBED", "UNSUBSCRIBED", "ARCHIVED", "OPT_IN_PENDING", "BANNED"] as const;
export const CONTACT_SOURCES = ["DASHBOARD", "PUBLIC_API", "CSV_IMPORT", "MAILCHIMP", "SENDGRID", "TRANSACTIONAL_EMAIL", "ZAPIER", "STRIPE"] as const;
/** Built-in text properties besides email and the names ("" in the record = unset, left out of the JSON). */
const TEXT_BUILT_INS = ["firstName", "lastName", "avatarUrl", "city", "language", "phone", "birthday", "countryCode", "timezone"] as const;

const propertyValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string()), z.looseObject({})]);

const propertiesInput = z
  .object({
    email: z.string().max(512).optional().meta({ description: "The contact's address; unique per workspace, case-insensitively (invalid: 400 `invalid_email`)." }),
    status: z.enum(CONTACT_STATUSES).nullish().meta({ description: "Default `SUBSCRIBED`. Only SUBSCRIBED contacts are in broadcast audiences." }),
    createdAt: z.string().nullish().meta({ description: "Honoured only by the batch with `overrideCreatedAt=true`; ignored elsewhere." }),
  })
  .catchall(propertyValue)
  .meta({
    id: "ContactPropertiesInput",
    description: "Built-in properties (`firstName`, `lastName`, `avatarUrl`, `city`, `language`, `phone`, `birthday` YYYY-MM-DD, `countryCode` two letters, `timezone` IANA, `status`) and custom ones by API slug. A custom property must exist (400 `unknown_contact_property`) and the value fit its type (400 `invalid_property_value` naming it). null clears a value. A MULTI_SELECT value is an array (replaces) or `{ add: [...], remove: [...] }` (edits).",
  });

export const upsertContactSchema = z
  .strictObject({ properties: propertiesInput.extend({ email: z.string().min(1, "properties.email is required").max(512) }) })
  .meta({ id: "UpsertContactRequest" });

export const updateContactSchema = z.strictObject({ properties: propertiesInput }).meta({ id: "UpdateContactRequest" });

export const batchContactsSchema = z
  .strictObject({ contacts: z.array(z.strictObject({ properties: propertiesInput })).min(1, "contacts must hold at least one contact").max(1000) })
  .meta({ id: "BatchContactsRequest" });

const flag = z.enum(["true", "false"]).optional();
export const batchQuerySchema = z.strictObject({
  allowPartialSuccess: flag.meta({ description: "`true`: the valid contacts are written even if others fail. Otherwise one invalid contact fails the whole batch (400 `contacts_batch_invalid`, nothing written)." }),
  includeFailedContacts: flag.meta({ description: "`true`: add `failedContacts`, each in the flat input form (to send again)." }),
  overrideCreatedAt: flag.meta({ description: "`true`: a new contact's `createdAt` is the given one (migrations)." }),
});

/** The `filter` parameter of the contact listing and export. */
export const FILTER_DESCRIPTION =
  "A filter (DESIGN §9.4) as URL-encoded JSON, e.g. `{\"properties.plan\":\"pro\",\"createdAt\":{\"$gte\":{\"$ago\":\"P30D\"}}}`: fields `email`, `firstName`, `lastName`, `status`, `source`, `createdAt`, `updatedAt`, `properties.<slug>`, `groups`; operators `$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $startsWith $endsWith`; `$and`, `$or`, `$not`; `{ \"$engagement\": { \"event\": \"opened\", \"broadcastId\"?, \"since\"?, \"min\"? } }`. Bad JSON or a bad filter is a 400 `invalid_filter` naming the path.";

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 20 }),
  cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
  sort: z.enum(["createdAt.desc", "createdAt.asc"]).optional().meta({ description: "Default `createdAt.desc` (creation order in Mailroom)." }),
  search: z.string().max(200).optional().meta({ description: "Case-insensitive text in the email, first or last name." }),
  status: z.enum(CONTACT_STATUSES).optional(),
  filter: z.string().optional().meta({ description: FILTER_DESCRIPTION }),
  includeCount: z.enum(["true", "false"]).optional().meta({ description: "`true`: add `totalCount`, the number of matching contacts." }),
});

export const searchQuerySchema = z.strictObject({ email: z.string().min(1, "email is required").max(512) });

export const contactIdParams = z.object({ id: z.string().max(100).meta({ description: "The contact's id (`ctc_…`)." }) });
export const contactEmailParams = z.object({ email: z.string().max(512).meta({ description: "The contact's address, URL-encoded; case-insensitive." }) });

const timestamp = z.iso.datetime();

export const contactSchema = z
  .strictObject({
    id: z.string().regex(/^ctc_/).meta({ description: "`ctc_` followed by a lowercase ULID." }),
    createdAt: timestamp,
    updatedAt: timestamp.optional(),
    workspaceId: z.string(),
    source: z.enum(CONTACT_SOURCES).meta({ description: "Where the contact came from (a Mailroom addition the client passes through)." }),
    properties: z
      .looseObject({
        email: z.string(),
        status: z.enum(CONTACT_STATUSES),
        ...Object.fromEntries(TEXT_BUILT_INS.map((k) => [k, z.string().optional()])),
      })
      .meta({ description: "Built-in properties (unset ones left out) and custom ones by API slug." }),
  })
  .meta({ id: "Contact" });

export const contactResponseSchema = z.strictObject({ contact: contactSchema }).meta({ id: "ContactResponse" });
export const contactSearchSchema = z.strictObject({ contact: contactSchema.nullable() }).meta({ id: "ContactSearchResult" });

export const contactListSchema = z
  .strictObject({
    contacts: z.strictObject({
      items: z.array(contactSchema),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last page." }),
      hasMore: z.boolean(),
      totalCount: z.number().int().optional().meta({ description: "With `includeCount=true`." }),
    }),
  })
  .meta({ id: "ContactList" });

export const contactDeletedSchema = z
  .strictObject({
    isDeleted: z.literal(true),
    contact: contactSchema,
    erased: z
      .strictObject({
        emails: z.number().int().min(0).meta({ description: "Email records (with their content) to the address that were erased." }),
        events: z.number().int().min(0).meta({ description: "The contact's events that were erased." }),
        webhookDeliveries: z.number().int().min(0).meta({ description: "Finished webhook deliveries of events about the contact that were erased (their bodies held its data)." }),
      })
      .optional()
      .meta({ description: "With `erase=true`: what was erased besides the contact. The address is kept only as a hashed suppression." }),
  })
  .meta({ id: "ContactDeleted" });

const batchError = z.strictObject({ code: z.string(), message: z.string(), retryable: z.boolean().optional() }).meta({ id: "BatchError" });
export const batchResultSchema = z
  .strictObject({
    requestId: z.string(),
    contacts: z.array(contactSchema).meta({ description: "The contacts created or updated, in request order." }),
    summary: z.strictObject({
      created: z.number().int(), updated: z.number().int(), failed: z.number().int(), total: z.number().int(),
      processingTime: z.number().meta({ description: "Milliseconds." }),
    }),
    errors: z.array(z.strictObject({ index: z.number().int(), email: z.string(), errors: z.array(batchError) })).optional(),
    failedContacts: z.array(z.strictObject({ index: z.number().int(), contact: z.record(z.string(), z.unknown()), errors: z.array(batchError) })).optional(),
  })
  .meta({ id: "ContactBatchResult" });

export const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);

/** The record as the official client reads it. */
export function contactJson(c: Contact) {
  const builtIns: Record<string, string> = {};
  for (const key of TEXT_BUILT_INS) {
    const value = key === "countryCode" ? c.countryCode : key === "avatarUrl" ? c.avatarUrl : (c as unknown as Record<string, string>)[key];
    if (value) builtIns[key] = value;
  }
  return {
    id: c.id,
    createdAt: iso(c.createdAt)!,
    ...(c.updatedAt ? { updatedAt: iso(c.updatedAt)! } : {}),
    workspaceId: c.workspaceId,
    source: ContactSource[c.source] as (typeof CONTACT_SOURCES)[number],
    properties: {
      ...((c.properties ?? {}) as JsonObject),
      email: c.email,
      ...builtIns,
      status: (ContactStatus[c.status] ?? "SUBSCRIBED") as (typeof CONTACT_STATUSES)[number],
    },
  };
}

export type ContactPropertiesInput = z.infer<typeof propertiesInput>;

/** The public `properties` object as a ContactInput (status travels typed; the rest by slug). */
export function contactInput(properties: ContactPropertiesInput, opts: { email?: string; keepCreatedAt?: boolean } = {}): MessageInitShape<typeof ContactInputSchema> {
  const { email, status, createdAt, ...rest } = properties;
  const created = opts.keepCreatedAt && typeof createdAt === "string" ? new Date(createdAt) : undefined;
  return {
    email: opts.email ?? (typeof email === "string" ? email : ""),
    ...(status ? { status: ContactStatus[status] } : {}),
    ...(created && !Number.isNaN(created.getTime()) ? { createdAt: timestampFromDate(created) } : {}),
    properties: rest as JsonObject,
  };
}

export type { ContactInput };
