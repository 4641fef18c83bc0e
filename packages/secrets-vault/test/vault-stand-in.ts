import type { IncomingMessage, ServerResponse } from 'node:http'
import { readJson, sendJson, startStandIn } from '@slaw/core/testing'

/**
 * A local Vault speaking the KV v2 HTTP API (the subset a secret provider uses): data read and
 * write, destroy, metadata read, list and delete, token lookup-self, the X-Vault-Token and
 * X-Vault-Namespace headers, and Vault's error bodies (`{"errors": [...]}`). Real HTTP on 127.0.0.1.
 */
export interface VaultStandIn {
  address: string
  /** `ok`, `hang` (accept requests and never answer) or `forbid` (403 to everything). */
  mode: 'ok' | 'hang' | 'forbid'
  /** Every request seen: method, path and namespace header. */
  requests: Array<{ method: string; path: string; namespace?: string }>
  close(): Promise<void>
  /** Resolves once every request left hanging has been given up by its client (its socket closed). */
  hangingClosed(): Promise<void>
}

interface Version {
  data: Record<string, unknown> | null
  created_time: string
  deletion_time: string
  destroyed: boolean
}
interface Secret {
  versions: Map<number, Version>
  current: number
}

export async function startVaultStandIn(options: { token: string; mounts?: string[]; namespaces?: string[] }): Promise<VaultStandIn> {
  const mounts = new Set(options.mounts ?? ['secret'])
  const namespaces = new Set(['', ...(options.namespaces ?? [])])
  /** namespace → mount → path → secret */
  const store = new Map<string, Secret>()
  const key = (ns: string, mount: string, path: string) => `${ns}\u0000${mount}\u0000${path}`
  const requests: VaultStandIn['requests'] = []
  let counter = 0
  const now = () => new Date(Date.UTC(2026, 0, 1, 0, 0, counter++)).toISOString()

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://vault')
    const ns = (req.headers['x-vault-namespace'] as string | undefined) ?? ''
    requests.push({ method: req.method ?? '', path: url.pathname, ...(ns ? { namespace: ns } : {}) })
    if (standIn.mode === 'hang') return server.hold(req)
    const body = await readJson(req)
    if (standIn.mode === 'forbid' || req.headers['x-vault-token'] !== options.token) return sendJson(res, 403, { errors: ['permission denied'] })
    if (!namespaces.has(ns.replace(/\/+$/, ''))) return sendJson(res, 403, { errors: ['permission denied'] })
    const parts = url.pathname.split('/').slice(2).map(decodeURIComponent)
    if (parts.join('/') === 'auth/token/lookup-self' && req.method === 'GET') {
      return sendJson(res, 200, { data: { id: 'redacted', policies: ['default', 'slaw'], namespace_path: ns } })
    }
    const [mount, kind, ...rest] = parts
    const path = rest.join('/').replace(/\/+$/, '')
    if (!mount || !mounts.has(mount) || !kind) return sendJson(res, 404, { errors: [`no handler for route "${parts.join('/')}". route entry not found.`] })
    const k = key(ns, mount, path)
    const secret = store.get(k)
    const list = req.method === 'LIST' || (req.method === 'GET' && url.searchParams.get('list') === 'true')

    if (kind === 'metadata' && list) {
      const folder = path ? `${path}/` : ''
      const keys = new Set<string>()
      for (const stored of store.keys()) {
        const [sns, smount, spath] = stored.split('\u0000') as [string, string, string]
        if (sns !== ns || smount !== mount || !spath.startsWith(folder)) continue
        const restPath = spath.slice(folder.length)
        const slash = restPath.indexOf('/')
        keys.add(slash < 0 ? restPath : restPath.slice(0, slash + 1))
      }
      if (!keys.size) return sendJson(res, 404, { errors: [] })
      return sendJson(res, 200, { data: { keys: [...keys].sort() } })
    }
    if (kind === 'data' && (req.method === 'POST' || req.method === 'PUT')) {
      const data = (body as { data?: unknown } | undefined)?.data
      if (!data || typeof data !== 'object') return sendJson(res, 400, { errors: ['no data provided'] })
      const target = secret ?? { versions: new Map<number, Version>(), current: 0 }
      target.current += 1
      const version: Version = { data: data as Record<string, unknown>, created_time: now(), deletion_time: '', destroyed: false }
      target.versions.set(target.current, version)
      store.set(k, target)
      return sendJson(res, 200, { data: { created_time: version.created_time, custom_metadata: null, deletion_time: '', destroyed: false, version: target.current } })
    }
    if (kind === 'data' && req.method === 'GET') {
      // version=0 or none: the current version.
      const asked = Number(url.searchParams.get('version') ?? 0)
      const wanted = asked > 0 ? asked : secret?.current
      const version = wanted ? secret?.versions.get(wanted) : undefined
      if (!secret || !version) return sendJson(res, 404, { errors: [] })
      const metadata = { created_time: version.created_time, custom_metadata: null, deletion_time: version.deletion_time, destroyed: version.destroyed, version: wanted }
      if (version.destroyed || version.deletion_time) return sendJson(res, 404, { data: { data: null, metadata } })
      return sendJson(res, 200, { data: { data: version.data, metadata } })
    }
    if (kind === 'destroy' && (req.method === 'POST' || req.method === 'PUT')) {
      for (const n of (body as { versions?: number[] } | undefined)?.versions ?? []) {
        const version = secret?.versions.get(n)
        if (version) Object.assign(version, { destroyed: true, data: null })
      }
      return sendJson(res, 204)
    }
    if (kind === 'metadata' && req.method === 'GET') {
      if (!secret) return sendJson(res, 404, { errors: [] })
      const versions = Object.fromEntries([...secret.versions].map(([n, v]) => [String(n), { created_time: v.created_time, deletion_time: v.deletion_time, destroyed: v.destroyed }]))
      return sendJson(res, 200, { data: { current_version: secret.current, max_versions: 0, oldest_version: 0, versions } })
    }
    if (kind === 'metadata' && req.method === 'DELETE') {
      store.delete(k)
      return sendJson(res, 204)
    }
    return sendJson(res, 405, { errors: [`unsupported operation ${req.method} ${kind}`] })
  }

  const server = await startStandIn(handle, { onError: (res, error) => sendJson(res, 500, { errors: [String(error)] }) })
  const standIn: VaultStandIn = {
    address: server.url,
    mode: 'ok',
    requests,
    hangingClosed: server.hangingClosed,
    close: server.close,
  }
  return standIn
}
