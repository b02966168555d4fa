/**
 * Signup forms pages (DESIGN §9.4): the fields a form asks, the groups and topics a signup
 * joins, double opt-in and where the visitor goes after, and the form's hosted link and
 * embed snippets (an HTML <form> posting to /f/:id with the honeypot, and a fetch() variant).
 *
 *   GET  /forms                list
 *   GET  /forms/new            editor
 *   POST /forms                create
 *   GET  /forms/:id            hosted link, snippets, editor, delete
 *   POST /forms/:id            save (every field of the editor)
 *   POST /forms/:id/delete
 *
 * The editor is checked with the schema of POST /v1/forms and becomes the audience unit's input as
 * that route makes it; the markup is views/forms.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { PropertyType, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Form } from "@mailroom/proto/audience/v1/forms_pb.js";
import { refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { createFormSchema, formInput } from "@mailroom/http/forms-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ID, all, editable, formError, html as send, notFoundUnless, parseWith, str } from "../form-values.js";
import { workspaceGroups } from "../segments.js";
import { workspaceTopics } from "../topics.js";
import { render } from "../views/html.js";
import { formListView, formView, newFormView, type FormValues } from "../views/forms.js";

const EMPTY: FormValues = { name: "", fields: [], groups: [], topics: [], doubleOptIn: true, redirectUrl: "", fromEmail: "", fromName: "", confirmTemplate: "" };

/** The contact fields a form may ask (besides email): first and last name, the custom properties. */
export function askableFields(properties: ContactProperty[]): Array<{ name: string; label: string; type: string }> {
  const out = [{ name: "firstName", label: "First name", type: "string" }, { name: "lastName", label: "Last name", type: "string" }];
  for (const p of properties) {
    if (p.builtIn) continue;
    out.push({ name: p.slug, label: p.displayName || p.slug, type: (PropertyType[p.type] ?? "STRING").toLowerCase() });
  }
  return out;
}

export const valuesOf = (f: Form): FormValues => ({
  name: f.name,
  fields: f.fields.filter((x) => x.name !== "email").map((x) => ({ name: x.name, label: x.label, required: x.required })),
  groups: [...f.groups], topics: [...f.topics], doubleOptIn: f.doubleOptIn, redirectUrl: f.redirectUrl,
  fromEmail: f.fromEmail, fromName: f.fromName, confirmTemplate: f.confirmTemplate,
});

/**
 * The editor's fields: `ask` lists the field names to ask; `label.<name>` and
 * `required.<name>` ("on") go with each. Email is always asked (the service adds it).
 */
export function valuesFromForm(body: unknown): FormValues {
  const asked = all(body, "ask").filter((n) => n && n !== "email");
  return {
    name: str(body, "name").trim(),
    fields: [...new Set(asked)].map((name) => ({ name, label: str(body, `label.${name}`).trim(), required: str(body, `required.${name}`) === "on" })),
    groups: all(body, "groups").filter(Boolean),
    topics: all(body, "topics").filter(Boolean),
    doubleOptIn: str(body, "doubleOptIn") === "on",
    redirectUrl: str(body, "redirectUrl").trim(),
    fromEmail: str(body, "fromEmail").trim(),
    fromName: str(body, "fromName").trim(),
    confirmTemplate: str(body, "confirmTemplate").trim(),
  };
}

/** The editor as the body of POST /v1/forms (email first, always asked and required). */
export function formBody(v: FormValues) {
  return {
    name: v.name,
    fields: [{ name: "email", label: "Email", required: true }, ...v.fields],
    groups: v.groups, topics: v.topics, doubleOptIn: v.doubleOptIn, redirectUrl: v.redirectUrl,
    fromEmail: v.fromEmail, fromName: v.fromName, confirmTemplate: v.confirmTemplate,
  };
}

/** The editor checked with the schema of POST /v1/forms and made the audience unit's input as that route makes it. */
export function parseForm(v: FormValues) {
  const parsed = parseWith(createFormSchema, formBody(v));
  return parsed.ok ? { ok: true as const, input: formInput(parsed.data) } : parsed;
}

export function registerFormPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.forms;

  const load = async (request: FastifyRequest, id: string): Promise<Form> => {
    notFoundUnless(ID.form.test(id), "form_not_found", "form");
    const { form } = await rpc().getForm({ workspaceId: sessionOf(request).workspaceId, id }, rpcOptions(request));
    if (!form) throw refusal({ code: "form_not_found", status: 404, message: "No signup form with this id exists in the workspace." });
    return form;
  };
  const context = async (request: FastifyRequest) => {
    const [properties, groups, topics] = await Promise.all([
      deps.clients.contacts.listContactProperties({ workspaceId: sessionOf(request).workspaceId }, rpcOptions(request)).then((r) => r.properties),
      workspaceGroups(deps, request),
      workspaceTopics(deps, request),
    ]);
    return { fields: askableFields(properties), groups, topics };
  };

  const newPage = async (request: FastifyRequest, v: FormValues, flash?: Flash) => {
    const session = sessionOf(request);
    const body = newFormView(csrfField(session), v, await context(request));
    return consolePage({ title: "New signup form", session, active: "forms", flash, body: render(body) });
  };

  scope.get("/forms", async (request, reply) => {
    const session = sessionOf(request);
    const cursor = str(request.query, "cursor");
    const res = await rpc().listForms({ workspaceId: session.workspaceId, page: { limit: 50, cursor } }, rpcOptions(request));
    const body = formListView({ forms: res.forms, nextCursor: res.page?.hasMore ? res.page.nextCursor : undefined, canEdit: session.canEdit });
    return send(reply, consolePage({ title: "Signup forms", session, active: "forms", flash: request.consoleFlash, body: render(body) }));
  });

  scope.get("/forms/new", async (request, reply) => {
    editable(request);
    return send(reply, await newPage(request, { ...EMPTY, fields: [{ name: "firstName", label: "First name", required: false }] }));
  });

  scope.post("/forms", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const v = valuesFromForm(request.body);
    const parsed = parseForm(v);
    if (!parsed.ok) return send(reply, await newPage(request, v, parsed.flash), parsed.flash.status);
    try {
      const { form } = await rpc().createForm({ workspaceId: session.workspaceId, form: parsed.input.form }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Form ${form!.name} created: link it or paste a snippet below into your site.` });
      return seeOther(reply, consoleUrl(`/forms/${form!.id}`));
    } catch (err) {
      const flash = formError(err);
      return send(reply, await newPage(request, v, flash), flash.status);
    }
  });

  const formPage = async (request: FastifyRequest, f: Form, v: FormValues, flash?: Flash) => {
    const session = sessionOf(request);
    const body = formView({ form: f, values: v, ctx: await context(request), publicUrl: deps.config.publicUrl, canEdit: session.canEdit, csrf: csrfField(session) });
    return consolePage({ title: f.name, session, active: "forms", flash, body: render(body) });
  };

  scope.get<{ Params: { id: string } }>("/forms/:id", async (request, reply) => {
    const f = await load(request, request.params.id);
    return send(reply, await formPage(request, f, valuesOf(f), request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/forms/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const f = await load(request, request.params.id);
    const v = valuesFromForm(request.body);
    const parsed = parseForm(v);
    if (!parsed.ok) return send(reply, await formPage(request, f, v, parsed.flash), parsed.flash.status);
    try {
      // Every field of the editor is given, so every one is saved.
      await rpc().updateForm({ workspaceId: session.workspaceId, id: f.id, ...parsed.input }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Form saved." });
      return seeOther(reply, consoleUrl(`/forms/${f.id}`));
    } catch (err) {
      const flash = formError(err);
      return send(reply, await formPage(request, f, v, flash), flash.status);
    }
  });

  scope.post<{ Params: { id: string } }>("/forms/:id/delete", async (request, reply) => {
    editable(request);
    const f = await load(request, request.params.id);
    await rpc().deleteForm({ workspaceId: sessionOf(request).workspaceId, id: f.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Form ${f.name} deleted.` });
    return seeOther(reply, consoleUrl("/forms"));
  });
}
