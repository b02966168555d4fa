import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { publicErrorBody, replyWithError, sendError } from "../errors.js";
import { contactInput, contactJson, createContactSchema, invalid, listQuerySchema } from "./contacts-schema.js";

const DEFAULT_LIMIT = 20;

/**
 * GET /v1/contacts?limit=&cursor=&subscribed=true -> { contacts: { items, cursor, hasMore } }
 * POST /v1/contacts -> 201 { contact }; 409 contact_exists when the email is taken.
 */
export function registerContacts(app: FastifyInstance, deps: GatewayDeps): void {
  app.get("/v1/contacts", async (request, reply) => {
    const query = listQuerySchema.safeParse(request.query ?? {});
    if (!query.success) return sendError(reply, publicErrorBody(invalid(query.error)));
    try {
      const res = await deps.clients.directory.listContacts(
        {
          workspaceId: workspaceOf(request),
          page: { limit: query.data.limit ?? DEFAULT_LIMIT, cursor: query.data.cursor ?? "" },
          subscribedOnly: query.data.subscribed === "true",
        },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ contacts: { items: res.contacts.map(contactJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });

  app.post("/v1/contacts", async (request, reply) => {
    const body = createContactSchema.safeParse(request.body);
    if (!body.success) return sendError(reply, publicErrorBody(invalid(body.error)));
    try {
      const res = await deps.clients.directory.createContact(
        { workspaceId: workspaceOf(request), contact: contactInput(body.data.email, body.data) },
        rpcOptions(request),
      );
      return reply.code(201).send({ contact: contactJson(res.contact!) });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });
}
