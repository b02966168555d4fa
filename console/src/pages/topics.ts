/**
 * Topics pages (DESIGN §9.4): what a contact may subscribe to or leave on the preference
 * page, each with its default for contacts who made no choice.
 *
 *   GET  /topics              list + create form
 *   POST /topics              create (name, description, default)
 *   GET  /topics/:id          edit form + delete
 *   POST /topics/:id          save
 *   POST /topics/:id/delete
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DefaultSubscription, type Topic } from "@mailroom/proto/directory/v1/topics_pb.js";
import { refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, escapeHtml, formatTime, statusBadge, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ID, editable, formError, html, notFoundUnless, str } from "../form-values.js";
import { workspaceTopics } from "../topics.js";

interface TopicValues {
  name: string;
  description: string;
  defaultSubscription: "OPT_IN" | "OPT_OUT";
}

const EMPTY: TopicValues = { name: "", description: "", defaultSubscription: "OPT_OUT" };

const defaultOf = (t: Topic): TopicValues["defaultSubscription"] => (t.defaultSubscription === DefaultSubscription.OPT_IN ? "OPT_IN" : "OPT_OUT");
const valuesFromForm = (body: unknown): TopicValues => ({
  name: str(body, "name").trim(),
  description: str(body, "description").trim(),
  defaultSubscription: str(body, "defaultSubscription") === "OPT_IN" ? "OPT_IN" : "OPT_OUT",
});
const DEFAULT_TEXT = {
  OPT_OUT: "Everyone gets it until they leave it (opt-out)",
  OPT_IN: "Only those who choose it get it (opt-in)",
};


function topicFields(v: TopicValues): string {
  const radio = (value: TopicValues["defaultSubscription"]) =>
    `<div class="check"><input type="radio" id="def-${value}" name="defaultSubscription" value="${value}"${v.defaultSubscription === value ? " checked" : ""}><label for="def-${value}" style="font-weight:400">${DEFAULT_TEXT[value]} <code>${value}</code></label></div>`;
  return `<div class="field"><label for="name">Name</label><input id="name" name="name" required maxlength="200" value="${escapeHtml(v.name)}" style="width:100%"></div>
<div class="field"><label for="description">Description (optional; shown on the preference page)</label><textarea id="description" name="description" rows="3" style="min-height:5rem">${escapeHtml(v.description)}</textarea></div>
<fieldset class="field"><legend>Contacts who made no choice</legend>${radio("OPT_OUT")}${radio("OPT_IN")}</fieldset>`;
}

export function registerTopicPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const rpc = () => deps.clients.topics;

  const load = async (request: FastifyRequest, id: string): Promise<Topic> => {
    notFoundUnless(ID.topic.test(id), "topic_not_found", "topic");
    const { topic } = await rpc().getTopic({ workspaceId: sessionOf(request).workspaceId, topicId: id }, rpcOptions(request));
    if (!topic) throw refusal({ code: "topic_not_found", status: 404, message: "No topic with this id exists in the workspace." });
    return topic;
  };

  const listPage = async (request: FastifyRequest, flash?: Flash, values = EMPTY) => {
    const session = sessionOf(request);
    const topics = await workspaceTopics(deps, request);
    const rows = topics.map((t) => `<tr><td data-label="Topic"><a href="${consoleUrl(`/topics/${t.id}`)}">${escapeHtml(t.name)}</a>${t.description ? `<br><span class="muted">${escapeHtml(t.description)}</span>` : ""}</td>
<td data-label="Default">${statusBadge(defaultOf(t), defaultOf(t) === "OPT_IN" ? "info" : "ok")}</td>
<td data-label="Created">${formatTime(t.createdAt && timestampDate(t.createdAt))}</td></tr>`).join("");
    const body = `<h1>Topics</h1>
<p class="muted">Topics are the kinds of email you send (a newsletter, product news…). Contacts choose theirs on the preference page, and a broadcast sent to a topic reaches only those who receive it; its unsubscribe link leaves that topic only.</p>
${rows ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Topics</caption><thead><tr><th>Topic</th><th>Default</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : `<p class="muted">No topics yet.</p>`}
${session.canEdit ? `<h2 id="new">New topic</h2><form method="post" action="${consoleUrl("/topics")}" class="card">${csrfField(session)}${topicFields(values)}
<div class="actions"><button type="submit">Create topic</button></div></form>` : ""}`;
    return consolePage({ title: "Topics", session, active: "topics", flash, body });
  };

  scope.get("/topics", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/topics", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const v = valuesFromForm(request.body);
    try {
      const { topic } = await rpc().createTopic({
        workspaceId: session.workspaceId, name: v.name, description: v.description, defaultSubscription: DefaultSubscription[v.defaultSubscription],
      }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Topic ${topic!.name} created.` });
      return seeOther(reply, consoleUrl("/topics"));
    } catch (err) {
      const flash = formError(err);
      return html(reply, await listPage(request, flash, v), flash.status);
    }
  });

  const editPage = (request: FastifyRequest, t: Topic, v: TopicValues, flash?: Flash) => {
    const session = sessionOf(request);
    const csrf = csrfField(session);
    const base = consoleUrl(`/topics/${t.id}`);
    const body = `<h1>${escapeHtml(t.name)}</h1>
<p class="muted">id <code>${escapeHtml(t.id)}</code> · created ${formatTime(t.createdAt && timestampDate(t.createdAt))}</p>
${session.canEdit ? `<form method="post" action="${base}" class="card">${csrf}${topicFields(v)}<div class="actions"><button type="submit">Save topic</button></div></form>
<h2>Delete</h2><form method="post" action="${base}/delete" data-confirm="Delete the topic ${escapeHtml(t.name)}? Contacts' choices for it are deleted too.">${csrf}
<p class="muted">Contacts' choices for it go too; broadcasts sent to it keep their history.</p><button type="submit" class="danger">Delete topic</button></form>`
    : `<p>${escapeHtml(t.description) || "No description."}</p><p>${DEFAULT_TEXT[defaultOf(t)]}.</p>`}
<p><a href="${consoleUrl("/topics")}">Back to topics</a></p>`;
    return consolePage({ title: t.name, session, active: "topics", flash, body });
  };

  scope.get<{ Params: { id: string } }>("/topics/:id", async (request, reply) => {
    const t = await load(request, request.params.id);
    return html(reply, editPage(request, t, { name: t.name, description: t.description, defaultSubscription: defaultOf(t) }, request.consoleFlash));
  });

  scope.post<{ Params: { id: string } }>("/topics/:id", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const t = await load(request, request.params.id);
    const v = valuesFromForm(request.body);
    try {
      await rpc().updateTopic({
        workspaceId: session.workspaceId, topicId: t.id, name: v.name, description: v.description, defaultSubscription: DefaultSubscription[v.defaultSubscription],
      }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Topic saved." });
      return seeOther(reply, consoleUrl(`/topics/${t.id}`));
    } catch (err) {
      const flash = formError(err);
      return html(reply, editPage(request, t, v, flash), flash.status);
    }
  });

  scope.post<{ Params: { id: string } }>("/topics/:id/delete", async (request, reply) => {
    editable(request);
    const t = await load(request, request.params.id);
    await rpc().deleteTopic({ workspaceId: sessionOf(request).workspaceId, topicId: t.id }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `Topic ${t.name} deleted.` });
    return seeOther(reply, consoleUrl("/topics"));
  });
}
