import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { activityOf, addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'

eachBackend(t, 'issue records', async (t, api) => {
  await t.test('comments: list, get, reopen', async (t) => {
    const s = await api.seed('Comments')
    const bob = await addAgent(api, s.squadId, 'bob')
    const issue = await addIssue(api, s.squadId, { title: 'talk', assigneeAgentId: bob.id })
    const bodies = ['one', 'two', 'three', 'four']
    const made: any[] = []
    for (const [i, body] of bodies.entries()) {
      const res = await api.call('POST', `/api/issues/${issue.id}/comments`, { body }, i % 2 ? s.agentToken : undefined)
      t.equal(res.status, 201)
      made.push(res.body.comment)
    }
    t.match(made[1], { issueId: issue.id, body: 'two', authorType: 'agent', authorId: s.agentId })
    t.match(made[0], { authorType: 'user', authorId: /^operator/ })
    const list = async (q = '') => (await api.call('GET', `/api/issues/${issue.id}/comments${q}`, undefined, s.agentToken)).body.comments.map((c: any) => c.body)
    t.same(await list(), bodies, 'oldest first by default')
    t.same(await list('?order=asc'), bodies)
    t.same(await list('?order=desc'), [...bodies].reverse())
    t.same(await list(`?after=${made[1].id}`), ['three', 'four'], 'after a comment')
    t.same(await list(`?after=${made[2].id}&order=desc`), ['two', 'one'], 'after, descending')
    t.same(await list('?limit=2'), ['one', 'two'])
    t.same(await list(`?after=${made[3].id}`), [])
    isError(t, await api.call('GET', `/api/issues/${issue.id}/comments?after=${unknownId}`), 400, 'invalid_payload', 'after an unknown comment')
    isError(t, await api.call('GET', `/api/issues/${issue.id}/comments?order=sideways`), 400, 'invalid_payload', 'bad order')

    const one = await api.call('GET', `/api/issues/${issue.id}/comments/${made[2].id}`, undefined, s.agentToken)
    t.same(one.body, { comment: made[2] })
    const elsewhere = await addIssue(api, s.squadId, { title: 'elsewhere' })
    isError(t, await api.call('GET', `/api/issues/${elsewhere.id}/comments/${made[2].id}`), 404, 'not_found', 'a comment of another issue')
    isError(t, await api.call('GET', `/api/issues/${issue.id}/comments/${unknownId}`), 404, 'not_found', 'unknown comment')
    isError(t, await api.call('GET', `/api/issues/${issue.id}/comments/nope`), 404, 'not_found', 'malformed comment id')
    isError(t, await api.call('POST', `/api/issues/${issue.id}/comments`, { body: '  ' }), 400, 'invalid_payload', 'blank body')
    isError(t, await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'x', reopen: 'yes' }), 400, 'invalid_payload', 'reopen must be boolean')
    const other = await api.seed('Other')
    isError(t, await api.call('GET', `/api/issues/${issue.id}/comments`, undefined, other.agentToken), 404, 'not_found', "another squad's agent")

    // reopen: done/cancelled → todo with the checkout cleared; other statuses unchanged.
    await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: bob.id }, bob.token)
    // Storage keeps the holder when a status is written directly: proves reopen clears it itself.
    await api.instance.storage.issues.update(issue.id, { status: 'done' })
    const noReopen = await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'just a note' })
    t.equal(noReopen.status, 201)
    t.equal((await api.call('GET', `/api/issues/${issue.id}`)).body.issue.status, 'done', 'a plain comment does not reopen')
    const reopened = await api.call('POST', `/api/issues/${issue.id}/comments`, { body: 'not quite', reopen: true }, s.agentToken)
    t.equal(reopened.status, 201)
    const after = (await api.call('GET', `/api/issues/${issue.id}`)).body.issue
    t.same([after.status, after.checkoutAgentId, after.assigneeAgentId], ['todo', null, bob.id], 'done → todo, checkout cleared, assignee kept')
    const entry = (await activityOf(api, s.squadId, `entityId=${issue.id}`))[0]
    t.match(entry, { action: 'issue.comment_added', details: { commentId: reopened.body.comment.id, reopenedFrom: 'done' } })

    const cancelled = await addIssue(api, s.squadId, { title: 'cancelled', status: 'cancelled' })
    await api.call('POST', `/api/issues/${cancelled.id}/comments`, { body: 'revive', reopen: true })
    t.equal((await api.call('GET', `/api/issues/${cancelled.id}`)).body.issue.status, 'todo', 'cancelled → todo')

    const review = await addIssue(api, s.squadId, { title: 'in review', status: 'in_review', assigneeAgentId: bob.id })
    await api.call('POST', `/api/issues/${review.id}/checkout`, { agentId: bob.id, expectedStatuses: ['in_review'] }, bob.token)
    await api.call('PATCH', `/api/issues/${review.id}`, { status: 'in_review' }, bob.token)
    await api.call('POST', `/api/issues/${review.id}/comments`, { body: 'reopen?', reopen: true })
    const unchanged = (await api.call('GET', `/api/issues/${review.id}`)).body.issue
    t.same([unchanged.status, unchanged.checkoutAgentId], ['in_review', bob.id], 'other statuses: no change')
    t.notOk((await activityOf(api, s.squadId, `entityId=${review.id}`))[0].details.reopenedFrom)
  })

  await t.test('documents: optimistic concurrency', async (t) => {
    const s = await api.seed('Docs')
    const bob = await addAgent(api, s.squadId, 'bob')
    const issue = await addIssue(api, s.squadId, { title: 'docs', assigneeAgentId: s.agentId })
    const put = (key: string, body: Record<string, unknown>, token?: string) => api.call('PUT', `/api/issues/${issue.id}/documents/${key}`, body, token)
    const doc = { title: 'Plan', format: 'markdown', body: '# Plan' }

    const created = await put('plan', doc, s.agentToken)
    t.equal(created.status, 201, 'create without baseRevisionId')
    t.match(created.body.document, { issueId: issue.id, key: 'plan', title: 'Plan', format: 'markdown', body: '# Plan' })
    const rev1: string = created.body.document.revisionId
    t.equal((await put('notes.v2', { ...doc, baseRevisionId: null })).status, 201, 'create with baseRevisionId null')
    const creators = await Promise.all(Array.from({ length: 4 }, (_, i) => put('race', { ...doc, body: `writer ${i}` })))
    t.same(creators.map((r) => r.status).sort(), [201, 409, 409, 409], 'concurrent creates: one wins, the rest conflict')
    const base = creators.find((r) => r.status === 201)!.body.document.revisionId
    const updaters = await Promise.all(Array.from({ length: 4 }, (_, i) => put('race', { ...doc, body: `update ${i}`, baseRevisionId: base })))
    t.same(updaters.map((r) => r.status).sort(), [200, 409, 409, 409], 'concurrent updates from one revision: one wins')
    await api.call('DELETE', `/api/issues/${issue.id}/documents/race`)

    const updated = await put('plan', { ...doc, body: '# Plan v2', baseRevisionId: rev1 }, s.agentToken)
    t.equal(updated.status, 200, 'update with the current revision')
    t.equal(updated.body.document.body, '# Plan v2')
    t.not(updated.body.document.revisionId, rev1, 'a new revision')
    t.equal(updated.body.document.id, created.body.document.id)
    isError(t, await put('plan', { ...doc, body: 'lost update', baseRevisionId: rev1 }), 409, 'revision_conflict', 'stale revision')
    isError(t, await put('plan', { ...doc, body: 'blind create' }), 409, 'revision_conflict', 'create over an existing document')
    isError(t, await put('plan', { ...doc, baseRevisionId: 'not-a-revision' }), 409, 'revision_conflict', 'a revision that cannot exist')
    isError(t, await put('missing', { ...doc, baseRevisionId: rev1 }), 409, 'revision_conflict', 'update of a document that does not exist')
    t.equal((await api.call('GET', `/api/issues/${issue.id}/documents/plan`)).body.document.body, '# Plan v2', 'conflicts wrote nothing')

    for (const key of ['Plan', '.hidden', '-x', 'a%2Fb', 'a%20b', 'x'.repeat(65)]) {
      isError(t, await put(key, doc), 400, 'invalid_payload', `key ${key}`)
    }
    isError(t, await put('ok', { ...doc, format: 'html' }), 400, 'invalid_payload', 'format must be markdown')
    isError(t, await put('ok', { ...doc, title: ' ' }), 400, 'invalid_payload', 'blank title')
    isError(t, await put('ok', { title: 'x', format: 'markdown' }), 400, 'invalid_payload', 'body required')
    isError(t, await put('bobs', doc, bob.token), 403, 'forbidden', 'an agent writes documents only on its issues')

    const list = await api.call('GET', `/api/issues/${issue.id}/documents`, undefined, bob.token)
    t.same(
      list.body.documents.map((d: any) => d.key),
      ['notes.v2', 'plan'],
      'squad mates read them, sorted by key',
    )
    const got = await api.call('GET', `/api/issues/${issue.id}/documents/plan`, undefined, bob.token)
    t.same(got.body.document, updated.body.document)
    isError(t, await api.call('GET', `/api/issues/${issue.id}/documents/nope`), 404, 'not_found', 'unknown key')
    isError(t, await api.call('GET', `/api/issues/${issue.id}/documents/BAD`), 404, 'not_found', 'invalid key on GET')
    isError(t, await api.call('DELETE', `/api/issues/${issue.id}/documents/plan`, undefined, bob.token), 403, 'forbidden', 'delete by another agent')
    const del = await api.call('DELETE', `/api/issues/${issue.id}/documents/plan`, undefined, s.agentToken)
    t.same([del.status, del.body], [200, { ok: true }])
    isError(t, await api.call('GET', `/api/issues/${issue.id}/documents/plan`), 404, 'not_found', 'deleted')
    isError(t, await api.call('DELETE', `/api/issues/${issue.id}/documents/plan`), 404, 'not_found', 'deleted twice')
    t.equal((await put('plan', doc)).status, 201, 'the key can be created again')
    const actions = (await activityOf(api, s.squadId, `entityId=${issue.id}`)).map((e) => e.action)
    for (const a of ['issue.document_created', 'issue.document_updated', 'issue.document_deleted']) t.ok(actions.includes(a), a)
  })

  await t.test('interactions: kinds, idempotency, answers, continuations', async (t) => {
    const s = await api.seed('Talk')
    const bob = await addAgent(api, s.squadId, 'bob')
    const issue = await addIssue(api, s.squadId, { title: 'decide', assigneeAgentId: s.agentId })
    const create = (body: Record<string, unknown>, token: string | undefined = s.agentToken) => api.call('POST', `/api/issues/${issue.id}/interactions`, body, token)
    const answer = (id: string, action: string, body?: unknown, token?: string) => api.call('POST', `/api/issues/${issue.id}/interactions/${id}/${action}`, body, token)

    const invalid: Array<[string, Record<string, unknown>]> = [
      ['confirmation without prompt', { kind: 'request_confirmation', payload: {} }],
      ['confirmation with blank prompt', { kind: 'request_confirmation', payload: { prompt: ' ' } }],
      ['tasks empty', { kind: 'suggest_tasks', payload: { tasks: [] } }],
      ['task without title', { kind: 'suggest_tasks', payload: { tasks: [{ description: 'x' }] } }],
      ['tasks not an array', { kind: 'suggest_tasks', payload: { tasks: 'a,b' } }],
      ['task with an unknown priority', { kind: 'suggest_tasks', payload: { tasks: [{ title: 'x', priority: 'urgent' }] } }],
      ['task title too long', { kind: 'suggest_tasks', payload: { tasks: [{ title: 'x'.repeat(501) }] } }],
      ['task description not a string', { kind: 'suggest_tasks', payload: { tasks: [{ title: 'x', description: 5 }] } }],
      ['questions missing', { kind: 'ask_user_questions', payload: {} }],
      ['question without text', { kind: 'ask_user_questions', payload: { questions: [{ id: 'q1' }] } }],
      ['unknown kind', { kind: 'poll', payload: {} }],
      ['payload not an object', { kind: 'request_confirmation', payload: 'ok?' }],
      ['unknown continuation', { kind: 'request_confirmation', payload: { prompt: 'ok?' }, continuationPolicy: 'wake_everyone' }],
    ]
    for (const [label, body] of invalid) isError(t, await create(body), 400, 'invalid_payload', label)
    isError(t, await create({ kind: 'request_confirmation', payload: { prompt: 'ok?' } }, bob.token), 403, 'forbidden', 'an agent asks only on its issues')

    const first = await create({ kind: 'request_confirmation', payload: { prompt: 'Deploy?' }, idempotencyKey: 'deploy-1' })
    t.equal(first.status, 201)
    t.match(first.body.interaction, {
      issueId: issue.id,
      kind: 'request_confirmation',
      payload: { prompt: 'Deploy?' },
      status: 'pending',
      idempotencyKey: 'deploy-1',
      createdByType: 'agent',
      createdById: s.agentId,
      response: null,
      resolvedAt: null,
      continuationPolicy: null,
    })
    const repeat = await create({ kind: 'request_confirmation', payload: { prompt: 'Deploy?' }, idempotencyKey: 'deploy-1' })
    t.equal(repeat.status, 200, 'a repeated idempotencyKey answers 200')
    t.same(repeat.body.interaction, first.body.interaction, 'with the same interaction')
    t.equal((await api.call('GET', `/api/issues/${issue.id}/interactions`)).body.interactions.length, 1, 'and stores nothing new')
    t.equal((await activityOf(api, s.squadId, `entityId=${issue.id}`)).filter((e) => e.action === 'issue.interaction_created').length, 1)
    const id = first.body.interaction.id
    // Concurrent repeats of one key: one interaction, every answer names it.
    const burst = await Promise.all(Array.from({ length: 5 }, () => create({ kind: 'request_confirmation', payload: { prompt: 'Ship?' }, idempotencyKey: 'ship-1' })))
    t.same(burst.map((r) => r.status).sort(), [200, 200, 200, 200, 201], 'one 201, the rest 200')
    t.equal(new Set(burst.map((r) => r.body.interaction.id)).size, 1, 'the same interaction')
    await answer(burst[0]!.body.interaction.id, 'reject', {}, bob.token)

    isError(t, await answer(id, 'accept', {}, s.agentToken), 403, 'forbidden', 'an agent answers its own question')
    isError(t, await answer(unknownId, 'accept', {}), 404, 'not_found', 'unknown interaction')
    isError(t, await answer('nope', 'accept', {}), 404, 'not_found', 'malformed interaction id')
    const accepted = await answer(id, 'accept', { note: 'go' }, bob.token)
    t.equal(accepted.status, 200, 'another agent of the squad answers')
    t.match(accepted.body, { interaction: { id, status: 'accepted', response: { note: 'go' } }, createdIssueIds: [] })
    t.match(accepted.body.interaction.resolvedAt, /Z$/)
    for (const action of ['accept', 'reject', 'respond']) {
      isError(t, await answer(id, action, { response: { a: 1 } }), 422, 'invalid_state', `${action} after accept`)
    }

    const q = (await create({ kind: 'ask_user_questions', payload: { questions: [{ question: 'Which region?' }] } })).body.interaction
    isError(t, await answer(q.id, 'respond', {}), 400, 'invalid_payload', 'respond without a response')
    isError(t, await answer(q.id, 'respond', { response: { region: 'eu' }, extra: 1 }), 400, 'invalid_payload', 'unknown field')
    const responded = await answer(q.id, 'respond', { response: { region: 'eu' } })
    t.match(responded.body.interaction, { status: 'responded', response: { region: 'eu' } })
    isError(t, await answer(q.id, 'reject'), 422, 'invalid_state', 'reject after respond')

    const r = (await create({ kind: 'request_confirmation', payload: { prompt: 'Delete prod?' } })).body.interaction
    t.match((await answer(r.id, 'reject')).body.interaction, { status: 'rejected', response: null }, 'reject with no body')
    isError(t, await answer(r.id, 'accept'), 422, 'invalid_state', 'accept after reject')

    // suggest_tasks accepted: child issues; wake_assignee: a queued wakeup for the assignee.
    const tasks = [
      { title: 'Write tests', priority: 'high' },
      { title: 'Write docs', description: 'The README' },
    ]
    const sug = (await create({ kind: 'suggest_tasks', payload: { tasks }, continuationPolicy: 'wake_assignee' })).body.interaction
    t.equal(sug.continuationPolicy, 'wake_assignee')
    const interactionRuns = async () => (await api.instance.storage.heartbeatRuns.list({ squadId: s.squadId, agentId: s.agentId, limit: 100 })).filter((r) => r.reason === 'interaction')
    t.same(await interactionRuns(), [], 'no wake before the answer')
    const took = await answer(sug.id, 'accept', {})
    t.equal(took.status, 200)
    t.equal(took.body.createdIssueIds.length, 2)
    const children = await Promise.all(took.body.createdIssueIds.map(async (cid: string) => (await api.call('GET', `/api/issues/${cid}`)).body.issue))
    t.same(
      children.map((c: any) => [c.title, c.priority, c.parentId, c.status]),
      [
        ['Write tests', 'high', issue.id, 'todo'],
        ['Write docs', 'medium', issue.id, 'todo'],
      ],
    )
    t.equal(children[1].description, 'The README')
    const wakes = await interactionRuns()
    t.equal(wakes.length, 1, 'one heartbeat run for the answer')
    t.match(wakes[0], { agentId: s.agentId, issueId: issue.id, squadId: s.squadId, reason: 'interaction' })

    const rejected = (await create({ kind: 'suggest_tasks', payload: { tasks } })).body.interaction
    const none = await answer(rejected.id, 'reject', {})
    t.same(none.body.createdIssueIds, [], 'rejecting suggestions creates nothing')
    t.equal((await interactionRuns()).length, 1, 'no continuation without wake_assignee')

    const list = await api.call('GET', `/api/issues/${issue.id}/interactions`, undefined, bob.token)
    t.same(
      list.body.interactions.map((x: any) => x.status),
      ['accepted', 'rejected', 'responded', 'rejected', 'accepted', 'rejected'],
      'oldest first',
    )
  })
})
