import { z } from "zod";
import { DefaultSubscription, type ContactTopic, type Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/** Public JSON of topics (/v1/topics, DESIGN §9.4) and a contact's choices; the rules live in the audience unit. */

const DEFAULTS = ["OPT_IN", "OPT_OUT"] as const;
const defaultSubscription = z.enum(DEFAULTS).meta({
  description: "What a contact that made no choice gets: `OPT_IN` topics reach only the contacts that chose them; `OPT_OUT` topics reach every contact but those that left them.",
});

export const topicIdParams = z.object({ id: z.string().max(100).meta({ description: "The topic's id (`top_…`)." }) });

export const createTopicSchema = z
  .strictObject({
    name: z.string().meta({ description: "1-100 characters on one line, unique in the workspace (else 409 `topic_name_taken`)." }),
    description: z.string().nullish().meta({ description: "At most 500 characters; shown on the recipients' preference page." }),
    defaultSubscription,
  })
  .meta({ id: "CreateTopicRequest" });

export const updateTopicSchema = z
  .strictObject({
    name: z.string().optional(),
    description: z.string().nullish().meta({ description: "`null` or `\"\"` removes it." }),
    defaultSubscription: defaultSubscription.optional(),
  })
  .meta({ id: "UpdateTopicRequest", description: "Only the fields given change." });

export const listTopicsQuerySchema = z
  .strictObject({
    limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 20 }),
    cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
  });

export const topicSchema = z
  .strictObject({
    id: z.string().regex(/^top_/).meta({ description: "`top_` followed by a lowercase ULID." }),
    name: z.string(),
    description: z.string().optional(),
    defaultSubscription,
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime().optional().meta({ description: "Absent until the first change." }),
  })
  .meta({ id: "Topic" });

export const topicResponseSchema = z.strictObject({ topic: topicSchema }).meta({ id: "TopicResponse" });
export const topicDeletedSchema = z.strictObject({ topic: topicSchema, isDeleted: z.literal(true) }).meta({ id: "TopicDeleted" });

export const topicListSchema = z
  .strictObject({
    topics: z.strictObject({
      items: z.array(topicSchema),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last page." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "TopicList" });

export const setContactTopicsSchema = z
  .strictObject({
    topics: z
      .array(z.strictObject({ id: z.string().max(100).meta({ description: "A topic of the workspace (else 400 `unknown_topic`)." }), subscribed: z.boolean() }))
      .max(1000)
      .meta({ description: "The contact's choices; each topic at most once. Topics not named keep what they had." }),
  })
  .meta({ id: "SetContactTopicsRequest" });

export const contactTopicsSchema = z
  .strictObject({
    topics: z.array(z.strictObject({
      id: z.string(),
      name: z.string(),
      subscribed: z.boolean().meta({ description: "The contact's choice, else the topic's `defaultSubscription` (`OPT_OUT`: true)." }),
    })),
  })
  .meta({ id: "ContactTopics", description: "Every topic of the workspace, oldest first, with the contact's state." });

/** A defaultSubscription the audience unit answered as its public name. */
export const defaultSubscriptionName = (value: DefaultSubscription) => (value === DefaultSubscription.OPT_OUT ? "OPT_OUT" : "OPT_IN");
export const defaultSubscriptionOf = (name: (typeof DEFAULTS)[number]) => DefaultSubscription[name];

export function topicJson(t: Topic) {
  return {
    id: t.id,
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    defaultSubscription: defaultSubscriptionName(t.defaultSubscription),
    createdAt: iso(t.createdAt)!,
    ...(t.updatedAt ? { updatedAt: iso(t.updatedAt)! } : {}),
  };
}

export const contactTopicsJson = (topics: ContactTopic[]) => ({
  topics: topics.map((t) => ({ id: t.topic!.id, name: t.topic!.name, subscribed: t.subscribed })),
});
