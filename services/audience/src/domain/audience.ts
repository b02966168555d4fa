import { Workspaces } from "./workspaces.js";
import { ApiKeys } from "./keys.js";
import { Senders } from "./senders.js";
import { Members } from "./members.js";
import { ContactProperties } from "./properties.js";
import { Contacts } from "./contacts.js";
import { ContactEvents } from "./events.js";
import { Erasure } from "./erasure.js";
import { Suppressions } from "./suppression.js";
import { MailOutcomes } from "./outcomes.js";
import { Templates } from "./templates.js";
import { Usage } from "./usage.js";
import { Bootstrap } from "./bootstrap.js";
import type { DnsPolicy } from "./dns-policy.js";
import type { SendingDns } from "./direct-sending.js";
import type { ContactEventPublisher, DirectoryRepositories, DkimKeyGenerator, TxtResolver } from "@mailroom/records/ports.js";
import { systemClock, type Clock } from "@mailroom/records/validation.js";
import { EmittingSuppressionStore } from "./suppression-events.js";
import { EmittingContactStore, EmittingMemberStore, EmittingPropertyStore, EmittingWorkspaceStore, type ChangeIntentRecorder, type DirectoryEventPublisher } from "./changes.js";

export interface DirectoryDeps {
  repositories: DirectoryRepositories;
  resolver: TxtResolver;
  /** PTR, A/AAAA and SPF lookups of the direct-sending check (CheckDirectSending). */
  sendingDns: SendingDns;
  /** DKIM key pair source (tests reuse pre-generated pairs: RSA 2048 takes ~1 s each). */
  generateDkimKey: DkimKeyGenerator;
  dns?: Partial<DnsPolicy>;
  /** Where accepted contact events are announced (the event stream); none in unit tests. */
  publishEvent?: ContactEventPublisher;
  /** Where contact, property and member changes are announced once written (webhooks; changes.ts). */
  publishChanges?: DirectoryEventPublisher;
  /** Records each write's intent before it (with publishChanges: events survive a crash between a write and their record). */
  intendChanges?: ChangeIntentRecorder;
  now?: Clock;
}

/** Every use case of the directory, built over its ports. */
export interface Directory {
  workspaces: Workspaces;
  keys: ApiKeys;
  senders: Senders;
  members: Members;
  properties: ContactProperties;
  contacts: Contacts;
  events: ContactEvents;
  suppressions: Suppressions;
  /** A contact's erasure: its events gone, its address kept only as a hashed suppression. */
  erasure: Erasure;
  /** Bounces, complaints and unsubscribes → suppressions and contact status. */
  outcomes: MailOutcomes;
  templates: Templates;
  usage: Usage;
  bootstrap: Bootstrap;
}

export const DEFAULT_SPF_INCLUDE = "_spf.mailroom.local";
/** The bounce MX shown when MAILROOM_INBOUND_MX_HOST is unset (a placeholder to replace, like the SPF include). */
export const DEFAULT_INBOUND_MX_HOST = "inbound.mailroom.local";

export function createDirectory(deps: DirectoryDeps): Directory {
  const now = deps.now ?? systemClock;
  const publish = deps.publishChanges;
  // Emission lives at the write: every use case below writes through these.
  const repos = publish
    ? {
        ...deps.repositories,
        contacts: new EmittingContactStore(deps.repositories.contacts, publish, now, deps.intendChanges),
        properties: new EmittingPropertyStore(deps.repositories.properties, publish, deps.intendChanges, now),
        members: new EmittingMemberStore(deps.repositories.members, publish, deps.intendChanges, now),
        workspaces: new EmittingWorkspaceStore(deps.repositories.workspaces, publish, deps.intendChanges, now),
        suppressions: new EmittingSuppressionStore(deps.repositories.suppressions, publish, now, deps.intendChanges),
      }
    : deps.repositories;
  const policy: DnsPolicy = {
    spfInclude: deps.dns?.spfInclude || DEFAULT_SPF_INCLUDE,
    inboundMxHost: deps.dns?.inboundMxHost || DEFAULT_INBOUND_MX_HOST,
    bounceDomain: deps.dns?.bounceDomain || undefined,
  };
  const workspaces = new Workspaces(repos.workspaces, now);
  const keys = new ApiKeys(repos.apiKeys, workspaces, now, repos.members);
  const senders = new Senders(repos.senders, workspaces, deps.resolver, policy, deps.generateDkimKey, now, deps.sendingDns);
  const members = new Members(repos.members, workspaces, now);
  const properties = new ContactProperties(repos.properties, workspaces, now);
  const contacts = new Contacts(repos.contacts, repos.suppressions, workspaces, properties, now);
  const suppressions = new Suppressions(repos.suppressions, repos.contacts, now);
  const outcomes = new MailOutcomes(suppressions, repos.contacts, now);
  const templates = new Templates(repos.templates, workspaces, senders, now);
  const events = new ContactEvents(repos.contactEvents, contacts, workspaces, deps.publishEvent, now);
  const usage = new Usage(repos.usage, workspaces, now);
  const bootstrap = new Bootstrap({ workspaces, keys, senders, members, properties, contacts, templates });
  const erasure = new Erasure(contacts, repos.contactEvents, suppressions);
  return { workspaces, keys, senders, members, properties, contacts, events, suppressions, erasure, outcomes, templates, usage, bootstrap };
}
