import { SecretProviderError, type SecretProvider } from '@slaw/core'
import type { TestApi } from './instance.js'

/**
 * A provider kept in a Map, with switches a test flips to make it fail: an in-test stand-in for a
 * remote store (it lists, so remote import can be exercised).
 */
export function memoryProvider(type = 'memory_vault') {
  const values = new Map<string, string>()
  const remote = [
    { externalRef: 'remote/alpha', name: 'Alpha token' },
    { externalRef: 'remote/beta', name: 'beta' },
    { externalRef: 'remote/gamma', name: 'gamma' },
  ]
  const state = { fail: undefined as SecretProviderError | undefined, hang: false, healthy: true, resolves: 0 }
  const provider: SecretProvider = {
    type,
    configKeys: ['region', 'endpoint', 'options'],
    async store({ secretId, version, value }) {
      const ref = `mem:${secretId}:${version}`
      values.set(ref, value)
      return { ref }
    },
    async resolve({ ref }) {
      state.resolves++
      if (state.hang) return new Promise<string>(() => undefined)
      if (state.fail) throw state.fail
      const v = values.get(ref) ?? values.get(`ext:${ref}`)
      if (v === undefined) throw new SecretProviderError('not_found', `no value at ${ref}`)
      return v
    },
    async delete({ ref }) {
      values.delete(ref)
    },
    async health() {
      return state.healthy ? { ok: true } : { ok: false, message: 'endpoint unreachable' }
    },
    async listRemote({ query, pageSize, nextToken }) {
      const all = remote.filter((r) => !query || r.name.toLowerCase().includes(query.toLowerCase()))
      const start = nextToken ? Number(nextToken) : 0
      const items = all.slice(start, start + pageSize)
      return { items, ...(start + pageSize < all.length ? { nextToken: String(start + pageSize) } : {}) }
    },
  }
  return { provider, values, state, remote }
}

export async function createSecret(api: TestApi, squadId: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.call('POST', `/api/squads/${squadId}/secrets`, body)
  if (res.status !== 201) throw new Error(`createSecret: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.secret
}

export const resolveInput = (squadId: string, secretId: string, extra: Record<string, unknown> = {}) => ({
  squadId,
  secretId,
  version: 'latest' as const,
  consumer: { type: 'routine' as const, id: '01a2016d-4579-7b3a-99bd-85bf68260299' },
  configPath: 'env.API_TOKEN',
  actor: { type: 'system' as const, id: 'run-engine' },
  heartbeatRunId: null,
  issueId: null,
  ...extra,
})
