import { z } from "zod";

/**
 * The requests of POST and PATCH /v1/webhooks, shared by the gateway's routes and the
 * console's "Add a webhook" form. Only the shape is checked here; the webhooks service
 * validates values (URL, event names, token, status) and answers `invalid_payload`.
 */

const eventsField = z.array(z.string()).meta({
  description: "Webhook event names: the official client's (`CONTACT_*`, `WORKSPACE_*`, `TESTING_CONNECTION`) and Mailroom's `EMAIL_SENT`, `EMAIL_DELIVERED`, `EMAIL_DEFERRED`, `EMAIL_BOUNCED`, `EMAIL_COMPLAINED`, `EMAIL_OPENED`, `EMAIL_CLICKED`, `EMAIL_UNSUBSCRIBED`, `EMAIL_FAILED`, `EMAIL_RECEIVED` (`data`: the received email as `GET /v1/received-emails/{id}` lists it, attachments named, never inlined), `BROADCAST_STARTED`, `BROADCAST_COMPLETED`, `AUTOMATION_RUN_STARTED`, `AUTOMATION_RUN_COMPLETED`, `AUTOMATION_RUN_EXITED` (`data`: `run`, `automation` `{ id, name, version }`), `SUPPRESSION_CREATED`, `SUPPRESSION_DELETED` (`data`: `suppression` `{ email | domain, reason, createdAt, source? }`). Unknown names: 400 `invalid_payload` with `allowedValues`. `CONTACT_TAG_ADDED` / `CONTACT_TAG_REMOVED`: a contact joins / leaves a group (`data`: `contact`, `group`, `addedAt`; deleting a group sends none).",
});
const tokenField = z.string().meta({
  description: "The signing secret: `X-SMASHSEND-SIGNATURE` is the lowercase hex HMAC-SHA256 of the raw body keyed with it. Generated (`whsec_…`, also a Standard Webhooks secret) when absent.",
});
const displayName = z.string().meta({ description: "A label for people (also shown as `description`)." });

export const createWebhookSchema = z
  .object({ url: z.string().meta({ description: "http(s) URL that receives the deliveries." }), events: eventsField, token: tokenField.optional(), displayName: displayName.optional(), description: displayName.optional() })
  .meta({ id: "CreateWebhookRequest" });

export const updateWebhookSchema = z
  .object({
    url: z.string().optional(),
    token: tokenField.optional(),
    events: eventsField.optional(),
    status: z.string().optional().meta({ description: "`ACTIVE` (resumes a paused webhook and its held deliveries) or `PAUSED`." }),
    displayName: displayName.optional(),
    description: displayName.optional(),
  })
  .meta({ id: "UpdateWebhookRequest" });
