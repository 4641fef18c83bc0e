import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { activityOf, isError, unknownId } from './helpers/fixtures.js'
import { createSecret, memoryProvider } from './helpers/secrets.js'

const mem = memoryProvider()

eachBackend(t, 'secrets: create, read, list, patch; values never come back; activity without values', async (t, api) => {
  const s = await api.seed('Vaulted')
  const created = await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'GitHub token', value: 'ghp_valueNeverShown000000000000000000', description: 'for CI' })
  t.equal(created.status, 201)
  const secret = created.body.secret
  t.match(secret, {
    squadId: s.squadId,
    key: 'GitHub_token',
    name: 'GitHub token',
    provider: 'local_encrypted',
    status: 'active',
    managedMode: 'svc_managed',
    externalRef: null,
    latestVersion: 1,
    description: 'for CI',
    lastResolvedAt: null,
    lastRotatedAt: null,
  })
  t.notOk('value' in secret, 'no value field')
  t.notMatch(JSON.stringify(created.body), /valueNeverShown/, 'the value is not in the create response')

  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'GitHub token', value: 'x' }), 409, 'secret_key_taken', 'a derived key is unique per squad')
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'Other', key: 'GitHub_token', value: 'x' }), 409, 'secret_key_taken', 'an explicit key too')
  const other = await api.seed('Elsewhere')
  t.equal((await api.call('POST', `/api/squads/${other.squadId}/secrets`, { name: 'GitHub token', value: 'x' })).status, 201, 'the same key in another squad is fine')

  const list = await api.call('GET', `/api/squads/${s.squadId}/secrets`)
  t.equal(list.status, 200)
  t.same(
    list.body.secrets.map((x: any) => x.key),
    ['GitHub_token'],
  )
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

eachBackend(
  t,
  'secrets: managedMode, value and externalRef combinations; unknown provider; agents get 403',
  async (t, api) => {
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
  },
  { secretProviders: [mem.provider] },
)
