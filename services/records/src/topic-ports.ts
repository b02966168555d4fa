/**
 * What topics (DESIGN §9.4) need from the outside world; adapters/topic-store.ts implements it
 * over the store (collections `topics` and `contacts`), unit tests over the in-memory store.
 */

export type TopicDefault = "OPT_IN" | "OPT_OUT";
export const TOPIC_DEFAULTS: readonly TopicDefault[] = ["OPT_IN", "OPT_OUT"];

/** A topic (collection `topics`). */
export interface Topic {
  _id: string;
  workspaceId: string;
  /** Unique per workspace. */
  name: string;
  description?: string;
  defaultSubscription: TopicDefault;
  createdAt: Date;
  updatedAt?: Date;
}

/** What topics read of a contact: its explicit choices (`topics.<topicId>` on the contact document). */
export interface ContactChoices {
  _id: string;
  email: string;
  topics: Record<string, boolean>;
}

export interface TopicRepository {
  /** False when the workspace has a topic of that name already. */
  insert(topic: Topic): Promise<boolean>;
  find(workspaceId: string, id: string): Promise<Topic | null>;
  /** Sets and unsets fields; null when the topic is gone. Throws TopicNameTaken when the new name is taken. */
  update(workspaceId: string, id: string, set: Partial<Pick<Topic, "name" | "description" | "defaultSubscription" | "updatedAt">>, unset: Array<"description">): Promise<Topic | null>;
  /** Deletes the topic; answers false when there was none. */
  delete(workspaceId: string, id: string): Promise<boolean>;
  /** Id (creation) order after `after` (exclusive). */
  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Topic[]>;
  /** Removes every contact's choice for the topic (`$unset topics.<id>`). */
  forgetChoices(workspaceId: string, topicId: string): Promise<number>;
  findContact(workspaceId: string, ref: { id: string } | { emailLower: string }): Promise<ContactChoices | null>;
  /** Records choices on the contact (`$set topics.<id>`); null when the contact is gone. */
  setChoices(workspaceId: string, contactId: string, choices: Record<string, boolean>): Promise<ContactChoices | null>;
}

/** Thrown by TopicRepository.update when another topic of the workspace has the name. */
export class TopicNameTaken extends Error {
  constructor() {
    super("topic name taken");
    this.name = "TopicNameTaken";
  }
}
