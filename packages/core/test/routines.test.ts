import t from 'tap'
import { activityOf, addAgent, isError, unknownId } from './helpers/fixtures.js'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { outboxRows } from './helpers/governance.js'

async function newRoutine(api: TestApi, squadId: string, body: Record<string, unknown>, token?: string) {
  const res = await api.call('POST', `/api/squads/${squadId}/routines`, body, token)
  if (res.status !== 201) throw new Error(`routine: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

eachBackend(t, 'routines: create records the initial revision; PATCH records one and honours baseRevisionId; restore', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const created = await newRoutine(api, squadId, {
    title: 'Daily report for {{team}}',
    description: 'Write the report. Focus: {{focus}}',
    assigneeAgentId: agentId,
    variables: [
      { name: 'team', defaultValue: 'core' },
      { name: 'focus', type: 'select', options: ['bugs', 'features'], defaultValue: 'bugs' },
    ],
    env: { REGION: 'eu', MODE: { type: 'plain', value: 'fast' } },
  })
  const r = created.routine
  t.equal(r.status, 'active')
  t.equal(r.concurrencyPolicy, 'coalesce_if_active')
  t.equal(r.catchUpPolicy, 'skip_missed')
  t.equal(r.priority, 'medium')
  t.equal(r.revisionNumber, 1)
  t.equal(created.revision.id, r.revisionId)
  t.equal(created.revision.number, 1)
  t.equal(created.revision.change, 'created')
  t.same(created.triggers, [])
  t.same(r.variables[0], { name: 'team', label: null, type: 'text', defaultValue: 'core', required: true, options: null })
  t.same(r.env, { REGION: 'eu', MODE: { type: 'plain', value: 'fast' } })

  const patched = await api.call('PATCH', `/api/routines/${r.id}`, { title: 'Weekly report for {{team}}', baseRevisionId: r.revisionId })
  t.equal(patched.status, 200)
  t.equal(patched.body.routine.revisionNumber, 2)
  const stale = await api.call('PATCH', `/api/routines/${r.id}`, { title: 'lost update', baseRevisionId: r.revisionId })
  isError(t, stale, 409, 'revision_conflict')
  t.equal((await api.call('GET', `/api/routines/${r.id}`)).body.routine.title, 'Weekly report for {{team}}', 'stale PATCH changed nothing')
  // Without baseRevisionId, last writer wins (and still records a revision).
  const third = await api.call('PATCH', `/api/routines/${r.id}`, { priority: 'high' })
  t.equal(third.status, 200)
  t.equal(third.body.routine.revisionNumber, 3)

  const revisions = await api.call('GET', `/api/routines/${r.id}/revisions`)
  t.same(
    revisions.body.revisions.map((x: any) => [x.number, x.change]),
    [
      [3, 'updated'],
      [2, 'updated'],
      [1, 'created'],
    ],
  )
  t.equal(revisions.body.revisions[2].snapshot.title, 'Daily report for {{team}}')

  const restored = await api.call('POST', `/api/routines/${r.id}/revisions/${r.revisionId}/restore`)
  t.equal(restored.status, 200)
  t.equal(restored.body.routine.title, 'Daily report for {{team}}')
  t.equal(restored.body.routine.priority, 'medium')
  t.equal(restored.body.routine.revisionNumber, 4)
  t.equal(restored.body.revision.change, 'restored')
  t.not(restored.body.routine.revisionId, r.revisionId, 'restore makes a new revision')
  isError(t, await api.call('POST', `/api/routines/${r.id}/revisions/${unknownId}/restore`), 404, 'not_found')
  isError(t, await api.call('POST', `/api/routines/${r.id}/revisions/nope/restore`), 404, 'not_found')

  const list = await api.call('GET', `/api/squads/${squadId}/routines`, undefined, agentToken)
  t.equal(list.status, 200)
  t.same(
    list.body.routines.map((x: any) => x.id),
    [r.id],
  )

  // Status: active <-> paused; archived is permanent.
  t.equal((await api.call('PATCH', `/api/routines/${r.id}`, { status: 'paused' })).body.routine.status, 'paused')
  t.equal((await api.call('PATCH', `/api/routines/${r.id}`, { status: 'active' })).body.routine.status, 'active')
  t.equal((await api.call('PATCH', `/api/routines/${r.id}`, { status: 'archived' })).body.routine.status, 'archived')
  isError(t, await api.call('PATCH', `/api/routines/${r.id}`, { status: 'active' }), 422, 'invalid_state')
  isError(t, await api.call('POST', `/api/routines/${r.id}/revisions/${r.revisionId}/restore`), 422, 'invalid_state')

  const actions = (await activityOf(api, squadId, 'entityType=routine')).map((a: any) => a.action)
  for (const a of ['routine.created', 'routine.updated', 'routine.restored', 'routine.paused', 'routine.resumed', 'routine.archived']) t.ok(actions.includes(a), a)
  const entries = await activityOf(api, squadId, 'entityType=routine')
  t.notMatch(JSON.stringify(entries), /Write the report|fast/, 'no description or env in activity')

  // Others see nothing.
  const other = await api.seed()
  isError(t, await api.call('GET', `/api/routines/${r.id}`, undefined, other.agentToken), 404, 'not_found')
  isError(t, await api.call('GET', '/api/routines/not-a-uuid'), 404, 'not_found')
  isError(t, await api.call('GET', `/api/routines/${unknownId}`), 404, 'not_found')
})

eachBackend(t, 'routines: bad definitions are 400 with the path; secret_ref is Operator-only', async (t, api) => {
  const { squadId, agentToken } = await api.seed()
  const bad = async (body: Record<string, unknown>, path: string, label: string) => {
    const res = await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'x', ...body })
    isError(t, res, 400, 'invalid_payload', label)
    t.ok(
      res.body.details?.some((d: any) => d.path.startsWith(path)),
      `${label}: path ${path}`,
      { details: res.body.details },
    )
  }
  await bad({ variables: [{ name: 'pick', type: 'select' }] }, '/variables/0/options', 'select without options')
  await bad({ variables: [{ name: 'pick', type: 'select', options: [] }] }, '/variables/0/options', 'select with no options')
  await bad({ variables: [{ name: 'n', type: 'text', options: ['a'] }] }, '/variables/0/options', 'options on text')
  await bad({ variables: [{ name: '9lives' }] }, '/variables/0/name', 'name pattern')
  await bad({ variables: [{ name: 'a' }, { name: 'a' }] }, '/variables/1/name', 'duplicate name')
  await bad({ variables: [{ name: 'n', type: 'number', defaultValue: 'three' }] }, '/variables/0/defaultValue', 'default of the wrong type')
  await bad({ variables: [{ name: 's', type: 'select', options: ['a'], defaultValue: 'b' }] }, '/variables/0/defaultValue', 'default outside the options')
  await bad({ variables: [{ name: 'n', type: 'date' }] }, '/variables/0/type', 'unknown type')
  await bad({ title: 'x'.repeat(201) }, '/title', 'title over 200')
  await bad({ title: '   ' }, '/title', 'blank title')
  await bad({ status: 'archived' }, '/status', 'created archived')
  await bad({ env: { 'BAD-NAME': 'x' } }, '/env', 'env name')
  await bad({ env: { A: { type: 'secret_ref', secretId: 'nope', version: 'latest' } } }, '/env', 'secret_ref shape')
  await bad({ assigneeAgentId: unknownId }, '/assigneeAgentId', 'unknown assignee')
  await bad({ concurrencyPolicy: 'sometimes' }, '/concurrencyPolicy', 'unknown policy')

  const ref = { type: 'secret_ref', secretId: unknownId, version: 'latest' }
  isError(t, await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'x', env: { TOKEN: ref } }, agentToken), 403, 'forbidden', 'agent sets a secret_ref')
  const byAgent = await newRoutine(api, squadId, { title: 'x', env: { PLAIN: 'v' } }, agentToken)
  isError(t, await api.call('PATCH', `/api/routines/${byAgent.routine.id}`, { env: { TOKEN: ref } }, agentToken), 403, 'forbidden', 'agent patches a secret_ref in')
  await bad({ env: { TOKEN: ref } }, '/env/TOKEN/secretId', 'a secret_ref to a secret that does not exist')
  const secret = (await api.call('POST', `/api/squads/${squadId}/secrets`, { name: 'token', value: 's3cr3t-value' })).body.secret
  await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 's3cr3t-value-2' })
  await bad({ env: { TOKEN: { ...ref, secretId: secret.id, version: 3 } } }, '/env/TOKEN/version', 'a version the secret does not have')
  const op = await newRoutine(api, squadId, { title: 'x', env: { TOKEN: { ...ref, secretId: secret.id, version: 2 } } })
  t.same(op.routine.env, { TOKEN: { type: 'secret_ref', secretId: secret.id, version: 2 } }, 'shown as written')
  t.notOk(JSON.stringify(op).includes('s3cr3t'), 'never its value')
})

eachBackend(t, 'routine runs: variables merged and validated, templates, issue assigned and woken, idempotency', async (t, api) => {
  const { squadId, agentId, prefix } = await api.seed()
  const { routine } = await newRoutine(api, squadId, {
    title: 'Fix {{count}} bugs in {{area}}{{suffix}}',
    description: 'Urgent: {{urgent}}. Notes:\n{{notes}} {{unknown}}',
    assigneeAgentId: agentId,
    concurrencyPolicy: 'always_enqueue',
    env: { SECRET_PLACE: 'vault-7' },
    variables: [
      { name: 'count', type: 'number' },
      { name: 'area', type: 'select', options: ['api', 'ui'], defaultValue: 'api' },
      { name: 'urgent', type: 'boolean', defaultValue: false },
      { name: 'notes', type: 'textarea', required: false },
      { name: 'suffix', required: false },
    ],
  })
  const run = await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 3, urgent: true }, payload: { area: 'ui', notes: 'line1\nline2' } })
  t.equal(run.status, 201, 'run created', { body: run.body })
  t.equal(run.body.run.status, 'issue_created')
  t.equal(run.body.run.source, 'manual')
  t.same(run.body.run.variables, { count: 3, area: 'ui', urgent: true, notes: 'line1\nline2' })
  const issue = (await api.call('GET', `/api/issues/${run.body.run.issueId}`)).body.issue
  t.equal(issue.title, 'Fix 3 bugs in ui')
  t.equal(issue.description, 'Urgent: true. Notes:\nline1\nline2 {{unknown}}')
  t.equal(issue.assigneeAgentId, agentId)
  t.match(issue.identifier, new RegExp(`^${prefix}-\\d+$`))
  // The assignee's wake was queued in the same transaction, carrying the routine reason.
  const wakes = (await api.call('GET', `/api/issues/${issue.id}/runs`)).body.runs
  t.equal(wakes.length, 1, 'one heartbeat run for the assignee')
  t.match(wakes, [{ agentId, reason: 'routine' }], 'with the routine reason')
  t.same(await api.instance.services.routines.envForRun(run.body.run.id), { SECRET_PLACE: 'vault-7' }, 'envForRun: the routine env of the run, as written')
  t.equal(await api.instance.services.routines.envForRun(unknownId), null, 'envForRun: unknown run')

  // Variable faults: nothing is created.
  const before = (await api.call('GET', `/api/squads/${squadId}/issues`)).body.issues.length
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 'three' } }), 400, 'invalid_payload', 'wrong type')
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, {}), 400, 'invalid_payload', 'missing required')
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 1, area: 'db' } }), 400, 'invalid_payload', 'not an option')
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 1, typo: 1 } }), 400, 'invalid_payload', 'unknown variable')
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 1, suffix: 'x'.repeat(190) } }), 400, 'invalid_payload', 'title over 200 after substitution')
  t.equal((await api.call('GET', `/api/squads/${squadId}/issues`)).body.issues.length, before, 'no issue from a refused run')
  t.equal((await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs.length, 1, 'no run recorded for a refused run')

  // Idempotency: the same key gives the same run, and no second issue.
  const a = await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 1 }, idempotencyKey: 'k-1' })
  const b = await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 2 }, idempotencyKey: 'k-1' })
  t.equal(a.status, 201)
  t.equal(b.status, 200)
  t.equal(b.body.run.id, a.body.run.id)
  t.equal(b.body.run.issueId, a.body.run.issueId)
  const runs = (await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs
  t.equal(runs.length, 2)
  t.equal(runs[0].id, a.body.run.id, 'newest first')

  // Paused and archived routines do not fire; nothing is created.
  await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'paused' })
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 1 } }), 422, 'invalid_state', 'paused')
  await api.call('PATCH', `/api/routines/${routine.id}`, { status: 'archived' })
  isError(t, await api.call('POST', `/api/routines/${routine.id}/run`, { variables: { count: 1 } }), 422, 'invalid_state', 'archived')
  t.equal((await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs.length, 2, 'no runs from paused or archived')
  t.equal((await api.call('GET', `/api/squads/${squadId}/issues`)).body.issues.length, before + 1)

  // The tower hears of the issues (titles), never of a routine's description, env or variables' bodies.
  const outbox = JSON.stringify(await outboxRows(api))
  t.ok(outbox.includes(issue.id), 'the issue is reported')
  t.notMatch(outbox, /Urgent|line1|vault-7|routine\./, 'no description, env or routine activity in the outbox')
  const fired = (await activityOf(api, squadId, 'entityType=routine')).filter((e: any) => e.action === 'routine.fired')
  t.equal(fired.length, 2)
  t.equal(fired[0].details.status, 'issue_created')
})

eachBackend(t, 'routine runs: concurrency policies link to the active run and create no issue', async (t, api) => {
  const { squadId } = await api.seed()
  const bob = await addAgent(api, squadId, 'bob')
  for (const policy of ['coalesce_if_active', 'skip_if_active'] as const) {
    const { routine } = await newRoutine(api, squadId, { title: `Check ${policy}`, concurrencyPolicy: policy, assigneeAgentId: bob.id })
    const first = await api.call('POST', `/api/routines/${routine.id}/run`, {})
    t.equal(first.body.run.status, 'issue_created')
    const second = await api.call('POST', `/api/routines/${routine.id}/run`, {})
    t.equal(second.status, 201)
    t.equal(second.body.run.status, policy === 'coalesce_if_active' ? 'coalesced' : 'skipped')
    t.equal(second.body.run.linkedRunId, first.body.run.id)
    t.equal(second.body.run.issueId, null)
    // Once the issue is done, the routine is idle again.
    await api.call('PATCH', `/api/issues/${first.body.run.issueId}`, { status: 'done' })
    const third = await api.call('POST', `/api/routines/${routine.id}/run`, {})
    t.equal(third.body.run.status, 'issue_created')
    t.not(third.body.run.issueId, first.body.run.issueId)
  }
  const { routine } = await newRoutine(api, squadId, { title: 'Always', concurrencyPolicy: 'always_enqueue' })
  const x = await api.call('POST', `/api/routines/${routine.id}/run`, {})
  const y = await api.call('POST', `/api/routines/${routine.id}/run`, {})
  t.equal(y.body.run.status, 'issue_created')
  t.not(x.body.run.issueId, y.body.run.issueId)
})
