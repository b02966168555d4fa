import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { DefaultSubscription, TopicService, type ContactRef as PbContactRef, type ContactTopicSchema, type TopicSchema } from "@mailroom/proto/audience/v1/topics_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import type { ContactRef, ContactTopicsView, Topics } from "./domain/topics.js";
import type { Topic } from "@mailroom/records/topic-ports.js";

/** Proto ⇄ domain mapping of TopicService; every rule lives in domain/topics.ts. */

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

export function topicToPb(t: Topic): MessageInitShape<typeof TopicSchema> {
  return {
    id: t._id,
    workspaceId: t.workspaceId,
    name: t.name,
    description: t.description ?? "",
    defaultSubscription: DefaultSubscription[t.defaultSubscription],
    createdAt: ts(t.createdAt),
    updatedAt: ts(t.updatedAt),
  };
}

/** Enum values are named like the domain's (DEFAULT_SUBSCRIPTION_OPT_IN = OPT_IN); unset or unknown stays as given for the domain to refuse. */
const defaultFromPb = (value: DefaultSubscription | undefined): string | undefined =>
  value === undefined ? undefined : (DefaultSubscription[value] ?? String(value));

function refFromPb(ref: PbContactRef | undefined): ContactRef {
  if (ref?.ref.case === "contactId") return { contactId: ref.ref.value };
  if (ref?.ref.case === "email") return { email: ref.ref.value };
  throw badRequest("invalid_request", "contact (its id or email) is required");
}

function viewToPb(v: ContactTopicsView): { contactId: string; topics: MessageInitShape<typeof ContactTopicSchema>[] } {
  return { contactId: v.contactId, topics: v.topics.map((t) => ({ topic: topicToPb(t.topic), subscribed: t.subscribed, explicit: t.explicit })) };
}

export function topicService(topics: Topics): ServiceImpl<typeof TopicService> {
  return {
    async createTopic(req) {
      const topic = await topics.create(req.workspaceId, {
        name: req.name,
        description: req.description,
        defaultSubscription: req.defaultSubscription ? defaultFromPb(req.defaultSubscription)! : "",
      });
      return { topic: topicToPb(topic) };
    },
    async getTopic(req) {
      return { topic: topicToPb(await topics.get(req.workspaceId, req.topicId)) };
    },
    async updateTopic(req) {
      const topic = await topics.update(req.workspaceId, req.topicId, {
        name: req.name,
        description: req.description,
        defaultSubscription: req.defaultSubscription === undefined ? undefined : req.defaultSubscription ? defaultFromPb(req.defaultSubscription) : "",
      });
      return { topic: topicToPb(topic) };
    },
    async deleteTopic(req) {
      return { topic: topicToPb(await topics.delete(req.workspaceId, req.topicId)) };
    },
    async listTopics(req) {
      const page = await topics.list(req.workspaceId, { limit: req.limit, cursor: req.cursor });
      return { topics: page.items.map(topicToPb), nextCursor: page.nextCursor, hasMore: page.hasMore };
    },
    async getContactTopics(req) {
      return viewToPb(await topics.ofContact(req.workspaceId, refFromPb(req.contact)));
    },
    async setContactTopics(req) {
      return viewToPb(await topics.choose(req.workspaceId, refFromPb(req.contact), req.choices.map((c) => ({ topicId: c.topicId, subscribed: c.subscribed }))));
    },
  };
}

export function topicRoutes(topics: Topics) {
  return (router: ConnectRouter) => {
    router.service(TopicService, topicService(topics));
  };
}
