import t from 'tap'
import { eachBackend, type TestApi } from './helpers/instance.js'

const unknownId = '01a2016d-4579-7b3a-99bd-85bf68260266'
const payload = { title: 'Buy a bigger runner', summary: 'CI takes 40 minutes.', recommendedAction: 'Approve $200/month', risks: ['cost'] }

async function secondAgent(api: TestApi, squadId: string, name = 'bob'): Promise<{ id: string; token: string }> {
  const agent = (await api.call('POST', `/api/squads/${squadId}/agents`, { name, role: 'engineer', adapterType: 'process' })).body.agent
  const key = (await api.call('POST', `/api/agents/${agent.id}/keys`, { name: 'k' })).body
  return { id: agent.id, token: key.token }
}

eachBackend(t, 'approvals: create, read, list, linked issues, comments', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const bob = await secondAgent(api, squadId)
  const other = await api.seed()
  const issue = (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'CI is slow' })).body.issue

  const created = await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, issueIds: [issue.id, issue.id], payload }, agentToken)
  t.equal(created.status, 201)
  const approval = created.body.approval
  t.match(approval, { squadId, type: 'request_board_approval', status: 'pending', requestedByAgentId: agentId, payload, decisionNote: null, decidedAt: null, revision: 1, issueIds: [issue.id] })

  t.equal(
    (await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: bob.id, payload }, agentToken)).status,
    403,
    'an agent files in its own name only',
  )
  t.equal((await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: other.agentId, payload })).status, 400, 'requester of another squad')
  t.equal((await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'hire_agent', requestedByAgentId: agentId, payload })).status, 400, 'hires go through agent-hires')
  t.equal((await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, payload: { title: 'x' } })).status, 400, 'summary is required')
  t.equal(
    (await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, payload: { title: ' ', summary: 'y' } })).status,
    400,
    'blank title',
  )
  const foreignIssue = (await api.call('POST', `/api/squads/${other.squadId}/issues`, { title: 'x' })).body.issue.id
  const badLink = await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, issueIds: [foreignIssue], payload })
  t.equal(badLink.body.details[0].path, '/issueIds')

  const got = await api.call('GET', `/api/approvals/${approval.id}`, undefined, bob.token)
  t.same(got.body.approval, approval)
  t.equal((await api.call('GET', `/api/approvals/${approval.id}`, undefined, other.agentToken)).status, 404, "another squad's agent")
  t.equal((await api.call('GET', '/api/approvals/not-a-uuid')).status, 404)
  t.equal((await api.call('GET', `/api/approvals/${unknownId}`)).status, 404)

  const linked = await api.call('GET', `/api/approvals/${approval.id}/issues`, undefined, agentToken)
  t.same(linked.body.issues, [{ id: issue.id, identifier: issue.identifier, title: 'CI is slow', status: 'todo', priority: 'medium', assigneeAgentId: null }])

  const c1 = await api.call('POST', `/api/approvals/${approval.id}/comments`, { body: 'How much exactly?' })
  t.equal(c1.status, 201)
  t.match(c1.body.comment, { approvalId: approval.id, body: 'How much exactly?', authorType: 'user' })
  await api.call('POST', `/api/approvals/${approval.id}/comments`, { body: '$200.' }, agentToken)
  t.equal((await api.call('POST', `/api/approvals/${approval.id}/comments`, { body: 'hi' }, other.agentToken)).status, 404)
  t.equal((await api.call('POST', `/api/approvals/${approval.id}/comments`, { body: '' })).status, 400)
  const comments = (await api.call('GET', `/api/approvals/${approval.id}/comments`, undefined, bob.token)).body.comments
  t.same(
    comments.map((c: { body: string; authorType: string }) => [c.authorType, c.body]),
    [
      ['user', 'How much exactly?'],
      ['agent', '$200.'],
    ],
  )

  const second = (await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: bob.id, payload }, bob.token)).body.approval
  await api.call('POST', `/api/approvals/${second.id}/reject`)
  const all = (await api.call('GET', `/api/squads/${squadId}/approvals`, undefined, agentToken)).body.approvals
  t.same(
    all.map((a: { id: string }) => a.id),
    [second.id, approval.id],
    'newest first',
  )
  t.same(
    (await api.call('GET', `/api/squads/${squadId}/approvals?status=pending`)).body.approvals.map((a: { id: string }) => a.id),
    [approval.id],
  )
  t.same(
    (await api.call('GET', `/api/squads/${squadId}/approvals?status=rejected,approved`)).body.approvals.map((a: { id: string }) => a.id),
    [second.id],
  )
  t.equal((await api.call('GET', `/api/squads/${squadId}/approvals?status=maybe`)).status, 400)
  t.equal((await api.call('GET', `/api/squads/${squadId}/approvals`, undefined, other.agentToken)).status, 404)

  // The approvals that name an issue, in every state (the console's issue page).
  const third = (await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: bob.id, issueIds: [issue.id], payload }, bob.token)).body.approval
  await api.call('POST', `/api/approvals/${third.id}/approve`)
  const ofIssue = (query: string, token?: string) => api.call('GET', `/api/squads/${squadId}/approvals?${query}`, undefined, token)
  t.same(
    (await ofIssue(`issueId=${issue.id}`, agentToken)).body.approvals.map((a: { id: string; status: string }) => [a.id, a.status]),
    [
      [third.id, 'approved'],
      [approval.id, 'pending'],
    ],
    'every state, newest first; an approval naming no issue is left out',
  )
  t.same(
    (await ofIssue(`issueId=${issue.id}&status=approved`)).body.approvals.map((a: { id: string }) => a.id),
    [third.id],
  )
  t.same((await ofIssue(`issueId=${foreignIssue}`)).body.approvals, [], "another squad's issue names none here")
  const bad = await ofIssue('issueId=not-a-uuid')
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'invalid_payload')
})

eachBackend(t, 'approvals: the state machine, Operator decisions, resubmit by the requester', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const bob = await secondAgent(api, squadId)
  const create = async () =>
    (await api.call('POST', `/api/squads/${squadId}/approvals`, { type: 'request_board_approval', requestedByAgentId: agentId, payload }, agentToken)).body.approval.id as string

  // Approve: Operator only, once.
  const a = await create()
  for (const action of ['approve', 'reject', 'request-revision']) {
    const r = await api.call('POST', `/api/approvals/${a}/${action}`, { decisionNote: 'me' }, agentToken)
    t.equal(r.status, 403, `${action} by an agent key`)
    t.equal(r.body.code, 'forbidden')
  }
  const stranger = await api.seed()
  t.equal((await api.call('POST', `/api/approvals/${a}/approve`, undefined, stranger.agentToken)).status, 404, "another squad's agent learns nothing, not even 403")
  const approved = await api.call('POST', `/api/approvals/${a}/approve`, { decisionNote: 'Go ahead' })
  t.equal(approved.status, 200)
  t.match(approved.body.approval, { id: a, status: 'approved', decisionNote: 'Go ahead', decidedBy: 'operator' })
  t.ok(approved.body.approval.decidedAt)
  const twice = await api.call('POST', `/api/approvals/${a}/approve`)
  t.equal(twice.status, 422, 'approving twice')
  t.equal(twice.body.code, 'invalid_state')
  t.equal((await api.call('POST', `/api/approvals/${a}/reject`)).status, 422)
  t.equal((await api.call('POST', `/api/approvals/${a}/request-revision`)).status, 422)
  t.equal((await api.call('POST', `/api/approvals/${a}/resubmit`, { payload }, agentToken)).status, 422)
  t.equal((await api.call('GET', `/api/approvals/${a}`)).body.approval.status, 'approved')

  // Reject without a body.
  const b = await create()
  const rejected = await api.call('POST', `/api/approvals/${b}/reject`)
  t.equal(rejected.status, 200)
  t.match(rejected.body.approval, { status: 'rejected', decisionNote: null })
  t.equal((await api.call('POST', `/api/approvals/${b}/approve`)).status, 422)

  // Revision round trip.
  const c = await create()
  t.equal((await api.call('POST', `/api/approvals/${c}/resubmit`, { payload }, agentToken)).status, 422, 'a pending approval is not resubmitted')
  const sentBack = await api.call('POST', `/api/approvals/${c}/request-revision`, { decisionNote: 'Add numbers' })
  t.match(sentBack.body.approval, { status: 'revision_requested', decisionNote: 'Add numbers' })
  t.equal((await api.call('POST', `/api/approvals/${c}/approve`)).status, 422, 'a sent-back approval is not decided')
  const bobTries = await api.call('POST', `/api/approvals/${c}/resubmit`, { payload }, bob.token)
  t.equal(bobTries.status, 403, "resubmitting someone else's approval")
  t.equal(bobTries.body.code, 'forbidden')
  t.equal((await api.call('POST', `/api/approvals/${c}/resubmit`, { payload: { name: 'x', role: 'y' } }, agentToken)).status, 400, 'payload of the wrong type')
  const newPayload = { title: 'Buy a bigger runner', summary: '$200/month saves 30 min per run.' }
  const resubmitted = await api.call('POST', `/api/approvals/${c}/resubmit`, { payload: newPayload }, agentToken)
  t.equal(resubmitted.status, 200)
  t.match(resubmitted.body.approval, { status: 'pending', payload: newPayload, revision: 2, decisionNote: null, decidedAt: null })
  t.equal((await api.call('POST', `/api/approvals/${c}/resubmit`, { payload: newPayload }, agentToken)).status, 422, 'resubmitting twice')
  await api.call('POST', `/api/approvals/${c}/request-revision`)
  t.equal((await api.call('POST', `/api/approvals/${c}/resubmit`, { payload: newPayload })).status, 200, 'an Operator resubmits too')
  t.equal((await api.call('POST', `/api/approvals/${c}/approve`)).body.approval.status, 'approved')

  const trail = (await api.call('GET', `/api/squads/${squadId}/activity?entityType=approval&entityId=${c}`)).body.activity.map((x: { action: string }) => x.action).reverse()
  t.same(trail, ['approval.created', 'approval.revision_requested', 'approval.resubmitted', 'approval.revision_requested', 'approval.resubmitted', 'approval.approved'])

  // Concurrent decisions: exactly one wins.
  const d = await create()
  const results = await Promise.all([api.call('POST', `/api/approvals/${d}/approve`), api.call('POST', `/api/approvals/${d}/reject`), api.call('POST', `/api/approvals/${d}/approve`)])
  t.same(results.map((r) => r.status).sort(), [200, 422, 422])
})

eachBackend(t, 'agent hires: 202 with a hire_agent approval; approval creates the agent, rejection creates nothing', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const other = await api.seed()
  const hire = await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'carol', role: 'reviewer', reason: 'We need reviews', title: 'Reviewer', reportsToAgentId: agentId }, agentToken)
  t.equal(hire.status, 202)
  t.equal(hire.body.status, 'pending')
  t.ok(hire.body.approvalId)
  const approval = (await api.call('GET', `/api/approvals/${hire.body.approvalId}`)).body.approval
  t.match(approval, {
    type: 'hire_agent',
    status: 'pending',
    requestedByAgentId: agentId,
    payload: { name: 'carol', role: 'reviewer', reason: 'We need reviews', adapterType: 'process', reportsToAgentId: agentId },
    hiredAgentId: null,
  })
  const names = async () => (await api.call('GET', `/api/squads/${squadId}/agents`)).body.agents.map((a: { name: string }) => a.name).sort()
  t.same(await names(), ['alice'], 'nothing is created before the approval')

  t.equal((await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'alice', role: 'x' })).body.code, 'agent_name_taken')
  t.equal((await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'dan', role: 'x', adapterType: 'nope' })).status, 400)
  t.equal((await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'dan', role: 'x', reportsToAgentId: other.agentId })).status, 400)
  t.equal((await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'dan' })).status, 400, 'role is required')
  t.equal((await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'dan', role: 'x' }, other.agentToken)).status, 404)

  const approved = await api.call('POST', `/api/approvals/${hire.body.approvalId}/approve`, { decisionNote: 'welcome' })
  t.equal(approved.status, 200)
  const hiredId = approved.body.approval.hiredAgentId
  t.ok(hiredId, 'the approval names the agent it created')
  const carol = (await api.call('GET', `/api/agents/${hiredId}`)).body.agent
  t.match(carol, { name: 'carol', role: 'reviewer', title: 'Reviewer', adapterType: 'process', reportsToAgentId: agentId, status: 'active', squadId })
  t.equal((await api.call('POST', `/api/approvals/${hire.body.approvalId}/approve`)).status, 422, 'approving twice creates nothing more')
  t.same(await names(), ['alice', 'carol'])

  const rejectedHire = await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'erin', role: 'x' })
  t.equal(rejectedHire.body.status, 'pending')
  t.equal((await api.call('GET', `/api/approvals/${rejectedHire.body.approvalId}`)).body.approval.requestedByAgentId, null, 'an Operator asked')
  await api.call('POST', `/api/approvals/${rejectedHire.body.approvalId}/reject`)
  t.same(await names(), ['alice', 'carol'], 'rejection creates nothing')

  // A name taken between the hire and the approval: the approval fails and stays pending.
  const late = await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'frank', role: 'x' }, agentToken)
  await api.call('POST', `/api/squads/${squadId}/agents`, { name: 'frank', role: 'x', adapterType: 'process' })
  const clash = await api.call('POST', `/api/approvals/${late.body.approvalId}/approve`)
  t.equal(clash.status, 409)
  t.equal(clash.body.code, 'agent_name_taken')
  t.equal((await api.call('GET', `/api/approvals/${late.body.approvalId}`)).body.approval.status, 'pending')

  // Sent back, then resubmitted with another name by the requesting agent.
  await api.call('POST', `/api/approvals/${late.body.approvalId}/request-revision`, { decisionNote: 'pick another name' })
  const again = await api.call('POST', `/api/approvals/${late.body.approvalId}/resubmit`, { payload: { name: 'grace', role: 'x' } }, agentToken)
  t.match(again.body.approval, { status: 'pending', payload: { name: 'grace', role: 'x', adapterType: 'process' } })
  t.equal((await api.call('POST', `/api/approvals/${late.body.approvalId}/approve`)).status, 200)
  t.same(await names(), ['alice', 'carol', 'frank', 'grace'])

  // Concurrent approvals of one hire create one agent.
  const race = await api.call('POST', `/api/squads/${squadId}/agent-hires`, { name: 'heidi', role: 'x' })
  const results = await Promise.all([api.call('POST', `/api/approvals/${race.body.approvalId}/approve`), api.call('POST', `/api/approvals/${race.body.approvalId}/approve`)])
  t.same(results.map((r) => r.status).sort(), [200, 422])
  t.equal((await names()).filter((n: string) => n === 'heidi').length, 1)

  const created = (await api.call('GET', `/api/squads/${squadId}/activity?entityType=agent&entityId=${hiredId}`)).body.activity.map((x: { action: string }) => x.action)
  t.ok(created.includes('agent.created'))
  const dash = (await api.call('GET', `/api/squads/${squadId}/dashboard`)).body
  t.equal(dash.pendingApprovals, 0)
})
