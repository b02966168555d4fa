/**
 * Topics (/console/topics): the views. The handlers are pages/topics.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DefaultSubscription, type Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { consoleUrl, formatTime, statusBadge } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

/** The topic form's values (as typed, or the topic's). */
export interface TopicValues {
  name: string;
  description: string;
  defaultSubscription: "OPT_IN" | "OPT_OUT";
}

export const defaultOf = (t: Topic): TopicValues["defaultSubscription"] => (t.defaultSubscription === DefaultSubscription.OPT_IN ? "OPT_IN" : "OPT_OUT");

const DEFAULT_TEXT = {
  OPT_OUT: "Everyone gets it until they leave it (opt-out)",
  OPT_IN: "Only those who choose it get it (opt-in)",
};
const created = (t: Topic) => trusted(formatTime(t.createdAt && timestampDate(t.createdAt)));

function topicFields(v: TopicValues): Html {
  const radio = (value: TopicValues["defaultSubscription"]) =>
    html`<div class="check"><input type="radio" id="def-${value}" name="defaultSubscription" value="${value}"${v.defaultSubscription === value ? " checked" : ""}><label for="def-${value}" style="font-weight:400">${DEFAULT_TEXT[value]} <code>${value}</code></label></div>`;
  return html`<div class="field"><label for="name">Name</label><input id="name" name="name" required maxlength="200" value="${v.name}" style="width:100%"></div>
<div class="field"><label for="description">Description (optional; shown on the preference page)</label><textarea id="description" name="description" rows="3" style="min-height:5rem">${v.description}</textarea></div>
<fieldset class="field"><legend>Contacts who made no choice</legend>${radio("OPT_OUT")}${radio("OPT_IN")}</fieldset>`;
}

/** The workspace's topics and, for an editor, the create form; `csrf` is the hidden input. */
export function topicListView(opts: { topics: Topic[]; canEdit: boolean; csrf: string; values: TopicValues }): Html {
  const rows = opts.topics.map((t) => html`<tr><td data-label="Topic"><a href="${consoleUrl(`/topics/${t.id}`)}">${t.name}</a>${t.description ? html`<br><span class="muted">${t.description}</span>` : ""}</td>
<td data-label="Default">${trusted(statusBadge(defaultOf(t), defaultOf(t) === "OPT_IN" ? "info" : "ok"))}</td>
<td data-label="Created">${created(t)}</td></tr>`);
  return html`<h1>Topics</h1>
<p class="muted">Topics are the kinds of email you send (a newsletter, product news…). Contacts choose theirs on the preference page, and a broadcast sent to a topic reaches only those who receive it; its unsubscribe link leaves that topic only.</p>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Topics</caption><thead><tr><th>Topic</th><th>Default</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">No topics yet.</p>`}
${opts.canEdit ? html`<h2 id="new">New topic</h2><form method="post" action="${consoleUrl("/topics")}" class="card">${trusted(opts.csrf)}${topicFields(opts.values)}
<div class="actions"><button type="submit">Create topic</button></div></form>` : ""}`;
}

/** One topic: the edit and delete forms for an editor, its description and default otherwise. */
export function topicView(opts: { topic: Topic; values: TopicValues; canEdit: boolean; csrf: string }): Html {
  const { topic: t } = opts;
  const csrf = trusted(opts.csrf);
  const base = consoleUrl(`/topics/${t.id}`);
  return html`<h1>${t.name}</h1>
<p class="muted">id <code>${t.id}</code> · created ${created(t)}</p>
${opts.canEdit ? html`<form method="post" action="${base}" class="card">${csrf}${topicFields(opts.values)}<div class="actions"><button type="submit">Save topic</button></div></form>
<h2>Delete</h2><form method="post" action="${base}/delete" data-confirm="Delete the topic ${t.name}? Contacts' choices for it are deleted too.">${csrf}
<p class="muted">Contacts' choices for it go too; broadcasts sent to it keep their history.</p><button type="submit" class="danger">Delete topic</button></form>`
    : html`<p>${t.description || "No description."}</p><p>${DEFAULT_TEXT[defaultOf(t)]}.</p>`}
<p><a href="${consoleUrl("/topics")}">Back to topics</a></p>`;
}
