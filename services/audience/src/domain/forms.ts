import { AppError, badRequest, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { normalizeEmail } from "@mailroom/records/address.js";
import { checkListLimit, type Contacts, type ContactInput } from "./contacts.js";
import { contactStatus, type Contact, type Page, type PropertyType } from "@mailroom/records/model.js";
import type { ContactProperties, PropertyDef } from "./properties.js";
import type { SenderLookup, TemplateLookup, WorkspaceLookup } from "@mailroom/records/account-ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

/**
 * Signup forms with double opt-in (DESIGN §9.4). A form asks for an email and the contact
 * fields it names; a submission subscribes the contact at once, or — with `doubleOptIn` —
 * records it OPT_IN_PENDING until the signed link of a confirmation email is followed. Either
 * way the subscribed contact joins the form's groups and topics. The public side names no
 * workspace: the form id (`frm_…`, unguessable) does.
 */

export interface FormField {
  /** "email", "firstName", "lastName" or a custom property's API slug. */
  name: string;
  label: string;
  required: boolean;
}

export interface SignupForm {
  _id: string;
  workspaceId: string;
  name: string;
  /** Email first, always there and required. */
  fields: FormField[];
  /** Group ids (grp_…): public ids given are stored as ids. */
  groups: string[];
  /** Topic ids (top_…). */
  topics: string[];
  doubleOptIn: boolean;
  redirectUrl?: string;
  /** A stored template's name for the confirmation email (else the built-in one). */
  confirmTemplate?: string;
  /** Sender of the built-in confirmation email (else the workspace's first verified sender). */
  fromEmail?: string;
  fromName?: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface FormInput {
  name?: string;
  fields?: Array<string | { name: string; label?: string; required?: boolean }>;
  groups?: string[];
  topics?: string[];
  doubleOptIn?: boolean;
  redirectUrl?: string;
  confirmTemplate?: string;
  fromEmail?: string;
  fromName?: string;
}

export const FORM_INPUT_KEYS = ["name", "fields", "groups", "topics", "doubleOptIn", "redirectUrl", "confirmTemplate", "fromEmail", "fromName"] as const;
export type FormInputKey = (typeof FORM_INPUT_KEYS)[number];

/** A field as the hosted page renders it. */
export interface FormFieldView extends FormField {
  type: "email" | PropertyType;
  options: string[];
}

export type SignupOutcome = "SUBSCRIBED" | "CONFIRMATION_DUE" | "CONFIRMATION_THROTTLED" | "ALREADY_SUBSCRIBED" | "IGNORED";

export interface SignupResult {
  form: SignupForm;
  outcome: SignupOutcome;
  contactId: string;
  email: string;
  /** The built-in confirmation's sender (set when a confirmation is due and the form has no template). */
  fromEmail: string;
  fromName: string;
  /** The workspace's name (set when a confirmation is due: the email names it). */
  workspaceName: string;
}

export interface FormRepository {
  insert(form: SignupForm): Promise<void>;
  /** By id alone (the public side); callers scoped to a workspace use `find`. */
  findById(id: string): Promise<SignupForm | null>;
  find(workspaceId: string, id: string): Promise<SignupForm | null>;
  update(workspaceId: string, id: string, changes: Partial<Omit<SignupForm, "_id" | "workspaceId" | "createdAt">>, unset: string[]): Promise<SignupForm | null>;
  delete(workspaceId: string, id: string): Promise<boolean>;
  /** In id order after `after` (exclusive). */
  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<SignupForm[]>;
}

/** The groups and topics of a workspace, as other parts of the audience unit keep them. */
export interface FormAudiences {
  /** Each given id or public id that names a group of the workspace → the group's id. */
  resolveGroups(workspaceId: string, idsOrPublicIds: string[]): Promise<Map<string, string>>;
  /** The given topic ids that exist in the workspace. */
  existingTopics(workspaceId: string, ids: string[]): Promise<Set<string>>;
  /**
   * Adds the contact to the groups (keeping a first `groupsAddedAt`) and opts it in to the
   * topics; `keepTopicOptOuts`: a topic the contact opted out of explicitly stays so.
   */
  join(workspaceId: string, contactId: string, groupIds: string[], topicIds: string[], at: Date, opts: { keepTopicOptOuts: boolean }): Promise<void>;
}

/** One confirmation email per address per interval, whichever process asks. */
export interface ConfirmationThrottle {
  /** True (and the send recorded at `at`) when none went to the address since `at - intervalMs`. */
  claim(workspaceId: string, emailLower: string, at: Date, intervalMs: number): Promise<boolean>;
}

export interface FormsDeps {
  repo: FormRepository;
  audiences: FormAudiences;
  throttle: ConfirmationThrottle;
  contacts: Pick<Contacts, "findOne" | "create" | "upsert" | "update" | "getById">;
  properties: Pick<ContactProperties, "customTypes">;
  senders: Pick<SenderLookup, "check" | "list">;
  templates: Pick<TemplateLookup, "get">;
  workspaces: Pick<WorkspaceLookup, "get">;
  /**
   * Group membership through the groups' own use case (it emits CONTACT_TAG_ADDED and keeps a
   * first addedAt); without it `audiences.join` writes the membership itself.
   */
  groups?: { addContact(workspaceId: string, groupId: string, contactId: string): Promise<unknown> };
  now?: Clock;
  /** Repeated signups of a pending address get another confirmation at most this often (default 10 minutes). */
  resendIntervalMs?: number;
}

export const FORM_LIST_MAX = 100;
export const FORM_FIELDS_MAX = 20;
export const FORM_IDS_MAX = 50;
const NAME_MAX = 200;
const LABEL_MAX = 200;
const URL_MAX = 2_048;
const VALUE_MAX = 2_000;
const FORM_ID = /^frm_[0-9a-z]{26}$/;
const BUILT_IN_FIELDS: Record<string, string> = { email: "Email", firstName: "First name", lastName: "Last name" };
export const DEFAULT_RESEND_INTERVAL_MS = 10 * 60_000;

const invalid = (message: string) => badRequest("invalid_form", message);
const formNotFound = (id: string) => notFound("form_not_found", `Form ${String(id).slice(0, 100)} not found`);

function text(field: string, value: unknown, max: number, required = false): string {
  if (value === undefined || value === null) {
    if (required) throw invalid(`${field} is required`);
    return "";
  }
  if (typeof value !== "string") throw invalid(`${field} must be a string`);
  const t = value.trim();
  if (t.length > max || /[\u0000-\u001f\u007f]/.test(t)) throw invalid(`${field} must be at most ${max} characters on one line`);
  if (required && !t) throw invalid(`${field} is required`);
  return t;
}

function idList(field: string, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !v.trim() || v.length > 200)) throw invalid(`${field} must be a list of ids`);
  if (value.length > FORM_IDS_MAX) throw invalid(`${field} holds at most ${FORM_IDS_MAX} ids`);
  return [...new Set((value as string[]).map((v) => v.trim()))];
}

/** An absolute http(s) URL, or "". */
export function checkRedirectUrl(value: unknown): string {
  const t = text("redirectUrl", value, URL_MAX);
  if (!t) return "";
  let url: URL;
  try {
    url = new URL(t);
  } catch {
    throw invalid(`redirectUrl must be an absolute http or https URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid(`redirectUrl must be an absolute http or https URL`);
  return url.href;
}

/** The fields as given (names checked against the workspace's properties), email first and required. */
export function normalizeFields(value: unknown, types: Map<string, PropertyDef>): FormField[] {
  if (value === undefined || value === null) return [{ name: "email", label: BUILT_IN_FIELDS.email!, required: true }];
  if (!Array.isArray(value)) throw invalid("fields must be a list of field names or { name, label?, required? }");
  if (value.length > FORM_FIELDS_MAX) throw invalid(`fields holds at most ${FORM_FIELDS_MAX} fields`);
  const out: FormField[] = [];
  const seen = new Set<string>();
  value.forEach((item, i) => {
    const raw = typeof item === "string" ? { name: item } : item;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw invalid(`fields[${i}] must be a field name or { name, label?, required? }`);
    const { name, label, required, ...rest } = raw as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw invalid(`fields[${i}]: unknown key "${extra}"`);
    const slug = text(`fields[${i}].name`, name, 64, true);
    if (!(slug in BUILT_IN_FIELDS) && !types.has(slug)) {
      throw invalid(`fields[${i}].name: "${slug}" is not email, firstName, lastName nor a custom property of this workspace`);
    }
    if (seen.has(slug)) throw invalid(`fields[${i}].name: "${slug}" is listed twice`);
    if (required !== undefined && typeof required !== "boolean") throw invalid(`fields[${i}].required must be a boolean`);
    seen.add(slug);
    out.push({ name: slug, label: text(`fields[${i}].label`, label, LABEL_MAX) || BUILT_IN_FIELDS[slug] || slug, required: slug === "email" || required === true });
  });
  const email = out.findIndex((f) => f.name === "email");
  if (email === -1) out.unshift({ name: "email", label: BUILT_IN_FIELDS.email!, required: true });
  else if (email > 0) out.unshift(...out.splice(email, 1));
  return out;
}

/** A submitted value as one contact input entry; undefined when empty. */
function submitted(field: FormField, value: unknown): unknown {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") {
    const t = value.trim();
    if (t.length > VALUE_MAX) throw badRequest("invalid_request", `${field.label} is too long`);
    return t === "" ? undefined : t;
  }
  if (Array.isArray(value)) return value.length ? value : undefined;
  return value;
}

export class Forms {
  private readonly now: Clock;
  private readonly resendIntervalMs: number;

  constructor(private readonly deps: FormsDeps) {
    this.now = deps.now ?? systemClock;
    this.resendIntervalMs = deps.resendIntervalMs ?? DEFAULT_RESEND_INTERVAL_MS;
  }

  async create(workspaceId: string, input: FormInput): Promise<SignupForm> {
    requireWorkspaceId(workspaceId);
    await this.deps.workspaces.get(workspaceId);
    const at = this.now();
    const form: SignupForm = {
      _id: newId("frm"),
      workspaceId,
      name: "",
      fields: [],
      groups: [],
      topics: [],
      doubleOptIn: false,
      createdAt: at,
      updatedAt: at,
    };
    const checked = await this.checked(workspaceId, form, input, new Set(FORM_INPUT_KEYS));
    await this.deps.repo.insert(checked);
    return checked;
  }

  async get(workspaceId: string, id: string): Promise<SignupForm> {
    requireWorkspaceId(workspaceId);
    const form = FORM_ID.test(id) ? await this.deps.repo.find(workspaceId, id) : null;
    if (!form) throw formNotFound(id);
    return form;
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string }): Promise<Page<SignupForm>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, FORM_LIST_MAX, 20);
    if (opts.cursor && !FORM_ID.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor must be the cursor a previous page returned");
    const docs = await this.deps.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1 });
    const items = docs.slice(0, limit);
    const hasMore = docs.length > limit;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]!._id : "" };
  }

  async update(workspaceId: string, id: string, input: FormInput, keys: Iterable<string>): Promise<SignupForm> {
    const existing = await this.get(workspaceId, id);
    const given = new Set<FormInputKey>();
    for (const k of keys) {
      if (!(FORM_INPUT_KEYS as readonly string[]).includes(k)) throw invalid(`unknown form field "${k}"`);
      given.add(k as FormInputKey);
    }
    const next = await this.checked(workspaceId, { ...existing, updatedAt: this.now() }, input, given);
    const { _id, workspaceId: _ws, createdAt: _c, ...changes } = next;
    const unset = (["redirectUrl", "confirmTemplate", "fromEmail", "fromName"] as const).filter((k) => !next[k]);
    for (const k of unset) delete changes[k];
    const updated = await this.deps.repo.update(workspaceId, id, changes, unset);
    if (!updated) throw formNotFound(id);
    return updated;
  }

  async delete(workspaceId: string, id: string): Promise<SignupForm> {
    const form = await this.get(workspaceId, id);
    if (!(await this.deps.repo.delete(workspaceId, id))) throw formNotFound(id);
    return form;
  }

  /** The form for the hosted page, with each field's type and options. */
  async publicForm(id: string): Promise<{ form: SignupForm; fields: FormFieldView[]; workspaceName: string }> {
    const form = FORM_ID.test(id) ? await this.deps.repo.findById(id) : null;
    if (!form) throw formNotFound(id);
    const [types, workspace] = await Promise.all([this.deps.properties.customTypes(form.workspaceId), this.deps.workspaces.get(form.workspaceId)]);
    const fields = form.fields.map((f): FormFieldView => {
      if (f.name === "email") return { ...f, type: "email", options: [] };
      if (f.name in BUILT_IN_FIELDS) return { ...f, type: "string", options: [] };
      const def = types.get(f.name);
      return { ...f, type: def?.type ?? "string", options: (def?.options ?? []).map((o) => o.value) };
    });
    return { form, fields, workspaceName: workspace.name };
  }

  /**
   * A signup through the form. Without double opt-in the contact is upserted SUBSCRIBED (an
   * upsert never lifts UNSUBSCRIBED or BANNED) and joins the groups and topics. With it, a new
   * contact is created OPT_IN_PENDING; a SUBSCRIBED one keeps its status and gets no email
   * (it joins the groups, keeping its explicit topic opt-outs); another one is left as it is
   * (its fields too: they change only once confirmed) and gets a confirmation at most once
   * per resend interval.
   */
  async submit(formId: string, email: string, values: Record<string, unknown>): Promise<SignupResult> {
    const form = FORM_ID.test(formId) ? await this.deps.repo.findById(formId) : null;
    if (!form) throw formNotFound(formId);
    const ws = form.workspaceId;
    const emailLower = normalizeEmail(String(email ?? ""));
    if (!emailLower) throw badRequest("invalid_email", `"${String(email ?? "").slice(0, 200)}" is not a valid email address`);
    const input = this.contactInput(form, String(email).trim(), values);
    const at = this.now();
    const none = { fromEmail: "", fromName: "", workspaceName: "" };
    if (!form.doubleOptIn) {
      const { contact } = await this.deps.contacts.upsert(ws, { ...input, status: "SUBSCRIBED" });
      await this.join(ws, contact._id, form, at, false);
      return { form, outcome: contactStatus(contact) === "SUBSCRIBED" ? "SUBSCRIBED" : "IGNORED", contactId: contact._id, email: contact.email, ...none };
    }
    let contact: Contact | null = await this.deps.contacts.findOne(ws, emailLower);
    if (contact && contactStatus(contact) === "SUBSCRIBED") {
      await this.join(ws, contact._id, form, at, true);
      return { form, outcome: "ALREADY_SUBSCRIBED", contactId: contact._id, email: contact.email, ...none };
    }
    if (contact && contactStatus(contact) === "BANNED") return { form, outcome: "IGNORED", contactId: contact._id, email: contact.email, ...none };
    if (!contact) {
      try {
        contact = await this.deps.contacts.create(ws, { ...input, status: "OPT_IN_PENDING" });
      } catch (err) {
        // Another writer made it meanwhile: never overwrite what it wrote (it may be SUBSCRIBED).
        if (!(err instanceof AppError && err.code === "contact_exists")) throw err;
        contact = await this.deps.contacts.findOne(ws, emailLower);
        if (!contact) throw err;
        const now = contactStatus(contact);
        if (now === "SUBSCRIBED" || now === "BANNED") return { form, outcome: now === "BANNED" ? "IGNORED" : "ALREADY_SUBSCRIBED", contactId: contact._id, email: contact.email, ...none };
      }
    }
    if (!(await this.deps.throttle.claim(ws, emailLower, at, this.resendIntervalMs))) {
      return { form, outcome: "CONFIRMATION_THROTTLED", contactId: contact._id, email: contact.email, ...none };
    }
    const [sender, workspace] = await Promise.all([form.confirmTemplate ? none : this.sender(form), this.deps.workspaces.get(ws)]);
    return { form, outcome: "CONFIRMATION_DUE", contactId: contact._id, email: contact.email, ...sender, workspaceName: workspace.name };
  }

  /**
   * The confirmation link was followed (its signature checked by the caller): the contact
   * becomes SUBSCRIBED (lifting its own unsubscribe, never a ban, bounce or complaint) and
   * joins the form's groups and topics. A deleted contact, or one whose address is no longer
   * the token's, is contact_not_found.
   */
  async confirm(workspaceId: string, formId: string, contactId: string, email: string): Promise<{ form: SignupForm | null; email: string; confirmed: boolean }> {
    requireWorkspaceId(workspaceId);
    let contact: Contact;
    try {
      contact = await this.deps.contacts.getById(workspaceId, contactId);
    } catch (err) {
      if (err instanceof AppError && err.code === "contact_not_found") throw notFound("contact_not_found", "The contact of this link no longer exists");
      throw err;
    }
    if (contact.emailLower !== normalizeEmail(email)) throw notFound("contact_not_found", "The contact of this link no longer exists");
    const form = FORM_ID.test(formId) ? await this.deps.repo.find(workspaceId, formId) : null;
    const status = contactStatus(contact);
    if (status === "BANNED") return { form, email: contact.email, confirmed: false };
    const confirmed = status !== "SUBSCRIBED";
    if (confirmed) await this.deps.contacts.update(workspaceId, { email: contact.email, status: "SUBSCRIBED" }, contact._id);
    if (form) await this.join(workspaceId, contact._id, form, this.now(), false);
    return { form, email: contact.email, confirmed };
  }

  /** The contact joins the form's groups and topics (a group deleted since is skipped). */
  private async join(workspaceId: string, contactId: string, form: SignupForm, at: Date, keepTopicOptOuts: boolean): Promise<void> {
    const groups = this.deps.groups;
    if (groups) {
      for (const g of form.groups) {
        try {
          await groups.addContact(workspaceId, g, contactId);
        } catch (err) {
          if (!(err instanceof AppError && err.code === "group_not_found")) throw err;
        }
      }
    }
    await this.deps.audiences.join(workspaceId, contactId, groups ? [] : form.groups, form.topics, at, { keepTopicOptOuts });
  }

  /** The submitted values the form asks for, as a contact input (required ones checked). */
  private contactInput(form: SignupForm, email: string, values: Record<string, unknown>): ContactInput {
    const input: ContactInput = { email, source: "PUBLIC_API" };
    const properties: Record<string, unknown> = {};
    const textProperties: Record<string, string> = {};
    for (const field of form.fields) {
      if (field.name === "email") continue;
      const value = submitted(field, values[field.name]);
      if (value === undefined) {
        if (field.required) throw badRequest("invalid_request", `${field.label} is required`);
        continue;
      }
      if (field.name === "firstName" || field.name === "lastName") {
        if (typeof value !== "string") throw badRequest("invalid_request", `${field.label} must be text`);
        input[field.name] = value;
      } else if (typeof value === "string") textProperties[field.name] = value;
      else properties[field.name] = value;
    }
    if (Object.keys(properties).length) input.properties = properties;
    if (Object.keys(textProperties).length) input.textProperties = textProperties;
    return input;
  }

  /** The built-in confirmation's sender: the form's, else the workspace's first verified one. */
  private async sender(form: SignupForm): Promise<{ fromEmail: string; fromName: string }> {
    if (form.fromEmail) return { fromEmail: form.fromEmail, fromName: form.fromName ?? "" };
    const { emails, domains } = await this.deps.senders.list(form.workspaceId);
    const fromEmail = emails.find((e) => e.verified)?.email ?? (domains.find((d) => d.verified) ? `no-reply@${domains.find((d) => d.verified)!.domain}` : "");
    return { fromEmail, fromName: form.fromName ?? "" };
  }

  /** `input`'s fields named in `keys` applied to `form`, each checked. */
  private async checked(workspaceId: string, form: SignupForm, input: FormInput, keys: Set<FormInputKey>): Promise<SignupForm> {
    const next: SignupForm = { ...form };
    if (keys.has("name")) next.name = text("name", input.name, NAME_MAX, true);
    if (keys.has("fields")) next.fields = normalizeFields(input.fields, await this.deps.properties.customTypes(workspaceId));
    if (keys.has("groups")) {
      const given = idList("groups", input.groups);
      const found = given.length ? await this.deps.audiences.resolveGroups(workspaceId, given) : new Map<string, string>();
      const missing = given.find((g) => !found.has(g));
      if (missing !== undefined) throw invalid(`groups: no group "${missing}" in this workspace`);
      next.groups = [...new Set(given.map((g) => found.get(g)!))];
    }
    if (keys.has("topics")) {
      const given = idList("topics", input.topics);
      const found = given.length ? await this.deps.audiences.existingTopics(workspaceId, given) : new Set<string>();
      const missing = given.find((t) => !found.has(t));
      if (missing !== undefined) throw invalid(`topics: no topic "${missing}" in this workspace`);
      next.topics = given;
    }
    if (keys.has("doubleOptIn")) {
      if (input.doubleOptIn !== undefined && typeof input.doubleOptIn !== "boolean") throw invalid("doubleOptIn must be a boolean");
      next.doubleOptIn = input.doubleOptIn === true;
    }
    if (keys.has("redirectUrl")) next.redirectUrl = checkRedirectUrl(input.redirectUrl) || undefined;
    if (keys.has("fromName")) next.fromName = text("fromName", input.fromName, NAME_MAX) || undefined;
    if (keys.has("confirmTemplate")) {
      const name = text("confirmTemplate", input.confirmTemplate, 100);
      if (name) {
        let template;
        try {
          template = await this.deps.templates.get(workspaceId, name);
        } catch (err) {
          if (err instanceof AppError && err.code === "template_not_found") throw badRequest("template_not_found", `confirmTemplate: no template "${name}" in this workspace`);
          throw err;
        }
        // A layout or a snippet is a part of templates, not an email (its sends would all fail).
        if (template.kind && template.kind !== "template") {
          throw badRequest("invalid_template", `confirmTemplate: "${name}" is a ${template.kind}, which cannot be sent on its own; name a template`);
        }
      }
      next.confirmTemplate = name || undefined;
    }
    if (keys.has("fromEmail")) {
      const given = text("fromEmail", input.fromEmail, 320);
      if (given) {
        const check = await this.deps.senders.check(workspaceId, given);
        if (!check.allowed) {
          throw badRequest("invalid_from", `fromEmail ${check.address || given} is not a verified address or on a verified domain of this workspace`, {
            allowedEmails: check.allowedEmails,
            allowedDomains: check.allowedDomains,
          });
        }
        next.fromEmail = check.address;
      } else next.fromEmail = undefined;
    }
    // A double opt-in form must be able to send its confirmation.
    if (next.doubleOptIn && !next.confirmTemplate && !next.fromEmail) {
      const { fromEmail } = await this.sender(next);
      if (!fromEmail) {
        throw badRequest("invalid_from", "A double opt-in form needs a sender for its confirmation email: give fromEmail, a confirmTemplate, or verify an address or domain of the workspace first", {
          allowedEmails: [],
          allowedDomains: [],
        });
      }
    }
    return next;
  }
}
