import { z } from "zod";
import type { Form } from "@mailroom/proto/audience/v1/forms_pb.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/** Public JSON of signup forms (/v1/forms, DESIGN §9.4); the rules live in the audience unit's domain/forms.ts. */

const fieldInput = z.union([
  z.string().min(1).max(64),
  z.strictObject({
    name: z.string().min(1).max(64),
    label: z.string().max(200).optional(),
    required: z.boolean().optional(),
  }),
]);

const content = {
  fields: z.array(fieldInput).max(20).meta({
    description: "The contact fields the form asks: `email` (always there, first and required, added when absent), `firstName`, `lastName` and custom properties by API slug (an unknown one is 400 `invalid_form`). Each a name or `{ name, label?, required? }`.",
    examples: [["email", "firstName", { name: "plan", label: "Your plan", required: true }]],
  }),
  groups: z.array(z.string().min(1).max(200)).max(50).meta({ description: "Groups (ids or public ids) a subscribed contact joins; stored as ids. An unknown one is 400 `invalid_form`." }),
  topics: z.array(z.string().min(1).max(200)).max(50).meta({ description: "Topic ids a subscribed contact opts in to. An unknown one is 400 `invalid_form`." }),
  doubleOptIn: z.boolean().meta({ description: "Signups are `OPT_IN_PENDING` until the confirmation email's link is followed (default false)." }),
  redirectUrl: z.string().max(2048).nullable().meta({ description: "Where a browser's form post (and the confirmation link) goes afterwards: an absolute http(s) URL. Absent: a thank-you page." }),
  confirmTemplate: z.string().max(100).nullable().meta({
    description: "A stored template for the confirmation email (its `{{confirmUrl}}`, `{{formName}}`, `{{email}}` variables are filled in); an unknown one is 400 `template_not_found`. Absent: the built-in confirmation.",
  }),
  fromEmail: z.string().max(320).nullable().meta({
    description: "Sender of the built-in confirmation: a verified address or one on a verified domain (else 400 `invalid_from`). Absent: the workspace's first verified address (or no-reply@ its first verified domain); a double opt-in form needs one of them.",
  }),
  fromName: z.string().max(200).nullable(),
};

export const createFormSchema = z
  .strictObject({
    name: z.string().min(1, "name is required").max(200),
    ...Object.fromEntries(Object.entries(content).map(([k, v]) => [k, v.optional()])) as { [K in keyof typeof content]: z.ZodOptional<(typeof content)[K]> },
  })
  .meta({ id: "CreateFormRequest" });

export const updateFormSchema = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    ...Object.fromEntries(Object.entries(content).map(([k, v]) => [k, v.optional()])) as { [K in keyof typeof content]: z.ZodOptional<(typeof content)[K]> },
  })
  .meta({ id: "UpdateFormRequest", description: "Only the fields given change; `null` clears an optional one." });

type FormBody = z.infer<typeof updateFormSchema>;

/** The body as the audience unit's FormInput and the names of the fields it sets. */
export function formInput(body: FormBody) {
  return {
    form: {
      name: body.name ?? "",
      fields: (body.fields ?? []).map((f) => (typeof f === "string" ? { name: f, label: "", required: false } : { name: f.name, label: f.label ?? "", required: f.required ?? false })),
      groups: body.groups ?? [],
      topics: body.topics ?? [],
      doubleOptIn: body.doubleOptIn ?? false,
      redirectUrl: body.redirectUrl ?? "",
      confirmTemplate: body.confirmTemplate ?? "",
      fromEmail: body.fromEmail ?? "",
      fromName: body.fromName ?? "",
    },
    updateFields: Object.keys(body).filter((k) => (body as Record<string, unknown>)[k] !== undefined),
  };
}

export const formIdParams = z.object({ id: z.string().max(100) });

export const listFormsQuerySchema = z
  .strictObject({
    limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 20 }),
    cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
  });

/** The hosted page of a form. */
export const formPageUrl = (publicUrl: string, id: string) => `${publicUrl.replace(/\/+$/, "")}/f/${id}`;

export function formJson(f: Form, publicUrl: string) {
  return {
    id: f.id,
    name: f.name,
    fields: f.fields.map((x) => ({ name: x.name, label: x.label, required: x.required })),
    groups: f.groups,
    topics: f.topics,
    doubleOptIn: f.doubleOptIn,
    redirectUrl: f.redirectUrl || null,
    confirmTemplate: f.confirmTemplate || null,
    fromEmail: f.fromEmail || null,
    fromName: f.fromName || null,
    url: formPageUrl(publicUrl, f.id),
    createdAt: iso(f.createdAt),
    updatedAt: iso(f.updatedAt),
  };
}

export const formSchema = z
  .strictObject({
    id: z.string().regex(/^frm_/).meta({ description: "`frm_` followed by a lowercase ULID." }),
    name: z.string(),
    fields: z.array(z.strictObject({ name: z.string(), label: z.string(), required: z.boolean() })),
    groups: z.array(z.string()),
    topics: z.array(z.string()),
    doubleOptIn: z.boolean(),
    redirectUrl: z.string().nullable(),
    confirmTemplate: z.string().nullable(),
    fromEmail: z.string().nullable(),
    fromName: z.string().nullable(),
    url: z.string().meta({ description: "The hosted form page (`GET /f/{id}`); `POST` the same URL to sign up from your own form." }),
    createdAt: z.iso.datetime().nullable(),
    updatedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: "Form" });

export const formResponseSchema = z.strictObject({ form: formSchema }).meta({ id: "FormResponse" });
export const formDeletedSchema = z.strictObject({ form: formSchema, isDeleted: z.literal(true) }).meta({ id: "FormDeleted" });
export const formListSchema = z
  .strictObject({
    forms: z.strictObject({
      items: z.array(formSchema),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last page." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "FormList" });
