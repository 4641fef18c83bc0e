import t from 'tap'
import { operatorActor, validateBindings } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { isError, unknownId } from './helpers/fixtures.js'
import { createSecret, memoryProvider, resolveInput } from './helpers/secrets.js'

const mem = memoryProvider()

eachBackend(
  t,
  'provider configurations: rules, default, health, discovery, supported types',
  async (t, api) => {
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
    isError(
      t,
      await api.call('POST', `${base}/discovery/preview`, { provider: 'memory_vault', config: { options: { apiKey: 'x' } } }),
      400,
      'sensitive_config_rejected',
      'preview applies the same rules',
    )

    const a = (await api.call('POST', base, { provider: 'memory_vault', name: 'A', config: { region: 'eu', options: { retries: 2 } }, isDefault: true })).body.providerConfig
    t.match(a, { provider: 'memory_vault', name: 'A', config: { region: 'eu', options: { retries: 2 } }, isDefault: true })
    const b = (await api.call('POST', base, { provider: 'memory_vault', name: 'B' })).body.providerConfig
    t.equal(b.isDefault, false)
    t.equal((await api.call('POST', `/api/secret-provider-configs/${b.id}/default`)).body.providerConfig.isDefault, true)
    const list = (await api.call('GET', base)).body.providerConfigs
    t.same(
      list.map((c: any) => [c.name, c.isDefault]),
      [
        ['A', false],
        ['B', true],
      ],
      'one default per squad',
    )
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
      t.match(
        agg.providers.find((p: any) => p.provider === 'local_encrypted'),
        { ok: true },
      )
      t.equal(agg.providers.filter((p: any) => p.provider === 'memory_vault').length, 2, 'each saved config is checked')
    } finally {
      mem.state.healthy = true
    }
    const types = (await api.call('GET', `/api/squads/${s.squadId}/secret-providers`)).body.providers
    t.same(
      types.map((p: any) => [p.type, p.builtIn, p.canListRemote]),
      [
        ['local_encrypted', true, false],
        ['memory_vault', false, true],
      ],
    )

    // A secret created without a provider uses the squad default (B, memory_vault).
    const viaDefault = await createSecret(api, s.squadId, { name: 'by default', value: 'v' })
    t.match(viaDefault, { provider: 'memory_vault', providerConfigId: b.id })
    isError(t, await api.call('DELETE', `/api/secret-provider-configs/${b.id}`), 409, 'secret_provider_config_in_use')
    t.equal((await api.call('DELETE', `/api/secrets/${viaDefault.id}`)).status, 200)
    t.equal((await api.call('DELETE', `/api/secret-provider-configs/${b.id}`)).status, 200, 'a config only deleted secrets used can go')
    t.equal((await api.call('DELETE', `/api/secret-provider-configs/${a.id}`)).status, 200)
    isError(t, await api.call('GET', `/api/secret-provider-configs/${a.id}`), 404, 'not_found')
  },
  { secretProviders: [mem.provider] },
)

eachBackend(
  t,
  'remote import: preview classifies ready, duplicate, conflict; import counts',
  async (t, api) => {
    const s = await api.seed('Importers')
    const cfg = (await api.call('POST', `/api/squads/${s.squadId}/secret-provider-configs`, { provider: 'memory_vault', name: 'mem' })).body.providerConfig
    await createSecret(api, s.squadId, { name: 'beta', value: 'local' })
    const imported = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: cfg.id, secrets: [{ externalRef: 'remote/gamma', name: 'gamma' }] })
    t.same([imported.body.imported, imported.body.skipped, imported.body.errored], [1, 0, 0])

    const page1 = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, pageSize: 2 })
    t.equal(page1.status, 200)
    t.same(
      page1.body.candidates.map((c: any) => [c.externalRef, c.key, c.status]),
      [
        ['remote/alpha', 'Alpha_token', 'ready'],
        ['remote/beta', 'beta', 'conflict'],
      ],
    )
    const page2 = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, pageSize: 2, nextToken: page1.body.nextToken })
    t.same(
      page2.body.candidates.map((c: any) => [c.externalRef, c.status]),
      [['remote/gamma', 'duplicate']],
    )
    t.equal(page2.body.nextToken, null)
    const filtered = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, query: 'alp' })
    t.same(
      filtered.body.candidates.map((c: any) => c.externalRef),
      ['remote/alpha'],
    )
    // A secret slaw itself stored through this config shows remotely under <prefix><secretId>: a duplicate, not new.
    const own = await createSecret(api, s.squadId, { name: 'own', value: 'stored by slaw', providerConfigId: cfg.id })
    t.equal(own.managedMode, 'svc_managed')
    mem.remote.push({ externalRef: `mem-arn/slaw/${own.id}`, name: `slaw/${own.id}` })
    t.teardown(() => void mem.remote.pop())
    const ownPreview = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, query: 'slaw/' })
    t.same(
      ownPreview.body.candidates.map((c: any) => [c.name, c.status, c.existingSecretId]),
      [[`slaw/${own.id}`, 'duplicate', own.id]],
      'a secret slaw stored is a duplicate',
    )
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: cfg.id, pageSize: 101 }), 400, 'invalid_payload', 'pageSize at most 100')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import/preview`, { providerConfigId: unknownId }), 400, 'invalid_payload')

    const res = await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, {
      providerConfigId: cfg.id,
      secrets: [{ externalRef: 'remote/alpha', name: 'Alpha token' }, { externalRef: 'remote/gamma' }, { externalRef: 'remote/beta', name: 'beta' }],
    })
    t.equal(res.status, 200)
    t.same([res.body.imported, res.body.skipped, res.body.errored], [1, 1, 1])
    t.same(
      res.body.results.map((r: any) => r.status),
      ['imported', 'skipped', 'errored'],
    )
    const alpha = (await api.call('GET', `/api/secrets/${res.body.results[0].secretId}`)).body.secret
    t.match(alpha, { managedMode: 'external_reference', externalRef: 'remote/alpha', provider: 'memory_vault', providerConfigId: cfg.id, key: 'Alpha_token' })
    mem.values.set('ext:remote/alpha', 'alpha-remote-value')
    t.equal(await api.instance.services.secrets.resolve(resolveInput(s.squadId, alpha.id)), 'alpha-remote-value', 'an imported reference resolves through its provider')
    mem.values.set('ext:remote/alpha-2', 'corrected-value')
    t.equal((await api.call('PATCH', `/api/secrets/${alpha.id}`, { externalRef: 'remote/alpha-2' })).status, 200)
    t.equal(await api.instance.services.secrets.resolve(resolveInput(s.squadId, alpha.id)), 'corrected-value', 'a corrected externalRef is what latest resolves to')
    t.equal((await api.call('GET', `/api/secrets/${alpha.id}`)).body.secret.latestVersion, 1, 'without a new version')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: cfg.id, secrets: [] }), 400, 'invalid_payload', 'at least one selection')
    isError(
      t,
      await api.call('POST', `/api/squads/${s.squadId}/secrets/remote-import`, { providerConfigId: cfg.id, secrets: Array.from({ length: 101 }, (_, i) => ({ externalRef: `r${i}` })) }),
      400,
      'invalid_payload',
      'at most 100',
    )
  },
  { secretProviders: [mem.provider] },
)

eachBackend(t, 'bindings: validateBindings checks the operator, the squad and the version', async (t, api) => {
  const s = await api.seed('Binders')
  const secret = await createSecret(api, s.squadId, { name: 'bound', value: 'v' })
  const { storage } = api.instance
  const agentActor = { type: 'agent' as const, agentId: s.agentId, squadId: s.squadId, keyId: 'k', runId: null }
  t.same(await validateBindings(storage, s.squadId, { A: 'x', B: { type: 'plain', value: 'y' }, C: { type: 'secret_ref', secretId: secret.id, version: 'latest' } }, operatorActor()), {
    A: 'x',
    B: { type: 'plain', value: 'y' },
    C: { type: 'secret_ref', secretId: secret.id, version: 'latest' },
  })
  t.same(await validateBindings(storage, s.squadId, { A: 'x' }, agentActor), { A: 'x' }, 'an agent may set plain values')
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 1 } }, agentActor), { code: 'forbidden' }, 'only the operator binds secrets')
  const other = await api.seed('Not yours')
  await t.rejects(validateBindings(storage, other.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 'latest' } }, operatorActor()), {
    code: 'invalid_payload',
    details: [{ path: '/env/C/secretId' }],
  })
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 2 } }, operatorActor()), {
    code: 'invalid_payload',
    details: [{ path: '/env/C/version' }],
  })
  await t.rejects(validateBindings(storage, s.squadId, { 'BAD-NAME': 'x' }, operatorActor()), { code: 'invalid_payload' })
  await t.rejects(validateBindings(storage, s.squadId, { C: { type: 'secret', secretId: secret.id } }, operatorActor()), { code: 'invalid_payload' })
  await api.call('DELETE', `/api/secrets/${secret.id}`)
  await t.rejects(
    validateBindings(storage, s.squadId, { C: { type: 'secret_ref', secretId: secret.id, version: 'latest' } }, operatorActor()),
    { code: 'invalid_payload' },
    'a deleted secret cannot be bound',
  )
  const usage = await api.call('GET', `/api/secrets/${(await createSecret(api, s.squadId, { name: 'unused', value: 'v' })).id}/usage`)
  t.same(usage.body.bindings, [], 'usage of an unbound secret is empty')
})
