import { Writable } from 'node:stream'
import t from 'tap'
import pino from 'pino'
import { sql, type Kysely } from 'kysely'
import { createInstance, registerBindingSource, SecretProviderError, type SecretProvider } from '@slaw/core'
import { backends } from './helpers/backends.js'
import { makeApi, operatorToken, testAdapters, testMasterKey } from './helpers/instance.js'

// Tables standing in for the runs' and routines' own (agents.adapter_config, routines.env): usage
// reads bindings through the same registry, whatever module owns the table.
registerBindingSource({ consumerType: 'routine', table: 'leak_routines', column: 'env', path: [], nameColumn: 'title', configPath: 'env' })
registerBindingSource({ consumerType: 'agent', table: 'leak_agents', column: 'adapter_config', path: ['env'], nameColumn: 'name', configPath: 'adapterConfig.env' })

const localValue = 'LOCAL-sekrit-8f3a1c'
const rotatedValue = 'ROTATED-sekrit-77b2'
const remoteValue = 'REMOTE-sekrit-19de'

const remote: SecretProvider = {
  type: 'aws_like',
  configKeys: ['region'],
  async store() {
    throw new SecretProviderError('invalid_config', 'read-only stand-in')
  },
  async resolve({ ref }) {
    if (ref === 'arn:denied') throw new SecretProviderError('access_denied', `AccessDeniedException for ${ref}`)
    return remoteValue
  },
  async delete() {},
  async health() {
    return { ok: true }
  },
}

for (const backend of backends) {
  t.test(`a resolved value appears in no response, log line, activity entry or outbox payload [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const lines: string[] = []
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk))
        done()
      },
    })
    const { storage, dispose } = await backend.create()
    const instance = await createInstance({ storage, operatorKey: operatorToken, masterKey: testMasterKey, adapters: testAdapters, logger: pino({ level: 'trace' }, sink), secretProviders: [remote] })
    t.teardown(async () => {
      await instance.close()
      await dispose()
    })
    const api = await makeApi(instance, backend.name)
    const bodies: string[] = []
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await api.call(method, url, body)
      bodies.push(JSON.stringify(res.body ?? null))
      return res
    }

    const s = await api.seed('Leakproof')
    const local = (await call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'Local token', value: localValue })).body.secret
    await call('POST', `/api/secrets/${local.id}/rotate`, { value: rotatedValue })
    const cfg = (await call('POST', `/api/squads/${s.squadId}/secret-provider-configs`, { provider: 'aws_like', config: { region: 'eu-west-1' } })).body.providerConfig
    const aws = (
      await call('POST', `/api/squads/${s.squadId}/secrets`, {
        name: 'AWS token',
        managedMode: 'external_reference',
        providerConfigId: cfg.id,
        externalRef: 'arn:aws:secretsmanager:eu-west-1:1:secret:x',
      })
    ).body.secret
    const denied = (await call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'Denied', managedMode: 'external_reference', providerConfigId: cfg.id, externalRef: 'arn:denied' })).body.secret

    // Bind both into a routine's env and an agent's adapterConfig.env.
    const db = (instance.storage as unknown as { db: Kysely<unknown> }).db
    await sql`create table leak_routines (id uuid primary key, squad_id uuid not null, title text not null, env jsonb)`.execute(db)
    await sql`create table leak_agents (id uuid primary key, squad_id uuid not null, name text not null, adapter_config jsonb)`.execute(db)
    const routineId = '01a2016d-4579-7b3a-99bd-85bf68260abc'
    const routineEnv = { LOCAL: { type: 'secret_ref', secretId: local.id, version: 'latest' }, AWS: { type: 'secret_ref', secretId: aws.id, version: 1 }, PLAIN: 'x' }
    await sql`insert into leak_routines values (${routineId}, ${s.squadId}, 'Nightly', (${JSON.stringify(routineEnv)}::text)::jsonb)`.execute(db)
    await sql`insert into leak_agents values (${s.agentId}, ${s.squadId}, 'alice', (${JSON.stringify({ command: 'x', env: { TOKEN: { type: 'secret_ref', secretId: local.id, version: 1 } } })}::text)::jsonb)`.execute(
      db,
    )

    const resolved: string[] = []
    const at = (secretId: string, consumer: { type: 'routine' | 'agent'; id: string }, configPath: string, version: 'latest' | number = 'latest') =>
      instance.services.secrets.resolve({ squadId: s.squadId, secretId, version, consumer, configPath, actor: { type: 'system', id: 'routine-runner' }, heartbeatRunId: null, issueId: null })
    resolved.push(await at(local.id, { type: 'routine', id: routineId }, 'env.LOCAL'))
    resolved.push(await at(aws.id, { type: 'routine', id: routineId }, 'env.AWS', 1))
    resolved.push(await at(local.id, { type: 'agent', id: s.agentId }, 'adapterConfig.env.TOKEN', 1))
    t.same(resolved, [rotatedValue, remoteValue, localValue], 'both secrets resolve at run time')
    const errors: string[] = []
    await at(denied.id, { type: 'routine', id: routineId }, 'env.DENIED').catch((err: Error) => errors.push(err.message))
    await call('PATCH', `/api/secrets/${aws.id}`, { status: 'disabled' })
    await at(aws.id, { type: 'routine', id: routineId }, 'env.AWS').catch((err: Error) => errors.push(err.message))
    t.equal(errors.length, 2, 'failures are errors')

    const usage = await call('GET', `/api/secrets/${local.id}/usage`)
    t.same(usage.body.bindings, [
      { consumerType: 'routine', consumerId: routineId, consumerName: 'Nightly', configPath: 'env.LOCAL', version: 'latest' },
      { consumerType: 'agent', consumerId: s.agentId, consumerName: 'alice', configPath: 'adapterConfig.env.TOKEN', version: 1 },
    ])
    t.same(usage.body.consumers.map((c: any) => c.type).sort(), ['agent', 'routine'])
    const events = (await call('GET', `/api/secrets/${local.id}/access-events`)).body.events
    t.same(
      events.map((e: any) => [e.consumerType, e.configPath, e.outcome]),
      [
        ['agent', 'adapterConfig.env.TOKEN', 'success'],
        ['routine', 'env.LOCAL', 'success'],
      ],
      'the access events name each consumer',
    )
    t.match((await call('GET', `/api/secrets/${denied.id}/access-events`)).body.events, [{ outcome: 'failure', errorCode: 'provider_access_denied', provider: 'aws_like' }])
    for (const url of [
      `/api/squads/${s.squadId}/secrets`,
      `/api/secrets/${local.id}`,
      `/api/secrets/${aws.id}`,
      `/api/squads/${s.squadId}/activity`,
      `/api/squads/${s.squadId}/secret-providers/health`,
      '/api/openapi.json',
    ])
      await call('GET', url)
    await call('DELETE', `/api/secrets/${local.id}`)
    await at(local.id, { type: 'routine', id: routineId }, 'env.LOCAL').catch((err: Error) => errors.push(err.message))
    t.match(errors[2], /deleted/, 'a deleted secret still bound to a routine fails clearly')

    const activity = await instance.storage.activity.list({ squadId: s.squadId, limit: 500 })
    t.ok(activity.some((a) => a.action === 'secret.created') && activity.some((a) => a.action === 'secret.rotated'), 'activity entries exist')
    const outbox = await instance.storage.outbox.readAfter('0', 10_000)
    const haystacks: Array<[string, string]> = [
      ['responses', bodies.join('\n')],
      ['log lines', lines.join('')],
      ['activity entries', JSON.stringify(activity)],
      ['outbox/tower payloads', JSON.stringify(outbox)],
      ['error messages', errors.join('\n')],
    ]
    t.ok(lines.length > 10, `log lines were captured (${lines.length})`)
    for (const [where, text] of haystacks) {
      for (const value of [localValue, rotatedValue, remoteValue]) t.notOk(text.includes(value), `${where} never hold ${value.split('-')[0]}`)
    }
    // At rest: local values are only ciphertext.
    const { rows } = await sql<{ ref: string }>`select ref from secret_versions`.execute(db)
    t.notOk(JSON.stringify(rows).includes(localValue) || JSON.stringify(rows).includes(rotatedValue), 'no plaintext at rest')
  })
}
