/**
 * "Add contact" on the contacts page: one contact by hand.
 *
 *   GET  /contacts/new     the form: email, first and last name, subscribed or not, and
 *                          properties as the contact API takes them (a JSON object by slug)
 *   POST /contacts         create; 303 to the new contact, or the form again with the errors
 *
 * The form becomes the body of `POST /v1/contacts` ({ properties: { email, firstName, … } })
 * and is checked with that route's schema (upsertContactSchema) and converted by its
 * contactInput, so the console accepts what the API accepts. It creates with CreateContact
 * (the same ContactInput the API's UpsertContact takes), not an upsert: adding someone who
 * is already there must not change them, and the answer links to the existing contact. The
 * audience unit's refusals (bad address, unknown property, bad value) show on the form. The markup
 * is views/contacts-new.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ContactSource } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { contactInput, upsertContactSchema } from "@mailroom/http/contacts-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { render } from "../views/html.js";
import { newContactView, type NewContactError, type NewContactValues } from "../views/contacts-new.js";
import { editable, html, str } from "../form-values.js";

export type { NewContactError, NewContactValues };

/** Fields of their own on the form: the JSON may not set them too. */
const OWN_FIELDS = ["email", "firstName", "lastName", "status"] as const;
const PROPERTIES_MAX = 64 * 1024;

/**
 * The form as the body of POST /v1/contacts, checked by that route's schema: the parsed body,
 * or the first complaint with the field it concerns.
 */
export function parseNewContact(values: NewContactValues): { ok: true; body: ReturnType<typeof upsertContactSchema.parse> } | { ok: false; error: NewContactError } {
  let extra: Record<string, unknown> = {};
  const text = values.properties.trim();
  if (text) {
    if (text.length > PROPERTIES_MAX) return { ok: false, error: { field: "properties", message: "Properties: at most 64 KB of JSON." } };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { ok: false, error: { field: "properties", message: "Properties: not valid JSON. Write an object such as {\"plan\": \"pro\"}." } };
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      return { ok: false, error: { field: "properties", message: "Properties: write a JSON object such as {\"plan\": \"pro\"}." } };
    }
    extra = parsed as Record<string, unknown>;
    const own = OWN_FIELDS.find((k) => k in extra);
    if (own) return { ok: false, error: { field: "properties", message: `Properties: ${own} has its own field on this form.` } };
  }
  const properties: Record<string, unknown> = {
    ...extra,
    email: values.email.trim(),
    ...(values.firstName.trim() ? { firstName: values.firstName.trim() } : {}),
    ...(values.lastName.trim() ? { lastName: values.lastName.trim() } : {}),
    status: values.subscribed ? "SUBSCRIBED" : "UNSUBSCRIBED",
  };
  const result = upsertContactSchema.safeParse({ properties });
  if (result.success) return { ok: true, body: result.data };
  const issue = result.error.issues[0];
  const key = issue?.path[1];
  const field = key === "email" || key === "firstName" || key === "lastName" ? key : "properties";
  const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
  return { ok: false, error: { field, message: `${where}${issue?.message ?? "invalid contact"}` } };
}

/** The field a refusal of the audience unit is about. */
function fieldOfCode(code: string | undefined): NewContactError["field"] {
  if (code === "invalid_email") return "email";
  if (code === "unknown_contact_property" || code === "invalid_property_value" || code === "invalid_property_slug" || code === "invalid_timezone") return "properties";
  return undefined;
}

const EMPTY: NewContactValues = { email: "", firstName: "", lastName: "", subscribed: true, properties: "" };

export function registerContactCreatePages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const contacts = () => deps.clients.contacts;
  const page = async (request: FastifyRequest, values: NewContactValues, error?: NewContactError) => {
    const session = sessionOf(request);
    const { properties } = await contacts().listContactProperties({ workspaceId: session.workspaceId }, rpcOptions(request));
    const body = newContactView(csrfField(session), values, properties, error);
    return consolePage({ title: "Add a contact", session, active: "contacts", flash: request.consoleFlash, body: render(body) });
  };

  scope.get("/contacts/new", async (request, reply) => {
    editable(request);
    return html(reply, await page(request, EMPTY));
  });

  scope.post("/contacts", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values: NewContactValues = {
      email: str(request.body, "email").slice(0, 1024),
      firstName: str(request.body, "firstName").slice(0, 1024),
      lastName: str(request.body, "lastName").slice(0, 1024),
      subscribed: str(request.body, "subscribed") !== "no",
      properties: str(request.body, "properties"),
    };
    const parsed = parseNewContact(values);
    if (!parsed.ok) return html(reply, await page(request, values, parsed.error), 400);
    const input = { ...contactInput(parsed.body.properties), source: ContactSource.DASHBOARD };
    try {
      const { contact } = await contacts().createContact({ workspaceId: session.workspaceId, contact: input }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Contact ${contact!.email} added.` });
      return seeOther(reply, consoleUrl(`/contacts/${contact!.id}`));
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      const error: NewContactError = { message: e.message, field: fieldOfCode(e.code) };
      if (e.code === "contact_exists") {
        const existing = await findByEmail(request, input.email ?? "");
        error.field = "email";
        error.message = "A contact with this address exists already.";
        if (existing) error.link = { href: consoleUrl(`/contacts/${existing}`), text: "Open that contact" };
      }
      return html(reply, await page(request, values, error), e.statusCode);
    }
  });

  /** The id of the workspace's contact with this address (case-insensitive), if any. */
  async function findByEmail(request: FastifyRequest, email: string): Promise<string | undefined> {
    const wanted = email.trim().toLowerCase();
    if (!wanted) return undefined;
    const res = await contacts().listContacts(
      { workspaceId: sessionOf(request).workspaceId, search: wanted.slice(0, 200), page: { limit: 50 } }, rpcOptions(request),
    ).catch(() => undefined);
    return res?.contacts.find((c) => c.email.toLowerCase() === wanted)?.id;
  }
}
