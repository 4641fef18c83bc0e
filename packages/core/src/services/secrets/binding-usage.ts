import type { BindingColumnRef, StorageSession } from '../../contracts/storage.js'
import { SlawError, invalid } from '../../errors.js'
import { isPrivileged, type Actor } from '../foundation/actor.js'
import type { EnvBinding, SecretConsumer } from './env-bindings.js'
import { isUuid } from '../foundation/ids.js'
import { inSquad } from '../foundation/same-squad.js'

/**
 * Where env bindings live, for a secret's usage: a JSON column (and the path to the env object
 * inside it) of a table with `id` and `squad_id`. Modules that store bindings register their column
 * here (`registerBindingSource`); a table or column that does not exist yet is skipped.
 */
export interface BindingSource extends BindingColumnRef {
  consumerType: SecretConsumer['type']
  /** The binding's config path prefix, e.g. `adapterConfig.env` (the env name follows). */
  configPath: string
}

const sources: BindingSource[] = [
  { consumerType: 'agent', table: 'agents', column: 'adapter_config', path: ['env'], nameColumn: 'name', configPath: 'adapterConfig.env' },
  { consumerType: 'routine', table: 'routines', column: 'env', path: [], nameColumn: 'title', configPath: 'routine.env' },
]

export function registerBindingSource(source: BindingSource): void {
  if (sources.some((s) => s.table === source.table && s.column === source.column)) throw new TypeError(`binding source ${source.table}.${source.column} is registered twice`)
  sources.push(source)
}

export function bindingSources(): readonly BindingSource[] {
  return sources
}

export interface SecretBinding {
  consumerType: SecretConsumer['type']
  consumerId: string
  consumerName: string
  configPath: string
  version: 'latest' | number
}

/** Every binding of the squad that references the secret, across all registered sources. */
export async function findSecretBindings(session: StorageSession, squadId: string, secretId: string): Promise<SecretBinding[]> {
  const out: SecretBinding[] = []
  for (const source of sources) {
    for (const hit of await session.secrets.findBindings(source, squadId, secretId)) {
      out.push({ consumerType: source.consumerType, consumerId: hit.id, consumerName: hit.name, configPath: `${source.configPath}.${hit.envName}`, version: hit.version })
    }
  }
  return out
}

/** Env variable names a binding may set. */
export const envNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Checks an env object (`{NAME: binding}`) where it is written (agent adapterConfig.env, routine
 * env), inside the caller's transaction: each binding is a string, `{type:'plain', value}` or
 * `{type:'secret_ref', secretId, version}`; only an Operator may set a `secret_ref` (403
 * `forbidden`), and its secret must be a live secret of the squad with that version (400
 * `invalid_payload`, `details` naming the binding). `path` prefixes the JSON pointers (default `/env`).
 */
export async function validateBindings(tx: StorageSession, squadId: string, env: unknown, actor: Actor, path = '/env'): Promise<Record<string, EnvBinding>> {
  if (env === undefined || env === null) return {}
  if (typeof env !== 'object' || Array.isArray(env)) throw invalid(path, 'env must be an object of NAME: binding')
  const out: Record<string, EnvBinding> = {}
  for (const [name, binding] of Object.entries(env as Record<string, unknown>)) {
    const at = `${path}/${name}`
    if (!envNamePattern.test(name)) throw invalid(at, `env name "${name}" must match ${envNamePattern.source}`)
    if (typeof binding === 'string') {
      out[name] = binding
      continue
    }
    if (!binding || typeof binding !== 'object' || Array.isArray(binding)) throw invalid(at, 'a binding is a string, {type:"plain", value} or {type:"secret_ref", secretId, version}')
    const b = binding as Record<string, unknown>
    if (b.type === 'plain') {
      if (typeof b.value !== 'string' || Object.keys(b).some((k) => k !== 'type' && k !== 'value')) throw invalid(at, 'a plain binding is {type:"plain", value: string}')
      out[name] = { type: 'plain', value: b.value }
      continue
    }
    if (b.type !== 'secret_ref') throw invalid(`${at}/type`, 'binding type must be "plain" or "secret_ref"')
    if (Object.keys(b).some((k) => !['type', 'secretId', 'version'].includes(k))) throw invalid(at, 'a secret_ref binding is {type:"secret_ref", secretId, version}')
    if (!isPrivileged(actor)) throw new SlawError('forbidden', 'Only an Operator may bind a secret (secret_ref).')
    const version = b.version ?? 'latest'
    if (version !== 'latest' && !(typeof version === 'number' && Number.isInteger(version) && version >= 1)) throw invalid(`${at}/version`, 'version must be "latest" or a version number')
    if (typeof b.secretId !== 'string' || !isUuid(b.secretId)) throw invalid(`${at}/secretId`, 'secretId must be a UUID')
    const found = await tx.secrets.get(b.secretId)
    // A deleted secret is named like a missing one.
    const secret = inSquad(found?.status === 'deleted' ? undefined : found, squadId, `${at}/secretId`, 'secretId must name a secret of this squad')
    if (version !== 'latest' && version > secret.latestVersion) throw invalid(`${at}/version`, `secret "${secret.key}" has no version ${version} (latest is ${secret.latestVersion})`)
    out[name] = { type: 'secret_ref', secretId: secret.id, version }
  }
  return out
}
