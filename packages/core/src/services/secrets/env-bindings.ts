import type { Actor } from '../foundation/actor.js'

/**
 * Env bindings (agent `adapterConfig.env`, routine `env`), as docs/secrets.md defines them: a
 * plain string, `{type:'plain', value}`, or `{type:'secret_ref', secretId, version}`. A secret_ref is
 * resolved only at run start, each resolve writing a secret access event; responses show the binding
 * as written, never its value. Defined with the routine records (records/routines.ts).
 */
export type { EnvBinding } from '../../records/routines.js'

/** Who needs a secret's value, for the access event. */
export interface SecretConsumer {
  /** `agent` for an agent's adapterConfig.env, `routine` for a routine's env. */
  type: 'agent' | 'routine' | 'plugin'
  id: string
}

export interface ResolveSecretInput {
  squadId: string
  secretId: string
  version: 'latest' | number
  consumer: SecretConsumer
  /** Where the binding sits, e.g. `adapterConfig.env.GITHUB_TOKEN`. */
  configPath: string
  actor: Actor
  heartbeatRunId: string | null
  issueId: string | null
}

/**
 * Resolves secret_ref bindings for the run engine. The secrets service implements it: it checks the
 * secret's squad and status, asks the provider, and records an access event (success or failure).
 * A failure throws a SlawError whose message names the secret and the reason, never a value.
 */
export interface SecretResolver {
  resolve(input: ResolveSecretInput): Promise<string>
}
