import { createHash } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import type { ConfirmationThrottle, FormAudiences, FormRepository, SignupForm } from "../domain/forms.js";
import { scopedId } from "@mailroom/records/model.js";
import { asDoc, type Stored } from "@mailroom/records/documents.js";

/** The collections signup forms keep (tests snapshot them with the audience unit's). */
export const FORM_COLLECTIONS = ["forms", "form_confirmations"] as const;
/** A confirmation's record only throttles resends: it goes after a day. */
const CONFIRMATION_TTL_SECONDS = 86_400;

/** Signup forms (collection `forms`), by id and per workspace in id order. */
export class FormStore implements FormRepository {
  private constructor(private readonly forms: Collection<Stored<SignupForm>>) {}

  static async open(store: Store): Promise<FormStore> {
    const forms = store.collection<Stored<SignupForm>>("forms");
    await forms.createIndex({ keys: { workspaceId: 1, _id: 1 } });
    return new FormStore(forms);
  }

  async insert(form: SignupForm): Promise<void> {
    await this.forms.insertOne(asDoc(form));
  }

  findById(id: string): Promise<SignupForm | null> {
    return this.forms.findOne({ _id: id });
  }

  find(workspaceId: string, id: string): Promise<SignupForm | null> {
    return this.forms.findOne({ _id: id, workspaceId });
  }

  update(workspaceId: string, id: string, changes: Partial<Omit<SignupForm, "_id" | "workspaceId" | "createdAt">>, unset: string[]): Promise<SignupForm | null> {
    return this.forms.findOneAndUpdate(
      { _id: id, workspaceId },
      { $set: changes, ...(unset.length ? { $unset: Object.fromEntries(unset.map((k) => [k, ""])) } : {}) },
      { returnDocument: "after" },
    );
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    return (await this.forms.deleteOne({ _id: id, workspaceId })).deletedCount > 0;
  }

  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<SignupForm[]> {
    return this.forms.find({ workspaceId, ...(opts.after ? { _id: { $gt: opts.after } } : {}) }, { sort: { _id: 1 }, limit: opts.limit });
  }
}

interface GroupDoc { _id: string; workspaceId: string; publicId: string; [k: string]: unknown }
interface TopicDoc { _id: string; workspaceId: string; [k: string]: unknown }
interface ContactMembership {
  _id: string;
  workspaceId: string;
  groups?: string[];
  groupsAddedAt?: Record<string, Date>;
  topics?: Record<string, boolean>;
  [k: string]: unknown;
}

/**
 * Groups and topics as the audience unit keeps them (collections `groups` and `topics`; a contact's
 * `groups`, `groupsAddedAt.<id>` and `topics.<id>`: the shared layout of DESIGN §9.4).
 */
export class FormAudienceStore implements FormAudiences {
  private constructor(
    private readonly groups: Collection<GroupDoc>,
    private readonly topics: Collection<TopicDoc>,
    private readonly contacts: Collection<ContactMembership>,
  ) {}

  static open(store: Store): FormAudienceStore {
    return new FormAudienceStore(store.collection("groups"), store.collection("topics"), store.collection("contacts"));
  }

  async resolveGroups(workspaceId: string, idsOrPublicIds: string[]): Promise<Map<string, string>> {
    const docs = await this.groups.find(
      { workspaceId, $or: [{ _id: { $in: idsOrPublicIds } }, { publicId: { $in: idsOrPublicIds } }] },
      { projection: { _id: 1, publicId: 1 } },
    );
    const out = new Map<string, string>();
    // An id wins over another group's public id of the same spelling.
    for (const d of docs) if (idsOrPublicIds.includes(d.publicId)) out.set(d.publicId, d._id);
    for (const d of docs) if (idsOrPublicIds.includes(d._id)) out.set(d._id, d._id);
    return out;
  }

  async existingTopics(workspaceId: string, ids: string[]): Promise<Set<string>> {
    const docs = await this.topics.find({ workspaceId, _id: { $in: ids } }, { projection: { _id: 1 } });
    return new Set(docs.map((d) => d._id));
  }

  async join(workspaceId: string, contactId: string, groupIds: string[], topicIds: string[], at: Date, opts: { keepTopicOptOuts: boolean }): Promise<void> {
    if (!groupIds.length && !topicIds.length) return;
    const contact = await this.contacts.findOne({ _id: contactId, workspaceId }, { projection: { _id: 1, groups: 1, groupsAddedAt: 1, topics: 1 } });
    if (!contact) return;
    const $set: Record<string, unknown> = {};
    const newGroups = groupIds.filter((g) => !(contact.groups ?? []).includes(g));
    for (const g of newGroups) if (!contact.groupsAddedAt?.[g]) $set[`groupsAddedAt.${g}`] = at;
    for (const t of topicIds) {
      const choice = contact.topics?.[t];
      if (choice === true || (opts.keepTopicOptOuts && choice === false)) continue;
      $set[`topics.${t}`] = true;
    }
    if (!newGroups.length && !Object.keys($set).length) return;
    $set.updatedAt = at;
    await this.contacts.updateOne(
      { _id: contactId, workspaceId },
      { $set, ...(newGroups.length ? { $addToSet: { groups: { $each: newGroups } } } : {}) },
    );
  }
}

interface ConfirmationDoc { _id: string; workspaceId: string; sentAt: Date; [k: string]: unknown }

/** When a confirmation last went to an address (collection `form_confirmations`, by a digest of the address, kept a day). */
export class ConfirmationThrottleStore implements ConfirmationThrottle {
  private constructor(private readonly sent: Collection<ConfirmationDoc>) {}

  static async open(store: Store): Promise<ConfirmationThrottleStore> {
    const sent = store.collection<ConfirmationDoc>("form_confirmations");
    await sent.createIndex({ keys: { sentAt: 1 }, expireAfterSeconds: CONFIRMATION_TTL_SECONDS });
    return new ConfirmationThrottleStore(sent);
  }

  async claim(workspaceId: string, emailLower: string, at: Date, intervalMs: number): Promise<boolean> {
    // The address only as a digest: the record outlives nothing, but an erasure need not find it.
    const _id = scopedId(workspaceId, createHash("sha256").update(emailLower).digest("base64url"));
    // Compare-and-set on a record old enough; else the first record of the address (a recent
    // one makes the insert collide with its id).
    const renewed = await this.sent.findOneAndUpdate({ _id, sentAt: { $lte: new Date(at.getTime() - intervalMs) } }, { $set: { sentAt: at } });
    if (renewed) return true;
    try {
      await this.sent.insertOne({ _id, workspaceId, sentAt: at });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }
}

/** The three form adapters over one store. */
export async function openFormStores(store: Store): Promise<{ repo: FormStore; audiences: FormAudienceStore; throttle: ConfirmationThrottleStore }> {
  const [repo, throttle] = await Promise.all([FormStore.open(store), ConfirmationThrottleStore.open(store)]);
  return { repo, audiences: FormAudienceStore.open(store), throttle };
}
