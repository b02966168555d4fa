/**
 * Topics pages (DESIGN §9.4): what a contact may subscribe to or leave on the preference
 * page, each with its default for contacts who made no choice.
 *
 *   GET  /topics              list + create form
 *   POST /topics              create (name, description, default)
 *   GET  /topics/:id          edit form + delete
 *   POST /topics/:id          save
 *   POST /topics/:id/delete
 *
 * The create and save forms are checked with the /v1 routes' schemas; the markup is views/topics.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DefaultSubscription, type Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { createTopicSchema, updateTopicSchema } from "@mailroom/http/topics-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import { ID, editable, formError, html, notFoundUnless, parseWith, str } from "../form-values.js";
import { workspaceTopics } from "../topics.js";
import { render } from "../views/html.js";
import { defaultOf, topicListView, topicView, type TopicValues } from "../views/topics.js";

const EMPTY: TopicValues = { name: "", description: "", defaultSubscription: "OPT_OUT" };

/** The form as typed: the radio is OPT_IN or else OPT_OUT, as the page always read it. */
const valuesFromForm = (body: unknown): TopicValues => ({
  name: str(body, "name").trim(),
  description: str(body, "description").trim(),
  defaultSubscription: str(body, "defaultSubscription") === "OPT_IN" ? "OPT_IN" : "OPT_OUT",
});

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
    const body = topicListView({ topics, canEdit: session.canEdit, csrf: csrfField(session), values });
    return consolePage({ title: "Topics", session, active: "topics", flash, body: render(body) });
  };

  scope.get("/topics", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/topics", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const v = valuesFromForm(request.body);
    const parsed = parseWith(createTopicSchema, v);
    if (!parsed.ok) return html(reply, await listPage(request, parsed.flash, v), parsed.flash.status);
    try {
      const { topic } = await rpc().createTopic({
        workspaceId: session.workspaceId, name: parsed.data.name, description: parsed.data.description ?? "", defaultSubscription: DefaultSubscription[parsed.data.defaultSubscription],
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
    const body = topicView({ topic: t, values: v, canEdit: session.canEdit, csrf: csrfField(session) });
    return consolePage({ title: t.name, session, active: "topics", flash, body: render(body) });
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
    const parsed = parseWith(updateTopicSchema, v);
    if (!parsed.ok) return html(reply, editPage(request, t, v, parsed.flash), parsed.flash.status);
    try {
      // Every field of the form is sent: the page edits the whole topic.
      await rpc().updateTopic({
        workspaceId: session.workspaceId, topicId: t.id, name: parsed.data.name ?? "", description: parsed.data.description ?? "",
        defaultSubscription: DefaultSubscription[parsed.data.defaultSubscription ?? "OPT_OUT"],
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
