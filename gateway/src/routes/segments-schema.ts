import { z } from "zod";
import type { Segment } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/** Segments (DESIGN §9.4): saved filters with an exact count and a contact listing; shared by the segments-*.ts routes. */

export const SEGMENTS_DEFAULT_LIMIT = 20;

const filterSchema = z.record(z.string(), z.unknown()).meta({
  description: "A filter (DESIGN §9.4 grammar): `email`, `firstName`, `lastName`, `status`, `source`, `createdAt`, `updatedAt`, `properties.<apiSlug>`, `groups`; `$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $startsWith $endsWith`; `{ \"$ago\": \"P30D\" }`; `$and $or $not`; `$engagement`. An invalid one is 400 `invalid_filter` naming its path.",
  examples: [{ "properties.plan": "pro", createdAt: { $gte: { $ago: "P30D" } } }],
});

export const segmentSchema = z
  .strictObject({
    id: z.string().meta({ description: "`seg_…`", examples: ["seg_01jqz8k4m2x7v9c3n5b6t1w0ye"] }),
    name: z.string(),
    filter: z.record(z.string(), z.unknown()).meta({ description: "The filter as given." }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: "Segment" });

export const segmentEnvelope = z.strictObject({ segment: segmentSchema }).meta({ id: "SegmentResponse" });

export const segmentListSchema = z
  .strictObject({
    segments: z.strictObject({
      items: z.array(segmentSchema).meta({ description: "Oldest first." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "SegmentList" });

export const segmentIdParams = z.strictObject({ id: z.string().min(1).max(100).meta({ description: "The segment's id (`seg_…`)." }) });

export const pageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: SEGMENTS_DEFAULT_LIMIT }),
  cursor: z.string().max(100).optional().meta({ description: "The `cursor` of the previous page." }),
});

export const createSegmentSchema = z
  .strictObject({
    name: z.string().min(1).max(200).meta({ description: "At most 200 characters." }),
    filter: filterSchema,
  })
  .meta({ id: "CreateSegmentRequest" });

export const updateSegmentSchema = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    filter: filterSchema.optional().meta({ description: "Replaces the filter." }),
  })
  .meta({ id: "UpdateSegmentRequest" });

export const segmentNotFound = { description: "`segment_not_found` (also another workspace's segment).", body: apiErrorSchema };
export const invalidSegment = { description: "`invalid_request`, `invalid_json`, `invalid_segment` or `invalid_filter` (the message names the filter's path).", body: apiErrorSchema };

const parsed = (text: string): Record<string, unknown> => {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
};

/** The segment as the API shows it. */
export function segmentJson(s: Segment): z.output<typeof segmentSchema> {
  return {
    id: s.id,
    name: s.name,
    filter: parsed(s.filterJson),
    createdAt: iso(s.createdAt) ?? new Date(0).toISOString(),
    updatedAt: iso(s.updatedAt) ?? iso(s.createdAt) ?? new Date(0).toISOString(),
  };
}
