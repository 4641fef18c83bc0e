import t from 'tap'
import { outboxRows } from './helpers/governance.js'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { addAgent } from './helpers/fixtures.js'

const create = (api: TestApi, squadId: string, body: Record<string, unknown>, token?: string) => api.call('POST', `/api/squads/${squadId}/issues`, body, token)

// The HTTP route creates through submitCreate: creates arriving together share a transaction.
eachBackend(t, 'issues created at once share transactions and keep every per-create rule', async (t, api) => {
  const a = await api.seed('Alpha')
  const b = await api.seed('Bravo')
  const dev = await addAgent(api, a.squadId, 'dev')
  const blocker = (await create(api, a.squadId, { title: 'blocker' })).body.issue

  const mine = Array.from({ length: 24 }, (_, i) => create(api, a.squadId, { title: `alpha ${i}`, ...(i % 3 === 0 ? { assigneeAgentId: dev.id } : {}) }, i % 2 ? a.agentToken : undefined))
  const theirs = Array.from({ length: 8 }, (_, i) => create(api, b.squadId, { title: `bravo ${i}` }))
  const related = [create(api, a.squadId, { title: 'child', parentId: blocker.id, blockedByIssueIds: [blocker.id] })]
  const refused = [
    create(api, a.squadId, { title: '   ' }),
    create(api, a.squadId, { title: 'foreign assignee', assigneeAgentId: b.agentId }),
    create(api, a.squadId, { title: 'wrong key' }, b.agentToken),
  ]
  const results = await Promise.all([...mine, ...theirs, ...related, ...refused])
  t.same(
    results.slice(0, 33).map((r) => r.status),
    Array(33).fill(201),
    'every valid create is answered 201',
  )
  t.same(
    results.slice(33).map((r) => [r.status, r.body.code]),
    [
      [400, 'invalid_payload'],
      [400, 'invalid_payload'],
      [404, 'not_found'],
    ],
    'refusals fail alone',
  )

  const alpha = [...results.slice(0, 24), results[32]!].map((r) => r.body.issue)
  const num = (i: { identifier: string }) => Number(i.identifier.split('-')[1])
  const numbers = alpha.map(num).sort((x, y) => x - y)
  t.same(
    numbers,
    Array.from({ length: 25 }, (_, i) => i + 2),
    'numbers 2..26 in Alpha, each once (1 is the blocker)',
  )
  t.ok(
    alpha.every((i) => i.identifier.startsWith(`${a.prefix}-`)),
    'identifiers carry the squad prefix',
  )
  t.same(
    results
      .slice(24, 32)
      .map((r) => num(r.body.issue))
      .sort((x, y) => x - y),
    [1, 2, 3, 4, 5, 6, 7, 8],
    'Bravo counts on its own',
  )
  const child = results[32]!.body.issue
  t.same([child.parentId, child.blockedByIssueIds, child.ancestors.map((x: { id: string }) => x.id)], [blocker.id, [blocker.id], [blocker.id]], 'relations are written and answered')
  t.equal((await api.call('GET', `/api/issues/${results[0]!.body.issue.id}`)).body.issue.title, 'alpha 0', 'readable after')

  const activity = (await api.call('GET', `/api/squads/${a.squadId}/activity?limit=500`)).body.activity as Array<{ action: string; entityId: string; actorType: string }>
  const createdEntries = activity.filter((x) => x.action === 'issue.created')
  t.equal(createdEntries.length, 26, 'one activity entry per created issue')
  t.equal(createdEntries.find((x) => x.entityId === results[1]!.body.issue.id)?.actorType, 'agent', 'each entry names its own actor')
  const upserts = (await outboxRows(api)).filter((r) => r.entityType === 'issue' && r.payload.squadLocalId === a.squadId)
  t.equal(new Set(upserts.map((r) => r.entityId)).size, 26, 'one issue upsert per created issue')

  const list = (await api.call('GET', `/api/squads/${a.squadId}/issues?limit=100`)).body.issues
  t.equal(list.length, 26, 'nothing else was written')
})

eachBackend(t, 'comments added at once share transactions and keep every per-comment rule', async (t, api) => {
  const a = await api.seed('Comments')
  const b = await api.seed('Elsewhere')
  const dev = await addAgent(api, a.squadId, 'dev')
  const open = (await create(api, a.squadId, { title: 'open' })).body.issue
  const done = (await create(api, a.squadId, { title: 'done', status: 'done' })).body.issue
  const comment = (issueId: string, body: Record<string, unknown>, token?: string) => api.call('POST', `/api/issues/${issueId}/comments`, body, token)

  const plain = Array.from({ length: 20 }, (_, i) => comment(open.id, { body: `note ${i}` }, i % 2 ? a.agentToken : undefined))
  const special = [comment(done.id, { body: 'reopen please', reopen: true }), comment(open.id, { body: 'ping @dev' })]
  const refused = [comment(open.id, { body: '  ' }), comment(open.id, { body: 'not mine' }, b.agentToken), comment('not-a-uuid', { body: 'x' })]
  const results = await Promise.all([...plain, ...special, ...refused])
  t.same(
    results.slice(0, 22).map((r) => r.status),
    Array(22).fill(201),
    'every valid comment is answered 201',
  )
  t.same(
    results.slice(22).map((r) => [r.status, r.body.code]),
    [
      [400, 'invalid_payload'],
      [404, 'not_found'],
      [404, 'not_found'],
    ],
    'refusals fail alone',
  )
  t.equal(results[1]!.body.comment.authorType, 'agent', 'each comment names its own author')

  const listed = (await api.call('GET', `/api/issues/${open.id}/comments?limit=100`)).body.comments
  t.equal(listed.length, 21, 'the comments are stored once each')
  t.equal((await api.call('GET', `/api/issues/${done.id}`)).body.issue.status, 'todo', 'reopen still reopens')
  const activity = (await api.call('GET', `/api/squads/${a.squadId}/activity?limit=500`)).body.activity as Array<{ action: string; details: Record<string, unknown> }>
  const added = activity.filter((x) => x.action === 'issue.comment_added')
  t.equal(added.length, 22, 'one activity entry per comment')
  t.equal(added.filter((x) => x.details.reopenedFrom === 'done').length, 1, 'the reopen is recorded on its own entry')
  const runs = (await api.call('GET', `/api/squads/${a.squadId}/heartbeat-runs`)).body.runs as Array<{ agentId: string; issueId: string }>
  t.ok(
    runs.some((r) => r.agentId === dev.id && r.issueId === open.id),
    'the mention woke the agent',
  )
  t.equal((await api.call('GET', `/api/squads/${a.squadId}/issues?q=note&limit=100`)).body.issues.map((i: { id: string }) => i.id).includes(open.id), true, 'batched comments are searchable')
})
