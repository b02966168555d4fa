import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Store } from "@mailroom/store/port.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { FormService, SignupOutcome, type FormInput as PbFormInput, type FormSchema } from "@mailroom/proto/audience/v1/forms_pb.js";
import { Forms, type FormsDeps, type FormFieldView, type FormInput, type SignupForm } from "./domain/forms.js";
import type { Audience } from "./domain/audience.js";
import type { SenderLookup, TemplateLookup } from "@mailroom/records/account-ports.js";

/** What a form reads: the audience's contacts, properties and workspaces, and the accounts unit's senders and templates. */
export type FormDirectory = Pick<Audience, "contacts" | "properties" | "workspaces"> & { senders: SenderLookup; templates: TemplateLookup };
import { openFormStores } from "./adapters/form-store.js";

/** Signup forms over the audience unit's store and use cases (main.ts and tests build them alike). */
export async function openForms(store: Store, dir: FormDirectory, opts: Pick<FormsDeps, "resendIntervalMs" | "groups" | "now"> = {}): Promise<Forms> {
  const stores = await openFormStores(store);
  return new Forms({
    ...stores,
    contacts: dir.contacts,
    properties: dir.properties,
    senders: dir.senders,
    templates: dir.templates,
    workspaces: dir.workspaces,
    resendIntervalMs: opts.resendIntervalMs,
    groups: opts.groups,
    now: opts.now,
  });
}

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

function formToPb(f: SignupForm, views?: FormFieldView[]): MessageInitShape<typeof FormSchema> {
  return {
    id: f._id,
    workspaceId: f.workspaceId,
    name: f.name,
    fields: views
      ? views.map((x) => ({ name: x.name, label: x.label, required: x.required, type: x.type, options: x.options }))
      : f.fields.map((x) => ({ name: x.name, label: x.label, required: x.required })),
    groups: f.groups,
    topics: f.topics,
    doubleOptIn: f.doubleOptIn,
    redirectUrl: f.redirectUrl ?? "",
    confirmTemplate: f.confirmTemplate ?? "",
    fromEmail: f.fromEmail ?? "",
    fromName: f.fromName ?? "",
    createdAt: ts(f.createdAt),
    updatedAt: ts(f.updatedAt),
  };
}

function formFromPb(f: PbFormInput | undefined): FormInput {
  if (!f) throw badRequest("invalid_request", "form is required");
  return {
    name: f.name,
    fields: f.fields.map((x) => ({ name: x.name, ...(x.label ? { label: x.label } : {}), required: x.required })),
    groups: f.groups,
    topics: f.topics,
    doubleOptIn: f.doubleOptIn,
    redirectUrl: f.redirectUrl,
    confirmTemplate: f.confirmTemplate,
    fromEmail: f.fromEmail,
    fromName: f.fromName,
  };
}

const OUTCOME_TO_PB = {
  SUBSCRIBED: SignupOutcome.SUBSCRIBED,
  CONFIRMATION_DUE: SignupOutcome.CONFIRMATION_DUE,
  CONFIRMATION_THROTTLED: SignupOutcome.CONFIRMATION_THROTTLED,
  ALREADY_SUBSCRIBED: SignupOutcome.ALREADY_SUBSCRIBED,
  IGNORED: SignupOutcome.IGNORED,
} as const;

export function formService(forms: Forms): ServiceImpl<typeof FormService> {
  return {
    async createForm(req) {
      return { form: formToPb(await forms.create(req.workspaceId, formFromPb(req.form))) };
    },
    async getForm(req) {
      return { form: formToPb(await forms.get(req.workspaceId, req.id)) };
    },
    async listForms(req) {
      const page = await forms.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { forms: page.items.map((f) => formToPb(f)), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async updateForm(req) {
      return { form: formToPb(await forms.update(req.workspaceId, req.id, formFromPb(req.form), req.updateFields)) };
    },
    async deleteForm(req) {
      return { form: formToPb(await forms.delete(req.workspaceId, req.id)) };
    },
    async getPublicForm(req) {
      const { form, fields, workspaceName } = await forms.publicForm(req.formId);
      return { form: formToPb(form, fields), workspaceName };
    },
    async submitForm(req) {
      const r = await forms.submit(req.formId, req.email, (req.values ?? {}) as Record<string, unknown>);
      return { form: formToPb(r.form), outcome: OUTCOME_TO_PB[r.outcome], contactId: r.contactId, email: r.email, fromEmail: r.fromEmail, fromName: r.fromName, workspaceName: r.workspaceName };
    },
    async confirmSignup(req) {
      const r = await forms.confirm(req.workspaceId, req.formId, req.contactId, req.email);
      return { form: r.form ? formToPb(r.form) : undefined, email: r.email, confirmed: r.confirmed };
    },
  };
}

export function formRoutes(forms: Forms) {
  return (router: ConnectRouter) => {
    router.service(FormService, formService(forms));
  };
}
