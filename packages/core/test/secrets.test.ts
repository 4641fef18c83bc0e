import t from 'tap'
import { SecretProviderError, operatorActor, validateBindings, type SecretProvider } from '@slaw/core'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { activityOf, isError, unknownId } from './helpers/fixtures.js'

/**
 * A provider kept in a Map, with switches a test flips to make it fail: an in-test stand-in for a
 * remote store (it lists, so remote import can be exercised).
 */
function memoryProvider(type = 'memory_vault') {
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
  return { provider, values, state }
}

const mem = memoryProvider()

async function createSecret(api: TestApi, squadId: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.call('POST', `/api/squads/${squadId}/secrets`, body)
  if (res.status !== 201) throw new Error(`createSecret: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.secret
}

const resolveInput = (squadId: string, secretId: string, extra: Record<string, unknown> = {}) => ({
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

eachBackend(t, 'secrets: create, read, list, patch; values never come back; activity without values', async (t, api) => {
  const s = await api.seed('Vaulted')
  const created = await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'GitHub token', value: 'ghp_valueNeverShown000000000000000000', description: 'for CI' })
  t.equal(created.status, 201)
  const secret = created.body.secret
  t.match(secret, { squadId: s.squadId, key: 'GitHub_token', name: 'GitHub token', provider: 'local_encrypted', status: 'active', managedMode: 'svc_managed', externalRef: null, latestVersion: 1, description: 'for CI', lastResolvedAt: null, lastRotatedAt: null })
  t.notOk('value' in secret, 'no value field')
  t.notMatch(JSON.stringify(created.body), /valueNeverShown/, 'the value is not in the create response')

  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'GitHub token', value: 'x' }), 409, 'secret_key_taken', 'a derived key is unique per squad')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'Other', key: 'GitHub_token', value: 'x' }), 409, 'secret_key_taken', 'an explicit key too')
  const other = await api.seed('Elsewhere')
  t.equal((await api.call('POST', `/api/squads/${other.squadId}/secrets`, { name: 'GitHub token', value: 'x' })).status, 201, 'the same key in another squad is fine')

  const list = await api.call('GET', `/api/squads/${s.squadId}/secrets`)
  t.equal(list.status, 200)
  t.same(list.body.secrets.map((x: any) => x.key), ['GitHub_token'])
  t.notMatch(JSON.stringify(list.body), /valueNeverShown/)
  const read = await api.call('GET', `/api/secrets/${secret.id}`)
  t.same(read.body.secret, secret, 'read answers the metadata as created')

  const patched = await api.call('PATCH', `/api/secrets/${secret.id}`, { name: 'GH', key: 'GH_TOKEN', description: null, providerMetadata: { team: 'ci' } })
  t.equal(patched.status, 200)
  t.match(patched.body.secret, { name: 'GH', key: 'GH_TOKEN', description: null, providerMetadata: { team: 'ci' }, latestVersion: 1 })
  isError(t, await api.call('PATCH', `/api/secrets/${secret.id}`, { value: 'x' }), 400, 'invalid_payload', 'PATCH is metadata only')
  isError(t, await api.call('PATCH', `/api/secrets/${secret.id}`, { status: 'deleted' }), 400, 'invalid_payload', 'delete goes through DELETE')
  isError(t, await api.call('PATCH', `/api/secrets/${secret.id}`, { externalRef: 'arn:x' }), 400, 'invalid_payload', 'a managed secret has no externalRef')
  isError(t, await api.call('GET', '/api/secrets/not-a-uuid'), 404, 'not_found')
  isError(t, await api.call('GET', `/api/secrets/${unknownId}`), 404, 'not_found')

  const acts = await activityOf(api, s.squadId, `entityType=secret&entityId=${secret.id}`)
  t.same(acts.map((a: any) => a.action).sort(), ['secret.created', 'secret.updated'])
  t.notMatch(JSON.stringify(acts), /valueNeverShown/, 'activity has no value')
})

eachBackend(t, 'secrets: managedMode, value and externalRef combinations; unknown provider; agents get 403', async (t, api) => {
  const s = await api.seed('Rules')
  const post = (body: Record<string, unknown>, token?: string) => api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: `n${Math.random()}`, ...body }, token)
  isError(t, await post({}), 400, 'invalid_payload', 'svc_managed without value')
  isError(t, await post({ managedMode: 'svc_managed', value: 'v', externalRef: 'arn:1' }), 400, 'invalid_payload', 'svc_managed with externalRef')
  isError(t, await post({ managedMode: 'external_reference', provider: 'memory_vault' }), 400, 'invalid_payload', 'external_reference without externalRef')
  isError(t, await post({ managedMode: 'external_reference', provider: 'memory_vault', externalRef: 'remote/alpha', value: 'v' }), 400, 'invalid_payload', 'external_reference with value')
  isError(t, await post({ managedMode: 'external_reference', externalRef: 'remote/alpha' }), 400, 'invalid_payload', 'external_reference on local_encrypted')
  isError(t, await post({ value: 'v', provider: 'nope' }), 400, 'invalid_payload', 'unknown provider')
  isError(t, await post({ value: 'v', key: 'bad key!' }), 400, 'invalid_payload', 'bad key')
  isError(t, await post({ name: '***', value: 'v' }), 400, 'invalid_payload', 'a name that derives no key')
  isError(t, await post({ value: 'v', providerConfigId: unknownId }), 400, 'invalid_payload', 'unknown provider config')
  const ext = await post({ managedMode: 'external_reference', provider: 'memory_vault', externalRef: 'remote/alpha', providerVersionRef: 'v7' })
  t.equal(ext.status, 201, 'external_reference with a provider and externalRef')
  t.match(ext.body.secret, { managedMode: 'external_reference', externalRef: 'remote/alpha', provider: 'memory_vault' })

  const secret = await createSecret(api, s.squadId, { name: 'agent-proof', value: 'v' })
  for (const [method, url, body] of [
    ['GET', `/api/squads/${s.squadId}/secrets`],
    ['POST', `/api/squads/${s.squadId}/secrets`, { name: 'x', value: 'v' }],
    ['GET', `/api/secrets/${secret.id}`],
    ['PATCH', `/api/secrets/${secret.id}`, { name: 'y' }],
    ['POST', `/api/secrets/${secret.id}/rotate`, { value: 'w' }],
    ['DELETE', `/api/secrets/${secret.id}`],
    ['GET', `/api/secrets/${secret.id}/usage`],
    ['GET', `/api/secrets/${secret.id}/access-events`],
    ['GET', `/api/squads/${s.squadId}/secret-providers`],
    ['GET', `/api/squads/${s.squadId}/secret-providers/health`],
    ['GET', `/api/squads/${s.squadId}/secret-provider-configs`],
    ['POST', `/api/squads/${s.squadId}/secret-provider-configs`, { provider: 'memory_vault' }],
    ['POST', `/api/squads/${s.squadId}/secret-provider-configs/discovery/preview`, { provider: 'memory_vault' }],
    ['POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: unknownId }],
    ['POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: unknownId, secrets: [{ externalRef: 'x' }] }],
  ] as Array<[string, string, unknown?]>) {
    isError(t, await api.call(method, url, body, s.agentToken), 403, 'forbidden', `agent: ${method} ${url}`)
  }
  const other = await api.seed('Other squad')
  isError(t, await api.call('GET', `/api/squads/${other.squadId}/secrets`, undefined, s.agentToken), 404, 'not_found', 'another squad stays hidden')
}, { secretProviders: [mem.provider] })

eachBackend(t, 'secrets: rotate makes strictly increasing versions; 100 concurrent rotations lose none', async (t, api) => {
  const s = await api.seed('Rotating')
  const secret = await createSecret(api, s.squadId, { name: 'token', value: 'v1' })
  const { instance } = api
  const resolve = (version: 'latest' | number = 'latest') => instance.services.secrets.resolve(resolveInput(s.squadId, secret.id, { version }))
  t.equal(await resolve(), 'v1')

  const rotated = await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'v2' })
  t.equal(rotated.status, 200)
  t.match(rotated.body.secret, { latestVersion: 2 })
  t.ok(rotated.body.secret.lastRotatedAt, 'lastRotatedAt is set')
  t.equal(await resolve(), 'v2', 'latest follows the rotation')
  t.equal(await resolve(1), 'v1', 'an older version still resolves')
  isError(t, await api.call('POST', `/api/secrets/${secret.id}/rotate`, {}), 400, 'invalid_payload', 'a managed rotation needs a value')
  isError(t, await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'x', externalRef: 'r' }), 400, 'invalid_payload')

  const n = 100
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: `c${i}` })))
  t.same(answers.filter((a) => a.status !== 200).map((a) => a.body), [], 'every rotation succeeded')
  const versions = answers.map((a) => a.body.secret.latestVersion as number).sort((a, b) => a - b)
  t.same(versions, Array.from({ length: n }, (_, i) => i + 3), 'versions 3..102, each exactly once')
  const stored = await instance.storage.secrets.listVersions(secret.id)
  t.same(stored.map((v) => v.version), Array.from({ length: n + 2 }, (_, i) => i + 1), 'every version row is stored')
  // Each version holds the value its own rotation sent.
  const byVersion = new Map(answers.map((a, i) => [a.body.secret.latestVersion as number, `c${i}`]))
  for (const v of [3, 50, 102]) t.equal(await resolve(v), byVersion.get(v), `version ${v} holds its own value`)
  t.equal((await api.call('GET', `/api/secrets/${secret.id}`)).body.secret.latestVersion, 102)
  const nonces = new Set(stored.map((v) => v.ref.split('.')[2]))
  t.equal(nonces.size, stored.length, 'a fresh nonce per version')
  t.ok(stored.every((v) => typeof v.keyId === 'string' && v.ref.startsWith(`v1.${v.keyId}.`)), 'each local version records the key id its envelope names')
})

eachBackend(t, 'secrets: resolve writes access events; disabled, archived, deleted and foreign secrets fail clearly', async (t, api) => {
  const s = await api.seed('Resolving')
  const secret = await createSecret(api, s.squadId, { name: 'API token', key: 'API_TOKEN', value: 'sekrit-value-1' })
  const { secrets } = api.instance.services
  const runId = '01a2016d-4579-7b3a-99bd-85bf68260001'
  t.equal(await secrets.resolve(resolveInput(s.squadId, secret.id, { heartbeatRunId: runId, consumer: { type: 'agent', id: s.agentId }, configPath: 'adapterConfig.env.API_TOKEN' })), 'sekrit-value-1')
  const read = await api.call('GET', `/api/secrets/${secret.id}`)
  t.ok(read.body.secret.lastResolvedAt, 'lastResolvedAt is set')

  const failing = async (status: string) => {
    t.equal((await api.call('PATCH', `/api/secrets/${secret.id}`, { status })).status, 200)
    await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: new RegExp(`API_TOKEN.*${status}`) }, `${status}: a clear error`)
  }
  await failing('disabled')
  await failing('archived')
  t.equal((await api.call('PATCH', `/api/secrets/${secret.id}`, { status: 'active' })).status, 200)
  await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id, { version: 9 })), { code: 'secret_unavailable', message: /no version 9/ })
  const other = await api.seed('Thieves')
  await t.rejects(secrets.resolve(resolveInput(other.squadId, secret.id)), { code: 'secret_unavailable', message: /another squad/ })
  await t.rejects(secrets.resolve(resolveInput(s.squadId, unknownId)), { code: 'secret_unavailable', message: /does not exist/ })

  const events = (await api.call('GET', `/api/secrets/${secret.id}/access-events`)).body.events
  t.same(events.map((e: any) => [e.outcome, e.errorCode]), [
    ['failure', 'squad_mismatch'],
    ['failure', 'version_not_found'],
    ['failure', 'secret_archived'],
    ['failure', 'secret_disabled'],
    ['success', null],
  ], 'every resolve wrote an event, newest first')
  t.match(events[4], { secretId: secret.id, version: 1, provider: 'local_encrypted', actorType: 'system', actorId: 'run-engine', consumerType: 'agent', consumerId: s.agentId, configPath: 'adapterConfig.env.API_TOKEN', heartbeatRunId: runId, issueId: null })
  const page = (await api.call('GET', `/api/secrets/${secret.id}/access-events?limit=2&before=${events[1].id}`)).body.events
  t.same(page.map((e: any) => e.id), [events[2].id, events[3].id], 'paged with before')

  t.equal((await api.call('DELETE', `/api/secrets/${secret.id}`)).status, 200, 'delete answers ok')
  await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: /deleted/ }, 'a deleted secret no longer resolves')
  isError(t, await api.call('GET', `/api/secrets/${secret.id}`), 404, 'not_found', 'a deleted secret is gone from the API')
  const versions = await api.instance.storage.secrets.listVersions(secret.id)
  t.ok(versions.every((v) => v.ref === 'revoked'), 'its local envelopes are wiped')
  t.equal((await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'again', key: 'API_TOKEN', value: 'new' })).status, 201, 'its key is free again')
  const acts = await activityOf(api, s.squadId, `entityType=secret&entityId=${secret.id}`)
  t.ok(acts.some((a: any) => a.action === 'secret.deleted') && acts.some((a: any) => a.action === 'secret.disabled'), 'status changes and delete are in the activity')
})

eachBackend(t, 'secrets: provider timeouts and 403s fail with an access event and no value in the log', async (t, api) => {
  const s = await api.seed('Flaky')
  const cfg = await api.call('POST', `/api/squads/${s.squadId}/secret-provider-configs`, { provider: 'memory_vault', name: 'mem', config: { region: 'eu' } })
  t.equal(cfg.status, 201)
  const secret = await createSecret(api, s.squadId, { name: 'remote', provider: 'memory_vault', providerConfigId: cfg.body.providerConfig.id, value: 'remote-value-42' })
  const { secrets } = api.instance.services
  t.equal(await secrets.resolve(resolveInput(s.squadId, secret.id)), 'remote-value-42')
  try {
    mem.state.fail = new SecretProviderError('access_denied', 'AccessDenied on mem:ref (403)')
    await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: /AccessDenied/ })
    mem.state.fail = new SecretProviderError('timeout', 'the provider timed out')
    await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: /timed out/ })
    mem.state.fail = undefined
    mem.state.hang = true
    await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: /did not answer within 5 ms/ }, 'a provider that never answers hits the deadline')
  } finally {
    mem.state.fail = undefined
    mem.state.hang = false
  }
  const events = (await api.call('GET', `/api/secrets/${secret.id}/access-events`)).body.events
  t.same(events.map((e: any) => e.errorCode), ['provider_timeout', 'provider_timeout', 'provider_access_denied', null])
  t.same(events.map((e: any) => e.provider), ['memory_vault', 'memory_vault', 'memory_vault', 'memory_vault'])
}, { secretProviders: [mem.provider], secretProviderTimeoutMs: 5 })

eachBackend(t, 'provider configurations: rules, default, health, discovery, supported types', async (t, api) => {
  const s = await api.seed('Configs')
  const base = `/api/squads/${s.squadId}/secret-provider-configs`
  for (const [config, label] of [
    [{ accessKeyId: 'AKIAIOSFODNN7EXAMPLE' }, 'an access key'],
    [{ options: { nested: [{ deeper: { secret_access_key: 'x' } }] } }, 'a secret key nested deep in arrays and objects'],
    [{ options: { auth: { token: 'x' } } }, 'a token'],
    [{ options: { password: 'x' } }, 'a password'],
    [{ options: { privateKey: 'x' } }, 'a private key'],
    [{ endpoint: 'https://x', options: { creds: 'Bearer abcdefghijklmnop' } }, 'a credential-looking value'],
  ] as Array<[Record<string, unknown>, string]>) {
    isError(t, await api.call('POST', base, { provider: 'memory_vault', config }), 400, 'sensitive_config_rejected', label)
  }
  isError(t, await api.call('POST', base, { provider: 'memory_vault', config: { colour: 'blue' } }), 400, 'invalid_payload', 'a key the provider does not declare')
  isError(t, await api.call('POST', base, { provider: 'nope' }), 400, 'invalid_payload', 'unknown provider')
  isError(t, await api.call('POST', `${base}/discovery/preview`, { provider: 'memory_vault', config: { options: { apiKey: 'x' } } }), 400, 'sensitive_config_rejected', 'preview applies the same rules')

  const a = (await api.call('POST', base, { provider: 'memory_vault', name: 'A', config: { region: 'eu', options: { retries: 2 } }, isDefault: true })).body.providerConfig
  t.match(a, { provider: 'memory_vault', name: 'A', config: { region: 'eu', options: { retries: 2 } }, isDefault: true })
  const b = (await api.call('POST', base, { provider: 'memory_vault', name: 'B' })).body.providerConfig
  t.equal(b.isDefault, false)
  t.equal((await api.call('POST', `/api/secret-provider-configs/${b.id}/default`)).body.providerConfig.isDefault, true)
  const list = (await api.call('GET', base)).body.providerConfigs
  t.same(list.map((c: any) => [c.name, c.isDefault]), [['A', false], ['B', true]], 'one default per squad')
  isError(t, await api.call('PATCH', `/api/secret-provider-configs/${a.id}`, { config: { region: 'us', token: 'x' } }), 400, 'sensitive_config_rejected', 'PATCH applies the rules')
  t.match((await api.call('PATCH', `/api/secret-provider-configs/${a.id}`, { name: 'A2', config: { region: 'us' } })).body.providerConfig, { name: 'A2', config: { region: 'us' } })
  t.match((await api.call('GET', `/api/secret-provider-configs/${a.id}`)).body.providerConfig, { name: 'A2' })

  t.match((await api.call('POST', `/api/secret-provider-configs/${a.id}/health`)).body, { ok: true, provider: 'memory_vault', providerConfigId: a.id })
  const preview = await api.call('POST', `${base}/discovery/preview`, { provider: 'memory_vault', config: { region: 'eu' } })
  t.match(preview.body, { ok: true, canListRemote: true, sample: [{ externalRef: 'remote/alpha' }, {}, {}] }, 'discovery preview tests the connection and lists')
  mem.state.healthy = false
  try {
    t.match((await api.call('POST', `${base}/discovery/preview`, { provider: 'memory_vault' })).body, { ok: false, message: 'endpoint unreachable' })
    const agg = (await api.call('GET', `/api/squads/${s.squadId}/secret-providers/health`)).body
    t.equal(agg.ok, false, 'aggregate health is not ok while one provider is down')
    t.match(agg.providers.find((p: any) => p.provider === 'local_encrypted'), { ok: true })
    t.equal(agg.providers.filter((p: any) => p.provider === 'memory_vault').length, 2, 'each saved config is checked')
  } finally {
    mem.state.healthy = true
  }
  const types = (await api.call('GET', `/api/squads/${s.squadId}/secret-providers`)).body.providers
  t.same(types.map((p: any) => [p.type, p.builtIn, p.canListRemote]), [['local_encrypted', true, false], ['memory_vault', false, true]])

  // A secret created without a provider uses the squad default (B, memory_vault).
  const viaDefault = await createSecret(api, s.squadId, { name: 'by default', value: 'v' })
  t.match(viaDefault, { provider: 'memory_vault', providerConfigId: b.id })
  isError(t, await api.call('DELETE', `/api/secret-provider-configs/${b.id}`), 409, 'secret_provider_config_in_use')
  t.equal((await api.call('DELETE', `/api/secret-provider-configs/${a.id}`)).status, 200)
  isError(t, await api.call('GET', `/api/secret-provider-configs/${a.id}`), 404, 'not_found')
}, { secretProviders: [mem.provider] })

eachBackend(t, 'remote import: preview classifies ready, duplicate, conflict; import counts', async (t, api) => {
  const s = await api.seed('Importers')
  const cfg = (await api.call('POST', `/api/squads/${s.squadId}/secret-provider-configs`, { provider: 'memory_vault', name: 'mem' })).body.providerConfig
  await createSecret(api, s.squadId, { name: 'beta', value: 'local' })
  const imported = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: cfg.id, secrets: [{ externalRef: 'remote/gamma', name: 'gamma' }] })
  t.same([imported.body.imported, imported.body.skipped, imported.body.errored], [1, 0, 0])

  const page1 = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, pageSize: 2 })
  t.equal(page1.status, 200)
  t.same(page1.body.candidates.map((c: any) => [c.externalRef, c.key, c.status]), [['remote/alpha', 'Alpha_token', 'ready'], ['remote/beta', 'beta', 'conflict']])
  const page2 = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, pageSize: 2, nextToken: page1.body.nextToken })
  t.same(page2.body.candidates.map((c: any) => [c.externalRef, c.status]), [['remote/gamma', 'duplicate']])
  t.equal(page2.body.nextToken, null)
  const filtered = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, query: 'alp' })
  t.same(filtered.body.candidates.map((c: any) => c.externalRef), ['remote/alpha'])
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, pageSize: 101 }), 400, 'invalid_payload', 'pageSize at most 100')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: unknownId }), 400, 'invalid_payload')

  const res = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, {
    providerConfigId: cfg.id,
    secrets: [{ externalRef: 'remote/alpha', name: 'Alpha token' }, { externalRef: 'remote/gamma' }, { externalRef: 'remote/beta', name: 'beta' }],
  })
  t.equal(res.status, 200)
  t.same([res.body.imported, res.body.skipped, res.body.errored], [1, 1, 1])
  t.same(res.body.results.map((r: any) => r.status), ['imported', 'skipped', 'errored'])
  const alpha = (await api.call('GET', `/api/secrets/${res.body.results[0].secretId}`)).body.secret
  t.match(alpha, { managedMode: 'external_reference', externalRef: 'remote/alpha', provider: 'memory_vault', providerConfigId: cfg.id, key: 'Alpha_token' })
  mem.values.set('ext:remote/alpha', 'alpha-remote-value')
  t.equal(await api.instance.services.secrets.resolve(resolveInput(s.squadId, alpha.id)), 'alpha-remote-value', 'an imported reference resolves through its provider')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: cfg.id, secrets: [] }), 400, 'invalid_payload', 'at least one selection')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: cfg.id, secrets: Array.from({ length: 101 }, (_, i) => ({ externalRef: `r${i}` })) }), 400, 'invalid_payload', 'at most 100')
}, { secretProviders: [mem.provider] })

eachBackend(t, 'bindings: validateBindings checks the operator, the squad and the version', async (t, api) => {
  const s = await api.seed('Binders')
  const secret = await createSecret(api, s.squadId, { name: 'bound', value: 'v' })
  const { storage } = api.instance
  const agentActor = { type: 'agent' as const, agentId: s.agentId, squadId: s.squadId, keyId: 'k', runId: null }
  t.same(await validateBindings(storage, s.squadId, { A: 'x', B: { type: 'plain', value: 'y' }, C: { type: 'secret_ref', secretId: secret.id, version: 'latest' } }, operatorActor()), {
    A: 'x', B: { type: 'plain', value: 'y' }, C: { type: 'secret_ref', secretId: secret.id, version: 'latest' },
  })
  t.same(await validateBindings(storage, s.squadId, { A: 'x' }, agentActor), { A: 'x' }, 'an agent may set plain values')
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 1 } }, agentActor), { code: 'forbidden' }, 'only the operator binds secrets')
  const other = await api.seed('Not yours')
  await t.rejects(validateBindings(storage, other.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 'latest' } }, operatorActor()), { code: 'invalid_payload', details: [{ path: '/env/C/secretId' }] })
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 2 } }, operatorActor()), { code: 'invalid_payload', details: [{ path: '/env/C/version' }] })
  await t.rejects(validateBindings(storage, s.squadId, { 'BAD-NAME': 'x' }, operatorActor()), { code: 'invalid_payload' })
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret', secretId: secret.id } }, operatorActor()), { code: 'invalid_payload' })
  await api.call('DELETE', `/api/secrets/${secret.id}`)
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 'latest' } }, operatorActor()), { code: 'invalid_payload' }, 'a deleted secret cannot be bound')
  const usage = await api.call('GET', `/api/secrets/${(await createSecret(api, s.squadId, { name: 'unused', value: 'v' })).id}/usage`)
  t.same(usage.body.bindings, [], 'usage of an unbound secret is empty')
})
