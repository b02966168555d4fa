import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { ContactStatus, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { ContactRef, ContactTopic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { parseRecipientToken, tokenSecretsOf, type RecipientRef } from "@mailroom/content/tokens.js";
import { LINK_ROUTES, linkPath, manageUrl, MANAGE_PARAM } from "@mailroom/content/urls.js";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import type { RouteModule } from "./route.js";
import { publicErrorBody, sendError } from "@mailroom/http/errors.js";
import { recordEvent } from "./tracking.js";
import { escapeHtml as escape, page } from "@mailroom/http/page.js";

/** POST here resubscribes (the manage page's button). */
export const RESUBSCRIBE_ROUTE = `${LINK_ROUTES.unsubscribe}/resubscribe`;
/** POST here saves the topic choices of the manage page (DESIGN §9.4). */
export const TOPICS_ROUTE = `${LINK_ROUTES.unsubscribe}/topics`;
/** A form of many topics: each checked one and each shown one is a field. */
const TOPICS_BODY_LIMIT = 64 * 1024;

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

const rpcHeaders = (request: FastifyRequest) => ({ headers: { "x-request-id": String(request.id) } });

async function unsubscribe(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<void> {
  await deps.clients.contacts.addSuppression(
    { workspaceId: r.workspaceId, email: r.email, reason: SuppressionReason.UNSUBSCRIBED, detail: `unsubscribed from ${r.contentId}` },
    rpcHeaders(request),
  );
  // The contact (when there is one) shows as unsubscribed too; the suppression is what guards sends.
  await deps.clients.contacts
    .updateContact({ workspaceId: r.workspaceId, contact: { email: r.email, status: ContactStatus.UNSUBSCRIBED } }, rpcHeaders(request))
    .catch(() => undefined);
  recordEvent(deps, request, MailEventType.UNSUBSCRIBED, r);
}

/** RFC 8058: the mailbox provider's one-click POST carries `List-Unsubscribe=One-Click` (form-encoded or multipart). */
export function isOneClickBody(body: unknown): boolean {
  if (typeof body !== "string" || !body) return false;
  if (/name="List-Unsubscribe"\r?\n\r?\nOne-Click/i.test(body)) return true;
  return new URLSearchParams(body).get("List-Unsubscribe") === "One-Click";
}

/** A broadcast's topic by (workspace, broadcast id), briefly: every recipient of one broadcast asks the same. */
const TOPIC_CACHE_MS = 60_000;
const topicCaches = new WeakMap<GatewayDeps, LRUCache<string, { topicId: string }>>();

/**
 * The topic of the broadcast a message belongs to ("" for none): a broadcast message's token
 * carries the broadcast id (`cmp_…`) as its contentId; other messages have no topic. A broadcast
 * that no longer exists has none, nor does one whose topic the broadcast service could not tell.
 */
async function oneClickTopic(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<string> {
  if (!r.contentId.startsWith("cmp_")) return "";
  let cache = topicCaches.get(deps);
  if (!cache) topicCaches.set(deps, (cache = new LRUCache({ max: 10_000, ttl: TOPIC_CACHE_MS })));
  const key = `${r.workspaceId}:${r.contentId}`;
  const hit = cache.get(key);
  if (hit) return hit.topicId;
  let topicId = "";
  try {
    topicId = (await deps.clients.broadcast.getBroadcastTopic({ workspaceId: r.workspaceId, id: r.contentId }, rpcHeaders(request))).topicId;
  } catch (err) {
    if (errorInfoOf(err)?.code !== "broadcast_not_found") {
      // An unsubscribe must never be lost (RFC 8058): when the broadcast's topic cannot be
      // read, the recipient leaves everything, the wider of the two choices (not cached).
      request.log.warn({ err, contentId: r.contentId }, "broadcast topic lookup failed; unsubscribing from everything");
      return "";
    }
  }
  cache.set(key, { topicId });
  return topicId;
}

/**
 * The one-click unsubscribe of a topic broadcast's message (DESIGN §9.4) opts the contact out
 * of that topic only: `topics.<id>` false, no suppression, status unchanged, no UNSUBSCRIBED
 * event (which would suppress the address). False when the message has no topic, or the topic or
 * the contact is gone: then it is today's unsubscribe from everything.
 */
async function unsubscribeFromTopic(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<boolean> {
  const topicId = await oneClickTopic(deps, request, r);
  if (!topicId) return false;
  const contact = r.contactId ? { ref: { case: "contactId" as const, value: r.contactId } } : { ref: { case: "email" as const, value: r.email } };
  try {
    await deps.clients.topics.setContactTopics({ workspaceId: r.workspaceId, contact, choices: [{ topicId, subscribed: false }] }, rpcHeaders(request));
  } catch (err) {
    const code = errorInfoOf(err)?.code;
    if (code === "contact_not_found" || code === "unknown_topic" || code === "topic_not_found") return false;
    throw err;
  }
  request.log.info({ workspaceId: r.workspaceId, contentId: r.contentId, topicId }, "recipient left a topic (one-click)");
  return true;
}

/** Why the address is suppressed in its workspace, none when it is not; undefined when the audience unit did not answer. */
async function suppressionOf(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<SuppressionReason | "none" | undefined> {
  try {
    const { suppressed } = await deps.clients.contacts.checkSuppression({ workspaceId: r.workspaceId, emails: [r.email] }, rpcHeaders(request));
    return suppressed[0]?.reason ?? "none";
  } catch (err) {
    request.log.warn({ err }, "suppression check failed");
    return undefined;
  }
}

/**
 * A resubscribe is the recipient's own choice: lifts their unsubscribe (never a bounce, a
 * complaint or the sender's own block) and marks the contact subscribed. False when the
 * address is suppressed for another reason.
 */
async function resubscribe(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<boolean> {
  const reason = await suppressionOf(deps, request, r);
  if (reason === undefined) throw new Error("audience unit unavailable");
  if (reason !== "none" && reason !== SuppressionReason.UNSUBSCRIBED) return false;
  if (reason === SuppressionReason.UNSUBSCRIBED) {
    await deps.clients.contacts.removeSuppression({ workspaceId: r.workspaceId, email: r.email }, rpcHeaders(request));
  }
  await deps.clients.contacts
    .updateContact({ workspaceId: r.workspaceId, contact: { email: r.email, status: ContactStatus.SUBSCRIBED } }, rpcHeaders(request))
    .catch(() => undefined); // no contact: lifting the suppression was all there was to do
  return true;
}

/** The recipient's topics with its state, and the contact they belong to. */
interface RecipientTopics {
  contactId: string;
  topics: ContactTopic[];
}

/**
 * The workspace's topics with the recipient's state (DESIGN §9.4): the contact the token names,
 * else the workspace's contact with its address (a transactional recipient's token names none).
 * Null when the recipient is no contact; undefined when the audience unit did not answer.
 */
async function recipientTopics(deps: GatewayDeps, request: FastifyRequest, r: RecipientRef): Promise<RecipientTopics | null | undefined> {
  const topicsClient = deps.clients.topics;
  if (!topicsClient) return undefined;
  const refs: ContactRef[] = [
    ...(r.contactId ? [{ ref: { case: "contactId" as const, value: r.contactId } } as ContactRef] : []),
    { ref: { case: "email" as const, value: r.email } } as ContactRef,
  ];
  try {
    for (const contact of refs) {
      try {
        const res = await topicsClient.getContactTopics({ workspaceId: r.workspaceId, contact }, rpcHeaders(request));
        return { contactId: res.contactId, topics: res.topics };
      } catch (err) {
        if (errorInfoOf(err)?.code !== "contact_not_found") throw err;
      }
    }
    return null;
  } catch (err) {
    request.log.warn({ err }, "topics lookup failed");
    return undefined;
  }
}

/** The manage page's topics form: a checkbox per topic; `shown` names every topic on the page (an unchecked box sends nothing). */
function topicsForm(action: string, topics: ContactTopic[]): string {
  const rows = topics.map((t) => {
    const topic = t.topic!;
    const id = escape(topic.id);
    const description = topic.description ? `<br><span class="muted">${escape(topic.description)}</span>` : "";
    return `<label style="display:flex;gap:.75rem;align-items:flex-start;padding:.5rem 0;min-height:44px"><input type="checkbox" name="topic" value="${id}"${t.subscribed ? " checked" : ""} style="width:1.25rem;height:1.25rem;margin:.2rem 0 0;flex:none"><span><strong>${escape(topic.name)}</strong>${description}</span></label><input type="hidden" name="shown" value="${id}">`;
  });
  return `<form method="post" action="${action}"><fieldset style="border:1px solid #8a8a8a;border-radius:6px;padding:.5rem 1rem 1rem;margin:0 0 1rem"><legend>Topics you receive</legend>
${rows.join("\n")}
</fieldset><button type="submit">Save preferences</button></form>`;
}

/** The topic choices a manage-page form posted: each topic it showed, subscribed when its box was checked. */
function postedChoices(body: unknown): { shown: string[]; checked: Set<string> } | undefined {
  if (typeof body !== "string") return undefined;
  const form = new URLSearchParams(body);
  return { shown: [...new Set(form.getAll("shown"))], checked: new Set(form.getAll("topic")) };
}

/**
 * The token in the URL is the capability; a cross-site form must still not resubscribe
 * anyone. Browsers name the page a form came from (Origin, else Referer): when they do,
 * it must be this gateway.
 */
function sameOrigin(deps: GatewayDeps, request: FastifyRequest): boolean {
  if (request.headers["sec-fetch-site"] === "cross-site") return false;
  const given = request.headers.origin ?? request.headers.referer;
  if (given === undefined) return true;
  let origin: string;
  try {
    origin = new URL(given).origin;
  } catch {
    return false; // "null" (sandboxed or privacy-stripped) included
  }
  const ours = new Set([`${request.protocol}://${request.host}`]);
  try {
    ours.add(new URL(deps.config.publicUrl).origin);
  } catch {
    // no public URL configured: the request's own host decides
  }
  return ours.has(origin);
}

const wantsHtml = (request: FastifyRequest) => String(request.headers.accept ?? "").includes("text/html");

const form = (action: string, label: string, secondary = false) =>
  `<form method="post" action="${action}"><button type="submit"${secondary ? ` class="secondary"` : ""}>${label}</button></form>`;

/**
 * Unsubscribe links. GET shows a confirmation page (mail scanners that prefetch links
 * must not unsubscribe anyone); POST unsubscribes at once — the RFC 8058 one-click
 * request from the mailbox provider (`List-Unsubscribe=One-Click`) or the page's button.
 * With `?manage=1` the page shows the subscription and offers to resubscribe.
 */
export const registerUnsubscribe: RouteModule = (app, deps) => {
  app.register(async (scope) => {
    // One-click requests are form-encoded; the body itself carries nothing we need.
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 4096 }, (_req, body, done) => done(null, body));
    scope.addContentTypeParser("multipart/form-data", { parseAs: "string", bodyLimit: 4096 }, (_req, body, done) => done(null, body));

    const recipientOr404 = (request: TokenRequest, reply: FastifyReply) => {
      const r = parseRecipientToken(tokenSecretsOf(deps.config), request.params.token);
      if (!r) sendError(reply, publicErrorBody({ code: "not_found", message: "Unknown or invalid unsubscribe link" }));
      return r;
    };
    const unsubscribeAction = (request: TokenRequest) => linkPath("unsubscribe", { token: encodeURIComponent(request.params.token) });
    const manageAction = (request: TokenRequest) => manageUrl(unsubscribeAction(request));
    const resubscribeAction = (request: TokenRequest) => `${unsubscribeAction(request)}/resubscribe`;
    const topicsAction = (request: TokenRequest) => `${unsubscribeAction(request)}/topics`;
    const html = (reply: FastifyReply, title: string, body: string) => reply.header("cache-control", "no-store").type("text/html; charset=utf-8").send(page(title, body));

    scope.get<{ Params: { token: string }; Querystring: { [MANAGE_PARAM]?: string } }>(LINK_ROUTES.unsubscribe, async (request, reply) => {
      const r = recipientOr404(request, reply);
      if (!r) return reply;
      const who = `<strong>${escape(r.email)}</strong>`;
      if (!request.query[MANAGE_PARAM]) {
        return html(reply, "Unsubscribe", `<h1>Unsubscribe</h1>
<p>Stop emails like this one to ${who}?</p>
${form(unsubscribeAction(request), "Unsubscribe")}
<p class="muted">Changed your mind? Just close this page.</p>`);
      }
      const [reason, topics] = await Promise.all([suppressionOf(deps, request, r), recipientTopics(deps, request, r)]);
      // With topics, the page's unsubscribe is the one from everything; the topics form picks among them.
      const hasTopics = Boolean(topics?.topics.length);
      const unsubscribeLabel = hasTopics ? "Unsubscribe from everything" : "Unsubscribe";
      const status =
        reason === "none" ? `<p>${who} is subscribed.</p>${form(unsubscribeAction(request), unsubscribeLabel)}`
        : reason === SuppressionReason.UNSUBSCRIBED ? `<p>${who} is unsubscribed: no emails like this one are sent to it.</p>${form(resubscribeAction(request), "Resubscribe")}`
        : reason === undefined ? `<p>Emails to ${who}:</p>${form(unsubscribeAction(request), unsubscribeLabel)}${form(resubscribeAction(request), "Resubscribe", true)}`
        : `<p>Emails to ${who} are blocked by the sender (the address bounced or reported mail as spam). Contact the sender to receive them again.</p>${form(unsubscribeAction(request), unsubscribeLabel)}`;
      const topicsPart = !hasTopics ? "" : `<h2>Topics</h2>
${reason === "none" ? "<p>Choose what you receive.</p>" : `<p class="muted">Your choices apply while the address is subscribed.</p>`}
${topicsForm(topicsAction(request), topics!.topics)}`;
      return html(reply, "Manage your subscription", `<h1>Manage your subscription</h1>\n${status}${topicsPart}`);
    });

    scope.post<{ Params: { token: string } }>(LINK_ROUTES.unsubscribe, async (request, reply) => {
      const r = recipientOr404(request, reply);
      if (!r) return reply;
      // A topic broadcast's one-click (RFC 8058) leaves its topic only; the page's buttons leave everything.
      const oneClickOnly = isOneClickBody(request.body);
      try {
        if (!(oneClickOnly && (await unsubscribeFromTopic(deps, request, r)))) await unsubscribe(deps, request, r);
      } catch (err) {
        request.log.error({ err }, "unsubscribe failed");
        return sendError(reply, publicErrorBody({ code: "service_unavailable", message: "Could not unsubscribe right now; please try again." }));
      }
      request.log.info({ workspaceId: r.workspaceId, contentId: r.contentId }, "recipient unsubscribed");
      if (!wantsHtml(request)) return reply.code(200).send({ unsubscribed: true });
      return html(reply, "Unsubscribed", `<h1>You are unsubscribed</h1>
<p><strong>${escape(r.email)}</strong> will no longer receive these emails.</p>
<p><a href="${manageAction(request)}">Manage your subscription</a> (you can resubscribe there).</p>`);
    });

    scope.post<{ Params: { token: string } }>(RESUBSCRIBE_ROUTE, async (request, reply) => {
      const r = recipientOr404(request, reply);
      if (!r) return reply;
      if (!sameOrigin(deps, request)) {
        return sendError(reply, publicErrorBody({ code: "forbidden", status: 403, message: "Resubscribe from the manage page of your email's link." }));
      }
      let done: boolean;
      try {
        done = await resubscribe(deps, request, r);
      } catch (err) {
        request.log.error({ err }, "resubscribe failed");
        return sendError(reply, publicErrorBody({ code: "service_unavailable", message: "Could not resubscribe right now; please try again." }));
      }
      if (done) request.log.info({ workspaceId: r.workspaceId, contentId: r.contentId }, "recipient resubscribed");
      const back = `<p><a href="${manageAction(request)}">Back to your subscription</a></p>`;
      if (!done) {
        const message = "The sender blocks emails to this address (it bounced or reported mail as spam); contact the sender.";
        if (!wantsHtml(request)) return sendError(reply, publicErrorBody({ code: "conflict", status: 409, message }));
        return html(reply.code(409), "Cannot resubscribe", `<h1>Cannot resubscribe here</h1>
<p>The sender blocks emails to <strong>${escape(r.email)}</strong> (the address bounced or reported mail as spam). Contact the sender to receive them again.</p>${back}`);
      }
      if (!wantsHtml(request)) return reply.code(200).send({ subscribed: true });
      return html(reply, "Subscribed", `<h1>You are subscribed again</h1>
<p><strong>${escape(r.email)}</strong> will receive these emails again.</p>${back}`);
    });

    // The manage page's topics form: the topics it showed, each subscribed when checked.
    scope.post<{ Params: { token: string } }>(TOPICS_ROUTE, { bodyLimit: TOPICS_BODY_LIMIT }, async (request, reply) => {
      const r = recipientOr404(request, reply);
      if (!r) return reply;
      if (!sameOrigin(deps, request)) {
        return sendError(reply, publicErrorBody({ code: "forbidden", status: 403, message: "Change your topics from the manage page of your email's link." }));
      }
      const posted = postedChoices(request.body);
      if (!posted) return sendError(reply, publicErrorBody({ code: "invalid_request", message: "Send the manage page's form (application/x-www-form-urlencoded)." }));
      const unavailable = () => sendError(reply, publicErrorBody({ code: "service_unavailable", message: "Could not save your topics right now; please try again." }));
      const current = await recipientTopics(deps, request, r);
      if (current === undefined) return unavailable();
      if (current === null) return sendError(reply, publicErrorBody({ code: "not_found", message: "This address has no topics to choose from." }));
      // Topics deleted since the page was shown are left out; topics created since were not shown and keep their default.
      const known = new Set(current.topics.map((t) => t.topic!.id));
      const choices = posted.shown.filter((id) => known.has(id)).map((topicId) => ({ topicId, subscribed: posted.checked.has(topicId) }));
      let saved: ContactTopic[];
      try {
        saved = choices.length
          ? (await deps.clients.topics.setContactTopics(
              { workspaceId: r.workspaceId, contact: { ref: { case: "contactId", value: current.contactId } }, choices },
              rpcHeaders(request),
            )).topics
          : current.topics;
      } catch (err) {
        request.log.error({ err }, "saving topics failed");
        return unavailable();
      }
      request.log.info({ workspaceId: r.workspaceId, contentId: r.contentId, topics: choices.length }, "recipient chose topics");
      if (!wantsHtml(request)) return reply.code(200).send({ topics: saved.map((t) => ({ id: t.topic!.id, name: t.topic!.name, subscribed: t.subscribed })) });
      const list = saved.map((t) => `<li>${escape(t.topic!.name)}: ${t.subscribed ? "receiving" : "not receiving"}</li>`).join("\n");
      return html(reply, "Preferences saved", `<h1>Your preferences are saved</h1>
<p>Topics for <strong>${escape(r.email)}</strong>:</p>
<ul>
${list}
</ul>
<p><a href="${manageAction(request)}">Back to your subscription</a></p>`);
    });
  });
};
