import { appError } from "@mailroom/kit/errors.js";
import { isTimeZone } from "@mailroom/kit/time-zones.js";
import { ParsedTemplate, type TemplateFields } from "@mailroom/content/liquid/template.js";
import { LiquidSyntaxError, RenderFailure } from "@mailroom/content/liquid/engine.js";
import { scanHtml } from "@mailroom/content/compile/scan.js";
import { htmlToPlainText } from "@mailroom/content/compile/text.js";
import { EXTRA_BUILT_INS, type Contact, type Template } from "@mailroom/records/model.js";
import type { Templates } from "./templates.js";
import type { Workspaces } from "./workspaces.js";

/** A contact's values as a template reads them: its properties, then its built-in fields. */
export function contactValues(c: Contact): Record<string, unknown> {
  const values: Record<string, unknown> = { ...c.properties, email: c.email, firstName: c.firstName, lastName: c.lastName };
  if (c.timezone) values.timezone = c.timezone;
  for (const field of EXTRA_BUILT_INS) if (c[field]) values[field] = c[field];
  return values;
}

/**
 * POST /v1/templates/:name/render (DESIGN §10.2): a template with its layout and snippets,
 * rendered with the values given or a contact's, as a send renders it but without tracking
 * (system links are "#"). The plain text is generated from the HTML when the template has none.
 * POST /v1/templates/render renders unsaved content the same way (the editor's live preview).
 */
/** A contact of the workspace, read from the audience unit (contact_not_found, 404, when there is none). */
export interface ContactReader {
  getById(workspaceId: string, contactId: string): Promise<Contact>;
}

export class TemplatePreviews {
  constructor(
    private readonly templates: Pick<Templates, "get" | "includes">,
    private readonly contacts: ContactReader,
    private readonly workspaces: Pick<Workspaces, "get">,
  ) {}

  /** `draft`: unsaved content to render instead of the stored template (checked by Templates.draft). */
  async render(workspaceId: string, name: string, variables: Record<string, unknown>, contactId?: string, draft?: Template): Promise<TemplateFields> {
    const template = draft ?? (await this.templates.get(workspaceId, name));
    const [includes, workspace, contact] = await Promise.all([
      this.templates.includes(workspaceId, template),
      this.workspaces.get(workspaceId),
      contactId ? this.contacts.getById(workspaceId, contactId) : Promise.resolve(undefined),
    ]);
    const values = { ...(contact ? contactValues(contact) : {}), ...variables };
    const layout = template.layout ? includes.find((t) => t.kind === "layout" && t.name === template.layout) : undefined;
    const zone = typeof values.timezone === "string" && isTimeZone(values.timezone) ? values.timezone : workspace.timezone;
    let rendered: TemplateFields;
    try {
      rendered = ParsedTemplate.parse({
        key: "",
        fields: { subject: template.subject, html: template.html, text: template.text, previewText: template.previewText },
        layout: layout && { html: layout.html, text: layout.text },
        snippets: includes.filter((t) => t.kind === "snippet").map((t) => ({ name: t.name, html: t.html })),
      }).render(values, { email: typeof values.email === "string" ? values.email : "", timeZone: zone || "UTC" });
    } catch (err) {
      if (err instanceof RenderFailure || err instanceof LiquidSyntaxError) {
        throw appError({ code: "template_render_failed", httpStatus: 400, message: `Template "${template.name}" could not be rendered: ${err.message}` });
      }
      throw err;
    }
    const slots = (text: string) =>
      text.replaceAll("{{unsubscribeUrl}}", "#").replaceAll("{{manageUrl}}", "#").replaceAll("{{contactId}}", contact?._id ?? "");
    const html = slots(rendered.html);
    const text = rendered.text ? slots(rendered.text) : htmlToPlainText(html, scanHtml(html));
    return { subject: slots(rendered.subject), html, text, previewText: slots(rendered.previewText) };
  }
}
