import type { LockProvider } from '../../contracts/lock-provider.js'
import type { Storage } from '../../contracts/storage.js'
import type { AgentAdapter } from '../../contracts/agent-adapter.js'
import type { MasterKey } from '../secrets/master-key.js'
import type { SecretResolver } from '../secrets/env-bindings.js'

export interface Logger {
  info(obj: object | string, msg?: string): void
  warn(obj: object | string, msg?: string): void
  error(obj: object | string, msg?: string): void
  debug(obj: object | string, msg?: string): void
}

/** What every service is built from: the plugins and a few knobs. */
export interface ServiceContext {
  storage: Storage
  locks: LockProvider
  log: Logger
  adapters: ReadonlyMap<string, AgentAdapter>
  /** Encrypts local secrets and HMAC trigger secrets; derives the run-token signing key. */
  masterKey: MasterKey
  /** Resolves secret_ref env bindings at run start (the secrets service, once services exist). */
  secrets: SecretResolver
  /** Called after a transaction commits that enqueued background work, so it starts at once. */
  kickJobs(): void
  now(): Date
  /** Called after keys or agents change in ways that must end cached sessions on this node. */
  principalsChanged(): void
  /** True while the control tower is the master of skills (enrolled): local skill authoring answers 409. */
  towerManagesSkills(): boolean
  /**
   * The tower gate (`enforce` mode, never enrolled or revoked): why nothing may run now, or
   * undefined. The HTTP layer answers 403 with it; the public trigger URL and the run engine obey it too.
   */
  towerGate?(): { code: 'instance_not_enrolled'; message: string } | undefined
}
