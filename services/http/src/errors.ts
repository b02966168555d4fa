import { STATUS_CODES } from "node:http";
import { z } from "zod";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { ErrorInfo } from "@mailroom/proto/common/v1/common_pb.js";
import { appError, errorInfoOf, isNeighbourDown, type AppError } from "@mailroom/kit/errors.js";

/** HTML of one email: 5 MB of UTF-8. */
export const MAX_HTML_BYTES = 5 * 1024 * 1024;
/** Attachments of one email, decoded (DESIGN §9.5). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** A batch request of up to 50 emails (50 items with a 100 KB attachment each: ~7 MB). */
export const BATCH_BODY_LIMIT_BYTES = 25 * 1024 * 1024;
/**
 * A single email's request: its 5 MB of HTML, JSON-escaped, plus text and the small fields
 * (12 MB), plus 10 MB of attachments as base64 (4/3 of it: 13,981,014 bytes).
 */
export const SINGLE_EMAIL_BODY_LIMIT_BYTES = 12 * 1024 * 1024 + Math.ceil((MAX_ATTACHMENT_BYTES * 4) / 3) + 64 * 1024;
/** Every other JSON endpoint (contacts, templates, …): the server's default. */
export const DEFAULT_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

interface ErrorRule {
  status: number;
  /** For the documentation page: what the error means and what to do about it. */
  description: string;
  /**
   * The setting or command that lifts the refusal, for a refusal a setting can lift: appended
   * to every body's message and shown on the code's page. `<workspace-id>` becomes the
   * caller's workspace when the request names one (sendError).
   */
  fix?: string;
  /** The page of `docs/` (and its section) about the error's topic, named on the code's page. */
  docs?: DocsSection;
}

/** A page of the repository's `docs/` folder, and a heading on it (its text, as written). */
export interface DocsSection {
  page: string;
  section?: string;
}

const API: DocsSection = { page: "api.md" };
const EMAIL_EXTRAS: DocsSection = { page: "api.md", section: "What an email can carry: cc, bcc, headers, attachments, tags" };
const TEMPLATES: DocsSection = { page: "templates.md" };
const WORKSPACES: DocsSection = { page: "team.md", section: "Workspaces, keys and senders" };
const ROLES: DocsSection = { page: "team.md", section: "Roles: who may do what" };
const SIGN_IN: DocsSection = { page: "team.md", section: "Signing in to the console" };
const AUDIT_LOG: DocsSection = { page: "team.md", section: "Audit log" };
const OPERATIONS: DocsSection = { page: "operations.md" };
const BROADCASTS: DocsSection = { page: "broadcasts.md" };
const AB_TESTS: DocsSection = { page: "broadcasts.md", section: "A/B tests of broadcasts" };
const PRE_SEND_CHECK: DocsSection = { page: "pre-send-check.md", section: "Refusing to schedule with errors" };
const WEBHOOKS: DocsSection = { page: "webhooks.md" };
const GROUPS: DocsSection = { page: "audiences.md", section: "Groups" };
const SUPPRESSIONS: DocsSection = { page: "audiences.md", section: "Suppressions" };
const FORMS: DocsSection = { page: "audiences.md", section: "Signup forms" };
const AUTOMATIONS: DocsSection = { page: "automations.md" };
const PROVIDER_WEBHOOKS: DocsSection = { page: "delivery.md", section: "Provider event webhooks" };
const RECEIVING: DocsSection = { page: "receiving-email.md" };

/** What lifts an unverified sender's refusal (emails and broadcasts). */
const FROM_FIX =
  "To send from another address, verify its domain (`npx mailroom -w <workspace-id> domain add <domain>`, publish the records it prints, then `npx mailroom -w <workspace-id> domain verify <domain>`) or the address itself (`npx mailroom -w <workspace-id> sender add <address> --verified`).";

/**
 * The one table that maps error codes to HTTP statuses and public body rules; the
 * documentation pages under /docs/errors are generated from it. Every body carries its
 * `code` (the spec's four email rows included: the field is an addition the client reads)
 * and a `docsUrl` to its page. Every code a unit can answer has a row
 * (`errors-table.test.ts` reads the sources to check).
 */
export const ERROR_TABLE: Record<string, ErrorRule> = {
  // Spec: email endpoints
  invalid_payload: {
    status: 400,
    docs: API,
    description: "The body matches neither the raw form (`from`, `to`, `subject`, `html`) nor the templated form (`template`, `to`, `variables`), carries both `html` and `template`, or a field has the wrong type. Fix the field the message names and send again.",
  },
  invalid_from: {
    status: 400,
    docs: WORKSPACES,
    description: "`from` is not a verified address of the workspace nor on one of its verified domains. Use one of `allowedEmails`, or any address on one of `allowedDomains`, or verify the sender first.",
    fix: FROM_FIX,
  },
  unauthorized: {
    status: 401,
    docs: WORKSPACES,
    description: "The `Authorization: Bearer <API_KEY>` header is missing or malformed, the key is unknown or revoked, or it lacks the scope the endpoint needs (`api_user`). Check the key; do not retry with the same one.",
  },
  monthly_limit_reached: {
    status: 403,
    docs: WORKSPACES,
    description: "The workspace has used its plan's monthly sending allowance (a batch is refused whole when it would exceed it). Wait for the next period or upgrade the plan.",
    fix: "The limit is a workspace setting: `npx mailroom workspace update <workspace-id> --limit <emails per month>` (or `monthlyLimit` in the MAILROOM_BOOTSTRAP file).",
  },
  sending_paused: {
    status: 403,
    docs: WORKSPACES,
    description: "The server's operator paused this workspace's sending (the message gives the reason when one was recorded). Emails, batches and broadcasts are refused; a broadcast already sending holds where it is and carries on once sending is resumed. Nothing else changes: contacts, templates and the rest of the API still work.",
    fix: "The operator resumes it: `npx mailroom workspace resume-sending <workspace-id>`.",
  },
  workspace_banned: {
    status: 403,
    docs: WORKSPACES,
    description: "The server's operator banned this workspace: its API keys are refused on every endpoint (within `MAILROOM_AUTH_CACHE_MS` of the ban) and it cannot send. Contact the operator.",
    fix: "The operator lifts it: `npx mailroom workspace unban <workspace-id>`.",
  },
  // Design §6 decisions and obvious additions
  invalid_json: { status: 400, docs: API, description: "The body is not valid JSON. Send a JSON object with `Content-Type: application/json`." },
  invalid_request: { status: 400, docs: API, description: "A field or parameter is invalid; the message names it and says why. Fix it and send again." },
  template_not_found: {
    status: 400,
    docs: TEMPLATES,
    description: "No template with the name in `template` exists in this workspace. Create it, or correct the name (the body's `template` field repeats it).",
    fix: "Create it with `POST /v1/templates` (`name`, `subject`, `html`) or `npx mailroom -w <workspace-id> template create --name <name> --subject <subject> --html-file <file>`; `GET /v1/templates` lists the existing ones.",
  },
  send_at_out_of_range: { status: 400, docs: API, description: "`sendAt` is more than 90 days in the future. Pick an earlier time (a time in the past or now sends at once)." },
  invalid_send_at: {
    status: 400,
    docs: API,
    description: "`sendAt` is not an ISO 8601 date-time with a time zone. Accepted: `2030-01-31T09:30:00Z`, `…+02:00`, `…+0200`, `…+02`, fractional seconds, and the basic form `20300131T093000Z`. A time without a zone is refused because it would be ambiguous.",
  },
  header_injection: { status: 400, docs: EMAIL_EXTRAS, description: "A value that becomes a mail header (`to`, `from`, `fromName`, `subject`, `replyTo`, …) contains a line break or control character. Remove it." },
  header_not_allowed: {
    status: 400,
    docs: EMAIL_EXTRAS,
    description: "A custom header in `headers` is one the system sets or that changes routing — From, To, Cc, Bcc, Subject, Date, Message-ID, Return-Path, Sender, DKIM-Signature, List-Unsubscribe, List-Unsubscribe-Post, any Content-*, MIME-Version, Received (case-insensitive) — or its name is not an RFC 5322 field name. The message names the header. Use the email's own fields (`cc`, `replyTo`, `subject`, …) instead, or drop it.",
  },
  attachment_type_not_allowed: {
    status: 400,
    docs: EMAIL_EXTRAS,
    description: "An attachment is an executable type, by its filename's extension or its `contentType` (vbs exe bin bat chm com cpl crt hlp hta inf ins isp jse lnk mdb pcd pif reg scr sct shs vbe vba wsf wsh wsl msc msi msp mst). The message names the file. Send such files as a link, or in an archive if the recipient expects one.",
  },
  attachments_too_large: {
    status: 400,
    docs: EMAIL_EXTRAS,
    description: "The attachments of one email add up to more than 10 MB (10,485,760 bytes) decoded. Send fewer or smaller files, or link to large ones.",
  },
  too_many_recipients: {
    status: 400,
    docs: EMAIL_EXTRAS,
    description: "`to`, `cc` and `bcc` together name more than 50 recipients. Split the email into several (a batch sends up to 50 at once).",
  },
  invalid_tags: {
    status: 400,
    docs: EMAIL_EXTRAS,
    description: "`tags` holds more than 10 tags, or a tag whose `name` or `value` is empty, longer than 256 characters or holds something other than letters, digits, `_` and `-`. The message names the tag and the rule.",
  },
  batch_invalid: { status: 400, docs: API, description: "The batch body must be `{ emails: [...] }` with 1 to 50 emails and no other top-level field; nothing was sent. Split larger batches." },
  recipient_suppressed: {
    status: 400,
    docs: SUPPRESSIONS,
    description: "The recipient is on the workspace's suppression list (unsubscribed, bounced or complained); nothing is sent to it.",
    fix: "Only if the recipient asked for mail again: `npx mailroom -w <workspace-id> suppression remove <email>`.",
  },
  idempotency_key_reused: { status: 409, docs: API, description: "This `idempotencyKey` was already used with a different request in the last 24 hours. Use a new key for a new email; resend the identical request to get the first answer." },
  idempotency_request_in_progress: { status: 409, docs: API, description: "The first request with this `idempotencyKey` is still being processed. Retry shortly: you will get its answer." },
  email_not_found: { status: 404, docs: API, description: "No email with this id exists in the workspace." },
  attachment_not_found: { status: 404, docs: EMAIL_EXTRAS, description: "The email has no attachment at this position, or its file is no longer kept (attachments are kept as long as the email's content: `MAILROOM_EMAIL_CONTENT_RETENTION_HOURS` after it was delivered, failed or cancelled)." },
  email_not_cancellable: { status: 409, docs: API, description: "Only a `SCHEDULED` email can be cancelled; this one was already sent, failed or cancelled." },
  not_found: { status: 404, docs: API, description: "The route or resource does not exist (check the path and the `/v1` prefix)." },
  unsupported_media_type: { status: 415, docs: API, description: "The body is not `application/json`. Send JSON with that `Content-Type`." },
  payload_too_large: {
    status: 413,
    docs: API,
    description: "The request body is too large: at most 5 MB of HTML per email (5,242,880 bytes of UTF-8), room for 10 MB of attachments (as base64) besides it, and 25 MB for a whole batch. Host large images elsewhere and link them.",
  },
  rate_limited: {
    status: 429,
    docs: API,
    description: "Too many requests for this API key (a token bucket per key), or too many failed API key attempts from this address. Wait the number of seconds in `Retry-After`; `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` describe the budget.",
    fix: "The server's operator sets the budget: `MAILROOM_RATE_LIMIT_PER_MINUTE` and `MAILROOM_RATE_LIMIT_BURST` per API key, `MAILROOM_AUTH_FAILURES_PER_MINUTE` for failed key attempts.",
  },
  service_unavailable: { status: 503, docs: OPERATIONS, description: "A backing service is briefly unavailable. Retry with backoff; with an `idempotencyKey` a retry never sends twice." },
  internal: { status: 500, docs: OPERATIONS, description: "An unexpected error on our side. Retry with backoff; report the `x-request-id` response header if it persists." },
  // Broadcast endpoints (spec)
  broadcast_api_not_enabled: {
    status: 403,
    docs: BROADCASTS,
    description: "The broadcast API is in early access and not enabled for this workspace (checked first; then the add-on, then verification).",
    fix: "Enable it: `npx mailroom workspace update <workspace-id> --enable broadcastEarlyAccess` (or `flags.broadcastEarlyAccess` in the MAILROOM_BOOTSTRAP file).",
  },
  broadcast_api_addon_required: {
    status: 402,
    docs: BROADCASTS,
    description: "The broadcast API needs the Email API add-on on the workspace's plan.",
    fix: "Enable it: `npx mailroom workspace update <workspace-id> --enable emailApiAddon` (or `flags.emailApiAddon` in the MAILROOM_BOOTSTRAP file).",
  },
  broadcast_api_workspace_not_verified: {
    status: 403,
    docs: BROADCASTS,
    description: "The workspace must be verified before it can send broadcasts.",
    fix: "Mark it verified: `npx mailroom workspace update <workspace-id> --enable verified` (or `flags.verified` in the MAILROOM_BOOTSTRAP file).",
  },
  broadcast_unknown_variables: { status: 400, docs: BROADCASTS, description: "The broadcast uses merge variables that are neither built-ins nor custom contact properties (listed in `unknownVariables`). Fix them or allow unknown variables." },
  "campaigns/invalid_from_email": {
    status: 400,
    docs: BROADCASTS,
    description: "The broadcast's sender is not verified. Use one of `allowedEmails` or an address on one of `allowedDomains`.",
    fix: FROM_FIX,
  },
  "campaigns/delivery_method_not_available": {
    status: 400,
    docs: BROADCASTS,
    description: "This delivery method is not available for the sending account (a new account can only use `WARMUP`).",
    fix: "Once the sending account has a sending history: `npx mailroom workspace update <workspace-id> --new-account false` (or `sendingAccountNew: false` in the MAILROOM_BOOTSTRAP file).",
  },
  broadcast_html_too_large: { status: 413, docs: BROADCASTS, description: "Broadcast HTML is limited to 500 KB (512,000 bytes of UTF-8)." },
  broadcast_not_cancellable: { status: 409, docs: BROADCASTS, description: "The broadcast is a draft or sending has already started; it cannot be cancelled." },
  broadcast_not_found: { status: 404, docs: BROADCASTS, description: "No broadcast with this id exists in the workspace." },
  check_failed: { status: 409, docs: PRE_SEND_CHECK, description: "`requireCleanCheck: true` was asked and the broadcast's pre-send check found errors (listed in `errors`, each with its `code`, `message` and `where`): nothing was scheduled. Fix them (`POST /v1/broadcasts/{id}/check` shows them again), or schedule without `requireCleanCheck`." },
  // The official client's endpoints (contacts, properties, events, API keys)
  contacts_batch_invalid: {
    status: 400,
    docs: API,
    description: "Without `allowPartialSuccess=true` one invalid contact fails the whole `POST /v1/contacts/batch`: nothing was written. `errors` lists each invalid contact by index (and `failedContacts` repeats them in the input form when `includeFailedContacts=true`). Fix them, or send `allowPartialSuccess=true` to write the valid ones.",
  },
  invalid_event: { status: 400, docs: API, description: "An event is invalid: its `event` name (letters, digits, `_`, `-`, `:`, and `.` between parts), `identify.email`, `timestamp` (ISO 8601 or Unix time), `messageId` or the size of `properties`. The message names the field." },
  invalid_property: { status: 400, docs: API, description: "A contact property definition is invalid: a `displayName` without letters or digits, a SELECT or MULTI_SELECT without `typeConfig.options`, or a change to a built-in property." },
  property_not_found: { status: 404, docs: API, description: "No custom contact property with this id exists in the workspace." },
  invalid_role: { status: 400, docs: ROLES, description: "A member's role is `OWNER`, `ADMIN`, `EDITOR` or `VIEWER`. An API key's `role` through the API is `EDITOR` or `VIEWER`; an `ADMIN` key (it also reads the audit log) is made with `npx mailroom -w <workspace-id> key create --role ADMIN --owner <member>`, whose owner is OWNER or ADMIN." },
  api_key_not_found: { status: 404, docs: WORKSPACES, description: "No API key with this id exists in the workspace." },
  api_key_revoked: { status: 409, docs: WORKSPACES, description: "The API key is revoked (ARCHIVED) and cannot change." },
  // Broadcast endpoints (design §6)
  invalid_test_recipients: { status: 400, docs: BROADCASTS, description: "A test send needs `emails`: a list of 1 to 10 valid addresses. Nothing was sent." },
  test_recipients_not_members: {
    status: 400,
    docs: BROADCASTS,
    description: "Test sends go to workspace members only; the addresses in `notMembers` are not members. Nothing was sent.",
    fix: "Add a member: `npx mailroom -w <workspace-id> member add <email>` (or `members` in the MAILROOM_BOOTSTRAP file).",
  },
  broadcast_not_schedulable: { status: 409, docs: BROADCASTS, description: "Only a `DRAFT` broadcast can be scheduled; this one is already scheduled, sending or completed. Cancel a scheduled one first to change it." },
  broadcast_not_editable: { status: 409, docs: BROADCASTS, description: "Only a `DRAFT` broadcast can be edited; cancel a scheduled one first (one that started sending cannot change)." },
  ab_winner_already_chosen: { status: 409, docs: AB_TESTS, description: "This A/B test's winner was chosen already (by its metric when the wait ended, or by a user); the rest of the audience gets that variant." },
  ab_test_not_waiting: { status: 409, docs: AB_TESTS, description: "A winner can only be chosen while the broadcast waits for one: it has no A/B test, its test share is still going out, or it was cancelled or completed." },
  // Webhooks (issue 13)
  webhook_not_found: { status: 404, docs: WEBHOOKS, description: "No webhook with this id exists in the workspace." },
  webhook_not_active: { status: 409, docs: WEBHOOKS, description: "The webhook is paused (by you or after a day of failed deliveries); update its status to `ACTIVE` first." },
  delivery_not_found: { status: 404, docs: WEBHOOKS, description: "The webhook has no delivery with this id (deliveries are kept 8 days)." },
  delivery_in_progress: { status: 409, docs: WEBHOOKS, description: "This delivery is being sent right now; wait for the attempt to finish and try again." },
  webhook_url_not_allowed: {
    status: 400,
    docs: WEBHOOKS,
    description: "The webhook's URL points at, or its host name resolves to, an address the server will not call: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 with cloud metadata, fe80::/10), carrier-grade NAT (100.64/10), multicast, unspecified or otherwise reserved, IPv4-mapped IPv6 included. This protects the server's own network (server-side request forgery). Use a public URL of your receiver. The same check runs at every delivery, on the address actually connected to, and redirects are not followed: a delivery refused there fails without retries, with the reason in the delivery list.",
    fix: "The server's operator can trust networks for webhooks: `MAILROOM_WEBHOOK_ALLOW_NETWORKS` (comma-separated CIDRs, e.g. `10.0.0.0/8,fd00::/8`) on the webhooks unit; `npm start` trusts loopback (`127.0.0.0/8,::1/128`).",
  },
  event_not_available: {
    status: 400,
    docs: WEBHOOKS,
    description: "A webhook subscribed to an event that nothing on this server produces yet (`unavailableEvents` names them). Every event name is produced today (groups brought `CONTACT_TAG_ADDED` / `CONTACT_TAG_REMOVED`), so only a server whose producers are incomplete answers it. Nothing was changed; subscribe to the other events.",
  },
  webhook_banned: { status: 403, docs: WEBHOOKS, description: "The webhook was banned by the server's operator; it cannot be changed or reactivated. Create a new one if its URL is legitimate." },
  // Contacts and their properties (the audience unit)
  invalid_email: { status: 400, docs: API, description: "The address is not a valid email address (a contact's, a member's or a suppression's). The message quotes it." },
  invalid_contact: { status: 400, docs: API, description: "A contact field has the wrong type or value (an unknown `status` or `source`, a name that is not a string). The message names the field." },
  invalid_timezone: { status: 400, docs: API, description: "A `timezone` must be an IANA time zone name such as `Europe/Paris` or `America/New_York`." },
  contact_not_found: { status: 404, docs: API, description: "No contact with this id or address exists in the workspace." },
  contact_exists: { status: 409, docs: API, description: "A contact with this address already exists. `POST /v1/contacts` updates it instead (it is an upsert); the CLI's `contact add` does not." },
  duplicate_contact: { status: 409, docs: API, description: "The same address appears twice in one batch; the message names the first item. Merge them into one." },
  contact_conflict: { status: 409, docs: API, description: "The contact was being changed by another request at the same moment. Retry." },
  unknown_contact_property: {
    status: 400,
    docs: API,
    description: "A custom property in `properties` does not exist in the workspace (built-ins: `firstName`, `lastName`, `timezone`, …). Create it first, or correct its API slug.",
    fix: "Create it with `POST /v1/contact-properties` or `npx mailroom -w <workspace-id> property create <slug> <type>`.",
  },
  invalid_property_value: { status: 400, docs: API, description: "A property's value does not fit its type (a NUMBER given text, a SELECT value that is not one of its options, …). The message names the property and its type." },
  invalid_property_type: { status: 400, docs: API, description: "A property type must be one of STRING, NUMBER, DATE, BOOLEAN, SELECT or MULTI_SELECT." },
  invalid_property_slug: { status: 400, docs: API, description: "A property's API slug must start with a letter and hold only letters, digits and `_` (at most 64)." },
  reserved_property_slug: { status: 400, docs: API, description: "The slug is a built-in property's name (`email`, `firstName`, `timezone`, …) and cannot be a custom property." },
  property_exists: { status: 409, docs: API, description: "A custom property with this slug already exists (with the type the message names)." },
  // Groups (the audience unit, DESIGN §9.4)
  invalid_group: { status: 400, docs: GROUPS, description: "A group field is invalid: a `publicId` that is not 1-200 letters, digits or `_ . : @ + = -` (starting with a letter, digit or `_`), a `displayName` over 200 characters, `traits` that are not a JSON object, exceed 16 KB or 5 levels, or have a key with `.`, a leading `$` or control characters. The message names the field." },
  group_not_found: { status: 404, docs: GROUPS, description: "No group with this id or publicId exists in the workspace. `GET /v1/groups` lists them." },
  group_public_id_taken: { status: 409, docs: GROUPS, description: "The workspace has a group with this `publicId` already. Use that group (`GET /v1/groups/{publicId}`), or pick another publicId." },
  invalid_cursor: { status: 400, docs: API, description: "`cursor` must be the `cursor` a previous page of the same list returned." },
  // Segments and broadcast audiences (the audience unit, DESIGN §9.4)
  invalid_segment: { status: 400, docs: API, description: "A segment field is invalid: an empty `name` or one over 200 characters. The message names the field." },
  segment_not_found: { status: 404, docs: API, description: "No segment with this id exists in the workspace. `GET /v1/segments` lists them." },
  invalid_audience: { status: 400, docs: BROADCASTS, description: "A broadcast audience must have exactly one of `all` (true), `groups`, `segmentId`, `filter`; `exclude` and `topicId` are optional." },
  audience_not_found: { status: 400, docs: BROADCASTS, description: "A group, segment or topic the audience names does not exist in the workspace (the message names it and its place in the audience). `GET /v1/groups`, `/v1/segments` and `/v1/topics` list them." },
  invalid_filter: { status: 400, docs: API, description: "A `filter` (DESIGN §9.4) is not valid JSON, or names an unknown field, operator, property or group, or holds a value of the wrong type for its field, or a bad `$ago` duration. The message names the JSON path (e.g. `filter.$and[1].properties.plan: unknown property \"plan\"`). `GET /v1/contact-properties` lists the properties and their types." },
  // Templates (the accounts unit)
  invalid_template_name: { status: 400, docs: TEMPLATES, description: "A template name is 1-100 letters, digits, `.`, `_` or `-`, starting with a letter or digit." },
  invalid_template: {
    status: 400,
    docs: TEMPLATES,
    description:
      "A template field is invalid: an empty subject or html, a subject or name of more than one line or too long, an unknown `status`, `kind` or `format`, a layout or snippet that does not exist, or Liquid or MJML that does not parse. The message names the field; a syntax error's body also carries `field`, `line`, `column` and the parser's `reason`. A send (`POST /v1/emails`, each item of a batch) that names a layout or a snippet is refused with this code too (`template` and `kind` name it): they are pieces of templates, never sent on their own.",
  },
  template_render_failed: {
    status: 400,
    docs: TEMPLATES,
    description:
      "A template could not be rendered for this recipient: it ran over 50 ms or 1,000 loop iterations, renders a snippet that is gone, or a filter failed (e.g. an unknown currency in `money`). In a batch only that email fails; the others are sent. Simplify the template or the values.",
  },
  template_version_not_found: { status: 404, docs: TEMPLATES, description: "The template has no saved version with this number: `GET /v1/templates/{name}/versions` lists them." },
  template_exists: { status: 409, docs: TEMPLATES, description: "A template with this name already exists. Change it with `PUT /v1/templates/{name}`, or pick another name." },
  template_in_use: { status: 409, docs: TEMPLATES, description: "A layout or snippet that other templates still use cannot be deleted; `usedBy` lists them. Remove the `layout` or the `{% render %}` from those templates first." },
  template_html_too_large: { status: 413, docs: TEMPLATES, description: "A template's `html` (or `text`) is limited to 500 KB." },
  // Topics and a contact's choices (the audience unit, DESIGN §9.4)
  invalid_topic: { status: 400, docs: API, description: "A topic field is invalid: a `name` that is empty, longer than 100 characters or on more than one line, a `description` over 500 characters, a `defaultSubscription` other than `OPT_IN` or `OPT_OUT`. The message names the field." },
  topic_not_found: { status: 404, docs: API, description: "No topic with this id exists in the workspace. `GET /v1/topics` lists them." },
  topic_name_taken: { status: 409, docs: API, description: "The workspace has a topic with this name already. Pick another name, or change the existing topic with `PATCH /v1/topics/{id}`." },
  unknown_topic: { status: 400, docs: API, description: "A topic in the contact's `topics` does not exist in the workspace (`unknownTopics` lists them); no choice was recorded. `GET /v1/topics` lists the topics." },
  // The suppression list (the audience unit, DESIGN §10.3)
  suppression_not_found: { status: 404, docs: SUPPRESSIONS, description: "The address or domain is not on the workspace's suppression list (`GET /v1/suppressions` lists it). Nothing was changed." },
  force_required: { status: 409, docs: SUPPRESSIONS, description: "The address (or domain) is suppressed because a recipient reported a message as spam. Lifting it risks the sender's reputation, so it needs `force=true` (query, or `{ \"force\": true }` in the body). Nothing was changed." },
  email_and_domain: { status: 400, docs: SUPPRESSIONS, description: "A suppression names either an `email` or a `domain`, not both (in a CSV row: one of the two columns set)." },
  missing_target: { status: 400, docs: SUPPRESSIONS, description: "A CSV row of a suppression import sets neither its `email` nor its `domain` column; the row is skipped and reported." },
  invalid_reason: { status: 400, docs: SUPPRESSIONS, description: "A suppression's `reason` is one of `hard_bounce`, `complaint`, `manual`, `unsubscribed`, `imported`." },
  invalid_source: { status: 400, docs: SUPPRESSIONS, description: "A suppression's `source` is at most 500 characters without control characters." },
  invalid_created_at: { status: 400, docs: SUPPRESSIONS, description: "A suppression's `created_at` is an ISO 8601 date or date-time, not in the future." },
  invalid_csv: { status: 400, docs: SUPPRESSIONS, description: "The suppression import's body is not CSV with a header row naming an `email` or `domain` column (the message says what is wrong and on which line). Rows before a malformed line stay imported; importing again is safe (idempotent)." },
  // Signup forms (the audience unit, DESIGN §9.4)
  invalid_form: { status: 400, docs: FORMS, description: "A form field is invalid: an empty or over-long `name`, a field that is not `email`, `firstName`, `lastName` nor a custom property of the workspace (or listed twice), a group or topic the workspace does not have, a `redirectUrl` that is not an absolute http(s) URL. The message names the field." },
  form_not_found: { status: 404, docs: FORMS, description: "No signup form with this id exists (in this workspace, for `/v1/forms`). `GET /v1/forms` lists them." },
  // Automations (DESIGN §9.6)
  invalid_automation: {
    status: 400,
    docs: AUTOMATIONS,
    description: "An automation's definition is invalid, or names something the workspace does not have. The message starts with the JSON path of the fault, which the body's `path` repeats: `steps[1].then[0].template: template \"x\" does not exist`, `trigger.filter.properties.plan: unknown property \"plan\"`, `steps[2].timeout: …` (a `wait_for_event` needs one), `steps[0].then: …` (a branch given may not be empty), a duplicate step `id`, a duration under 1 s. `GET /v1/templates`, `/v1/groups` and `/v1/contact-properties` list what may be named.",
  },
  automation_not_found: { status: 404, docs: AUTOMATIONS, description: "No automation with this id exists in the workspace (a deleted one is gone too), or it never had the `version` asked for. `GET /v1/automations` lists them." },
  automation_state: { status: 409, docs: AUTOMATIONS, description: "The automation's status does not allow this: only a DRAFT or PAUSED automation can be activated, only an ACTIVE one paused (the message names its status). Also answered to an update when another update made a new version first: read it again and retry." },
  // Broadcast content (compiled by the renderer)
  html_too_large: { status: 413, docs: API, description: "The HTML is too large: at most 500 KB for a broadcast and 5 MB for an email." },
  text_too_large: { status: 413, docs: API, description: "The plain-text part is larger than 1 MB." },
  subject_too_long: { status: 400, docs: API, description: "The subject is longer than 2,000 characters; shorten it." },
  preview_text_too_long: { status: 400, docs: API, description: "`previewText` is longer than 2,000 characters; shorten it." },
  // Workspaces, keys and senders (the admin CLI and the bootstrap file)
  workspace_not_found: { status: 404, docs: WORKSPACES, description: "No workspace with this id exists. `npx mailroom workspace list` lists them; `npx mailroom workspace create --id <id> --name <name>` creates one with the id you choose." },
  workspace_exists: { status: 409, docs: WORKSPACES, description: "A workspace with this id already exists; `npx mailroom workspace update <id>` changes it." },
  invalid_scope: { status: 400, docs: WORKSPACES, description: "An API key scope must be one of the known scopes the message lists (`api_user`, `api_read`, `admin`)." },
  api_key_exists: { status: 409, docs: WORKSPACES, description: "This API key already exists (a bootstrap file may not give one key to two workspaces)." },
  invalid_domain: { status: 400, docs: WORKSPACES, description: "The value is not a valid domain name (e.g. `acme.com`, without `http://` or an address)." },
  domain_exists: { status: 409, docs: WORKSPACES, description: "The domain was already added to this workspace; `npx mailroom -w <workspace-id> domain records <domain>` shows its records and `domain verify <domain>` checks them." },
  domain_not_found: { status: 404, docs: WORKSPACES, description: "The domain was not added to this workspace; `npx mailroom -w <workspace-id> domain add <domain>` adds it." },
  domain_not_verified: {
    status: 409,
    docs: WORKSPACES,
    description: "The domain's DNS records are not verified yet, so what is reported about it (DMARC aggregate reports) is not shown: until its DKIM record carries this workspace's key, the domain is not shown to be the workspace's.",
    fix: "Publish the records `npx mailroom -w <workspace-id> domain records <domain>` prints, then `npx mailroom -w <workspace-id> domain verify <domain>`.",
  },
  invalid_bootstrap: { status: 400, docs: WORKSPACES, description: "The MAILROOM_BOOTSTRAP document is not valid JSON or does not fit its shape (`deploy/bootstrap.example.json` is one); the message names the first problems. Nothing was loaded." },
  // Team, sign-in and audit log (issue 32, DESIGN §9.9)
  member_not_found: { status: 404, docs: ROLES, description: "No member with this id or address in the workspace. `npx mailroom -w <workspace-id> member list` (or the console's Team page) lists them." },
  member_exists: { status: 409, docs: ROLES, description: "This address already is an active member of the workspace; change its role instead (`npx mailroom member role <workspace-id> <email> <ROLE>`)." },
  member_not_active: { status: 403, docs: ROLES, description: "The address that signed in is no active member of a workspace (never invited, invitation not accepted yet, or removed). An owner or admin invites it: `npx mailroom member invite <workspace-id> <email>`." },
  last_owner: { status: 409, docs: ROLES, description: "A workspace keeps at least one OWNER: the last one cannot be demoted or removed. Make another member OWNER first." },
  role_above_caller: { status: 403, docs: ROLES, description: "A member may not grant, or change a member who has, a role above its own (an ADMIN cannot make or touch an OWNER). Ask an owner." },
  invitation_invalid: { status: 401, docs: SIGN_IN, description: "The invitation link is not valid: it was altered, already accepted, replaced by a newer invitation, or older than 72 hours. Ask an owner or admin to invite the address again." },
  magic_link_invalid: { status: 401, docs: SIGN_IN, description: "The sign-in link is not valid: it was altered, already used (each link signs in once), or older than 15 minutes. Ask for a new link on the sign-in page." },
  oidc_subject_mismatch: { status: 403, docs: SIGN_IN, description: "This member signed in before with another OpenID Connect identity (issuer and subject); an account at the provider that merely has the same address is refused. Sign in with the first identity, or have an owner remove and re-invite the member." },
  session_invalid: { status: 401, docs: SIGN_IN, description: "The console session expired, was signed out (also by \"sign out everywhere\" or the member's removal) or was rotated more than a minute ago. Sign in again." },
  session_not_found: { status: 404, docs: SIGN_IN, description: "No session with this id for the member; the Sessions page lists the current ones." },
  invalid_page_token: { status: 400, docs: AUDIT_LOG, description: "The audit log's page token is not one a previous page returned; start again without it." },
  invalid_actor: { status: 400, docs: AUDIT_LOG, description: "An audit-log `actor` filter is `<kind>:<id>` with kind `key`, `member`, `cli` or `system` (e.g. `key:key_…`, `member:mbr_…`)." },
  // The gateway's own refusals
  insufficient_role: {
    status: 403,
    docs: ROLES,
    description: "The caller's role is below the one this endpoint or console page needs (OWNER > ADMIN > EDITOR > VIEWER; the message names both). An API key's role is the lower of its own and its owner member's. Ask an owner or admin for the role, or use a key or account that has it.",
    fix: "An owner or admin changes a member's role: `npx mailroom member role <workspace-id> <email> <ROLE>`.",
  },
  forbidden: { status: 403, description: "Not allowed here: a VIEWER key in the console (it only looks), or a resubscribe posted from another site than the manage page." },
  conflict: { status: 409, description: "The resource is not in a state that allows this request (the message says which); read it again before retrying." },
  uri_too_long: { status: 414, docs: API, description: "A path parameter is longer than the gateway accepts (4,096 characters)." },
  header_too_large: { status: 431, docs: API, description: "The request line and headers exceed 16 KB. Send less in headers (or in the URL)." },
  too_many_imports: { status: 429, docs: API, description: "Too many contact imports are running on this server at once. Try again in a few minutes." },
  // Relay provider event webhooks (/webhooks/{provider}, DESIGN §9.7)
  provider_webhook_not_configured: {
    status: 404,
    docs: PROVIDER_WEBHOOKS,
    description: "This server takes no event webhooks from this relay provider: nothing was recorded.",
    fix: "The server's operator turns a provider on with its variable on the inbound unit: `MAILROOM_SES_TOPIC_ARNS`, `MAILROOM_POSTMARK_WEBHOOK_AUTH`, `MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY` or `MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY`.",
  },
  provider_webhook_unauthenticated: {
    status: 401,
    docs: PROVIDER_WEBHOOKS,
    description: "The provider webhook's signature (SES via SNS, SendGrid, Mailgun) does not verify, its SNS topic is not one the server takes, or its HTTP basic auth (Postmark) is missing or wrong; the message says which. Nothing was recorded. Check the key or credentials configured at the provider against the server's.",
  },
  invalid_provider_webhook: { status: 400, docs: PROVIDER_WEBHOOKS, description: "The body is not what the provider sends (not JSON, not an SNS message, an event without its fields); the message says what is wrong. Nothing was recorded." },
  // Receiving email (DESIGN §10.4)
  inbound_domain_not_found: { status: 404, docs: RECEIVING, description: "No inbound domain with this id exists in the workspace. `GET /v1/inbound/domains` lists them." },
  invalid_inbound_domain: { status: 400, docs: RECEIVING, description: "Not a domain name Mailroom can receive mail for: a name of at least two labels (`in.acme.com`), not the server's own inbound host or bounce domain. The message says which." },
  inbound_domain_exists: { status: 409, docs: RECEIVING, description: "The domain is already an inbound domain of this workspace. `GET /v1/inbound/domains` lists them." },
  inbound_domain_taken: { status: 409, docs: RECEIVING, description: "The domain is an inbound domain of another workspace on this server; it receives mail for one workspace only." },
  invalid_inbound_rule: { status: 400, docs: RECEIVING, description: "A rule is invalid: a `match` that is not `*`, a local part or `local+*`; an unknown `action`; a `forwardTo` missing for `forward`, not an address, given with another action, or at an inbound domain of this server (a loop); or the domain already holds its 100 rules. The message says which." },
  inbound_rule_not_found: { status: 404, docs: RECEIVING, description: "The inbound domain has no rule with this id. `GET /v1/inbound/domains/{id}/rules` lists them." },
  inbound_rule_exists: { status: 409, docs: RECEIVING, description: "The inbound domain has a rule with this `match` already; delete it first to change what it does." },
  received_email_not_found: { status: 404, docs: RECEIVING, description: "No received email with this id exists in the workspace (received mail is kept `MAILROOM_INBOUND_RETENTION_DAYS`, 30 days by default)." },
  received_attachment_not_found: { status: 404, docs: RECEIVING, description: "The received email has no attachment with this id (its `attachments` list them), or its file is no longer kept." },
  // Development mail (/dev/mail)
  invalid_id: { status: 400, docs: OPERATIONS, description: "The id is not one of a captured message (`cap_…`)." },
  captured_message_not_found: { status: 404, docs: OPERATIONS, description: "No captured message with this id (captured mail is kept in the data directory; with `MAILROOM_SMTP_URL` set nothing is captured)." },
};

/** A code as one URL path segment: `campaigns/invalid_from_email` -> `campaigns.invalid_from_email`. */
export const docsSlug = (code: string) => code.replaceAll("/", ".");
/** The code a documentation path segment names (either form). */
export const codeOfDocsSlug = (slug: string) => slug.replaceAll(".", "/");

export type PublicErrorBody = {
  statusCode: number;
  error: string;
  message: string;
  code?: string;
  docsUrl?: string;
} & Record<string, unknown>;

export interface PublicErrorInit {
  code: string;
  message: string;
  /** Used when the code is not in the table. */
  status?: number;
  allowedEmails?: string[];
  allowedDomains?: string[];
  unknownVariables?: string[];
  extra?: Record<string, unknown>;
}

/** The table's row of a code (never an Object.prototype member). */
export const ruleOf = (code: string | undefined): ErrorRule | undefined =>
  code !== undefined && Object.hasOwn(ERROR_TABLE, code) ? ERROR_TABLE[code] : undefined;

/** In a `fix`, the caller's workspace id (filled in by `forWorkspace` when the request names one). */
export const WORKSPACE_PLACEHOLDER = "<workspace-id>";

/** The message, followed by the setting or command that lifts the refusal when the table names one. */
function withFix(message: string, fix: string | undefined): string {
  if (!fix) return message;
  const text = message.trimEnd();
  return text ? `${text}${/[.!?:]$/.test(text) ? "" : "."} ${fix}` : fix;
}

/**
 * The public body of an error. `docsBase` is where the error pages are served
 * (`deps.errorDocsUrl`, MAILROOM_DOCS_URL): `docsUrl` is `<docsBase>/<code>`.
 */
export function publicErrorBody(init: PublicErrorInit, docsBase?: string): PublicErrorBody {
  const rule: Partial<ErrorRule> & { status: number } = ruleOf(init.code) ?? { status: init.status ?? 400 };
  const body: PublicErrorBody = {
    statusCode: rule.status,
    error: STATUS_CODES[rule.status] ?? "Error",
    code: init.code,
    message: withFix(init.message, rule.fix),
  };
  if (init.code === "invalid_from" || init.code === "campaigns/invalid_from_email" || init.allowedEmails?.length || init.allowedDomains?.length) {
    body.allowedEmails = init.allowedEmails ?? [];
    body.allowedDomains = init.allowedDomains ?? [];
  }
  if (init.unknownVariables?.length) body.unknownVariables = init.unknownVariables;
  if (init.extra) Object.assign(body, init.extra);
  return docsBase ? withDocsUrl(body, docsBase) : body;
}

/** Adds `docsUrl`: the page of the body's code (`<docsBase>/<code>`), or the index of every code for one the table lacks. */
export function withDocsUrl(body: PublicErrorBody, docsBase: string): PublicErrorBody {
  if (!body.docsUrl) body.docsUrl = ruleOf(body.code) ? `${docsBase}/${docsSlug(body.code!)}` : docsBase;
  return body;
}

/** Names the caller's workspace in the commands a message suggests (`npx mailroom -w <workspace-id> …`). */
export function forWorkspace(body: PublicErrorBody, workspaceId: string | undefined): PublicErrorBody {
  if (workspaceId && body.message.includes(WORKSPACE_PLACEHOLDER)) body.message = body.message.replaceAll(WORKSPACE_PLACEHOLDER, workspaceId);
  return body;
}

/** Body for an ErrorInfo that crossed RPC from a service. */
export function bodyFromErrorInfo(info: ErrorInfo, docsBase?: string): PublicErrorBody {
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info.extra)) {
    try {
      extra[k] = JSON.parse(v);
    } catch {
      extra[k] = v;
    }
  }
  return publicErrorBody({
    code: info.code,
    message: info.message,
    status: info.httpStatus || undefined,
    allowedEmails: info.allowedEmails,
    allowedDomains: info.allowedDomains,
    unknownVariables: info.unknownVariables,
    extra: Object.keys(extra).length ? extra : undefined,
  }, docsBase);
}

/** Maps any error from an RPC call, our own code or fastify itself to a public body. */
export function bodyFromError(err: unknown): PublicErrorBody {
  const info = errorInfoOf(err);
  if (info) return bodyFromErrorInfo(info);
  if (err instanceof ConnectError) return bodyFromConnectCode(err);
  const fastifyError = err as Partial<FastifyError> | undefined;
  if (fastifyError && typeof fastifyError === "object" && typeof fastifyError.statusCode === "number") return bodyFromFastifyError(fastifyError);
  return publicErrorBody({ code: "internal", message: "Internal error" });
}

/** A ConnectError without ErrorInfo (transport failures, other services' plain codes). */
function bodyFromConnectCode(err: ConnectError): PublicErrorBody {
  // Includes connect-node's Aborted for a connection reset mid-call and a write to a dead
  // peer's socket (EPIPE, reported as Internal): kill -9 in test/hostile answered 500 here.
  if (isNeighbourDown(err)) return publicErrorBody({ code: "service_unavailable", message: "A backing service is unavailable; try again shortly." });
  switch (err.code) {
    case Code.NotFound:
      return publicErrorBody({ code: "not_found", message: err.rawMessage });
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return publicErrorBody({ code: "invalid_request", message: err.rawMessage });
    case Code.AlreadyExists:
      return publicErrorBody({ code: "conflict", status: 409, message: err.rawMessage });
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return publicErrorBody({ code: "unauthorized", message: "Invalid API key" });
    case Code.ResourceExhausted:
      return publicErrorBody({ code: "rate_limited", message: err.rawMessage });
    default:
      return publicErrorBody({ code: "internal", message: "Internal error" });
  }
}

/** Malformed JSON, wrong content type, oversize bodies, the rate limit: a clear 4xx, never a 500. */
function bodyFromFastifyError(err: Partial<FastifyError>): PublicErrorBody {
  const status = err.statusCode ?? 500;
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return publicErrorBody({ code: "unsupported_media_type", message: "Content-Type must be application/json" });
  }
  if (isBodyTooLarge(err)) {
    return publicErrorBody({ code: "payload_too_large", message: "Request body too large: at most 5 MB of HTML and 10 MB of attachments per email, and 25 MB per batch request" });
  }
  if (status === 429) return publicErrorBody({ code: "rate_limited", message: err.message ?? "" });
  if (status >= 400 && status < 500) {
    const invalidJson = err instanceof SyntaxError || err.code?.startsWith("FST_ERR_CTP");
    return publicErrorBody({
      code: invalidJson ? "invalid_json" : "invalid_request",
      message: invalidJson ? `Malformed JSON body: ${err.message}` : (err.message ?? ""),
    });
  }
  return publicErrorBody({ code: "internal", message: "Internal error" });
}

/** Router-level errors (bad URL encoding, over-long path parameters), before any route runs. */
export function bodyFromRouterError(err: Partial<FastifyError>): PublicErrorBody {
  const tooLong = err.code === "FST_ERR_PARAM_TOO_LONG" || err.statusCode === 414;
  return publicErrorBody(tooLong
    ? { code: "uri_too_long", status: 414, message: "A path parameter is too long" }
    : { code: "invalid_request", message: `Malformed request URL: ${err.message}` });
}

/**
 * The raw HTTP answer to a request Node's parser refused before fastify saw it (Node's own
 * answer lacks `code`): 431 for headers or a URL beyond the 16 KB header limit, else 400.
 */
export function clientErrorResponse(err: Error & { code?: string }, docsBase: string): string {
  const body = err.code === "HPE_HEADER_OVERFLOW"
    ? publicErrorBody({ code: "header_too_large", status: 431, message: "The request line and headers exceed 16 KB" }, docsBase)
    : publicErrorBody({ code: "invalid_request", status: 400, message: "Malformed HTTP request" }, docsBase);
  const json = JSON.stringify(body);
  return `HTTP/1.1 ${body.statusCode} ${body.error}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * Error codes this route answers under another code, with the message only: on the
     * template resource a missing template is a plain 404 `not_found`, while on sends it is
     * the table's 400 `template_not_found`.
     */
    errorCodes?: Record<string, string>;
  }
}

/**
 * The gateway's one error handler (fastify's setErrorHandler): every error a route, hook,
 * parser or plugin throws becomes its public body here, and only here.
 */
export function handleError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const info = errorInfoOf(err);
  const alias = info && request.routeOptions.config?.errorCodes?.[info.code];
  const body = alias ? publicErrorBody({ code: alias, message: info.message }) : bodyFromError(err);
  // A code the route answers under an alias is one of its expected answers (a provider
  // webhook's "not recorded yet, retry"): no outage, no stack.
  if (body.statusCode >= 500 && alias) request.log.info({ code: info.code, status: body.statusCode, message: info.message }, "request answered: retry later");
  else if (body.statusCode >= 500) request.log.error({ err }, "request failed");
  return sendError(reply, body);
}

/** Fastify's refusal of a body over the route's bodyLimit. */
export function isBodyTooLarge(err: unknown): boolean {
  const e = err as Partial<FastifyError> | undefined;
  return !!e && typeof e === "object" && (e.code === "FST_ERR_CTP_BODY_TOO_LARGE" || e.statusCode === 413) && !errorInfoOf(err);
}

/** The 413 of an endpoint whose limit is its own (not the email sizes the default message names). */
export function bodyTooLargeFor(endpoint: string, limitBytes: number): PublicErrorBody {
  const mb = limitBytes / (1024 * 1024);
  return publicErrorBody({ code: "payload_too_large", message: `Request body too large: ${endpoint} takes at most ${Number.isInteger(mb) ? `${mb} MB` : `${limitBytes} bytes`} (${limitBytes.toLocaleString("en")} bytes)` });
}

/** The gateway's own refusal of a request, thrown like any domain error and answered by handleError. */
export function refusal(init: PublicErrorInit): AppError {
  return appError({
    code: init.code,
    httpStatus: ruleOf(init.code)?.status ?? init.status ?? 400,
    message: init.message,
    allowedEmails: init.allowedEmails,
    allowedDomains: init.allowedDomains,
    unknownVariables: init.unknownVariables,
    extra: init.extra && Object.fromEntries(Object.entries(init.extra).map(([k, v]) => [k, JSON.stringify(v)])),
  });
}

declare module "fastify" {
  interface FastifyInstance {
    /** Base URL of the error documentation pages (`GatewayDeps.errorDocsUrl`, MAILROOM_DOCS_URL). */
    errorDocsBase: string;
  }
}

export function sendError(reply: FastifyReply, body: PublicErrorBody): FastifyReply {
  forWorkspace(body, reply.request.auth?.workspaceId);
  return reply.code(body.statusCode).type("application/json").send(withDocsUrl(body, reply.server.errorDocsBase));
}

// --- the public error bodies as schemas (for the generated OpenAPI document) ---------------

const message = z.string().meta({ description: "What went wrong, for a human." });
const docsUrl = z.url().meta({ description: "Link to the documentation of this error (every error body has one)." });
const addresses = z.array(z.string());

export const invalidPayloadErrorSchema = z
  .strictObject({ statusCode: z.literal(400), error: z.literal("Bad Request"), code: z.literal("invalid_payload"), message, docsUrl })
  .meta({ id: "InvalidPayloadError", description: "Spec body (plus `code`): the payload matches neither the raw form nor the templated form." });

export const invalidFromErrorSchema = z
  .strictObject({
    statusCode: z.literal(400),
    error: z.literal("Bad Request"),
    code: z.literal("invalid_from"),
    message,
    docsUrl,
    allowedEmails: addresses.meta({ description: "Verified sender addresses of the workspace." }),
    allowedDomains: addresses.meta({ description: "Verified sending domains of the workspace." }),
  })
  .meta({ id: "InvalidFromError", description: "Spec body (plus `code`): `from` is not a verified address or on a verified domain." });

export const unauthorizedErrorSchema = z
  .strictObject({ statusCode: z.literal(401), error: z.literal("Unauthorized"), code: z.literal("unauthorized"), message, docsUrl })
  .meta({ id: "UnauthorizedError", description: "Spec body (plus `code`): missing, invalid or under-scoped API key (required scope `api_user`)." });

export const monthlyLimitErrorSchema = z
  .strictObject({ statusCode: z.literal(403), error: z.literal("Forbidden"), code: z.literal("monthly_limit_reached"), message, docsUrl })
  .meta({ id: "MonthlyLimitError", description: "Spec body (plus `code`): the monthly sending limit of the plan is reached." });

/** The fields of every coded error body, also the shape of a batch's failed items. */
export const codedErrorFields = {
  statusCode: z.number().int().min(400).max(599).meta({ description: "The HTTP status, repeated." }),
  error: z.string().meta({ description: "The HTTP reason phrase, e.g. `Bad Request`." }),
  message,
  docsUrl,
  allowedEmails: addresses.optional(),
  allowedDomains: addresses.optional(),
};

export const apiErrorSchema = z
  .looseObject({
    ...codedErrorFields,
    code: z.string().regex(/^[a-z_/]+$/).meta({ examples: ["invalid_request", "email_not_found", "idempotency_key_reused"] }),
  })
  .meta({
    id: "ApiError",
    description: "Every other error: the email-style body with its machine-readable `code`, `docsUrl` (its page at `/docs/errors/{code}`) and, per code, extra fields (`allowedEmails`/`allowedDomains`, `template`, …). A refusal that a setting lifts names the setting or the admin CLI command in `message`.",
  });

/** zod's first complaint as a 400 body (same shape as every other gateway error). */
export function invalid(error: z.ZodError): PublicErrorInit {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
  return { code: "invalid_request", message: `${where}${issue?.message ?? "invalid request"}` };
}
