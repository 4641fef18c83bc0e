import t from 'tap'
import { SecretProviderError } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { activityOf, isError, unknownId } from './helpers/fixtures.js'
import { createSecret, memoryProvider, resolveInput } from './helpers/secrets.js'

const mem = memoryProvider()

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
  t.same(
    events.map((e: any) => [e.outcome, e.errorCode]),
    [
      ['failure', 'squad_mismatch'],
      ['failure', 'version_not_found'],
      ['failure', 'secret_archived'],
      ['failure', 'secret_disabled'],
      ['success', null],
    ],
    'every resolve wrote an event, newest first',
  )
  t.match(events[4], {
    secretId: secret.id,
    version: 1,
    provider: 'local_encrypted',
    actorType: 'system',
    actorId: 'run-engine',
    consumerType: 'agent',
    consumerId: s.agentId,
    configPath: 'adapterConfig.env.API_TOKEN',
    heartbeatRunId: runId,
    issueId: null,
  })
  const page = (await api.call('GET', `/api/secrets/${secret.id}/access-events?limit=2&before=${events[1].id}`)).body.events
  t.same(
    page.map((e: any) => e.id),
    [events[2].id, events[3].id],
    'paged with before',
  )

  t.equal((await api.call('DELETE', `/api/secrets/${secret.id}`)).status, 200, 'delete answers ok')
  await t.rejects(secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: /deleted/ }, 'a deleted secret no longer resolves')
  t.match((await api.call('GET', `/api/secrets/${secret.id}`)).body.secret, { status: 'deleted' }, 'a deleted secret stays readable, as deleted')
  t.notOk(
    (await api.call('GET', `/api/squads/${s.squadId}/secrets`)).body.secrets.some((x: any) => x.id === secret.id),
    'and leaves the list',
  )
  t.ok((await api.call('GET', `/api/secrets/${secret.id}/access-events`)).body.events.length >= 6, 'its audit trail stays readable')
  isError(t, await api.call('PATCH', `/api/secrets/${secret.id}`, { status: 'active' }), 404, 'not_found', 'it cannot be revived')
  isError(t, await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'x' }), 404, 'not_found', 'nor rotated')
  isError(t, await api.call('DELETE', `/api/secrets/${secret.id}`), 404, 'not_found', 'nor deleted twice')
  const versions = await api.instance.storage.secrets.listVersions(secret.id)
  t.ok(
    versions.every((v) => v.ref === 'revoked'),
    'its local envelopes are wiped',
  )
  t.equal((await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'again', key: 'API_TOKEN', value: 'new' })).status, 201, 'its key is free again')
  const acts = await activityOf(api, s.squadId, `entityType=secret&entityId=${secret.id}`)
  t.ok(acts.some((a: any) => a.action === 'secret.deleted') && acts.some((a: any) => a.action === 'secret.disabled'), 'status changes and delete are in the activity')
})

eachBackend(
  t,
  'secrets: provider timeouts and 403s fail clearly, each with a failure access event',
  async (t, api) => {
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
    t.same(
      events.map((e: any) => e.errorCode),
      ['provider_timeout', 'provider_timeout', 'provider_access_denied', null],
    )
    t.same(
      events.map((e: any) => e.provider),
      ['memory_vault', 'memory_vault', 'memory_vault', 'memory_vault'],
    )
  },
  { secretProviders: [mem.provider], secretProviderTimeoutMs: 5 },
)
