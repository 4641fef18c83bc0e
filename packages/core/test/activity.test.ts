import t from 'tap'
import { queueWake } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { activityOf, addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'
import { uuidv7 } from '../src/services/foundation/ids.js'

const malformedBase = '0190a5a3-7d4e-7c3b-8f00-00000000beef'

eachBackend(t, 'activity', async (t, api) => {
  await t.test('written with every mutation; run ids from X-Svc-Run-Id', async (t) => {
    const s = await api.seed('Audit')
    // A run of this agent: an agent key stamps only its own runs (another agent's is a 403).
    const runId = (await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: s.squadId, agentId: s.agentId, issueId: null, reason: 'manual' }))).run.id
    const run = { 'x-svc-run-id': runId }
    const created = await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'traced', assigneeAgentId: s.agentId }, s.agentToken, run)
    t.equal(created.status, 201)
    const id = created.body.issue.id
    await api.call('POST', `/api/issues/${id}/checkout`, { agentId: s.agentId }, s.agentToken, run)
    await api.call('PATCH', `/api/issues/${id}`, { priority: 'high' }, s.agentToken, run)
    await api.call('POST', `/api/issues/${id}/comments`, { body: 'working' }, s.agentToken, run)
    await api.call('PUT', `/api/issues/${id}/documents/notes`, { title: 'Notes', format: 'markdown', body: 'x' }, s.agentToken, run)
    await api.call('POST', `/api/issues/${id}/release`, undefined, s.agentToken, run)
    await api.call('POST', `/api/issues/${id}/comments`, { body: 'untraced' }, s.agentToken)
    await api.call('PATCH', `/api/issues/${id}`, { priority: 'low' }, undefined, run)

    const entries = await activityOf(api, s.squadId, `entityId=${id}`)
    t.same(
      entries.map((e) => e.action),
      ['issue.updated', 'issue.comment_added', 'issue.released', 'issue.document_created', 'issue.comment_added', 'issue.updated', 'issue.checked_out', 'issue.created'],
      'one entry per mutation, newest first',
    )
    const agentTraced = entries.slice(2)
    t.ok(
      agentTraced.every((e) => e.runId === runId && e.actorType === 'agent' && e.actorId === s.agentId && e.agentId === s.agentId),
      'agent mutations carry the run id',
    )
    t.equal(entries[1].runId, null, 'no header, no run id')
    t.match(entries[0], { actorType: 'user', runId: null, agentId: null }, "an Operator's header is not a run")
    for (const e of entries) {
      t.same(Object.keys(e).sort(), ['action', 'actorId', 'actorType', 'agentId', 'createdAt', 'details', 'entityId', 'entityType', 'id', 'runId', 'squadId'])
    }

    // A malformed run id is refused before anything is written.
    const before = (await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length
    for (const bad of ['run-1', '1234', `${malformedBase}x`]) {
      isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'x' }, s.agentToken, { 'x-svc-run-id': bad }), 400, 'invalid_payload', `X-Svc-Run-Id ${bad}`)
    }
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length, before, 'nothing was created')

    // Squad and agent mutations are in the trail too.
    const bob = await addAgent(api, s.squadId, 'bob')
    await api.call('PATCH', `/api/squads/${s.squadId}`, { name: 'Audit 2' })
    await api.call('POST', `/api/agents/${bob.id}/pause`)
    const squadActions = (await activityOf(api, s.squadId, 'entityType=squad')).map((e) => e.action)
    t.same(squadActions, ['squad.updated', 'squad.created'])
    const bobActions = (await activityOf(api, s.squadId, `agentId=${bob.id}`)).map((e) => e.action)
    t.same(bobActions, ['agent.paused', 'agent.key_created', 'agent.created'])
  })

  await t.test('list filters and limits', async (t) => {
    const s = await api.seed('Lists')
    const other = await api.seed('Other')
    const bob = await addAgent(api, s.squadId, 'bob')
    const i1 = await addIssue(api, s.squadId, { title: 'one' }, bob.token)
    const i2 = await addIssue(api, s.squadId, { title: 'two' })

    const byAgent = await activityOf(api, s.squadId, `agentId=${bob.id}`)
    t.ok(byAgent.length >= 3 && byAgent.every((e) => e.agentId === bob.id), 'agentId filter')
    t.ok(
      byAgent.some((e) => e.entityId === i1.id),
      "an agent's own issue creation",
    )
    const issues = await activityOf(api, s.squadId, 'entityType=issue')
    t.same(
      issues.map((e) => e.entityId),
      [i2.id, i1.id],
      'entityType filter',
    )
    t.same(
      (await activityOf(api, s.squadId, `entityType=issue&entityId=${i1.id}`)).map((e) => e.action),
      ['issue.created'],
      'entityId filter',
    )
    t.same(await activityOf(api, s.squadId, 'entityType=nothing'), [])
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/activity`, undefined, s.agentToken)).status, 200, "agents read their squad's trail")
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/activity`, undefined, other.agentToken), 404, 'not_found', "another squad's agent")
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/activity?agentId=bob`), 400, 'invalid_payload', 'agentId not a UUID')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/activity?limit=0`), 400, 'invalid_payload', 'limit 0')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/activity?limit=ten`), 400, 'invalid_payload', 'limit not a number')
    t.equal((await activityOf(api, other.squadId)).length, 3, 'squads do not mix')

    // Default 100, clamped to 500: write 600 entries in one transaction.
    await api.instance.storage.transaction(async (tx) => {
      for (let i = 0; i < 600; i++) {
        await tx.activity.insert({
          id: uuidv7(),
          squadId: s.squadId,
          actorType: 'system',
          actorId: 'bulk',
          action: 'bulk.entry',
          entityType: 'bulk',
          entityId: String(i),
          agentId: null,
          runId: null,
          details: { i },
        })
      }
    })
    const dflt = await activityOf(api, s.squadId)
    t.equal(dflt.length, 100, 'limit defaults to 100')
    t.equal(dflt[0].entityId, '599', 'newest first')
    t.equal((await activityOf(api, s.squadId, 'limit=1000')).length, 500, 'clamped to 500')
    t.equal((await activityOf(api, s.squadId, 'limit=100000000000')).length, 500, 'clamped, however large')
    t.same(
      (await activityOf(api, s.squadId, 'limit=3')).map((e) => e.entityId),
      ['599', '598', '597'],
    )
  })

  await t.test("an issue's trail by id or identifier", async (t) => {
    const s = await api.seed('Trail')
    const other = await api.seed('Other')
    const issue = await addIssue(api, s.squadId, { title: 'one' })
    const second = await addIssue(api, s.squadId, { title: 'two' })
    await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'hi' })
    const byId = await api.call('GET', `/api/issues/${issue.id}/activity`, undefined, s.agentToken)
    t.equal(byId.status, 200)
    t.same(
      byId.body.activity.map((e: any) => e.action),
      ['issue.comment_added', 'issue.created'],
    )
    t.ok(
      byId.body.activity.every((e: any) => e.entityId === issue.id),
      'only this issue',
    )
    const byIdentifier = await api.call('GET', `/api/issues/${issue.identifier}/activity`)
    t.same(byIdentifier.body, byId.body, 'by identifier')
    t.equal(issue.identifier, 'TRAI-1')
    t.same(
      (await api.call('GET', '/api/issues/trai-2/activity')).body.activity.map((e: any) => e.entityId),
      [second.id],
      'identifiers are case-insensitive',
    )
    t.same(
      (await api.call('GET', `/api/issues/${issue.id}/activity?limit=1`)).body.activity.map((e: any) => e.action),
      ['issue.comment_added'],
    )
    isError(t, await api.call('GET', '/api/issues/TRAI-99/activity'), 404, 'not_found', 'absent identifier')
    isError(t, await api.call('GET', `/api/issues/${unknownId}/activity`), 404, 'not_found', 'absent id')
    isError(t, await api.call('GET', '/api/issues/TRAI-1-2/activity'), 404, 'not_found', 'neither id nor identifier')
    isError(t, await api.call('GET', `/api/issues/${issue.identifier}/activity`, undefined, other.agentToken), 404, 'not_found', "another squad's agent")
  })

  await t.test('Operator writes, redacted on write', async (t) => {
    const s = await api.seed('Write')
    const other = await api.seed('Other')
    const entry = {
      actorId: 'deploy-bot',
      action: 'deploy.finished',
      entityType: 'deployment',
      entityId: 'dep-42',
      agentId: s.agentId,
      details: {
        token: 'abc123',
        secret: 's3cr3t',
        password: 'hunter2',
        apiKey: 'k-1',
        api_key: 'k-2',
        authorization: 'Basic Zm9vOmJhcg==',
        nested: { clientSecret: 'x', refreshToken: 'y', list: [{ password: 'p' }] },
        header: 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz',
        pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----',
        leaked: `the key was ${s.agentToken}!`,
        inputTokens: 1200,
        environment: 'production',
        count: 3,
      },
    }
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/activity`, entry, s.agentToken), 403, 'forbidden', 'an agent key writes activity')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/activity`, entry, other.agentToken), 404, 'not_found', "another squad's agent")
    const res = await api.call('POST', `/api/squads/${s.squadId}/activity`, entry)
    t.equal(res.status, 201)
    const stored = res.body.activity
    t.match(stored, { squadId: s.squadId, actorType: 'system', actorId: 'deploy-bot', action: 'deploy.finished', entityType: 'deployment', entityId: 'dep-42', agentId: s.agentId, runId: null })
    const d = stored.details
    for (const k of ['token', 'secret', 'password', 'apiKey', 'api_key', 'authorization']) t.equal(d[k], '[REDACTED]', `key ${k}`)
    t.same(d.nested, { clientSecret: '[REDACTED]', refreshToken: '[REDACTED]', list: [{ password: '[REDACTED]' }] }, 'nested keys')
    t.equal(d.header, 'Authorization: Bearer [REDACTED]', 'bearer-like values')
    t.equal(d.pem, '[REDACTED]', 'private-key-like values')
    t.equal(d.leaked, 'the key was [REDACTED]!', 'our own tokens inside text')
    t.same([d.inputTokens, d.environment, d.count], [1200, 'production', 3], 'harmless values stay')
    // Redacted on write: the stored row holds no secret, whatever reads it.
    const raw = JSON.stringify(await api.instance.storage.activity.list({ squadId: s.squadId, entityId: 'dep-42', limit: 5 }))
    for (const secret of ['abc123', 's3cr3t', 'hunter2', 'Zm9vOmJhcg', 'abcdefghijklmnop', 'MIIEowIBAAKCAQEA', s.agentToken]) t.notOk(raw.includes(secret), `stored row lacks ${secret.slice(0, 6)}…`)
    t.same((await activityOf(api, s.squadId, 'entityId=dep-42'))[0], stored, 'the list returns what was stored')

    const minimal = await api.call('POST', `/api/squads/${s.squadId}/activity`, { actorId: 'op', action: 'note', entityType: 'squad', entityId: s.squadId, actorType: 'user' })
    t.match(minimal.body.activity, { actorType: 'user', agentId: null, details: null })
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/activity`, { ...entry, agentId: other.agentId }), 400, 'invalid_payload', 'agent of another squad')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/activity`, { ...entry, action: 'Deploy Finished' }), 400, 'invalid_payload', 'action must be dotted snake_case')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/activity`, { ...entry, actorType: 'robot' }), 400, 'invalid_payload', 'unknown actorType')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/activity`, { action: 'x', entityType: 'x', entityId: 'x' }), 400, 'invalid_payload', 'actorId required')
    isError(t, await api.call('POST', `/api/squads/${unknownId}/activity`, entry), 404, 'not_found', 'unknown squad')
  })
})

t.test('activity: ids made in one process only grow, so newest-first lists keep their order', async (t) => {
  const made = Array.from({ length: 10_000 }, () => uuidv7())
  t.ok(
    made.every((id, i) => i === 0 || id > made[i - 1]!),
    'strictly increasing, thousands per millisecond',
  )
  t.ok(
    made.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)),
    'version 7, RFC 9562 variant',
  )
  const at = Date.parse('2024-01-01T00:00:00Z')
  t.equal(uuidv7(at).slice(0, 13).replace('-', ''), at.toString(16).padStart(12, '0'), 'an explicit time is used as given')
})
