import { adapterConfigProblems } from '../../contracts/adapter-config.js'
import { SlawError, type ErrorDetail } from '../../errors.js'
import { isPrivileged, type Actor } from '../foundation/actor.js'
import type { ServiceContext } from '../foundation/context.js'
import { isUuid } from '../foundation/ids.js'
import { codeLoadingReason } from '../runs/agent-env.js'

const envName = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/**
 * Checks an agent's adapterConfig (docs/heartbeats.md: adapterConfig) before it is stored: the common keys the run
 * engine reads (`env` bindings, `timeoutSec`, `graceSec`), then the adapter's: its `configSchema`
 * (compiled once per adapter, defaults applied) and its own `validateConfig`, both sets reported. At
 * the engine's keys the engine's details stand: an adapter's detail there (a schema mirroring them)
 * is dropped when the engine already reported that path.
 * Problems answer 400 `invalid_payload` with every detail. Only the Operator may bind a secret or
 * set an env name that loads code (an agent writes a config through a hire request).
 */
export function validateAdapterConfig(ctx: ServiceContext, actor: Actor, adapterType: string, config: Record<string, unknown>, base = '/adapterConfig'): void {
  const details: ErrorDetail[] = []
  const env = config.env
  if (env !== undefined) {
    if (!env || typeof env !== 'object' || Array.isArray(env)) details.push({ path: `${base}/env`, message: 'env must be an object of NAME: binding' })
    else {
      for (const [name, binding] of Object.entries(env as Record<string, unknown>)) {
        const path = `${base}/env/${name}`
        if (!envName.test(name)) details.push({ path, message: 'an env name is letters, digits and _ and does not start with a digit' })
        else if (name.toUpperCase().startsWith('SVC_')) details.push({ path, message: 'SVC_ names are the wake variables; bind another name' })
        else if (!isPrivileged(actor)) {
          // An agent's hire request carries a config into the hired agent: the same rule as a routine env an agent writes (docs/security.md).
          const why = codeLoadingReason(name)
          if (why) details.push({ path, message: `only an Operator may set ${name}: ${why}` })
        }
        details.push(...bindingProblems(binding, path, actor))
      }
    }
  }
  for (const key of ['timeoutSec', 'graceSec'] as const) {
    const v = config[key]
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 86_400)) details.push({ path: `${base}/${key}`, message: `${key} must be an integer from 1 to 86400` })
  }
  const adapter = ctx.adapters.get(adapterType)
  if (adapter) {
    const engineReported = details.map((d) => d.path)
    for (const d of adapterConfigProblems(adapter, config)) {
      const path = d.path.startsWith(base) ? d.path : `${base}${d.path.startsWith('/') ? '' : '/'}${d.path}`
      if (engineReported.some((p) => path === p || path.startsWith(`${p}/`))) continue
      details.push({ path, message: d.message })
    }
  }
  if (details.length) throw new SlawError('invalid_payload', details[0]!.message, details)
}

function bindingProblems(binding: unknown, path: string, actor: Actor): ErrorDetail[] {
  if (typeof binding === 'string') return binding.length > 65_536 ? [{ path, message: 'a binding value is at most 65536 characters' }] : []
  if (!binding || typeof binding !== 'object') return [{ path, message: 'a binding is a string, {type:"plain",value} or {type:"secret_ref",secretId,version}' }]
  const b = binding as Record<string, unknown>
  if (b.type === 'plain') return typeof b.value === 'string' ? [] : [{ path: `${path}/value`, message: 'a plain binding has a string value' }]
  if (b.type === 'secret_ref') {
    const problems: ErrorDetail[] = []
    if (!isPrivileged(actor)) problems.push({ path, message: 'only an Operator may bind a secret' })
    if (!isUuid(b.secretId)) problems.push({ path: `${path}/secretId`, message: 'secretId must be a secret id (UUID)' })
    if (!(b.version === 'latest' || (typeof b.version === 'number' && Number.isInteger(b.version) && b.version >= 1)))
      problems.push({ path: `${path}/version`, message: 'version is "latest" or a version number' })
    return problems
  }
  return [{ path: `${path}/type`, message: 'a binding type is plain or secret_ref' }]
}

/** PATCH semantics: top-level keys replace, a key set to null is removed; `replace` takes the patch as is. */
export function mergeAdapterConfig(current: Record<string, unknown>, patch: Record<string, unknown>, replace: boolean): Record<string, unknown> {
  const next: Record<string, unknown> = replace ? {} : { ...current }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k]
    else next[k] = v
  }
  return next
}
