import { z } from "zod";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/**
 * Groups (DESIGN §9.4) exactly as the official client's `groups` module sends and reads them
 * (its src/api/groups.ts and src/interfaces/groups.ts): shared by the gateway's groups-*.ts routes
 * and the console's group forms (parsed with the same request schemas).
 */

export const GROUPS_DEFAULT_LIMIT = 50;
export const GROUPS_MAX_LIMIT = 100;

/** Whether a JSON value nests at most `max` levels of objects and arrays below this one. */
function nestsWithin(value: unknown, max: number): boolean {
  if (value === null || typeof value !== "object") return true;
  if (max < 0) return false;
  return Object.values(value).every((item) => nestsWithin(item, max - 1));
}

// A coarse bound here (the audience unit checks the 5 levels and names the path): a body nested
// past protobuf's recursion limit could not even be decoded by the audience unit.
const traitsSchema = z.record(z.string(), z.unknown()).refine((traits) => nestsWithin(traits, 10), "traits nest too deeply (at most 5 levels)").meta({
  description: "Any JSON object of at most 16 KB, nested at most 5 levels; keys without `.`, a leading `$` or control characters.",
  examples: [{ industry: "technology", employees: 500 }],
});

export const groupSchema = z
  .strictObject({
    id: z.string().meta({ description: "`grp_…`", examples: ["grp_01jqz8k4m2x7v9c3n5b6t1w0ye"] }),
    publicId: z.string().meta({ description: "Your own id for the group, unique in the workspace; accepted wherever a group id is." }),
    displayName: z.string().optional(),
    traits: traitsSchema.optional(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime().optional().meta({ description: "Absent until the first update." }),
    workspaceId: z.string(),
  })
  .meta({ id: "Group" });

export const groupEnvelope = z.strictObject({ group: groupSchema }).meta({ id: "GroupResponse" });

export const groupIdParams = z.strictObject({
  id: z.string().min(1).max(200).meta({ description: "The group's id (`grp_…`) or its `publicId`." }),
});

export const pageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(GROUPS_MAX_LIMIT).optional().meta({ default: GROUPS_DEFAULT_LIMIT }),
  cursor: z.string().max(100).optional().meta({ description: "The `cursor` of the previous page." }),
});

export const createGroupSchema = z
  .strictObject({
    publicId: z.string().meta({ description: "1-200 letters, digits or `_ . : @ + = -`, starting with a letter, digit or `_`; unique in the workspace (a duplicate is 409 `group_public_id_taken`).", examples: ["company_123"] }),
    displayName: z.string().optional().meta({ description: "At most 200 characters." }),
    traits: traitsSchema.optional(),
  })
  .meta({ id: "CreateGroupRequest" });

export const updateGroupSchema = z
  .strictObject({
    displayName: z.string().nullable().optional().meta({ description: "The new name; `\"\"` or `null` removes it." }),
    traits: traitsSchema.nullable().optional().meta({ description: "Replaces the traits (not merged); `null` removes them." }),
  })
  .meta({ id: "UpdateGroupRequest" });

export const groupNotFound = { description: "`group_not_found` (also another workspace's group).", body: apiErrorSchema };
export const invalidGroup = { description: "`invalid_request`, `invalid_json` or `invalid_group` (publicId, displayName or traits; the message says which).", body: apiErrorSchema };

/** The group as the client reads it. */
export function groupJson(g: Group) {
  return {
    id: g.id,
    publicId: g.publicId,
    ...(g.displayName ? { displayName: g.displayName } : {}),
    ...(g.traits ? { traits: g.traits } : {}),
    createdAt: iso(g.createdAt)!,
    ...(g.updatedAt ? { updatedAt: iso(g.updatedAt)! } : {}),
    workspaceId: g.workspaceId,
  };
}
