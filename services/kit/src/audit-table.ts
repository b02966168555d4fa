/**
 * Every RPC of every service, reviewed one by one for the audit log (DESIGN §9.9): a read
 * (never recorded), a change recorded as an action on a resource, or a change deliberately
 * not recorded, with the reason. audit-table.test.ts fails when a service gains an RPC
 * that has no row here, or a row names an RPC that no longer exists.
 *
 * Only calls carrying an actor (x-mailroom-actor: the gateway, the console, the CLI) are
 * recorded at all; see audit.ts.
 */
import { READ, type AuditTable, type AuditedRpc, type FieldPath } from "./audit.js";

const change = (action: string, resource: string, id: FieldPath[], more: Partial<AuditedRpc> = {}): AuditedRpc => ({ action, resource, id, ...more });

const SEND_BOOKKEEPING = { notAudited: "send-path bookkeeping called by the email and broadcast units; the send itself is recorded (the email's sentBy, email.send_batch, broadcast.schedule)" };
const PUBLIC_SIGNUP = { notAudited: "a public visitor's signup (no actor); the contact records its source and events" };

export const AUDIT_TABLE: AuditTable = {
  // Automations
  "mailroom.automation.v1.AutomationService/CreateAutomation": change("automation.create", "automation", ["res.automation.id"]),
  "mailroom.automation.v1.AutomationService/GetAutomation": READ,
  "mailroom.automation.v1.AutomationService/ListAutomations": READ,
  "mailroom.automation.v1.AutomationService/UpdateAutomation": change("automation.update", "automation", ["req.automationId"]),
  "mailroom.automation.v1.AutomationService/DeleteAutomation": change("automation.delete", "automation", ["req.automationId"]),
  "mailroom.automation.v1.AutomationService/ActivateAutomation": change("automation.activate", "automation", ["req.automationId"]),
  "mailroom.automation.v1.AutomationService/PauseAutomation": change("automation.pause", "automation", ["req.automationId"]),
  "mailroom.automation.v1.AutomationService/ListRuns": READ,
  "mailroom.automation.v1.AutomationService/GetAutomationStats": READ,

  // Broadcasts
  "mailroom.broadcast.v1.BroadcastService/CreateBroadcast": change("broadcast.create", "broadcast", ["res.broadcast.id"]),
  "mailroom.broadcast.v1.BroadcastService/GetBroadcast": READ,
  "mailroom.broadcast.v1.BroadcastService/ListBroadcasts": READ,
  "mailroom.broadcast.v1.BroadcastService/SendTest": change("broadcast.send_test", "broadcast", ["req.id"]),
  "mailroom.broadcast.v1.BroadcastService/ScheduleBroadcast": change("broadcast.schedule", "broadcast", ["req.id"]),
  "mailroom.broadcast.v1.BroadcastService/CancelBroadcast": change("broadcast.cancel", "broadcast", ["req.id"]),
  "mailroom.broadcast.v1.BroadcastService/UpdateBroadcast": change("broadcast.update", "broadcast", ["req.id"]),
  "mailroom.broadcast.v1.BroadcastService/PreviewBroadcast": READ,
  "mailroom.broadcast.v1.BroadcastService/GetBroadcastTimeline": READ,
  "mailroom.broadcast.v1.BroadcastService/GetBroadcastTopic": READ,
  "mailroom.broadcast.v1.BroadcastService/ChooseAbWinner": change("broadcast.choose_winner", "broadcast", ["req.id"]),
  // Pre-send checks (DESIGN §10.5): they fetch links and score, and change nothing.
  "mailroom.broadcast.v1.PreSendCheckService/CheckBroadcast": READ,
  "mailroom.broadcast.v1.PreSendCheckService/CheckContent": READ,

  // Delivery (operator RPCs on the internal network)
  "mailroom.delivery.v1.DeliveryService/GetStatus": READ,
  "mailroom.delivery.v1.DeliveryService/PauseBroadcast": { notAudited: "delivery's internal pause switch: names no workspace, and neither the gateway nor the CLI calls it" },
  "mailroom.delivery.v1.DeliveryService/ResumeBroadcast": { notAudited: "delivery's internal pause switch: names no workspace, and neither the gateway nor the CLI calls it" },
  "mailroom.delivery.v1.DeliveryService/SetWorkspaceRate": change("workspace.rate_update", "workspace", ["req.workspaceId"]),
  "mailroom.delivery.v1.DeliveryService/ListCapturedMessages": READ,
  "mailroom.delivery.v1.DeliveryService/GetCapturedMessage": READ,
  "mailroom.delivery.v1.DeliveryService/ClearCapturedMessages": { notAudited: "development inbox only (capture mode, loopback gateway): names no workspace, forgets locally captured test mail" },

  // Accounts: workspaces, keys, senders, members, usage
  "mailroom.accounts.v1.AccountsService/Authenticate": READ,
  "mailroom.accounts.v1.AccountsService/CreateWorkspace": change("workspace.create", "workspace", ["res.workspace.id"], { workspace: "res.workspace.id" }),
  "mailroom.accounts.v1.AccountsService/GetWorkspace": READ,
  "mailroom.accounts.v1.AccountsService/UpdateWorkspace": change("workspace.update", "workspace", ["req.workspaceId"]),
  "mailroom.accounts.v1.AccountsService/ListWorkspaces": READ,
  // One entry per workspace the file configured; the file (keys, secrets) is never copied.
  "mailroom.accounts.v1.AccountsService/LoadBootstrap": change("workspace.bootstrap", "workspace", [], { workspace: "res.workspaceIds", namesOnly: true }),
  "mailroom.accounts.v1.AccountsService/SetWorkspaceSendingPaused": change("workspace.sending_pause", "workspace", ["req.workspaceId"]),
  "mailroom.accounts.v1.AccountsService/SetWorkspaceBanned": change("workspace.ban", "workspace", ["req.workspaceId"]),
  "mailroom.accounts.v1.AccountsService/CreateApiKey": change("api_key.create", "api_key", ["res.apiKey.id"]),
  "mailroom.accounts.v1.AccountsService/ListApiKeys": READ,
  "mailroom.accounts.v1.AccountsService/RevokeApiKey": change("api_key.revoke", "api_key", ["req.keyId"]),
  "mailroom.accounts.v1.AccountsService/GetApiKey": READ,
  "mailroom.accounts.v1.AccountsService/UpdateApiKey": change("api_key.update", "api_key", ["req.keyId"]),
  "mailroom.accounts.v1.AccountsService/AddVerifiedEmail": change("sender.add_email", "sender", ["req.email"]),
  "mailroom.accounts.v1.AccountsService/AddDomain": change("domain.create", "domain", ["req.domain"]),
  "mailroom.accounts.v1.AccountsService/GetDomain": READ,
  // Records the DNS check's outcome on the domain (verified or the error).
  "mailroom.accounts.v1.AccountsService/VerifyDomain": change("domain.verify", "domain", ["req.domain"]),
  "mailroom.accounts.v1.AccountsService/ListSenders": READ,
  "mailroom.accounts.v1.AccountsService/MarkVerified": change("sender.mark_verified", "sender", ["req.domain", "req.email"]),
  "mailroom.accounts.v1.AccountsService/CheckDirectSending": READ,
  "mailroom.accounts.v1.AccountsService/CheckSender": READ,
  "mailroom.accounts.v1.AccountsService/AddMember": change("member.add", "member", ["req.email"]),
  // Members are named by id (mbr_…) however the caller named them (the CLI takes addresses),
  // so one member's entries share one resource; by address only when there was no such member.
  "mailroom.accounts.v1.AccountsService/RemoveMember": change("member.remove", "member", ["res.memberId", "req.email"]),
  "mailroom.accounts.v1.AccountsService/ListMembers": READ,
  "mailroom.accounts.v1.AccountsService/ReserveUsage": SEND_BOOKKEEPING,
  "mailroom.accounts.v1.AccountsService/ReleaseUsage": SEND_BOOKKEEPING,
  "mailroom.accounts.v1.AccountsService/GetUsage": READ,

  // Accounts: templates and their versions
  "mailroom.accounts.v1.TemplateService/CreateTemplate": change("template.create", "template", ["res.template.id"]),
  "mailroom.accounts.v1.TemplateService/GetTemplate": READ,
  "mailroom.accounts.v1.TemplateService/UpdateTemplate": change("template.update", "template", ["res.template.id", "req.template.name"]),
  "mailroom.accounts.v1.TemplateService/DeleteTemplate": change("template.delete", "template", ["req.name"]),
  "mailroom.accounts.v1.TemplateService/ListTemplates": READ,
  "mailroom.accounts.v1.TemplateService/RenderTemplate": READ,
  "mailroom.accounts.v1.TemplateService/ListTemplateVersions": READ,
  "mailroom.accounts.v1.TemplateService/RestoreTemplateVersion": change("template.restore", "template", ["res.template.id", "req.name"]),

  // Accounts: the team (members with roles, console sign-in, sessions, the audit log)
  "mailroom.accounts.v1.TeamService/InviteMember": change("member.invite", "member", ["res.member.id"]),
  // Made by someone not yet a member: the member who accepted is the actor.
  "mailroom.accounts.v1.TeamService/AcceptInvitation": change("member.accept", "member", ["res.member.id"], { workspace: "res.workspaceId", memberActor: "res.member.id" }),
  "mailroom.accounts.v1.TeamService/ListMembers": READ,
  "mailroom.accounts.v1.TeamService/UpdateMemberRole": change("member.role_change", "member", ["res.member.id", "req.memberId"]),
  "mailroom.accounts.v1.TeamService/RemoveTeamMember": change("member.remove", "member", ["res.member.id", "req.memberId"]),
  "mailroom.accounts.v1.TeamService/StartMagicLink": { notAudited: "an unauthenticated visitor asks for a link (answered alike for anyone); the sign-in it leads to is recorded (session.sign_in)" },
  "mailroom.accounts.v1.TeamService/RedeemMagicLink": change("session.sign_in", "session", ["res.session.id"], { workspace: "res.session.workspaceId", memberActor: "res.session.memberId" }),
  "mailroom.accounts.v1.TeamService/SignInWithOidc": change("session.sign_in", "session", ["res.session.id"], { workspace: "res.session.workspaceId", memberActor: "res.session.memberId" }),
  "mailroom.accounts.v1.TeamService/GetSession": { notAudited: "looks the session up on every console request; its rotation and last-seen time are bookkeeping" },
  "mailroom.accounts.v1.TeamService/ListSessions": READ,
  "mailroom.accounts.v1.TeamService/RevokeSession": change("session.revoke", "session", ["req.sessionId"]),
  "mailroom.accounts.v1.TeamService/RevokeAllSessions": change("session.revoke_all", "member", ["req.memberId"]),
  "mailroom.accounts.v1.TeamService/ListAuditLog": READ,

  // Audience: contacts, their properties and events, suppressions
  "mailroom.audience.v1.ContactService/CreateContactProperty": change("contact_property.create", "contact_property", ["res.property.id"]),
  "mailroom.audience.v1.ContactService/ListContactProperties": READ,
  "mailroom.audience.v1.ContactService/UpdateContactProperty": change("contact_property.update", "contact_property", ["req.propertyId"]),
  "mailroom.audience.v1.ContactService/CreateContact": change("contact.create", "contact", ["res.contact.id"]),
  "mailroom.audience.v1.ContactService/UpsertContact": change("contact.upsert", "contact", ["res.contact.id"]),
  "mailroom.audience.v1.ContactService/BatchUpsertContacts": change("contact.import", "contact", []),
  "mailroom.audience.v1.ContactService/GetContact": READ,
  "mailroom.audience.v1.ContactService/UpdateContact": change("contact.update", "contact", ["req.contactId", "res.contact.id"]),
  "mailroom.audience.v1.ContactService/DeleteContact": change("contact.delete", "contact", ["res.contact.id", "req.contactId"]),
  "mailroom.audience.v1.ContactService/ListContacts": READ,
  "mailroom.audience.v1.ContactService/StreamContacts": READ,
  // POST /v1/events: the batch is recorded (how many events), not each event's data.
  "mailroom.audience.v1.ContactService/RecordContactEvents": change("contact_event.record", "contact_event", [], { namesOnly: true }),
  "mailroom.audience.v1.ContactService/ListContactEvents": READ,
  "mailroom.audience.v1.ContactService/AddSuppression": change("suppression.add", "suppression", ["req.email", "req.domain"]),
  "mailroom.audience.v1.ContactService/RemoveSuppression": change("suppression.remove", "suppression", ["req.email", "req.domain"]),
  "mailroom.audience.v1.ContactService/CheckSuppression": READ,
  "mailroom.audience.v1.ContactService/ListSuppressions": READ,
  // An import's batch is one entry naming its file (label), not each address.
  "mailroom.audience.v1.ContactService/AddSuppressions": change("suppression.import", "suppression", ["req.label"], { namesOnly: true }),
  // Like StreamContacts (the contacts export): reads are not recorded.
  "mailroom.audience.v1.ContactService/ExportSuppressions": READ,
  "mailroom.audience.v1.ContactService/ReserveSendable": SEND_BOOKKEEPING,
  "mailroom.audience.v1.ContactService/LoadContactBootstrap": { notAudited: "the accounts unit's LoadBootstrap hands the document's contacts over; that call is recorded (workspace.bootstrap)" },

  // Audience: segments and audiences
  "mailroom.audience.v1.AudienceService/CreateSegment": change("segment.create", "segment", ["res.segment.id"]),
  "mailroom.audience.v1.AudienceService/GetSegment": READ,
  "mailroom.audience.v1.AudienceService/ListSegments": READ,
  "mailroom.audience.v1.AudienceService/UpdateSegment": change("segment.update", "segment", ["req.segmentId"]),
  "mailroom.audience.v1.AudienceService/DeleteSegment": change("segment.delete", "segment", ["req.segmentId"]),
  "mailroom.audience.v1.AudienceService/CountSegment": READ,
  "mailroom.audience.v1.AudienceService/ListSegmentContacts": READ,
  "mailroom.audience.v1.AudienceService/CountAudience": READ,
  "mailroom.audience.v1.AudienceService/StreamAudience": READ,
  "mailroom.audience.v1.AudienceService/ListContactEngagement": READ,
  "mailroom.audience.v1.AudienceService/PlanBestHours": READ,

  // Audience: signup forms
  "mailroom.audience.v1.FormService/CreateForm": change("form.create", "form", ["res.form.id"]),
  "mailroom.audience.v1.FormService/GetForm": READ,
  "mailroom.audience.v1.FormService/ListForms": READ,
  "mailroom.audience.v1.FormService/UpdateForm": change("form.update", "form", ["req.id"]),
  "mailroom.audience.v1.FormService/DeleteForm": change("form.delete", "form", ["req.id"]),
  "mailroom.audience.v1.FormService/GetPublicForm": READ,
  "mailroom.audience.v1.FormService/SubmitForm": PUBLIC_SIGNUP,
  "mailroom.audience.v1.FormService/ConfirmSignup": PUBLIC_SIGNUP,

  // Audience: groups
  "mailroom.audience.v1.GroupService/CreateGroup": change("group.create", "group", ["res.group.id"]),
  "mailroom.audience.v1.GroupService/GetGroup": READ,
  "mailroom.audience.v1.GroupService/ListGroups": READ,
  "mailroom.audience.v1.GroupService/UpdateGroup": change("group.update", "group", ["req.groupId"]),
  "mailroom.audience.v1.GroupService/DeleteGroup": change("group.delete", "group", ["req.groupId"]),
  "mailroom.audience.v1.GroupService/AddGroupContact": change("group.add_contact", "group", ["req.groupId"]),
  "mailroom.audience.v1.GroupService/RemoveGroupContact": change("group.remove_contact", "group", ["req.groupId"]),
  "mailroom.audience.v1.GroupService/ListGroupContacts": READ,
  "mailroom.audience.v1.GroupService/ListContactGroups": READ,

  // Audience: topics
  "mailroom.audience.v1.TopicService/CreateTopic": change("topic.create", "topic", ["res.topic.id"]),
  "mailroom.audience.v1.TopicService/GetTopic": READ,
  "mailroom.audience.v1.TopicService/UpdateTopic": change("topic.update", "topic", ["req.topicId"]),
  "mailroom.audience.v1.TopicService/DeleteTopic": change("topic.delete", "topic", ["req.topicId"]),
  "mailroom.audience.v1.TopicService/ListTopics": READ,
  "mailroom.audience.v1.TopicService/GetContactTopics": READ,
  "mailroom.audience.v1.TopicService/SetContactTopics": change("contact.topics_update", "contact", ["res.contactId", "req.contact.contactId"]),

  // Email: a send is recorded by its id; recipients, subject and content are not copied.
  // Sending is not audited (DESIGN §10.7): each email records who sent it (sentBy). An API
  // batch is one entry; single sends the gateway coalesced into one call (independent) are none.
  "mailroom.email.v1.EmailService/SendEmail": { notAudited: "a send: the email records who sent it (sentBy)" },
  "mailroom.email.v1.EmailService/SendBatch": change("email.send_batch", "email", [], { namesOnly: true, unless: "req.independent" }),
  "mailroom.email.v1.EmailService/GetEmail": READ,
  "mailroom.email.v1.EmailService/CancelEmail": change("email.cancel", "email", ["req.id"]),
  "mailroom.email.v1.EmailService/GetEmailContent": READ,
  "mailroom.email.v1.EmailService/GetEmailAttachment": READ,
  "mailroom.email.v1.EmailService/GetStats": READ,
  "mailroom.email.v1.EmailService/ListEmails": READ,
  // Erasure: the erased address is not kept in the log either.
  "mailroom.email.v1.EmailService/EraseRecipient": change("email.erase_recipient", "recipient", [], { namesOnly: true }),

  // Inbound
  "mailroom.inbound.v1.InboundService/ReceiveProviderWebhook": { notAudited: "relay providers' event callbacks (no actor); recorded as the emails' events" },
  // Receiving (DESIGN §10.4): domains and rules are configuration; received mail is read only.
  "mailroom.inbound.v1.ReceivingService/CreateInboundDomain": change("inbound_domain.create", "inbound_domain", ["res.domain.id"]),
  "mailroom.inbound.v1.ReceivingService/ListInboundDomains": READ,
  "mailroom.inbound.v1.ReceivingService/GetInboundDomain": READ,
  "mailroom.inbound.v1.ReceivingService/VerifyInboundDomain": change("inbound_domain.verify", "inbound_domain", ["req.id"]),
  "mailroom.inbound.v1.ReceivingService/DeleteInboundDomain": change("inbound_domain.delete", "inbound_domain", ["req.id"]),
  "mailroom.inbound.v1.ReceivingService/CreateInboundRule": change("inbound_rule.create", "inbound_rule", ["res.rule.id"]),
  "mailroom.inbound.v1.ReceivingService/ListInboundRules": READ,
  "mailroom.inbound.v1.ReceivingService/DeleteInboundRule": change("inbound_rule.delete", "inbound_rule", ["req.id"]),
  "mailroom.inbound.v1.ReceivingService/ListReceivedEmails": READ,
  "mailroom.inbound.v1.ReceivingService/GetReceivedEmail": READ,
  "mailroom.inbound.v1.ReceivingService/GetReceivedAttachment": READ,
  "mailroom.inbound.v1.ReceivingService/GetReceivedRaw": READ,
  "mailroom.inbound.v1.ReceivingService/GetDmarcSummary": READ,

  // Renderer: pure computation
  "mailroom.renderer.v1.RendererService/DetectVariables": READ,
  "mailroom.renderer.v1.RendererService/Compile": READ,
  "mailroom.renderer.v1.RendererService/Render": READ,

  // Webhooks
  "mailroom.webhooks.v1.WebhookService/CreateWebhook": change("webhook.create", "webhook", ["res.webhook.id"]),
  "mailroom.webhooks.v1.WebhookService/GetWebhook": READ,
  "mailroom.webhooks.v1.WebhookService/ListWebhooks": READ,
  "mailroom.webhooks.v1.WebhookService/UpdateWebhook": change("webhook.update", "webhook", ["req.id"]),
  "mailroom.webhooks.v1.WebhookService/DeleteWebhook": change("webhook.delete", "webhook", ["req.id"]),
  "mailroom.webhooks.v1.WebhookService/SendTestEvent": change("webhook.send_test", "webhook", ["req.id"]),
  "mailroom.webhooks.v1.WebhookService/ListDeliveries": READ,
  "mailroom.webhooks.v1.WebhookService/RedeliverDelivery": change("webhook.redeliver", "webhook", ["req.webhookId"]),
  "mailroom.webhooks.v1.WebhookService/ListContactDeliveries": READ,
  "mailroom.webhooks.v1.WebhookService/EraseContactDeliveries": change("webhook.erase_contact_deliveries", "contact", ["req.contactId"]),
};
