/**
 * "Add contact" (/console/contacts/new): the form. The handlers are pages/contacts-new.ts.
 */
import { PropertyType, type ContactProperty } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { consoleUrl } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

export interface NewContactValues {
  email: string;
  firstName: string;
  lastName: string;
  subscribed: boolean;
  /** The JSON text as typed. */
  properties: string;
}

/** What went wrong, for the form: a message, the field it belongs to, and a link (an existing contact). */
export interface NewContactError {
  message: string;
  field?: "email" | "firstName" | "lastName" | "properties";
  link?: { href: string; text: string };
}

const TYPE_NAMES: Partial<Record<PropertyType, string>> = {
  [PropertyType.STRING]: "text", [PropertyType.NUMBER]: "number", [PropertyType.BOOLEAN]: "true or false",
  [PropertyType.DATE]: "date", [PropertyType.SELECT]: "one option", [PropertyType.MULTI_SELECT]: "array of options",
};

/** The form with the values as typed, the workspace's properties as a hint, and the error if any; `csrf` is the hidden input. */
export function newContactForm(csrf: string, values: NewContactValues, props: ContactProperty[], error?: NewContactError): Html {
  const invalid = (field: NewContactError["field"]) => (error?.field === field ? html` aria-invalid="true" aria-describedby="nc-error"` : "");
  const alert = error
    ? html`<div class="flash error" role="alert" id="nc-error">${error.message}${error.link ? html` <a href="${error.link.href}">${error.link.text}</a>` : ""}</div>`
    : "";
  const custom = props.filter((p) => !p.builtIn);
  const hint = custom.length
    ? html`This workspace's properties: ${custom.map((p, i) => html`${i ? ", " : ""}<code>${p.slug}</code> (${TYPE_NAMES[p.type] ?? "text"}${p.options.length ? `: ${p.options.map((o) => o.value).join(", ")}` : ""})`)}.`
    : "This workspace has no custom properties yet.";
  const propsInvalid = error?.field === "properties";
  return html`${alert}<form method="post" action="${consoleUrl("/contacts")}" class="card" id="new-contact" novalidate>${trusted(csrf)}
<div class="field"><label for="nc-email">Email address</label><input id="nc-email" name="email" type="email" required maxlength="512" autocomplete="off" spellcheck="false" value="${values.email}" style="width:100%"${invalid("email")}></div>
<div class="grid"><div class="field"><label for="nc-first">First name (optional)</label><input id="nc-first" name="firstName" value="${values.firstName}" style="width:100%"${invalid("firstName")}></div>
<div class="field"><label for="nc-last">Last name (optional)</label><input id="nc-last" name="lastName" value="${values.lastName}" style="width:100%"${invalid("lastName")}></div></div>
<fieldset class="field"><legend>Subscription</legend>
<div class="check"><input type="radio" id="nc-sub" name="subscribed" value="yes"${values.subscribed ? " checked" : ""}><label for="nc-sub" style="font-weight:400">Subscribed: gets broadcasts</label></div>
<div class="check"><input type="radio" id="nc-unsub" name="subscribed" value="no"${values.subscribed ? "" : " checked"}><label for="nc-unsub" style="font-weight:400">Unsubscribed</label></div></fieldset>
<div class="field"><label for="nc-props">Properties (optional JSON)</label>
<p class="muted" id="nc-props-h" style="margin:0 0 .25rem">As the contact API takes them: an object by slug, e.g. <code>{"plan": "pro", "city": "Lyon"}</code>; built-ins such as <code>city</code>, <code>phone</code>, <code>timezone</code> too. ${hint}</p>
<textarea id="nc-props" name="properties" spellcheck="false" aria-describedby="nc-props-h${propsInvalid ? " nc-error" : ""}"${propsInvalid ? html` aria-invalid="true"` : ""}>${values.properties}</textarea></div>
<div class="actions"><button type="submit">Add contact</button><a class="button secondary" href="${consoleUrl("/contacts")}">Back to contacts</a></div></form>`;
}

/** The page: its heading and the form. */
export const newContactView = (csrf: string, values: NewContactValues, props: ContactProperty[], error?: NewContactError): Html =>
  html`<h1>Add a contact</h1>${newContactForm(csrf, values, props, error)}`;
