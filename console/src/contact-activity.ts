/**
 * The contact page's Activity section: the contact's timeline (../contact-activity.ts merges it
 * from every unit), newest first, 25 a page, paged by `?activity=<cursor>` on the contact's page.
 * The markup is views/contact-activity.ts.
 */
import type { FastifyRequest } from "fastify";
import type { Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { contactActivity } from "@mailroom/http/contact-activity.js";
import type { ConsoleDeps } from "./deps.js";
import { sessionOf } from "./session.js";
import type { Html } from "./views/html.js";
import { activityStaleView, activityUnavailableView, activityView } from "./views/contact-activity.js";

export const ACTIVITY_PAGE = 25;

/** The section's body: the timeline and its paging, or a message when a unit cannot answer. */
export async function contactActivitySection(deps: ConsoleDeps, request: FastifyRequest, contact: Contact, cursor: string): Promise<Html> {
  const session = sessionOf(request);
  let page;
  try {
    page = await contactActivity(deps, session.workspaceId, contact, { limit: ACTIVITY_PAGE, cursor: cursor || undefined }, rpcOptions(request));
  } catch (err) {
    const e = bodyFromError(err);
    if (e.statusCode === 400) return activityStaleView(contact.id);
    request.log.warn({ err }, "contact activity not available");
    return activityUnavailableView(contact.id, e.message);
  }
  return activityView({ contactId: contact.id, items: page.items, cursor, next: page.cursor || undefined });
}
