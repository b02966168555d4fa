import { Workspaces } from "./workspaces.js";
import { ApiKeys } from "./keys.js";
import { Senders } from "./senders.js";
import { Members } from "./members.js";
import { Templates } from "./templates.js";
import { Usage } from "./usage.js";
import { Bootstrap, type ContactBootstrapPort } from "./bootstrap.js";
import type { DnsPolicy } from "./dns-policy.js";
import type { SendingDns } from "./direct-sending.js";
import type { AccountsRepositories, DkimKeyGenerator, TxtResolver } from "@mailroom/records/ports.js";
import { systemClock, type Clock } from "@mailroom/records/validation.js";
import type { ChangeIntentRecorder, DirectoryEventPublisher } from "@mailroom/records/change-events.js";
import { EmittingMemberStore, EmittingWorkspaceStore } from "./changes.js";

export interface AccountsDeps {
  repositories: AccountsRepositories;
  resolver: TxtResolver;
  /** PTR, A/AAAA and SPF lookups of the direct-sending check (CheckDirectSending). */
  sendingDns: SendingDns;
  /** DKIM key pair source (tests reuse pre-generated pairs: RSA 2048 takes ~1 s each). */
  generateDkimKey: DkimKeyGenerator;
  dns?: Partial<DnsPolicy>;
  /** The audience unit's part of a bootstrap document (contact properties and contacts). */
  contactBootstrap: ContactBootstrapPort;
  /** Where member and workspace changes are announced once written (webhooks; changes.ts). */
  publishChanges?: DirectoryEventPublisher;
  /** Records each write's intent before it (with publishChanges: events survive a crash between a write and their record). */
  intendChanges?: ChangeIntentRecorder;
  now?: Clock;
}

/** Every use case of the accounts unit, built over its ports. */
export interface Accounts {
  workspaces: Workspaces;
  keys: ApiKeys;
  senders: Senders;
  members: Members;
  templates: Templates;
  usage: Usage;
  bootstrap: Bootstrap;
}

export const DEFAULT_SPF_INCLUDE = "_spf.mailroom.local";
/** The bounce MX shown when MAILROOM_INBOUND_MX_HOST is unset (a placeholder to replace, like the SPF include). */
export const DEFAULT_INBOUND_MX_HOST = "inbound.mailroom.local";

export function createAccounts(deps: AccountsDeps): Accounts {
  const now = deps.now ?? systemClock;
  const publish = deps.publishChanges;
  // Emission lives at the write: every use case below writes through these.
  const repos = publish
    ? {
        ...deps.repositories,
        members: new EmittingMemberStore(deps.repositories.members, publish, deps.intendChanges, now),
        workspaces: new EmittingWorkspaceStore(deps.repositories.workspaces, publish, deps.intendChanges, now),
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
  const templates = new Templates(repos.templates, workspaces, senders, now);
  const usage = new Usage(repos.usage, workspaces, now);
  const bootstrap = new Bootstrap({ workspaces, keys, senders, members, contacts: deps.contactBootstrap, templates });
  return { workspaces, keys, senders, members, templates, usage, bootstrap };
}
