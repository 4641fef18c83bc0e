import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { activityOf, isError, sleep, unknownId } from './helpers/fixtures.js'

eachBackend(t, 'keys', async (t, api) => {
  await t.test('agent keys are shown once, listed without secrets, expire and revoke', async (t) => {
    const s = await api.seed('Keys')
    const created = await api.call('POST', `/api/agents/${s.agentId}/keys`, { name: 'ci' })
    t.equal(created.status, 201)
    t.same(Object.keys(created.body).sort(), ['key', 'token'])
    t.same(Object.keys(created.body.key).sort(), ['createdAt', 'expiresAt', 'id', 'name'])
    t.match(created.body.key, { name: 'ci', expiresAt: null })
    t.match(created.body.token, /^slaw_ak_[A-Za-z0-9_-]{43}$/)
    const token: string = created.body.token
    t.equal((await api.call('GET', '/api/agents/me', undefined, token)).body.agent.id, s.agentId, 'the token works')

    const list = await api.call('GET', `/api/agents/${s.agentId}/keys`)
    t.equal(list.status, 200)
    t.same(
      list.body.keys.map((k: any) => k.name),
      ['test', 'ci'],
    )
    for (const k of list.body.keys) t.same(Object.keys(k).sort(), ['createdAt', 'expiresAt', 'id', 'name'], 'no token, no hash')
    t.notOk(JSON.stringify(list.body).includes(token), 'the token is not in the list')
    t.notOk(JSON.stringify(list.body).includes(s.agentToken))

    // Expiry.
    isError(t, await api.call('POST', `/api/agents/${s.agentId}/keys`, { name: 'old', expiresAt: new Date(Date.now() - 60_000).toISOString() }), 400, 'invalid_payload', 'expiresAt in the past')
    isError(t, await api.call('POST', `/api/agents/${s.agentId}/keys`, { name: 'bad', expiresAt: 'tomorrow' }), 400, 'invalid_payload', 'expiresAt not ISO 8601')
    isError(t, await api.call('POST', `/api/agents/${s.agentId}/keys`, { name: ' ' }), 400, 'invalid_payload', 'blank name')
    const expiresAt = new Date(Date.now() + 1500).toISOString()
    const short = await api.call('POST', `/api/agents/${s.agentId}/keys`, { name: 'short', expiresAt })
    t.equal(short.status, 201)
    t.equal(short.body.key.expiresAt, expiresAt)
    t.equal((await api.call('GET', '/api/agents/me', undefined, short.body.token)).status, 200, 'works before it expires (and is now cached)')
    await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 100)
    isError(t, await api.call('GET', '/api/agents/me', undefined, short.body.token), 401, 'unauthorized', 'expired key')

    // Revocation.
    isError(t, await api.call('DELETE', `/api/agents/${s.agentId}/keys/${created.body.key.id}`, undefined, s.agentToken), 403, 'forbidden', 'agent key revokes')
    const revoked = await api.call('DELETE', `/api/agents/${s.agentId}/keys/${created.body.key.id}`)
    t.same([revoked.status, revoked.body], [200, { ok: true }])
    isError(t, await api.call('GET', '/api/agents/me', undefined, token), 401, 'unauthorized', 'revoked key')
    isError(t, await api.call('DELETE', `/api/agents/${s.agentId}/keys/${created.body.key.id}`), 404, 'not_found', 'revoke twice')
    isError(t, await api.call('DELETE', `/api/agents/${s.agentId}/keys/not-a-uuid`), 404, 'not_found', 'malformed key id')
    isError(t, await api.call('DELETE', `/api/agents/${s.agentId}/keys/${unknownId}`), 404, 'not_found', 'unknown key id')
    const other = await api.seed('Other')
    const otherKeyId = (await api.call('GET', `/api/agents/${other.agentId}/keys`)).body.keys[0].id
    isError(t, await api.call('DELETE', `/api/agents/${s.agentId}/keys/${otherKeyId}`), 404, 'not_found', 'a key of another agent')
    t.equal((await api.call('GET', '/api/agents/me', undefined, other.agentToken)).status, 200, 'that key still works')
    t.notOk(
      (await api.call('GET', `/api/agents/${s.agentId}/keys`)).body.keys.some((k: any) => k.id === created.body.key.id),
      'revoked keys leave the list',
    )

    // Activity records key events without tokens or hashes.
    const entries = await activityOf(api, s.squadId, `entityId=${s.agentId}`)
    t.ok(entries.some((e) => e.action === 'agent.key_created' && e.details.keyId === created.body.key.id))
    t.ok(entries.some((e) => e.action === 'agent.key_revoked' && e.details.keyId === created.body.key.id))
    const everything = JSON.stringify(await api.instance.storage.activity.list({ squadId: s.squadId, limit: 500 }))
    for (const tk of [token, short.body.token, s.agentToken]) t.notOk(everything.includes(tk), 'no token in any activity entry')
    t.notOk(/[0-9a-f]{64}/.test(everything), 'no token hash in any activity entry')
  })

  await t.test('401 and 403 answers', async (t) => {
    const s = await api.seed('Auth')
    isError(t, await api.call('GET', '/api/squads', undefined, null), 401, 'unauthorized', 'missing header')
    const variants: Record<string, string> = {
      basic: 'Basic dXNlcjpwYXNz',
      'bare Bearer': 'Bearer',
      'Bearer and space': 'Bearer ',
      'short token': 'Bearer abc',
      'two tokens': `Bearer ${s.agentToken} ${s.agentToken}`,
      'token without scheme': s.agentToken,
      'unknown token': 'Bearer slaw_ak_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      'bad characters': 'Bearer slaw_ak_<script>alert(1)</script>xxxxxxxx',
    }
    for (const [label, header] of Object.entries(variants)) {
      isError(t, await api.call('GET', '/api/squads', undefined, null, { authorization: header }), 401, 'unauthorized', label)
    }
    t.equal((await api.call('GET', '/api/squads', undefined, null, { authorization: `bearer ${s.agentToken}` })).status, 200, 'the scheme is case-insensitive (RFC 7235)')
    isError(
      t,
      await api.call('GET', '/api/squads', undefined, 'slaw_ak_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', { 'x-svc-run-id': 'bad' }),
      401,
      'unauthorized',
      'an unknown key comes before a bad run id',
    )
    // An unauthenticated caller learns nothing about a route's schema.
    isError(t, await api.call('POST', '/api/squads', { nope: 1 }, null), 401, 'unauthorized', 'no key, invalid body')

    // Agent keys on Operator endpoints.
    const opOnly: Array<[string, string, unknown]> = [
      ['POST', '/api/squads', { name: 'x' }],
      ['GET', '/api/operator-keys', undefined],
      ['POST', '/api/operator-keys', { name: 'x' }],
      ['POST', `/api/agents/${s.agentId}/keys`, { name: 'x' }],
      ['GET', `/api/agents/${s.agentId}/keys`, undefined],
      ['POST', `/api/squads/${s.squadId}/agents`, { name: 'x', role: 'x', adapterType: 'process' }],
      ['POST', `/api/squads/${s.squadId}/activity`, { actorId: 'x', action: 'x', entityType: 'x', entityId: 'x' }],
    ]
    for (const [method, url, body] of opOnly) isError(t, await api.call(method, url, body, s.agentToken), 403, 'forbidden', `agent key: ${method} ${url}`)
  })

  await t.test('operator keys', async (t) => {
    const s = await api.seed('Ops')
    const created = await api.call('POST', '/api/operator-keys', { name: 'laptop' })
    t.equal(created.status, 201)
    t.same(Object.keys(created.body.key).sort(), ['createdAt', 'expiresAt', 'id', 'name'])
    t.match(created.body.token, /^slaw_op_[A-Za-z0-9_-]{43}$/)
    const token: string = created.body.token
    const squad = await api.call('POST', '/api/squads', { name: 'Made by laptop' }, token)
    t.equal(squad.status, 201, 'a new operator key has full access')

    const list = await api.call('GET', '/api/operator-keys')
    t.equal(list.status, 200)
    t.same(
      list.body.keys.map((k: any) => k.name),
      ['bootstrap (SVC_OPERATOR_KEY)', 'laptop'],
    )
    for (const k of list.body.keys) t.same(Object.keys(k).sort(), ['createdAt', 'expiresAt', 'id', 'name'])
    t.notOk(JSON.stringify(list.body).includes(token))

    isError(t, await api.call('POST', '/api/operator-keys', { name: 'x', expiresAt: '2001-01-01T00:00:00Z' }), 400, 'invalid_payload', 'past expiry')
    isError(t, await api.call('POST', '/api/operator-keys', { name: 'x', extra: true }), 400, 'invalid_payload', 'unknown field')
    isError(t, await api.call('DELETE', `/api/operator-keys/${created.body.key.id}`, undefined, s.agentToken), 403, 'forbidden', 'agent key revokes an operator key')
    isError(t, await api.call('DELETE', `/api/operator-keys/${created.body.key.id}`, undefined, token), 422, 'invalid_state', 'a key cannot revoke itself')
    const revoked = await api.call('DELETE', `/api/operator-keys/${created.body.key.id}`)
    t.same([revoked.status, revoked.body], [200, { ok: true }])
    isError(t, await api.call('GET', '/api/squads', undefined, token), 401, 'unauthorized', 'revoked operator key')
    isError(t, await api.call('DELETE', `/api/operator-keys/${created.body.key.id}`), 404, 'not_found', 'revoke twice')
    isError(t, await api.call('DELETE', '/api/operator-keys/nope'), 404, 'not_found', 'malformed id')
    const agentKeyId = (await api.call('GET', `/api/agents/${s.agentId}/keys`)).body.keys[0].id
    isError(t, await api.call('DELETE', `/api/operator-keys/${agentKeyId}`), 404, 'not_found', 'an agent key is not an operator key')
    t.equal((await api.call('GET', '/api/agents/me', undefined, s.agentToken)).status, 200)
    t.same(
      (await api.call('GET', '/api/operator-keys')).body.keys.map((k: any) => k.name),
      ['bootstrap (SVC_OPERATOR_KEY)'],
    )
  })
})
