import { z } from "zod";
import type { OperationDoc } from "../openapi.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { withDocs, type RouteModule } from "./route.js";
import { registerTracking } from "./tracking.js";
import { registerUnsubscribe } from "./unsubscribe.js";
import { registerDevMail } from "./dev-mail.js";
import { registerDevWebhooks } from "./dev-webhooks.js";
import { registerSendEmail } from "./emails.js";
import { registerSendBatch } from "./emails-batch.js";
import { registerGetEmail } from "./emails-get.js";
import { registerCancelEmail } from "./emails-cancel.js";
import { registerListEmails } from "./emails-list.js";
import { registerContactExport } from "./contact-data.js";
import { registerContacts } from "./contacts.js";
import { registerContactItem } from "./contacts-item.js";
import { registerContactsExport } from "./contacts-export.js";
import { registerTemplates } from "./templates.js";
import { registerTemplateItem } from "./templates-item.js";
import { registerTemplateRender } from "./templates-render.js";
import { registerTemplateRenderDraft } from "./templates-render-draft.js";
import { registerTemplateVersions } from "./templates-versions.js";
import { registerOpenApi } from "./openapi.js";
import { registerContactProperties } from "./contact-properties.js";
import { registerTransactional } from "./transactional.js";
import { registerIdentities } from "./identities.js";
import { registerDomainDmarc } from "./domains-dmarc.js";
import { registerApiKeys } from "./api-keys.js";
import { registerEvents } from "./events.js";
import { registerErrorDocs } from "./error-docs.js";
import { registerDocsPages } from "./docs-pages.js";
import { registerReadyz } from "./readyz.js";
import { broadcastScope } from "./broadcasts-scope.js";
import { registerCreateBroadcast } from "./broadcasts-create.js";
import { registerListBroadcasts } from "./broadcasts-list.js";
import { registerGetBroadcast } from "./broadcasts-get.js";
import { registerTestBroadcast } from "./broadcasts-test.js";
import { registerScheduleBroadcast } from "./broadcasts-schedule.js";
import { registerCancelBroadcast } from "./broadcasts-cancel.js";
import { registerAbWinner } from "./broadcasts-ab-winner.js";
import { registerUpdateBroadcast } from "./broadcasts-update.js";
import { registerPreSendCheck } from "./pre-send-check.js";
import { registerCreateSegment } from "./segments-create.js";
import { registerListSegments } from "./segments-list.js";
import { registerGetSegment } from "./segments-get.js";
import { registerUpdateSegment } from "./segments-update.js";
import { registerDeleteSegment } from "./segments-delete.js";
import { registerCountSegment } from "./segments-count.js";
import { registerListSegmentContacts } from "./segments-contacts.js";
import { registerEmailStats } from "./stats.js";
import { registerBroadcastStats } from "./stats-broadcast.js";
import { registerWebhookDeliveries, registerWebhooks } from "./webhooks.js";
import { registerForms } from "./forms.js";
import { registerFormItem } from "./forms-item.js";
import { registerFormPages } from "./forms-public.js";
import { registerConfirmSignup } from "./forms-confirm.js";
import { registerCreateGroup } from "./groups-create.js";
import { registerListGroups } from "./groups-list.js";
import { registerGetGroup } from "./groups-get.js";
import { registerUpdateGroup } from "./groups-update.js";
import { registerDeleteGroup } from "./groups-delete.js";
import { registerAddGroupContact } from "./groups-contacts-add.js";
import { registerRemoveGroupContact } from "./groups-contacts-remove.js";
import { registerListGroupContacts } from "./groups-contacts-list.js";
import { registerTopics } from "./topics.js";
import { registerTopicItem } from "./topics-item.js";
import { registerContactTopics } from "./topics-contact.js";
import { registerCreateAutomation } from "./automations-create.js";
import { registerListAutomations } from "./automations-list.js";
import { registerGetAutomation } from "./automations-get.js";
import { registerUpdateAutomation } from "./automations-update.js";
import { registerDeleteAutomation } from "./automations-delete.js";
import { registerActivateAutomation } from "./automations-activate.js";
import { registerPauseAutomation } from "./automations-pause.js";
import { registerListAutomationRuns } from "./automations-runs.js";
import { registerAutomationStats } from "./automations-stats.js";
import { registerContactAutomationRuns } from "./automations-contact-runs.js";
import { registerContactActivity } from "./contacts-activity.js";
import { registerProviderWebhooks } from "./provider-webhooks.js";
import { registerAuditLog } from "./audit-log.js";
import { registerListSuppressions } from "./suppressions-list.js";
import { registerCreateSuppression } from "./suppressions-create.js";
import { registerDeleteSuppression } from "./suppressions-delete.js";
import { registerSuppressionsImport } from "./suppressions-import.js";
import { registerSuppressionsExport } from "./suppressions-export.js";
import { registerCreateInboundDomain } from "./inbound-domains-create.js";
import { registerListInboundDomains } from "./inbound-domains-list.js";
import { registerGetInboundDomain } from "./inbound-domains-get.js";
import { registerVerifyInboundDomain } from "./inbound-domains-verify.js";
import { registerDeleteInboundDomain } from "./inbound-domains-delete.js";
import { registerCreateInboundRule } from "./inbound-rules-create.js";
import { registerListInboundRules } from "./inbound-rules-list.js";
import { registerDeleteInboundRule } from "./inbound-rules-delete.js";
import { registerListReceivedEmails } from "./received-emails-list.js";
import { registerGetReceivedEmail } from "./received-emails-get.js";
import { registerGetReceivedAttachment } from "./received-emails-attachment.js";
import { registerGetReceivedRaw } from "./received-emails-raw.js";

/**
 * Routes under /v1 that need an API key. Each module registers its own path(s);
 * the authenticated scope (auth hook, rate limit) is applied around all of them.
 */
export const apiRoutes: RouteModule[] = [
  registerSendEmail, registerSendBatch, registerGetEmail, registerCancelEmail,
  registerListEmails,
  registerContacts, registerContactsExport, registerContactItem, registerContactExport, registerTemplates, registerTemplateItem,
  registerTemplateRender, registerTemplateRenderDraft, registerTemplateVersions,
  registerContactProperties, registerTransactional, registerIdentities, registerApiKeys, registerEvents,
  // DMARC aggregate reports of a sending domain (DESIGN §10.4).
  registerDomainDmarc,
  // Broadcasts: a schema refusal is `invalid_payload` (design §6).
  ...[registerCreateBroadcast, registerListBroadcasts, registerGetBroadcast, registerTestBroadcast, registerScheduleBroadcast, registerCancelBroadcast, registerAbWinner, registerUpdateBroadcast].map(broadcastScope),
  // Pre-send checks of broadcasts and templates (DESIGN §10.5).
  registerPreSendCheck,
  // Outcomes (issue 13): stats and webhooks.
  registerEmailStats, registerBroadcastStats, registerWebhooks, registerWebhookDeliveries,
  // Signup forms (DESIGN §9.4).
  registerForms, registerFormItem,
  // Segments: saved filters, their count and contacts (DESIGN §9.4).
  registerCreateSegment, registerListSegments, registerGetSegment, registerUpdateSegment, registerDeleteSegment, registerCountSegment, registerListSegmentContacts,
  // Groups and their contacts (DESIGN §9.4).
  registerCreateGroup, registerListGroups, registerGetGroup, registerUpdateGroup, registerDeleteGroup,
  registerAddGroupContact, registerRemoveGroupContact, registerListGroupContacts,
  // Topics and contacts' choices (DESIGN §9.4).
  registerTopics, registerTopicItem, registerContactTopics,
  // Automations, their runs and per-step stats (DESIGN §9.6).
  registerCreateAutomation, registerListAutomations, registerGetAutomation, registerUpdateAutomation, registerDeleteAutomation,
  registerActivateAutomation, registerPauseAutomation, registerListAutomationRuns, registerAutomationStats, registerContactAutomationRuns,
  // A contact's activity across the units (issue: a console that needs no curl).
  registerContactActivity,
  // The audit log (DESIGN §9.9): owners and admins.
  registerAuditLog,
  // The suppression list: addresses and domains, CSV import and export (DESIGN §10.3).
  registerListSuppressions, registerCreateSuppression, registerDeleteSuppression, registerSuppressionsImport, registerSuppressionsExport,
  // Receiving email: inbound domains, their rules, received emails and their files (DESIGN §10.4).
  registerCreateInboundDomain, registerListInboundDomains, registerGetInboundDomain, registerVerifyInboundDomain, registerDeleteInboundDomain,
  registerCreateInboundRule, registerListInboundRules, registerDeleteInboundRule,
  registerListReceivedEmails, registerGetReceivedEmail, registerGetReceivedAttachment, registerGetReceivedRaw,
];

// The recipient-link modules register plain fastify routes; their operations are declared here.
const recipientToken = z.object({ token: z.string().meta({ description: "Signed recipient token." }) });
const html = z.string();

const trackingDocs: Record<string, OperationDoc> = {
  "GET /t/o/:token": {
    operationId: "trackOpen",
    tags: ["Recipients"],
    summary: "Open-tracking pixel",
    description: "Linked from sent messages; records an `opened` event.",
    params: recipientToken,
    responses: {
      200: { description: "A 1×1 transparent GIF (`Cache-Control: no-store`).", content: { "image/gif": z.string().meta({ contentMediaType: "image/gif" }) } },
      404: "LinkNotFound",
    },
  },
  "GET /t/c/:link/:token": {
    operationId: "trackClick",
    tags: ["Recipients"],
    summary: "Click-tracking redirect",
    description: "Linked from sent messages; records a `clicked` event and redirects to the original link.",
    params: z.object({ link: z.string().meta({ description: "Signed link token." }), ...recipientToken.shape }),
    responses: {
      302: {
        description: "Redirect to the original URL.",
        headers: { Location: { required: true, description: "The link's original URL.", schema: { type: "string", format: "uri" } } },
      },
      404: "LinkNotFound",
    },
  },
};

const unsubscribeDocs: Record<string, OperationDoc> = {
  "GET /u/:token": {
    operationId: "unsubscribePage",
    tags: ["Recipients"],
    summary: "Unsubscribe confirmation page",
    description: "Shows a page with a button; does not unsubscribe (mail scanners prefetch links).",
    params: recipientToken,
    query: z.object({ manage: z.string().optional().meta({ description: "Any value: the manage-preferences page (shows whether the address is subscribed; offers to resubscribe; lists the workspace's topics with the recipient's state, a form that saves them, and unsubscribing from everything)." }) }),
    responses: { 200: { description: "The confirmation page.", content: { "text/html": html } }, 404: "LinkNotFound" },
  },
  "POST /u/:token": {
    operationId: "unsubscribe",
    tags: ["Recipients"],
    summary: "Unsubscribe at once (RFC 8058 one-click, or the page's button)",
    description: "Adds the recipient to the workspace's suppression list and marks the contact unsubscribed. The body is ignored.",
    params: recipientToken,
    requestContent: {
      required: false,
      content: {
        "application/x-www-form-urlencoded": z.string().meta({ examples: ["List-Unsubscribe=One-Click"] }),
        "multipart/form-data": z.string(),
      },
    },
    responses: {
      200: {
        description: "Unsubscribed: JSON, or a page when `Accept` includes `text/html`.",
        body: z.strictObject({ unsubscribed: z.literal(true) }).meta({ id: "Unsubscribed" }),
        content: { "text/html": html },
      },
      404: "LinkNotFound",
      503: "ServiceUnavailable",
    },
  },
  "POST /u/:token/resubscribe": {
    operationId: "resubscribe",
    tags: ["Recipients"],
    summary: "Resubscribe (the manage page's button)",
    description: "Lifts the recipient's own unsubscribe (never a bounce, complaint or manual block) and marks the contact subscribed. Refused (403) when the browser names another site as the form's origin. The body is ignored.",
    params: recipientToken,
    requestContent: {
      required: false,
      content: { "application/x-www-form-urlencoded": z.string(), "multipart/form-data": z.string() },
    },
    responses: {
      200: {
        description: "Subscribed: JSON, or a page when `Accept` includes `text/html`.",
        body: z.strictObject({ subscribed: z.literal(true) }).meta({ id: "Resubscribed" }),
        content: { "text/html": html },
      },
      403: { description: "`forbidden`: the request came from another site's page.", body: apiErrorSchema },
      404: "LinkNotFound",
      409: {
        description: "`conflict`: the address is suppressed for another reason (bounce, complaint, manual), which only the sender lifts. A page when `Accept` includes `text/html`.",
        body: apiErrorSchema,
        content: { "text/html": html },
      },
      503: "ServiceUnavailable",
    },
  },
  "POST /u/:token/topics": {
    operationId: "saveRecipientTopics",
    tags: ["Recipients"],
    summary: "Save the topic choices of the manage page",
    description: "The manage page's form (DESIGN §9.4): `shown` names each topic the page listed, `topic` each one checked; every shown topic that still exists becomes the contact's choice (checked: subscribed). Refused (403) when the browser names another site as the form's origin.",
    params: recipientToken,
    requestContent: {
      required: true,
      content: { "application/x-www-form-urlencoded": z.string().meta({ examples: ["shown=top_01&shown=top_02&topic=top_02"] }) },
    },
    responses: {
      200: {
        description: "Saved: the contact's topics as JSON (`{ topics: [{ id, name, subscribed }] }`), or a page when `Accept` includes `text/html`.",
        body: z.strictObject({ topics: z.array(z.strictObject({ id: z.string(), name: z.string(), subscribed: z.boolean() })) }).meta({ id: "RecipientTopics" }),
        content: { "text/html": html },
      },
      400: { description: "`invalid_request`: not the page's form.", body: apiErrorSchema },
      403: { description: "`forbidden`: the request came from another site's page.", body: apiErrorSchema },
      404: "LinkNotFound",
      503: "ServiceUnavailable",
    },
  },
};

/** Public routes without an API key: tracking pixels, click redirects, unsubscribe, dev mail, this document, error docs, provider webhooks. */
export const publicRoutes: RouteModule[] = [
  withDocs(registerTracking, trackingDocs),
  withDocs(registerUnsubscribe, unsubscribeDocs),
  // Signup forms' hosted pages, signups and confirmation links (DESIGN §9.4; docs in their modules).
  registerFormPages,
  registerConfirmSignup,
  registerDevMail,
  registerDevWebhooks,
  registerOpenApi,
  registerErrorDocs,
  registerDocsPages,
  registerReadyz,
  // Relay providers' event webhooks (DESIGN §9.7; docs in their module).
  registerProviderWebhooks,
];
