import { SecretProviderError } from '@slaw/core/secret-provider'

/** A reference to a KV v2 secret under the configured mount: its path, maybe one version, maybe one field. */
export interface VaultRef {
  path: string
  version?: number
  field?: string
}

/**
 * Parses `<path>[?version=<n>][&field=<name>]`, the form refs and imported external refs take
 * (`slaw/7c1e…?version=3`, `team/db?field=password`). The mount is the config's, not the ref's.
 */
export function parseRef(ref: string): VaultRef {
  const at = ref.indexOf('?')
  const path = (at < 0 ? ref : ref.slice(0, at)).replace(/^\/+|\/+$/g, '')
  if (!path) throw new SecretProviderError('not_found', 'vault: empty secret path in ref')
  const params = new URLSearchParams(at < 0 ? '' : ref.slice(at + 1))
  const out: VaultRef = { path }
  const version = params.get('version')
  if (version !== null) {
    if (!/^[1-9][0-9]{0,9}$/.test(version)) throw new SecretProviderError('not_found', `vault: ref ${path} names no valid version`)
    out.version = Number(version)
  }
  const field = params.get('field')
  if (field) out.field = field
  return out
}

export function formatRef(ref: VaultRef): string {
  const params = new URLSearchParams()
  if (ref.version !== undefined) params.set('version', String(ref.version))
  if (ref.field !== undefined) params.set('field', ref.field)
  const query = params.toString()
  return query ? `${ref.path}?${query}` : ref.path
}
