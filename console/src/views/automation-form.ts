/**
 * The automation editor's form (DESIGN §9.6): a fieldset per step, the trigger, re-entry and
 * the raw JSON editor. Field names follow the step's place (`steps.2.then.0.template`); the
 * draft it shows and every button's effect are pages/automation-form.ts.
 */
import type { BuilderField } from "../filter-builder.js";
import { filterBuilderHtml } from "../filter-builder.js";
import { BRANCHING, stepPathOf, type FormDraft, type FormStep } from "../pages/automation-form.js";
import { STEP_LABELS, STEP_TYPES, TRIGGER_LABELS, TRIGGER_TYPES, WEEKDAYS } from "./automation-flow.js";
import { html, trusted, type Html } from "./html.js";

export interface FormContext {
  action: string;
  cancelUrl: string;
  /** The hidden CSRF input (markup). */
  csrf: string;
  submitLabel: string;
  templates: string[];
  groups: Array<{ id: string; label: string }>;
  /** The trigger filter's builder fields (filter-builder.ts) and its count URL. */
  filterFields: BuilderField[];
  countUrl: string;
  error?: { path: string; message: string };
  /** The element to bring into view (after a button): its id. */
  focus?: string;
  /** The raw JSON editor's text (what was typed there, or the draft as JSON). */
  definitionJson: string;
  jsonOpen?: boolean;
}

const option = (value: string, label: string, selected: string) =>
  html`<option value="${value}"${value === selected ? html` selected` : ""}>${label}</option>`;

function input(id: string, name: string, label: string, value: string, extra: Html | "" = ""): Html {
  return html`<div class="field"><label for="${id}">${label}</label><input id="${id}" name="${name}" value="${value}"${extra}></div>`;
}

/** "2 › then › 1" for steps.1.then.0 (what people count, from 1). */
function humanPath(path: string): string {
  return path.split(".").slice(1).map((p) => (/^\d+$/.test(p) ? String(Number(p) + 1) : p)).join(" › ");
}

function groupSelect(id: string, name: string, label: string, value: string, groups: FormContext["groups"]): Html {
  const known = groups.some((g) => g.id === value);
  const options = [option("", "choose a group…", value), ...groups.map((g) => option(g.id, g.label, value)),
    ...(value && !known ? [option(value, value, value)] : [])];
  return html`<div class="field"><label for="${id}">${label}</label><select id="${id}" name="${name}">${options}</select></div>`;
}

function stepFieldsView(step: FormStep, p: string, ctx: FormContext): Html | "" {
  const f = step.fields;
  const id = (key: string) => `f-${p}.${key}`;
  const name = (key: string) => `${p}.${key}`;
  switch (step.type) {
    case "wait":
      return input(id("duration"), name("duration"), "Wait for", f.duration ?? "", html` required placeholder="2 days, 1 hour, 30 seconds or PT2S"`);
    case "wait_until": {
      const days = WEEKDAYS.map((d) => html`<div class="check"><input type="checkbox" id="${`${id("days")}.${d}`}" name="${name("days")}" value="${d}"${step.days.includes(d) ? html` checked` : ""}><label for="${`${id("days")}.${d}`}">${d}</label></div>`);
      return html`<div class="row">${input(id("time"), name("time"), "Time (HH:MM)", f.time ?? "", html` type="time" required`)}
<div class="field"><label for="${id("timezone")}">In the timezone of</label><select id="${id("timezone")}" name="${name("timezone")}">${option("", "the contact (default)", f.timezone ?? "")}${option("contact", "the contact", f.timezone ?? "")}${option("workspace", "the workspace", f.timezone ?? "")}</select></div></div>
<fieldset class="days"><legend>On these days (none: every day)</legend><div class="row">${days}</div></fieldset>`;
    }
    case "send": {
      const track = (key: string, label: string) => html`<div class="field"><label for="${id(key)}">${label}</label><select id="${id(key)}" name="${name(key)}">${option("", "default (on)", f[key] ?? "")}${option("true", "on", f[key] ?? "")}${option("false", "off", f[key] ?? "")}</select></div>`;
      return html`<div class="row">${input(id("template"), name("template"), "Template", f.template ?? "", html` required list="automation-templates"`)}${track("trackOpens", "Track opens")}${track("trackClicks", "Track clicks")}</div>`;
    }
    case "condition":
      return html`<div class="field"><label for="${id("filter")}">If the contact matches (filter JSON)</label><textarea id="${id("filter")}" name="${name("filter")}" rows="3" spellcheck="false" style="font-family:ui-monospace,monospace" aria-describedby="filter-help">${f.filter ?? ""}</textarea></div>`;
    case "wait_for_event":
      return html`<div class="row">${input(id("event"), name("event"), "Event", f.event ?? "", html` required list="automation-events" placeholder="purchase, email_opened, email_clicked or email_replied"`)}
${input(id("timeout"), name("timeout"), "Wait at most", f.timeout ?? "", html` required placeholder="3 days"`)}</div>`;
    case "update_contact":
      return html`<div class="field"><label for="${id("properties")}">Set properties (JSON object; null clears one)</label><textarea id="${id("properties")}" name="${name("properties")}" rows="3" spellcheck="false" style="font-family:ui-monospace,monospace" placeholder='{"plan": "pro"}'>${f.properties ?? ""}</textarea></div>`;
    case "add_to_group":
    case "remove_from_group":
      return groupSelect(id("groupId"), name("groupId"), "Group", f.groupId ?? "", ctx.groups);
    default:
      return "";
  }
}

function addControl(list: string): Html {
  const id = `add-${list}`;
  const branch = /^(.*)\.(then|else)$/.exec(list);
  const label = branch ? `Add a step to the ${branch[2]} branch of step ${humanPath(branch[1])}` : "Add a step at the end";
  return html`<div class="row add-step" id="${id}"><div class="field"><label for="${`${id}-type`}">${label}</label>
<select id="${`${id}-type`}" name="${`${list}.__add`}">${STEP_TYPES.map((t) => option(t, STEP_LABELS[t], "send"))}</select></div>
<div class="field"><button type="submit" class="secondary" name="op" value="add:${list}" formnovalidate aria-label="${label}">Add step</button></div></div>`;
}

function stepView(step: FormStep, p: string, index: number, count: number, ctx: FormContext): Html {
  const human = humanPath(p);
  const errorHere = ctx.error && stepPathOf(ctx.error.path) === p
    ? html`<p class="step-error" role="alert"><strong>${ctx.error.path}</strong>: ${ctx.error.message}</p>` : "";
  const branches = BRANCHING.has(step.type)
    ? html`<div class="edit-branches">${(["then", "else"] as const).map((b) => {
      const label = step.type === "condition" ? (b === "then" ? "Then (the contact matches)" : "Else (it does not; optional)")
        : (b === "then" ? "Then (the event came in time)" : "Else (timed out; optional)");
      return html`<div class="edit-branch" data-branch="${b}"><p class="branch-label">${label}</p>${stepsListView(step[b], `${p}.${b}`, ctx)}</div>`;
    })}</div>` : "";
  const button = (verb: string, label: string, disabled: boolean, cls = "secondary small") =>
    html`<button type="submit" class="${cls}" name="op" value="${verb}:${p}" formnovalidate${disabled ? html` disabled` : ""} aria-label="${`${label} step ${human}`}">${label}</button>`;
  return html`<li><fieldset class="step-edit${errorHere ? " has-error" : ""}" id="edit-${p}" data-path="${p}"><legend>Step ${human}: ${STEP_LABELS[step.type] ?? step.type}</legend>${errorHere}
<input type="hidden" name="${`${p}.was`}" value="${step.type}">
<div class="row">${input(`f-${p}.id`, `${p}.id`, "Step id", step.id, html` required maxlength="64" size="14"`)}
<div class="field"><label for="${`f-${p}.type`}">Type</label><select id="${`f-${p}.type`}" name="${`${p}.type`}" data-retype>${STEP_TYPES.map((t) => option(t, STEP_LABELS[t], step.type))}</select></div>
<div class="field js-hide"><button type="submit" class="secondary" name="op" value="type:${p}" formnovalidate data-apply>Apply type</button></div></div>
${stepFieldsView(step, p, ctx)}${branches}
<div class="actions step-actions">${button("up", "Move up", index === 0)}${button("down", "Move down", index === count - 1)}${button("remove", "Remove", false, "secondary small")}</div></fieldset></li>`;
}

function stepsListView(steps: FormStep[], list: string, ctx: FormContext): Html {
  const items = steps.map((s, i) => stepView(s, `${list}.${i}`, i, steps.length, ctx));
  return html`<ol class="edit-steps">${items}</ol>${addControl(list)}`;
}

function triggerView(draft: FormDraft, ctx: FormContext): Html {
  const t = draft.trigger;
  const type = t.type || "contact_created";
  const wrap = (forTypes: string[], inner: Html) =>
    html`<div data-trigger-for="${forTypes.join(" ")}"${forTypes.includes(type) ? "" : html` data-inactive`}>${inner}</div>`;
  return html`<fieldset class="card" id="edit-trigger"><legend>Trigger: when a contact enters</legend>
<div class="field"><label for="trigger-type">When</label><select id="trigger-type" name="trigger.type">${TRIGGER_TYPES.map((x) => option(x, TRIGGER_LABELS[x], type))}</select></div>
${wrap(["event"], input("trigger-name", "trigger.name", "Event name (for “an event is received”)", t.name ?? "", html` placeholder="signed_up"`))}
${wrap(["group_joined"], groupSelect("trigger-groupId", "trigger.groupId", "Group (for “joins a group”)", t.groupId ?? "", ctx.groups))}
${wrap(["property_changed"], input("trigger-property", "trigger.property", "Property slug (for “a property changes”)", t.property ?? "", html` placeholder="plan"`))}
${wrap(["email_opened", "email_clicked"], html`<div class="row">${input("trigger-broadcastId", "trigger.broadcastId", "Of broadcast (id; optional)", t.broadcastId ?? "")}${input("trigger-template", "trigger.template", "Or of template (name; optional)", t.template ?? "", html` list="automation-templates"`)}</div>`)}
</fieldset>`;
}

// Applies a type change at once, keeps the trigger's fields to its type, and brings the
// step a button acted on back into view (the form answers at the same address).
const FORM_JS = String.raw`(function(){var form=document.getElementById("automation-form");if(!form)return;
form.querySelectorAll(".js-hide").forEach(function(e){e.hidden=true});
form.addEventListener("change",function(e){var s=e.target;if(s.hasAttribute&&s.hasAttribute("data-retype")){var b=s.closest("fieldset").querySelector("button[data-apply]");if(b)form.requestSubmit(b)}
if(s.id==="trigger-type")showTrigger()});
function showTrigger(){var t=document.getElementById("trigger-type").value;form.querySelectorAll("[data-trigger-for]").forEach(function(d){d.hidden=d.getAttribute("data-trigger-for").split(" ").indexOf(t)<0})}
showTrigger();
var focus=form.getAttribute("data-focus");if(focus){var el=document.getElementById(focus);if(el){el.scrollIntoView({block:"center"});var i=el.querySelector("input:not([type=hidden]),select,textarea,button");if(i)i.focus({preventScroll:true})}}})();`;

const FORM_STYLE = html`<style>
ol.edit-steps{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}
fieldset.step-edit{background:#fff;border:2px solid #6b7280;border-radius:8px;padding:.5rem .75rem;margin:0}
fieldset.step-edit.has-error{border-color:#b91c1c}
fieldset.step-edit>legend{font-weight:700;padding:0 .25rem}
fieldset.days{border:0;padding:0;margin:0 0 .5rem}fieldset.days legend{font-weight:600;padding:0}
.edit-branches{display:grid;grid-template-columns:repeat(auto-fit,minmax(18rem,1fr));gap:1rem;margin:.5rem 0;padding-left:.75rem;border-left:3px solid #d4d4d8}
.edit-branch .branch-label{font-weight:600;margin:0 0 .5rem}
.step-actions{margin:.5rem 0 0}
.step-error,.form-error{color:#991b1b;margin:.25rem 0 .5rem}
[data-inactive]{opacity:.8}
fieldset.step-edit button:disabled{opacity:.45;cursor:not-allowed}
</style>`;

export function automationFormView(draft: FormDraft, ctx: FormContext): Html {
  const errorStep = ctx.error && stepPathOf(ctx.error.path);
  const error = ctx.error
    ? html`<div class="flash error form-error" role="alert" id="form-error"><strong>Not saved.</strong> <code>${ctx.error.path}</code>: ${ctx.error.message}${errorStep ? html` (<a href="#edit-${errorStep}">go to step ${humanPath(errorStep)}</a>)` : ""}</div>`
    : "";
  // The builder is filter-builder.ts's markup (escaped there); its legend is renamed for the trigger.
  const builder = trusted(filterBuilderHtml({ fields: ctx.filterFields, filterJson: draft.triggerFilter || "{}", countUrl: ctx.countUrl, textareaName: "trigger.filter" })
    .replace(">Who is in it<", ">Who may enter (optional filter)<"));
  const reentry = html`<fieldset class="card"><legend>Entering again</legend><div class="row">
<div class="field"><label for="reentry">A contact may enter</label><select id="reentry" name="reentry">${option("once", "once only", draft.reentry)}${option("always", "again whenever it has no active run", draft.reentry)}${option("after", "again after a while", draft.reentry)}</select></div>
${input("reentry-after", "reentry.after", "After (for “again after a while”)", draft.reentryAfter, html` placeholder="30 days"`)}</div></fieldset>`;
  const datalists = html`<datalist id="automation-templates">${ctx.templates.map((t) => html`<option value="${t}"></option>`)}</datalist>
<datalist id="automation-events"><option value="email_opened"></option><option value="email_clicked"></option><option value="email_replied"></option></datalist>`;
  return html`${FORM_STYLE}${error}
<form method="post" action="${ctx.action}" id="automation-form"${ctx.focus ? html` data-focus="${ctx.focus}"` : ""}>${trusted(ctx.csrf)}
<button type="submit" name="op" value="save" class="sr-only" tabindex="-1" aria-hidden="true">Save</button>
<div class="card"><div class="field"><label for="name">Name</label><input id="name" name="name" required maxlength="200" value="${draft.name}" style="width:100%"></div></div>
${triggerView(draft, ctx)}
${builder}
<section aria-labelledby="steps-h" class="card"><h2 id="steps-h" style="margin-top:0">Steps</h2>
<p class="muted" id="filter-help">Steps run in order. A condition's filter is JSON in the filter language (for example <code>{"properties.plan": "pro"}</code>). Durations: "2 days", "1 hour 30 minutes", "30 seconds" or ISO 8601 (PT2S, P1D).</p>
${stepsListView(draft.steps, "steps", ctx)}</section>
${reentry}
${datalists}
<div class="actions"><button type="submit" name="op" value="save">${ctx.submitLabel}</button><a class="button secondary" href="${ctx.cancelUrl}">Cancel</a></div>
<details class="card" id="json-editor"${ctx.jsonOpen ? html` open` : ""}><summary>Edit the whole definition as JSON</summary>
<p class="muted" id="definition-h">The public API's shape: <code>{"trigger": {…}, "steps": […], "reentry": "once"}</code>. Saving the JSON replaces the steps above; the name comes from the Name field.</p>
<label for="definition">Definition (JSON)</label><textarea id="definition" name="definition" rows="16" spellcheck="false" aria-describedby="definition-h" style="font-family:ui-monospace,monospace">${ctx.definitionJson}</textarea>
<div class="actions"><button type="submit" class="secondary" name="op" value="json" formnovalidate>Save the JSON</button></div></details>
</form><script>${trusted(FORM_JS)}</script>`;
}
