import t from 'tap'
import type { Kysely } from 'kysely'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { activityOf, addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'
import { uuidv7 } from '../src/services/foundation/ids.js'

/** There is no project API in this part yet: projects are written straight into the database. */
async function addProject(api: TestApi, squadId: string, name: string): Promise<string> {
  const db = (api.instance.storage as unknown as { db: Kysely<any> }).db
  const id = uuidv7()
  await db.insertInto('projects').values({ id, squadId, name }).execute()
  return id
}

const ids = (xs: Array<{ id: string }>): string[] => xs.map((x) => x.id)

eachBackend(t, 'issues', async (t, api) => {
  await t.test('create, identifiers, get with relations', async (t) => {
    const a = await api.seed('Engineering')
    const b = await api.seed('Design')
    t.equal(a.prefix, 'ENGI')

    const first = await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: '  First  ', description: 'Body **md**' })
    t.equal(first.status, 201)
    t.match(first.body.issue, {
      squadId: a.squadId,
      identifier: 'ENGI-1',
      title: 'First',
      description: 'Body **md**',
      status: 'todo',
      priority: 'medium',
      assigneeAgentId: null,
      checkoutAgentId: null,
      parentId: null,
      blockedByIssueIds: [],
      blockedBy: [],
      blocks: [],
      ancestors: [],
    })
    const second = await addIssue(api, a.squadId, { title: 'Second', status: 'backlog', priority: 'high', billingCode: 'R&D' }, a.agentToken)
    t.same([second.identifier, second.status, second.priority, second.billingCode], ['ENGI-2', 'backlog', 'high', 'R&D'], 'an agent creates issues in its squad')
    t.equal((await addIssue(api, b.squadId, { title: 'Other squad' })).identifier, 'DESI-1', 'numbers count per squad from 1')
    t.equal((await addIssue(api, a.squadId, { title: 'Third' })).identifier, 'ENGI-3')

    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: 'x', status: 'in_progress' }), 400, 'invalid_payload', 'in_progress on create')
    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: '   ' }), 400, 'invalid_payload', 'blank title')
    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: 'x', priority: 'urgent' }), 400, 'invalid_payload', 'unknown priority')
    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: 'x', assigneeAgentId: b.agentId }), 400, 'invalid_payload', 'assignee from another squad')
    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: 'x', parentId: unknownId }), 400, 'invalid_payload', 'unknown parent')
    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: 'x', projectId: unknownId }), 400, 'invalid_payload', 'unknown project')
    isError(t, await api.call('POST', `/api/squads/${a.squadId}/issues`, { title: 'x', goalId: unknownId }), 400, 'invalid_payload', 'unknown goal')
    isError(t, await api.call('POST', `/api/squads/${unknownId}/issues`, { title: 'x' }), 404, 'not_found', 'unknown squad')

    // Concurrent creates take consecutive numbers, each once.
    const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => api.call('POST', `/api/squads/${b.squadId}/issues`, { title: `burst ${i}` })))
    t.same(
      burst.map((r) => r.status),
      Array(10).fill(201),
    )
    t.same(
      burst.map((r) => Number(r.body.issue.identifier.split('-')[1])).sort((x, y) => x - y),
      [2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      'no gaps, no duplicates',
    )

    // Relations: grandparent ← parent ← child, child blocked by two issues.
    const top = await addIssue(api, a.squadId, { title: 'Epic' })
    const mid = await addIssue(api, a.squadId, { title: 'Story', parentId: top.id })
    const x = await addIssue(api, a.squadId, { title: 'Blocker X' })
    const y = await addIssue(api, a.squadId, { title: 'Blocker Y' })
    const child = await addIssue(api, a.squadId, { title: 'Task', parentId: mid.id, blockedByIssueIds: [x.id, y.id, x.id] })
    t.same(child.blockedByIssueIds.sort(), [x.id, y.id].sort(), 'duplicates collapse')
    const got = (await api.call('GET', `/api/issues/${child.id}`, undefined, a.agentToken)).body.issue
    t.same(
      got.ancestors,
      [
        { id: mid.id, identifier: mid.identifier, title: 'Story', status: 'todo' },
        { id: top.id, identifier: top.identifier, title: 'Epic', status: 'todo' },
      ],
      'ancestors, nearest first',
    )
    t.same(ids(got.blockedBy).sort(), [x.id, y.id].sort())
    t.same(Object.keys(got.blockedBy[0]).sort(), ['id', 'identifier', 'status', 'title'])
    t.same(ids((await api.call('GET', `/api/issues/${x.id}`)).body.issue.blocks), [child.id], 'blocks is the reverse edge')
    t.equal((await api.call('GET', `/api/issues/${child.identifier}`)).body.issue.id, child.id, 'an identifier works in place of the id')
    t.equal((await api.call('GET', `/api/issues/${child.identifier.toLowerCase()}`)).body.issue.id, child.id, 'case-insensitively')
    isError(t, await api.call('GET', `/api/issues/${child.id}`, undefined, b.agentToken), 404, 'not_found', "another squad's agent")
    isError(t, await api.call('GET', `/api/issues/${child.identifier}`, undefined, b.agentToken), 404, 'not_found', "another squad's agent by identifier")
    isError(t, await api.call('GET', '/api/issues/ENGI-999'), 404, 'not_found', 'unknown identifier')
    isError(t, await api.call('GET', '/api/issues/not-an-id'), 404, 'not_found', 'malformed id')

    const ctx = await api.call('GET', `/api/issues/${child.id}/heartbeat-context`, undefined, a.agentToken)
    t.equal(ctx.status, 200)
    t.equal(ctx.body.issue.id, child.id)
    t.same(ids(ctx.body.ancestors), [mid.id, top.id])
    t.same(ctx.body.commentCursor, { totalComments: 0, latestCommentId: null, latestCommentAt: null })
    const c = await api.call('POST', `/api/issues/${child.id}/comments`, { body: 'progress' }, a.agentToken)
    const ctx2 = (await api.call('GET', `/api/issues/${child.id}/heartbeat-context`)).body
    t.same(ctx2.commentCursor, { totalComments: 1, latestCommentId: c.body.comment.id, latestCommentAt: c.body.comment.createdAt })

    const created = (await activityOf(api, a.squadId, `entityType=issue&entityId=${first.body.issue.id}`))[0]
    t.match(created, { action: 'issue.created', actorType: 'user', details: { identifier: 'ENGI-1', status: 'todo' } })
  })

  await t.test('list filters, full-text search, paging', async (t) => {
    const s = await api.seed('Search')
    const bob = await addAgent(api, s.squadId, 'bob')
    const project = await addProject(api, s.squadId, 'Website')
    const i1 = await addIssue(api, s.squadId, { title: 'Rotate the logs nightly', assigneeAgentId: s.agentId })
    const i2 = await addIssue(api, s.squadId, { title: 'Fix login page', description: 'The **password** field overflows', status: 'backlog', projectId: project })
    const i3 = await addIssue(api, s.squadId, { title: 'Write release notes', status: 'blocked', assigneeAgentId: bob.id, projectId: project })
    const i4 = await addIssue(api, s.squadId, { title: 'Quarterly planning', status: 'done' })
    await api.call('POST', `/api/issues/${i4.id}/comments`, { body: 'Blocked on the zeppelin budget' })
    const other = await api.seed('Elsewhere')
    await addIssue(api, other.squadId, { title: 'Rotate the logs elsewhere' })

    const list = async (query: string, token?: string): Promise<string[]> => {
      const res = await api.call('GET', `/api/squads/${s.squadId}/issues${query}`, undefined, token)
      t.equal(res.status, 200, `list ${query}`)
      return ids(res.body.issues ?? [])
    }
    t.same(await list(''), [i4.id, i3.id, i2.id, i1.id], 'newest first')
    const one = (await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues[0]
    t.same(Object.keys(one).sort(), ['assigneeAgentId', 'id', 'identifier', 'priority', 'status', 'title'])
    t.same(await list('?status=backlog,blocked'), [i3.id, i2.id], 'status comma list')
    t.same(await list('?status=done'), [i4.id])
    t.same(await list(`?assigneeAgentId=${bob.id}`), [i3.id])
    t.same(await list(`?projectId=${project}`), [i3.id, i2.id])
    t.same(await list(`?projectId=${project}&status=backlog`), [i2.id], 'filters combine')
    t.same(await list('?q=release'), [i3.id], 'q: title')
    t.same(await list('?q=password'), [i2.id], 'q: description')
    t.same(await list('?q=zeppelin'), [i4.id], 'q: a word only in a comment')
    t.same(await list('?q=logging'), [i1.id], 'q: stemming (logging finds logs)')
    t.same(await list(`?q=${i3.identifier}`), [i3.id], 'q: identifier')
    t.same(await list(`?q=${i3.identifier.toLowerCase()}`), [i3.id], 'q: identifier, any case')
    t.same(await list('?q=rotate%20nightly'), [i1.id], 'q: every word')
    t.same(await list('?q=%22release%20notes%22'), [i3.id], 'q: a quoted phrase')
    t.same(await list('?q=the'), [], 'q: only stop words finds nothing')
    t.same(await list('?q=a%27%20%26%20%7C%20!%20(%20:*'), [], 'q: operator characters are plain text')
    t.same(await list('?q=rotate', s.agentToken), [i1.id], "never another squad's issues")
    // A prefix that English stemming would change (DOCS → doc) is still found by identifier.
    const docs = await api.call('POST', '/api/squads', { name: 'Docs' })
    t.equal(docs.body.squad.issuePrefix, 'DOCS')
    const d1 = await addIssue(api, docs.body.squad.id, { title: 'Write the guide' })
    const found = await api.call('GET', `/api/squads/${docs.body.squad.id}/issues?q=DOCS-1`)
    t.same(ids(found.body.issues), [d1.id], 'q: identifier with a stemmable prefix')
    // q follows later edits: a new title and a new comment are searchable at once.
    await api.call('PATCH', `/api/issues/${i2.id}`, { title: 'Fix signup page' })
    t.same(await list('?q=signup'), [i2.id])
    t.same(await list('?q=password'), [i2.id], 'the description stays searchable after a title change')
    t.same(await list('?q=zeppelin'), [i4.id], 'comments stay searchable after a title change')
    await api.call('PATCH', `/api/issues/${i4.id}`, { title: 'Quarterly plan' })
    t.same(await list('?q=zeppelin'), [i4.id], 'comments survive a search refresh')
    await api.call('PATCH', `/api/issues/${i3.id}`, { comment: 'Needs a changelog entry' })
    t.same(await list('?q=changelog'), [i3.id], 'a PATCH comment is searchable')
    await api.call('POST', `/api/issues/${i1.id}/comments`, { body: `Waiting for ${i3.identifier} first` })
    t.same(await list(`?q=${i3.identifier}`), [i3.id, i1.id], 'q: identifier finds the issue and the issues whose comments mention it')
    t.same(await list(`?q=${i3.identifier}`, s.agentToken), [i3.id, i1.id], 'the same for an agent of the squad')

    t.same(await list('?limit=2'), [i4.id, i3.id], 'limit')
    t.same(await list('?limit=2&offset=2'), [i2.id, i1.id], 'offset')
    t.same(await list('?limit=2&offset=4'), [])
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?status=open`), 400, 'invalid_payload', 'unknown status')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?status=todo,`), 400, 'invalid_payload', 'trailing comma')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?assigneeAgentId=bob`), 400, 'invalid_payload', 'assignee not a UUID')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?projectId=p1`), 400, 'invalid_payload', 'project not a UUID')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?limit=0`), 400, 'invalid_payload', 'limit 0')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?limit=501`), 400, 'invalid_payload', 'limit over 500')
    isError(t, await api.call('GET', `/api/squads/${s.squadId}/issues?offset=-1`), 400, 'invalid_payload', 'negative offset')
  })

  await t.test('PATCH rules and DELETE', async (t) => {
    const s = await api.seed('Rules')
    const bob = await addAgent(api, s.squadId, 'bob')
    const other = await api.seed('Other')
    const foreign = await addIssue(api, other.squadId, { title: 'foreign' })
    const issue = await addIssue(api, s.squadId, { title: 'Work', assigneeAgentId: s.agentId })
    const patch = (id: string, body: unknown, token?: string) => api.call('PATCH', `/api/issues/${id}`, body, token)

    // Who may PATCH.
    isError(t, await patch(issue.id, { title: 'x' }, bob.token), 403, 'forbidden', 'an agent PATCHes an issue assigned to another')
    isError(t, await patch(issue.id, { title: 'x' }, other.agentToken), 404, 'not_found', "another squad's agent")
    const mine = await patch(issue.id, { title: 'Work, refined', description: 'Details', priority: 'critical' }, s.agentToken)
    t.equal(mine.status, 200)
    t.match(mine.body.issue, { title: 'Work, refined', description: 'Details', priority: 'critical' })

    // Status rules.
    isError(t, await patch(issue.id, { status: 'in_progress' }), 422, 'invalid_state', 'in_progress only via checkout')
    t.equal((await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: s.agentId }, s.agentToken)).status, 200)
    t.equal((await patch(issue.id, { status: 'in_progress' })).status, 200, 'PATCH to the current in_progress is a no-op')
    const review = (await patch(issue.id, { status: 'in_review' }, s.agentToken)).body.issue
    t.same([review.status, review.checkoutAgentId], ['in_review', s.agentId], 'other statuses keep the checkout')
    const done = await patch(issue.id, { status: 'done', comment: 'Shipped it.' }, s.agentToken)
    t.same([done.body.issue.status, done.body.issue.checkoutAgentId, done.body.issue.checkedOutAt], ['done', null, null], 'done clears the checkout')
    const comments = (await api.call('GET', `/api/issues/${issue.id}/comments`)).body.comments
    t.same(
      comments.map((c: any) => [c.body, c.authorType, c.authorId]),
      [['Shipped it.', 'agent', s.agentId]],
      'the optional comment is attached',
    )
    const changed = (await activityOf(api, s.squadId, `entityId=${issue.id}`)).find((e) => e.action === 'issue.status_changed' && e.details.to === 'done')
    t.match(changed, { details: { from: 'in_review', to: 'done', commentId: comments[0].id }, agentId: s.agentId })

    const c2 = await addIssue(api, s.squadId, { title: 'To cancel', assigneeAgentId: s.agentId })
    await api.call('POST', `/api/issues/${c2.id}/checkout`, { agentId: s.agentId })
    t.same(pick((await patch(c2.id, { status: 'cancelled' })).body.issue), ['cancelled', s.agentId, null], 'cancelled clears the checkout')

    // Reassignment ends another agent's checkout; the same holder keeps it.
    const r = await addIssue(api, s.squadId, { title: 'Reassign me' })
    await api.call('POST', `/api/issues/${r.id}/checkout`, { agentId: s.agentId })
    t.same(pick((await patch(r.id, { assigneeAgentId: s.agentId })).body.issue), ['in_progress', s.agentId, s.agentId], 'same assignee: checkout kept')
    t.same(pick((await patch(r.id, { assigneeAgentId: bob.id }, s.agentToken)).body.issue), ['in_progress', bob.id, null], 'new assignee: old checkout cleared')
    t.equal((await api.call('POST', `/api/issues/${r.id}/checkout`, { agentId: bob.id, expectedStatuses: ['in_progress'] }, bob.token)).status, 200, 'the new assignee can take it')
    t.same(pick((await patch(r.id, { assigneeAgentId: null })).body.issue), ['in_progress', null, null], 'null unassigns and clears the checkout')
    isError(t, await patch(r.id, { assigneeAgentId: other.agentId }), 400, 'invalid_payload', 'assignee from another squad')

    // Blockers: replace, clear, never itself, same squad only.
    const b1 = await addIssue(api, s.squadId, { title: 'B1' })
    const b2 = await addIssue(api, s.squadId, { title: 'B2' })
    const blocked = await addIssue(api, s.squadId, { title: 'Blocked', blockedByIssueIds: [b1.id] })
    t.same((await patch(blocked.id, { blockedByIssueIds: [b2.id] })).body.issue.blockedByIssueIds, [b2.id], 'replaces the set')
    t.same((await patch(blocked.id, { title: 'Blocked still' })).body.issue.blockedByIssueIds, [b2.id], 'absent leaves it alone')
    t.same((await patch(blocked.id, { blockedByIssueIds: [] })).body.issue.blockedByIssueIds, [], '[] clears')
    isError(t, await patch(blocked.id, { blockedByIssueIds: [blocked.id] }), 400, 'invalid_payload', 'self-block')
    isError(t, await patch(blocked.id, { blockedByIssueIds: [b1.id, foreign.id] }), 400, 'invalid_payload', "another squad's issue")
    isError(t, await patch(blocked.id, { blockedByIssueIds: [unknownId] }), 400, 'invalid_payload', 'unknown issue')
    isError(t, await patch(blocked.id, { blockedByIssueIds: ['nope'] }), 400, 'invalid_payload', 'not a UUID')
    t.same((await api.call('GET', `/api/issues/${blocked.id}`)).body.issue.blockedByIssueIds, [], 'failed PATCHes change nothing')
    // Concurrent replacements of one blocker set: each answers 200 and one of them wins whole.
    const sets = [[b1.id], [b2.id], [b1.id, b2.id], [], [b2.id, b1.id], [b1.id], [b2.id], [b1.id, b2.id]]
    const raced = await Promise.all(sets.map((set) => patch(blocked.id, { blockedByIssueIds: set })))
    t.same(
      raced.map((r) => r.status),
      sets.map(() => 200),
      'no concurrent PATCH fails',
    )
    const final = (await api.call('GET', `/api/issues/${blocked.id}`)).body.issue.blockedByIssueIds.sort()
    t.ok(
      sets.some((set) => JSON.stringify([...set].sort()) === JSON.stringify(final)),
      'the stored set is one that was sent',
    )
    await patch(blocked.id, { blockedByIssueIds: [] })
    isError(t, await patch(blocked.id, { parentId: b1.id }), 400, 'invalid_payload', 'parentId is not a PATCH field')
    isError(t, await patch(blocked.id, { title: '' }), 400, 'invalid_payload', 'empty title')
    isError(t, await patch(unknownId, { title: 'x' }), 404, 'not_found', 'unknown issue')

    // Agents create issues and comment on any issue of their squad, but change only their own.
    const bobs = await addIssue(api, s.squadId, { title: "Bob's", assigneeAgentId: bob.id }, s.agentToken)
    t.equal(bobs.assigneeAgentId, bob.id, 'an agent may delegate')
    t.equal((await api.call('POST', `/api/issues/${bobs.id}/comments`, { body: 'FYI' }, s.agentToken)).status, 201, 'comment on any issue of the squad')
    isError(t, await api.call('POST', `/api/issues/${foreign.id}/comments`, { body: 'hi' }, s.agentToken), 404, 'not_found', "comment on another squad's issue")
    isError(t, await patch(bobs.id, { status: 'done' }, s.agentToken), 403, 'forbidden', "PATCH of someone else's issue")

    // DELETE: Operator only.
    isError(t, await api.call('DELETE', `/api/issues/${b1.id}`, undefined, s.agentToken), 403, 'forbidden', 'agent deletes')
    isError(t, await api.call('DELETE', `/api/issues/${b1.id}`, undefined, other.agentToken), 404, 'not_found', "another squad's agent deletes")
    const child = await addIssue(api, s.squadId, { title: 'child of b1', parentId: b1.id, blockedByIssueIds: [b1.id] })
    const del = await api.call('DELETE', `/api/issues/${b1.id}`)
    t.same([del.status, del.body], [200, { ok: true }])
    isError(t, await api.call('GET', `/api/issues/${b1.id}`), 404, 'not_found', 'deleted')
    isError(t, await api.call('DELETE', `/api/issues/${b1.id}`), 404, 'not_found', 'deleted twice')
    const orphan = (await api.call('GET', `/api/issues/${child.id}`)).body.issue
    t.same([orphan.parentId, orphan.blockedByIssueIds], [null, []], 'children and blockers let go')
    t.ok(
      (await activityOf(api, s.squadId, `entityId=${b1.id}`)).some((e) => e.action === 'issue.deleted'),
      'the deletion is in the audit trail',
    )
    t.equal((await addIssue(api, s.squadId, { title: 'after delete' })).number ?? null, null, 'numbers are not exposed beyond the identifier')
  })

  await t.test('inbox-lite', async (t) => {
    const s = await api.seed('Inbox')
    const bob = await addAgent(api, s.squadId, 'bob')
    const mk = (title: string, status: string, priority: string, assigneeAgentId = s.agentId) => addIssue(api, s.squadId, { title, status, priority, assigneeAgentId })
    const low = await mk('low todo', 'todo', 'low')
    const crit = await mk('critical blocked', 'blocked', 'critical')
    const med = await mk('medium review', 'in_review', 'medium')
    const high = await mk('high todo', 'todo', 'high')
    const backlog = await mk('backlog', 'backlog', 'critical')
    await mk('done', 'done', 'critical')
    await mk('cancelled', 'cancelled', 'critical')
    await mk("bob's", 'todo', 'critical', bob.id)
    await addIssue(api, s.squadId, { title: 'unassigned', priority: 'critical' })
    const prog = await addIssue(api, s.squadId, { title: 'checked out', priority: 'low' })
    await api.call('POST', `/api/issues/${prog.id}/checkout`, { agentId: s.agentId }, s.agentToken)

    const inbox = await api.call('GET', '/api/agents/me/inbox-lite', undefined, s.agentToken)
    t.equal(inbox.status, 200)
    const items = inbox.body.items
    t.same(
      items.map((i: any) => i.priority),
      ['critical', 'high', 'medium', 'low', 'low'],
      'sorted critical → low',
    )
    t.same(ids(items.slice(0, 3)), [crit.id, high.id, med.id])
    t.same(ids(items.slice(3)).sort(), [low.id, prog.id].sort(), 'default statuses: todo, in_progress, in_review, blocked')
    t.same(Object.keys(items[0]).sort(), ['id', 'identifier', 'priority', 'status', 'title'])
    const filtered = await api.call('GET', '/api/agents/me/inbox-lite?status=backlog,todo', undefined, s.agentToken)
    t.same(ids(filtered.body.items), [backlog.id, high.id, low.id], 'status filter')
    t.same(ids((await api.call('GET', '/api/agents/me/inbox-lite?limit=1', undefined, s.agentToken)).body.items), [crit.id], 'limit')
    isError(t, await api.call('GET', '/api/agents/me/inbox-lite?status=nope', undefined, s.agentToken), 400, 'invalid_payload', 'bad status')
    isError(t, await api.call('GET', '/api/agents/me/inbox-lite'), 403, 'forbidden', 'an Operator has no inbox')
    t.same(ids((await api.call('GET', '/api/agents/me/inbox-lite', undefined, bob.token)).body.items).length, 1, 'each agent sees its own')
  })
})

function pick(issue: any): unknown[] {
  return [issue.status, issue.assigneeAgentId, issue.checkoutAgentId]
}
