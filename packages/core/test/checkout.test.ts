import t from 'tap'
import { queueWake } from '@slaw/core'
import { eachBackend } from './helpers/instance.js'
import { activityOf, addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'

eachBackend(t, 'checkout', async (t, api) => {
  await t.test('the issue state table', async (t) => {
    const s = await api.seed('Checkout')
    const bob = await addAgent(api, s.squadId, 'bob')
    const checkout = (id: string, body: Record<string, unknown>, token?: string) => api.call('POST', `/api/issues/${id}/checkout`, body, token)

    // From todo, backlog, blocked or in_review: in_progress, assignee and holder set.
    for (const status of ['todo', 'backlog', 'blocked', 'in_review']) {
      const issue = await addIssue(api, s.squadId, { title: `from ${status}`, status, assigneeAgentId: bob.id })
      const res = await checkout(issue.id, { agentId: s.agentId }, s.agentToken)
      t.equal(res.status, 200, `from ${status}`)
      t.same(Object.keys(res.body), ['issue'])
      t.match(res.body.issue, { id: issue.id, status: 'in_progress', assigneeAgentId: s.agentId, checkoutAgentId: s.agentId })
      t.match(res.body.issue.checkedOutAt, /Z$/)
    }
    // Not from done, cancelled, or an unowned in_progress, unless expectedStatuses says so.
    for (const status of ['done', 'cancelled']) {
      const issue = await addIssue(api, s.squadId, { title: `from ${status}`, status })
      isError(t, await checkout(issue.id, { agentId: s.agentId }), 422, 'invalid_state', `from ${status}`)
      const allowed = await checkout(issue.id, { agentId: s.agentId, expectedStatuses: [status] })
      t.equal(allowed.body.issue?.status, 'in_progress', `from ${status} when expectedStatuses lists it`)
    }

    // Repeated checkout by the holder succeeds and changes nothing.
    const issue = await addIssue(api, s.squadId, { title: 'contended' })
    const first = await checkout(issue.id, { agentId: s.agentId }, s.agentToken)
    t.equal(first.status, 200)
    const again = await checkout(issue.id, { agentId: s.agentId }, s.agentToken)
    t.equal(again.status, 200, 'the same agent again')
    t.equal(again.body.issue.checkedOutAt, first.body.issue.checkedOutAt, 'the original checkout stands')
    t.equal((await checkout(issue.id, { agentId: s.agentId, expectedStatuses: ['todo'] }, s.agentToken)).status, 200, 'again, whatever expectedStatuses says')
    t.equal((await activityOf(api, s.squadId, `entityId=${issue.id}`)).filter((e) => e.action === 'issue.checked_out').length, 1, 'one activity entry for one checkout')

    // Another agent: 409, the issue unchanged.
    isError(t, await checkout(issue.id, { agentId: bob.id }, bob.token), 409, 'issue_checked_out', 'another agent')
    isError(t, await checkout(issue.id, { agentId: bob.id, expectedStatuses: ['in_progress'] }), 409, 'issue_checked_out', 'another agent, even by an Operator with expectedStatuses')
    t.equal((await api.call('GET', `/api/issues/${issue.id}`)).body.issue.checkoutAgentId, s.agentId)

    // expectedStatuses is honoured.
    const review = await addIssue(api, s.squadId, { title: 'in review', status: 'in_review' })
    const mismatch = await checkout(review.id, { agentId: bob.id, expectedStatuses: ['todo', 'backlog'] }, bob.token)
    isError(t, mismatch, 422, 'invalid_state', 'status not in expectedStatuses')
    t.equal((await api.call('GET', `/api/issues/${review.id}`)).body.issue.status, 'in_review', 'unchanged')
    t.equal((await checkout(review.id, { agentId: bob.id, expectedStatuses: ['in_review'] }, bob.token)).status, 200)
    isError(t, await checkout(review.id, { agentId: bob.id, expectedStatuses: [] }), 400, 'invalid_payload', 'empty expectedStatuses')
    isError(t, await checkout(review.id, { agentId: bob.id, expectedStatuses: ['open'] }), 400, 'invalid_payload', 'unknown status')

    // Who may check out for whom.
    const free = await addIssue(api, s.squadId, { title: 'free' })
    isError(t, await checkout(free.id, { agentId: bob.id }, s.agentToken), 403, 'forbidden', 'an agent checks out only for itself')
    const other = await api.seed('Other')
    isError(t, await checkout(free.id, { agentId: other.agentId }), 404, 'not_found', 'an agent of another squad')
    isError(t, await checkout(free.id, { agentId: other.agentId }, other.agentToken), 404, 'not_found', "another squad's agent key")
    isError(t, await checkout(free.id, { agentId: unknownId }), 404, 'not_found', 'unknown agent')
    isError(t, await checkout(free.id, { agentId: 'bob' }), 400, 'invalid_payload', 'agentId not a UUID')
    isError(t, await checkout(free.id, {}), 400, 'invalid_payload', 'agentId missing')
    isError(t, await checkout(unknownId, { agentId: s.agentId }), 404, 'not_found', 'unknown issue')
    isError(t, await checkout('not-a-uuid', { agentId: s.agentId }), 404, 'not_found', 'malformed issue id')
    isError(t, await checkout('CHEC-1', { agentId: s.agentId }), 404, 'not_found', 'an identifier is not accepted here')

    // A paused agent cannot take work; resumed, it can.
    await api.call('POST', `/api/agents/${bob.id}/pause`)
    isError(t, await checkout(free.id, { agentId: bob.id }), 409, 'agent_not_active', 'paused agent (Operator call)')
    isError(t, await checkout(free.id, { agentId: bob.id }, bob.token), 409, 'agent_not_active', 'paused agent (own key)')
    t.equal((await api.call('GET', `/api/issues/${free.id}`)).body.issue.status, 'todo')
    await api.call('POST', `/api/agents/${bob.id}/resume`)
    t.equal((await checkout(free.id, { agentId: bob.id }, bob.token)).status, 200, 'resumed')

    // `running` and `error` are operational states of an active agent: it may still take work.
    for (const status of ['running', 'error'] as const) {
      await api.instance.storage.agents.update(bob.id, { status })
      const work = await addIssue(api, s.squadId, { title: `while ${status}` })
      t.equal((await checkout(work.id, { agentId: bob.id }, bob.token)).status, 200, `a ${status} agent checks out`)
    }
    await api.instance.storage.agents.update(bob.id, { status: 'active' })

    // Run id on the activity entry.
    const traced = await addIssue(api, s.squadId, { title: 'traced' })
    const runId = (await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: s.squadId, agentId: s.agentId, issueId: null, reason: 'manual' }))).run.id
    t.equal((await api.call('POST', `/api/issues/${traced.id}/checkout`, { agentId: s.agentId }, s.agentToken, { 'x-svc-run-id': runId })).status, 200)
    t.match((await activityOf(api, s.squadId, `entityId=${traced.id}`))[0], { action: 'issue.checked_out', actorType: 'agent', agentId: s.agentId, runId, details: { from: 'todo' } })
  })

  await t.test('release', async (t) => {
    const s = await api.seed('Release')
    const bob = await addAgent(api, s.squadId, 'bob')
    const issue = await addIssue(api, s.squadId, { title: 'release me', status: 'in_review' })
    await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: s.agentId }, s.agentToken)
    isError(t, await api.call('POST', `/api/issues/${issue.id}/release`, undefined, bob.token), 403, 'forbidden', 'another agent releases')
    const other = await api.seed('Other')
    isError(t, await api.call('POST', `/api/issues/${issue.id}/release`, undefined, other.agentToken), 404, 'not_found', "another squad's agent")
    const res = await api.call('POST', `/api/issues/${issue.id}/release`, undefined, s.agentToken)
    t.equal(res.status, 200)
    t.same(Object.keys(res.body), ['issue'])
    t.same(
      [res.body.issue.status, res.body.issue.checkoutAgentId, res.body.issue.checkedOutAt, res.body.issue.assigneeAgentId],
      ['in_progress', null, null, s.agentId],
      'status unchanged, checkout cleared',
    )
    t.equal((await activityOf(api, s.squadId, `entityId=${issue.id}`))[0].action, 'issue.released')
    const idle = await api.call('POST', `/api/issues/${issue.id}/release`, undefined, s.agentToken)
    t.same([idle.status, idle.body.issue.checkoutAgentId], [200, null], 'releasing an unowned issue is a no-op')

    // After release another agent may take the in_progress issue by saying so.
    isError(t, await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: bob.id }, bob.token), 422, 'invalid_state', 'in_progress is not a default checkout status')
    t.equal((await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: bob.id, expectedStatuses: ['in_progress'] }, bob.token)).status, 200)
    const byOp = await api.call('POST', `/api/issues/${issue.id}/release`)
    t.same([byOp.status, byOp.body.issue.checkoutAgentId, byOp.body.issue.status], [200, null, 'in_progress'], "an Operator releases anyone's checkout")
    isError(t, await api.call('POST', `/api/issues/${unknownId}/release`), 404, 'not_found', 'unknown issue')
    isError(t, await api.call('POST', '/api/issues/xyz/release'), 404, 'not_found', 'malformed id')
  })

  await t.test('checkouts submitted together share a transaction, and each is answered on its own', async (t) => {
    const s = await api.seed('Batch')
    const bob = await addAgent(api, s.squadId, 'bob')
    const carl = await addAgent(api, s.squadId, 'carl')
    await api.call('POST', `/api/agents/${carl.id}/pause`)
    // Mixed statuses, so the batch's updates touch several status counters in several shards.
    const statuses = ['todo', 'backlog', 'blocked', 'in_review']
    const fine = []
    for (let i = 0; i < 16; i++) fine.push(await addIssue(api, s.squadId, { title: `fine ${i}`, status: statuses[i % 4] }))
    const done = await addIssue(api, s.squadId, { title: 'done already', status: 'done' })
    const held = await addIssue(api, s.squadId, { title: 'held by bob' })
    t.equal((await api.call('POST', `/api/issues/${held.id}/checkout`, { agentId: bob.id })).status, 200)
    const forCarl = await addIssue(api, s.squadId, { title: 'for carl' })
    const issues = api.instance.services.issues
    const operator = { type: 'operator', keyId: null } as const
    // Submitted in one turn of the event loop: one batch.
    const settled = await Promise.allSettled([
      ...fine.map((i, k) => issues.submitCheckout(operator, i.id, { agentId: k % 2 ? bob.id : s.agentId })),
      issues.submitCheckout(operator, done.id, { agentId: s.agentId }),
      issues.submitCheckout(operator, held.id, { agentId: s.agentId }),
      issues.submitCheckout(operator, forCarl.id, { agentId: carl.id }),
      issues.submitCheckout(operator, unknownId, { agentId: s.agentId }),
      issues.submitCheckout(operator, held.id.replace(/.$/, 'x'), { agentId: s.agentId }),
    ])
    const codes = settled.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code?: string }).code))
    t.same(codes, [...fine.map(() => 'ok'), 'invalid_state', 'issue_checked_out', 'agent_not_active', 'not_found', 'not_found'], 'each checkout has its own answer')
    for (const [k, i] of fine.entries()) {
      const stored = (await api.call('GET', `/api/issues/${i.id}`)).body.issue
      const agent = k % 2 ? bob.id : s.agentId
      t.same([stored.status, stored.checkoutAgentId, stored.assigneeAgentId], ['in_progress', agent, agent], `${i.identifier} (${statuses[k % 4]}) checked out`)
    }
    const checkedOut = (await activityOf(api, s.squadId, 'limit=200')).filter((e) => e.action === 'issue.checked_out')
    t.same(checkedOut.map((e) => e.entityId).sort(), [...fine.map((i) => i.id), held.id].sort(), 'one activity entry per checkout made (and the earlier one of the held issue)')
    t.same(
      [
        (await api.call('GET', `/api/issues/${done.id}`)).body.issue.status,
        (await api.call('GET', `/api/issues/${forCarl.id}`)).body.issue.status,
        (await api.call('GET', `/api/issues/${held.id}`)).body.issue.checkoutAgentId,
      ],
      ['done', 'todo', bob.id],
      'the refused ones are unchanged',
    )
    const { tasks } = (await api.call('GET', `/api/squads/${s.squadId}/dashboard`)).body
    t.match(tasks, { inProgress: 17, blocked: 0, done: 1 }, 'the status counters moved with the batch')
  })

  await t.test('concurrent batches with mixed statuses all commit', async (t) => {
    const s = await api.seed('Waves')
    const statuses = ['todo', 'backlog', 'blocked', 'in_review']
    const all = []
    for (let i = 0; i < 40; i++) all.push(await addIssue(api, s.squadId, { title: `wave ${i}`, status: statuses[(i * 7) % 4] }))
    // Over HTTP, 40 at once: several batches in flight together.
    const results = await Promise.all(all.map((i) => api.call('POST', `/api/issues/${i.id}/checkout`, { agentId: s.agentId }, s.agentToken)))
    t.same(
      results.map((r) => r.status),
      all.map(() => 200),
      'every checkout answered 200',
    )
    const listed = (await api.call('GET', `/api/squads/${s.squadId}/issues?status=in_progress&limit=100`)).body
    t.equal((listed.issues ?? listed).length, 40, 'all 40 in progress')
  })

  await t.test('20 agents race for one issue', async (t) => {
    const s = await api.seed('Race')
    const agents: Array<{ id: string; token: string }> = []
    for (let i = 0; i < 20; i++) agents.push(await addAgent(api, s.squadId, `racer-${i}`))
    const issue = await addIssue(api, s.squadId, { title: 'the prize' })
    const results = await Promise.all(agents.map((a) => api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: a.id }, a.token)))
    const winners = results.filter((r) => r.status === 200)
    const losers = results.filter((r) => r.status === 409)
    t.equal(winners.length, 1, 'exactly one 200')
    t.equal(losers.length, 19, '19 × 409')
    t.ok(
      losers.every((r) => r.body.code === 'issue_checked_out'),
      'every loser: issue_checked_out',
    )
    const winner = winners[0]!.body.issue.checkoutAgentId
    const stored = (await api.call('GET', `/api/issues/${issue.id}`)).body.issue
    t.same([stored.checkoutAgentId, stored.assigneeAgentId, stored.status], [winner, winner, 'in_progress'], 'the stored owner is the winner')
    t.equal((await activityOf(api, s.squadId, `entityId=${issue.id}`)).filter((e) => e.action === 'issue.checked_out').length, 1)
  })
})

eachBackend(t, 'checkout: contenders for an issue another agent holds are refused with one read, not a transaction', async (t, api) => {
  const squad = (await api.call('POST', '/api/squads', { name: 'Contended' })).body.squad
  const agents = await Promise.all(Array.from({ length: 6 }, (_, i) => addAgent(api, squad.id, `racer${i}`)))
  const issue = await addIssue(api, squad.id, { title: 'Only one wins' })
  const storage = api.instance.storage
  const transaction = storage.transaction.bind(storage)
  let transactions = 0
  storage.transaction = ((fn: any, ...rest: any[]) => {
    transactions += 1
    return (transaction as any)(fn, ...rest)
  }) as typeof storage.transaction
  t.teardown(() => {
    storage.transaction = transaction
  })
  const checkout = (i: number) => api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: agents[i]!.id }, agents[i]!.token)

  // A race: exactly one winner, whatever the order; the others wait for its outcome outside the
  // lock and read it, rather than take the lock one after another.
  const locks = api.instance.locks
  const withLock = locks.withLock.bind(locks)
  let locked = 0
  locks.withLock = ((...args: Parameters<typeof withLock>) => {
    if (String(args[0]).startsWith('slaw:checkout:')) locked += 1
    return withLock(...args)
  }) as typeof locks.withLock
  t.teardown(() => {
    locks.withLock = withLock
  })
  transactions = 0
  const raced = await Promise.all(agents.slice(0, 4).map((_, i) => checkout(i)))
  t.equal(raced.filter((r) => r.status === 200).length, 1, 'one winner')
  t.equal(transactions, 1, "the race costs one transaction: the winner's")
  t.equal(locked, 1, 'and one checkout lock')
  t.same(
    raced.filter((r) => r.status !== 200).map((r) => r.body.code),
    ['issue_checked_out', 'issue_checked_out', 'issue_checked_out'],
  )
  const winner = raced.findIndex((r) => r.status === 200)

  // Later contenders: this node knows who holds it, so each refusal is one read.
  transactions = 0
  for (const i of [4, 5]) isError(t, await checkout(i), 409, 'issue_checked_out')
  t.equal(transactions, 0, 'no transaction for a refusal the row already decides')
  t.equal((await checkout(winner)).status, 200, 'the holder checking out again is answered as before')

  // Released through storage (as another node would): the hint is stale, the read sees it, the checkout goes through.
  await storage.issues.release(issue.id, null)
  transactions = 0
  const after = await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: agents[4]!.id, expectedStatuses: ['in_progress'] }, agents[4]!.token)
  t.equal(after.status, 200, `a stale hint costs a read, never a wrong refusal (${JSON.stringify(after.body)})`)
  t.equal(after.body.issue.checkoutAgentId, agents[4]!.id)
  t.ok(transactions >= 1, 'the checkout itself ran in a transaction')
})
