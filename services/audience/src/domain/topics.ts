import { badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { checkListLimit } from "./contacts.js";
import { normalizeEmail } from "@mailroom/records/address.js";
import type { Page } from "@mailroom/records/model.js";
import { TOPIC_DEFAULTS, TopicNameTaken, type ContactChoices, type Topic, type TopicDefault, type TopicRepository } from "@mailroom/records/topic-ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

/**
 * Topics (DESIGN §9.4): what a workspace's broadcasts are about ("Product updates",
 * "Events"), each with a default for contacts that made no choice. A contact's explicit
 * choices live on the contact (`topics: { <topicId>: boolean }`); a contact receives a topic's
 * broadcast when it chose it, or when the topic is OPT_OUT and it did not leave it.
 */

export const TOPIC_NAME_MAX = 100;
export const TOPIC_DESCRIPTION_MAX = 500;
const ID = /^top_[0-9a-z]{26}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
/** A description may run over lines; other control characters are refused. */
const CONTROL_BUT_LINES = /[\u0000-\u0009\u000b\u000c\u000e-\u001f\u007f]/;

export interface TopicInput {
  name: string;
  description?: string;
  defaultSubscription: string;
}

export interface TopicChanges {
  name?: string;
  /** "" removes the description. */
  description?: string;
  defaultSubscription?: string;
}

/** One topic as a contact sees it. */
export interface ContactTopic {
  topic: Topic;
  /** The contact's choice, else the topic's default. */
  subscribed: boolean;
  /** Whether the contact chose. */
  explicit: boolean;
}

export interface ContactTopicsView {
  contactId: string;
  topics: ContactTopic[];
}

export type ContactRef = { contactId: string } | { email: string };

export interface TopicChoiceInput {
  topicId: string;
  subscribed: boolean;
}

export function checkTopicName(raw: unknown): string {
  const name = typeof raw === "string" ? raw.trim() : "";
  if (!name || name.length > TOPIC_NAME_MAX || CONTROL.test(name)) {
    throw badRequest("invalid_topic", `name must be 1-${TOPIC_NAME_MAX} characters on one line`);
  }
  return name;
}

export function checkTopicDescription(raw: unknown): string {
  if (raw === undefined || raw === null) return "";
  if (typeof raw !== "string" || raw.length > TOPIC_DESCRIPTION_MAX || CONTROL_BUT_LINES.test(raw)) {
    throw badRequest("invalid_topic", `description must be text of at most ${TOPIC_DESCRIPTION_MAX} characters`);
  }
  return raw.trim();
}

export function parseTopicDefault(raw: unknown): TopicDefault {
  if (typeof raw === "string" && (TOPIC_DEFAULTS as readonly string[]).includes(raw)) return raw as TopicDefault;
  throw badRequest("invalid_topic", `defaultSubscription must be one of ${TOPIC_DEFAULTS.join(", ")}`);
}

/** Whether a contact with these choices receives the topic's broadcasts. */
export function receivesTopic(topic: Pick<Topic, "_id" | "defaultSubscription">, choices: Record<string, boolean> | undefined): boolean {
  const choice = choices?.[topic._id];
  return typeof choice === "boolean" ? choice : topic.defaultSubscription === "OPT_OUT";
}

const topicNotFound = (id: unknown) => notFound("topic_not_found", `Topic ${String(id).slice(0, 120)} not found`);
const nameTaken = (name: string) => conflict("topic_name_taken", `A topic named "${name}" already exists in this workspace`);

export class Topics {
  constructor(
    private readonly repo: TopicRepository,
    private readonly workspaces: { get(id: string): Promise<unknown> },
    private readonly now: Clock = systemClock,
  ) {}

  async create(workspaceId: string, input: TopicInput): Promise<Topic> {
    requireWorkspaceId(workspaceId);
    const name = checkTopicName(input?.name);
    const description = checkTopicDescription(input?.description);
    const defaultSubscription = parseTopicDefault(input?.defaultSubscription);
    await this.workspaces.get(workspaceId);
    const topic: Topic = { _id: newId("top"), workspaceId, name, ...(description ? { description } : {}), defaultSubscription, createdAt: this.now() };
    if (!(await this.repo.insert(topic))) throw nameTaken(name);
    return topic;
  }

  async get(workspaceId: string, id: string): Promise<Topic> {
    requireWorkspaceId(workspaceId);
    const topic = typeof id === "string" && ID.test(id) ? await this.repo.find(workspaceId, id) : null;
    if (!topic) throw topicNotFound(id);
    return topic;
  }

  async update(workspaceId: string, id: string, changes: TopicChanges): Promise<Topic> {
    const set: Partial<Pick<Topic, "name" | "description" | "defaultSubscription" | "updatedAt">> = {};
    const unset: Array<"description"> = [];
    if (changes.name !== undefined) set.name = checkTopicName(changes.name);
    if (changes.description !== undefined) {
      const description = checkTopicDescription(changes.description);
      if (description) set.description = description;
      else unset.push("description");
    }
    if (changes.defaultSubscription !== undefined) set.defaultSubscription = parseTopicDefault(changes.defaultSubscription);
    const existing = await this.get(workspaceId, id);
    const unchanged = (Object.keys(set) as Array<keyof typeof set>).every((k) => existing[k] === set[k]) && unset.every((k) => existing[k] === undefined);
    if (unchanged) return existing;
    try {
      const updated = await this.repo.update(workspaceId, existing._id, { ...set, updatedAt: this.now() }, unset);
      if (!updated) throw topicNotFound(id);
      return updated;
    } catch (err) {
      if (err instanceof TopicNameTaken) throw nameTaken(set.name ?? existing.name);
      throw err;
    }
  }

  /** Deletes the topic, then every contact's choice for it; answers the topic as it was. */
  async delete(workspaceId: string, id: string): Promise<Topic> {
    const topic = await this.get(workspaceId, id);
    if (!(await this.repo.delete(workspaceId, topic._id))) throw topicNotFound(id);
    await this.repo.forgetChoices(workspaceId, topic._id);
    return topic;
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<Topic>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !ID.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const docs = await this.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }

  /** Every topic of the workspace, in creation order. */
  async all(workspaceId: string): Promise<Topic[]> {
    requireWorkspaceId(workspaceId);
    const out: Topic[] = [];
    for (let after: string | undefined; ;) {
      const page = await this.repo.page(workspaceId, { after, limit: 100 });
      out.push(...page);
      if (page.length < 100) return out;
      after = page[page.length - 1]._id;
    }
  }

  /** Every topic of the workspace with the contact's state. */
  async ofContact(workspaceId: string, ref: ContactRef): Promise<ContactTopicsView> {
    const contact = await this.contact(workspaceId, ref);
    return this.view(contact, await this.all(workspaceId));
  }

  /**
   * Records the contact's explicit choices (each topic at most once; an unknown topic is a
   * 400 `unknown_topic` and nothing changes), then answers every topic with its state.
   */
  async choose(workspaceId: string, ref: ContactRef, choices: TopicChoiceInput[]): Promise<ContactTopicsView> {
    requireWorkspaceId(workspaceId);
    if (!Array.isArray(choices)) throw badRequest("invalid_request", "topics must be a list of { id, subscribed }");
    const set: Record<string, boolean> = {};
    choices.forEach((c, i) => {
      if (typeof c?.topicId !== "string" || !c.topicId) throw badRequest("invalid_request", `topics[${i}].id is required`);
      if (typeof c.subscribed !== "boolean") throw badRequest("invalid_request", `topics[${i}].subscribed must be true or false`);
      if (Object.hasOwn(set, c.topicId)) throw badRequest("invalid_request", `topics[${i}].id: topic ${c.topicId.slice(0, 120)} is given twice`);
      set[c.topicId] = c.subscribed;
    });
    const contact = await this.contact(workspaceId, ref);
    const topics = await this.all(workspaceId);
    const known = new Set(topics.map((t) => t._id));
    const unknown = Object.keys(set).filter((id) => !known.has(id));
    if (unknown.length) {
      throw badRequest("unknown_topic", `No topic ${unknown.map((id) => id.slice(0, 120)).join(", ")} in this workspace`, { extra: { unknownTopics: JSON.stringify(unknown) } });
    }
    if (!Object.keys(set).length) return this.view(contact, topics);
    const updated = await this.repo.setChoices(workspaceId, contact._id, set);
    if (!updated) throw notFound("contact_not_found", "Contact not found");
    return this.view(updated, topics);
  }

  private async contact(workspaceId: string, ref: ContactRef): Promise<ContactChoices> {
    requireWorkspaceId(workspaceId);
    let found: ContactChoices | null = null;
    if ("contactId" in ref) {
      if (typeof ref.contactId === "string" && ref.contactId) found = await this.repo.findContact(workspaceId, { id: ref.contactId });
      if (!found) throw notFound("contact_not_found", `Contact ${String(ref.contactId).slice(0, 120)} not found`);
    } else {
      const emailLower = normalizeEmail(ref.email);
      if (emailLower) found = await this.repo.findContact(workspaceId, { emailLower });
      if (!found) throw notFound("contact_not_found", "No contact with this address");
    }
    return found;
  }

  private view(contact: ContactChoices, topics: Topic[]): ContactTopicsView {
    return {
      contactId: contact._id,
      topics: topics.map((topic) => ({ topic, subscribed: receivesTopic(topic, contact.topics), explicit: typeof contact.topics?.[topic._id] === "boolean" })),
    };
  }
}
