import t from 'tap'
import { eventually, seed, startInstance, type TestInstance } from './helpers/fleet.js'
import { referenceTower } from './helpers/reference-tower.js'

// slaw against a double of the protocol's reference tower (Botfather), built from its published
// shapes: see helpers/reference-tower.ts for what it checks and docs/tower.md for what was verified.

const connected = (inst: TestInstance) => eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected')

async function costEvent(inst: TestInstance, squadId: string, agentId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await inst.call('POST', `/api/squads/${squadId}/cost-events`, { agentId, model: 'model-x', inputTokens: 10, outputTokens: 5, costCents: 2, ...extra })
  if (res.status !== 201) throw new Error(`cost: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.costEvent.id
}

t.test('enrollment: approval arrives through a poll answer without enrollmentId; the secret goes under both header names', async (t) => {
  const tower = await referenceTower(t, { enrollmentSecret: 'fleet-secret-123' })
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-enroll', enrollmentSecret: 'fleet-secret-123' })
  await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending')
  t.equal((await inst.call('GET', '/api/squads')).status, 403, 'enforce: gated while pending')
  const enroll = tower.requests.find((r) => r.path === '/enroll')!
  t.equal(enroll.headers['x-botfather-enrollment-secret'], 'fleet-secret-123', "the reference tower's header")
  t.equal(enroll.headers['x-enrollment-secret'], 'fleet-secret-123', 'and ours')
  // Polls come every 10 s (the reference tower's pollIntervalSec): the test asks for them.
  await inst.client.syncNow!()
  t.equal(tower.count('/enroll/poll', 200), 1, 'a poll answered: still pending')
  tower.approve('ref-enroll')
  await inst.client.syncNow!()
  await connected(inst)
  const status = await inst.status()
  t.equal(status.enrollmentState, 'active')
  t.equal(status.gated, false, 'ungated once active')
  t.equal(status.lastError, null)
  t.equal(tower.count('/enroll'), 1, 'one enrollment: the polls completed it')
  t.equal((await inst.call('GET', '/api/squads')).status, 200)
})

t.test('sync: every nullable key is sent as null; the tower stores everything', async (t) => {
  const tower = await referenceTower(t, { autoApprove: true })
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-nulls' })
  await connected(inst)
  const { squadId, agentId } = await seed(inst)
  const issue = await inst.call('POST', `/api/squads/${squadId}/issues`, { title: 'No project, nobody assigned' })
  t.equal(issue.status, 201)
  const costId = await costEvent(inst, squadId, agentId)
  await inst.client.syncNow!()
  await eventually(async () => (await inst.status()).spoolDepth === 0, 10_000, 'spool drained')
  t.equal(tower.count('/sync', 400), 0, 'no batch refused')
  const agent = tower.entities('agent').find((a) => a.localId === agentId)
  t.match(agent, { title: null, reportsToLocalId: null }, 'agent: title and reportsToLocalId as null')
  const sentIssue = tower.entities('issue').find((i) => i.localId === issue.body.issue.id)
  t.match(sentIssue, { projectLocalId: null, assigneeAgentLocalId: null })
  const cost = tower.facts('cost_event').find((c) => c.localId === costId)
  t.match(cost, { issueLocalId: null, projectLocalId: null, biller: null }, 'cost_event: issue, project and biller as null')
  t.ok(tower.facts('activity_event').length > 0, 'activity events stored')
  t.equal((await inst.status()).rejectedCount, 0)
})

t.test('a record the tower refuses is isolated and parked; the rest flows and heartbeats go on', async (t) => {
  const tower = await referenceTower(t, { autoApprove: true })
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-refused' })
  await connected(inst)
  const { squadId, agentId } = await seed(inst)
  await inst.client.syncNow!()
  const before = await Promise.all([1, 2, 3].map(() => costEvent(inst, squadId, agentId)))
  // slaw takes models up to 200 characters; the reference tower only 128: a real disagreement.
  const refused = await costEvent(inst, squadId, agentId, { model: 'm'.repeat(150) })
  const after = await Promise.all([1, 2, 3].map(() => costEvent(inst, squadId, agentId)))
  await inst.client.syncNow!()
  await eventually(async () => (await inst.status()).spoolDepth === 0, 10_000, 'spool drained past the refused record')
  const stored = tower.facts('cost_event').map((c) => c.localId)
  t.same(
    [...before, ...after].filter((id) => !stored.includes(id)),
    [],
    'every other cost event arrived',
  )
  t.notOk(stored.includes(refused), 'the refused one is not there')
  const status = await inst.status()
  t.equal(status.rejectedCount, 1, 'one record parked')
  t.match(status.lastRejection, { code: 'invalid_payload', type: 'cost_event', localId: refused })
  t.equal(status.state, 'connected')
  const heartbeats = tower.count('/heartbeat', 200)
  await inst.client.syncNow!()
  t.ok(tower.count('/heartbeat', 200) > heartbeats, 'heartbeats still answered')
  t.equal((await inst.status()).rejectedCount, 1, 'the parked record is not sent again')
})

t.test('heartbeats and directives never wait behind a failing sync', async (t) => {
  const tower = await referenceTower(t, { autoApprove: true })
  // A sync retry waits seconds; heartbeats are due every 200 ms.
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-backoff', heartbeatSec: 0.2, retryBaseMs: 5000, retryMaxMs: 60_000 })
  await connected(inst)
  const { squadId, agentId } = await seed(inst)
  await inst.client.syncNow!()
  tower.failPath('/sync', 503)
  await costEvent(inst, squadId, agentId)
  await eventually(async () => tower.count('/sync', 503) >= 1, 10_000, 'a failed sync')
  const failedAt = tower.requests.findIndex((r) => r.path === '/sync' && r.status === 503)
  tower.queueDirective('ref-backoff', { kind: 'set_limits', limit: { costLimitCents: 1000, tokenLimit: null, window: 'calendar_month_utc', warnPercent: 80, mode: 'soft', version: 7 } })
  await eventually(async () => (await inst.status()).appliedLimitVersion === 7, 10_000, 'the limit applied while sync backs off')
  await eventually(async () => tower.requests.slice(failedAt).filter((r) => r.path === '/heartbeat').length >= 3, 10_000, 'heartbeats after the failure')
  const syncsAfter = tower.requests.slice(failedAt + 1).filter((r) => r.path === '/sync').length
  const heartbeatsAfter = tower.requests.slice(failedAt + 1).filter((r) => r.path === '/heartbeat').length
  t.ok(heartbeatsAfter >= 3 && syncsAfter <= 1, `heartbeats went on (${heartbeatsAfter}) while sync waited (${syncsAfter} retries)`)
  const away = await inst.status()
  t.equal(away.state, 'unreachable', 'a failed call shows: the tower is not fully there')
  t.equal(away.lastError?.code, 'internal_error')
  tower.failPath('/sync', null)
  await inst.client.syncNow!()
  const back = await inst.status()
  t.equal(back.state, 'connected')
  t.equal(back.lastError, null, 'lastError cleared on the next success')
  t.equal(back.spoolDepth, 0)
})

t.test('a 401 after the enrollment was active: back to pending, gated, a new enrollment', async (t) => {
  const tower = await referenceTower(t)
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-revoked' })
  await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending')
  tower.approve('ref-revoked')
  await inst.client.syncNow!()
  await connected(inst)
  t.equal((await inst.call('GET', '/api/squads')).status, 200)
  const enrolls = tower.count('/enroll')
  tower.revoke('ref-revoked')
  await inst.client.syncNow!().catch(() => undefined)
  await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending again')
  t.ok(tower.count('/enroll') > enrolls, 'a new enrollment was requested')
  const gated = await inst.call('GET', '/api/squads')
  t.equal(gated.status, 403, 'enforce gates the API until the tower approves again')
  t.equal(gated.body.code, 'instance_not_enrolled')
  t.equal((await inst.status()).gated, true)
  tower.approve('ref-revoked')
  await inst.client.syncNow!()
  await connected(inst)
  t.equal((await inst.call('GET', '/api/squads')).status, 200, 'ungated once active again')
})

t.test('skills: the reference shapes apply; one that cannot be applied is reported while the others apply', async (t) => {
  const tower = await referenceTower(t, { autoApprove: true })
  // Published before the instance comes: one pull sees all three.
  tower.publishSkill({ key: 'lint', name: 'Lint', markdown: '# Lint\nRun the linter.' })
  tower.publishSkill({ key: 'e2e', name: 'E2E', markdown: '# E2E', files: [{ path: 'run.sh', content: 'echo ok', encoding: 'utf8' }] })
  tower.publishSkill({ key: 'broken', name: 'Broken', markdown: '# Broken', files: [{ path: '../../etc/passwd', content: 'x', encoding: 'utf8' }] })
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-skills' })
  await connected(inst)
  await eventually(async () => (await inst.status()).appliedSkillCatalogVersion === 3, 10_000, 'catalog applied')
  const catalog = await inst.storage.skills.catalogList()
  t.same(catalog.map((s) => s.key).sort(), ['e2e', 'lint'], 'the two good skills applied')
  t.equal(catalog.find((s) => s.key === 'e2e')?.hasFiles, true, 'hasFiles derived from files')
  const status = await inst.status()
  t.equal(status.rejectedCount, 1, 'the skill that cannot be applied is reported')
  t.match(status.lastRejection, { type: 'skill', localId: 'broken', code: 'invalid_skill' })
  t.equal(status.state, 'connected')
  const { squadId } = await seed(inst)
  t.equal((await inst.call('POST', '/api/tower/skills/e2e/install', { squadId })).status, 200, 'an applied skill installs')
  // An install pulls the catalog again: the skill is still unusable and reported again.
  t.equal((await inst.status()).rejectedCount, 2)
})

t.test('a tower that refuses every batch parks nothing: reporting backs off and resumes', async (t) => {
  const tower = await referenceTower(t, { autoApprove: true })
  const inst = await startInstance(t, { url: tower.url, instanceId: 'ref-all-refused' })
  await connected(inst)
  const { squadId, agentId } = await seed(inst)
  tower.failPath('/sync', 400)
  await Promise.all([1, 2, 3].map(() => costEvent(inst, squadId, agentId)))
  await inst.client.syncNow!()
  const refused = await inst.status()
  t.equal(refused.rejectedCount, 0, 'nothing parked: the envelope, not a record, was refused')
  t.ok(refused.spoolDepth >= 3, `everything still waits in the outbox (${refused.spoolDepth})`)
  t.equal(refused.lastError?.code, 'internal_error', 'the refusal is shown')
  tower.failPath('/sync', null)
  await inst.client.syncNow!()
  const after = await inst.status()
  t.equal(after.spoolDepth, 0, 'everything sent once the tower takes batches again')
  t.equal(after.rejectedCount, 0)
  t.equal(tower.facts('cost_event').length, 3)
})
