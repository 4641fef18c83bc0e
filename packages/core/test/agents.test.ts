import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { activityOf, addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'

eachBackend(t, 'agents', async (t, api) => {
  await t.test('create, validation, list, get, me', async (t) => {
    const s = await api.seed('Agents')
    const other = await api.seed('Other')
    const body = { name: 'bob', role: 'software_engineer', adapterType: 'http', title: 'Engineer', prompt: 'You write code.', desiredSkills: ['git'] }

    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, body, s.agentToken), 403, 'forbidden', 'agent key hires')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, body, other.agentToken), 404, 'not_found', 'other squad agent key hires')
    const created = await api.call('POST', `/api/squads/${s.squadId}/agents`, body)
    t.equal(created.status, 201)
    const bob = created.body.agent
    t.match(bob, {
      squadId: s.squadId,
      name: 'bob',
      role: 'software_engineer',
      title: 'Engineer',
      status: 'active',
      adapterType: 'http',
      reportsToAgentId: null,
      prompt: 'You write code.',
      desiredSkills: ['git'],
      permissions: {},
      instructionsPath: null,
      pauseReason: null,
    })
    t.match(bob.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)

    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, title: 'again' }), 409, 'agent_name_taken')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, name: '  bob ' }), 409, 'agent_name_taken', 'names are trimmed before the check')
    t.equal((await api.call('POST', `/api/squads/${other.squadId}/agents`, body)).status, 201, 'the same name in another squad is fine')
    const race = await Promise.all(Array.from({ length: 5 }, () => api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, name: 'twin' })))
    t.same(race.map((r) => r.status).sort(), [201, 409, 409, 409, 409], 'concurrent hires of one name: one wins')
    t.ok(race.filter((r) => r.status === 409).every((r) => r.body.code === 'agent_name_taken'))
    await api.call('DELETE', `/api/agents/${race.find((r) => r.status === 201)!.body.agent.id}`)

    const badAdapter = await api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, name: 'x', adapterType: 'claude_local' })
    isError(t, badAdapter, 400, 'invalid_payload', 'unregistered adapterType')
    t.equal(badAdapter.body.details[0].path, '/adapterType')
    t.match(badAdapter.body.error, /process/, 'the error names the registered adapters')
    const foreignManager = await api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, name: 'x', reportsToAgentId: other.agentId })
    isError(t, foreignManager, 400, 'invalid_payload', 'manager from another squad')
    t.equal(foreignManager.body.details[0].path, '/reportsToAgentId')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, name: 'x', reportsToAgentId: unknownId }), 400, 'invalid_payload', 'unknown manager')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { name: 'x', adapterType: 'process' }), 400, 'invalid_payload', 'role is required')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { ...body, name: ' ' }), 400, 'invalid_payload', 'blank name')
    const bare = await api.call('POST', `/api/squads/${s.squadId}/agents`, { name: 'bare', role: 'engineer', adapterType: 'process' })
    t.equal(bare.status, 201, 'a create body without adapterConfig creates an unconfigured agent')
    await api.call('DELETE', `/api/agents/${bare.body.agent.id}`)
    isError(t, await api.call('POST', `/api/squads/${unknownId}/agents`, body), 404, 'not_found', 'unknown squad')

    const list = await api.call('GET', `/api/squads/${s.squadId}/agents`, undefined, s.agentToken)
    t.equal(list.status, 200)
    t.same(
      list.body.agents.map((a: any) => a.name),
      ['alice', 'bob'],
    )
    t.same(Object.keys(list.body.agents[0]).sort(), ['id', 'name', 'reportsToAgentId', 'role', 'status', 'title'])
    const got = await api.call('GET', `/api/agents/${bob.id}`, undefined, s.agentToken)
    t.equal(got.body.agent.id, bob.id)
    t.equal(got.body.agent.adapterType, 'http')
    isError(t, await api.call('GET', `/api/agents/${bob.id}`, undefined, other.agentToken), 404, 'not_found', 'other squad agent')
    isError(t, await api.call('GET', '/api/agents/not-a-uuid'), 404, 'not_found', 'malformed id')
    isError(t, await api.call('GET', `/api/agents/${unknownId}`), 404, 'not_found', 'unknown id')

    // Chain of command: nearest manager first.
    const ceo = await addAgent(api, s.squadId, 'ceo', { role: 'ceo' })
    const cto = await addAgent(api, s.squadId, 'cto', { role: 'manager', reportsToAgentId: ceo.id })
    const dev = await addAgent(api, s.squadId, 'dev', { reportsToAgentId: cto.id })
    const me = await api.call('GET', '/api/agents/me', undefined, dev.token)
    t.equal(me.status, 200)
    t.match(me.body.agent, { id: dev.id, name: 'dev', role: 'software_engineer', squadId: s.squadId, status: 'active' })
    t.same(me.body.agent.chainOfCommand, [
      { id: cto.id, name: 'cto', role: 'manager' },
      { id: ceo.id, name: 'ceo', role: 'ceo' },
    ])
    t.same((await api.call('GET', '/api/agents/me', undefined, ceo.token)).body.agent.chainOfCommand, [], 'the top has no chain')
    isError(t, await api.call('GET', '/api/agents/me'), 403, 'forbidden', 'an Operator key has no agent identity')

    const created1 = (await activityOf(api, s.squadId, `entityId=${bob.id}`)).find((e) => e.action === 'agent.created')
    t.match(created1, { entityType: 'agent', agentId: bob.id, details: { name: 'bob', adapterType: 'http' } })
  })

  await t.test('PATCH, pause, resume, terminate', async (t) => {
    const s = await api.seed('Life')
    const bob = await addAgent(api, s.squadId, 'bob')
    const other = await api.seed('Other')

    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { title: 'x' }, s.agentToken), 403, 'forbidden', 'agent key PATCHes an agent')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { title: 'x' }, other.agentToken), 404, 'not_found', 'other squad agent key')
    const patched = await api.call('PATCH', `/api/agents/${bob.id}`, { name: 'robert', title: 'Lead', prompt: 'Be kind.' })
    t.equal(patched.status, 200)
    t.match(patched.body.agent, { name: 'robert', title: 'Lead', prompt: 'Be kind.', status: 'active' })
    t.equal((await api.call('PATCH', `/api/agents/${bob.id}`, { title: null })).body.agent.title, null, 'null clears the title')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { name: 'alice' }), 409, 'agent_name_taken', 'rename onto a taken name')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { status: 'terminated' }), 400, 'invalid_payload', 'PATCH cannot terminate')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { squadId: other.squadId }), 400, 'invalid_payload', 'unknown field')

    const paused = await api.call('PATCH', `/api/agents/${bob.id}`, { status: 'paused' })
    t.same([paused.body.agent.status, paused.body.agent.pauseReason], ['paused', 'manual'])
    const active = await api.call('PATCH', `/api/agents/${bob.id}`, { status: 'active' })
    t.same([active.body.agent.status, active.body.agent.pauseReason], ['active', null])

    for (const action of ['pause', 'resume', 'terminate']) {
      isError(t, await api.call('POST', `/api/agents/${bob.id}/${action}`, undefined, s.agentToken), 403, 'forbidden', `agent key ${action}`)
    }
    const pause = await api.call('POST', `/api/agents/${bob.id}/pause`)
    t.same([pause.status, pause.body], [200, { ok: true }])
    t.equal((await api.call('GET', `/api/agents/${bob.id}`)).body.agent.status, 'paused')
    t.same((await api.call('POST', `/api/agents/${bob.id}/pause`)).body, { ok: true }, 'pausing twice is fine')
    const resume = await api.call('POST', `/api/agents/${bob.id}/resume`)
    t.same([resume.status, resume.body], [200, { ok: true }])
    t.equal((await api.call('GET', `/api/agents/${bob.id}`)).body.agent.status, 'active')

    // Terminate: permanent, keys die, no checkout, unassigned from its work.
    const issue = await addIssue(api, s.squadId, { title: 'work', assigneeAgentId: bob.id })
    t.equal((await api.call('POST', `/api/issues/${issue.id}/checkout`, { agentId: bob.id }, bob.token)).status, 200)
    t.equal((await api.call('GET', '/api/agents/me', undefined, bob.token)).status, 200, 'its key works before')
    const term = await api.call('POST', `/api/agents/${bob.id}/terminate`)
    t.same([term.status, term.body], [200, { ok: true }])
    t.equal((await api.call('GET', `/api/agents/${bob.id}`)).body.agent.status, 'terminated')
    isError(t, await api.call('GET', '/api/agents/me', undefined, bob.token), 401, 'unauthorized', 'its keys stop working')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { status: 'active' }), 422, 'invalid_state', 'PATCH active after terminate')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { status: 'paused' }), 422, 'invalid_state', 'PATCH paused after terminate')
    isError(t, await api.call('POST', `/api/agents/${bob.id}/resume`), 422, 'invalid_state', 'resume after terminate')
    isError(t, await api.call('POST', `/api/agents/${bob.id}/pause`), 422, 'invalid_state', 'pause after terminate')
    t.same((await api.call('POST', `/api/agents/${bob.id}/terminate`)).body, { ok: true }, 'terminating twice is fine')
    isError(t, await api.call('POST', `/api/agents/${bob.id}/keys`, { name: 'late' }), 422, 'invalid_state', 'no new keys')
    const fresh = await addIssue(api, s.squadId, { title: 'fresh' })
    isError(t, await api.call('POST', `/api/issues/${fresh.id}/checkout`, { agentId: bob.id }), 409, 'agent_not_active', 'checkout for a terminated agent')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'x', assigneeAgentId: bob.id }), 400, 'invalid_payload', 'assign to a terminated agent')
    const after = (await api.call('GET', `/api/issues/${issue.id}`)).body.issue
    t.same([after.assigneeAgentId, after.checkoutAgentId], [null, null], 'its work is unassigned and released')
    t.equal((await api.call('GET', '/api/agents/me', undefined, s.agentToken)).status, 200, 'other agents are unaffected')

    const actions = (await activityOf(api, s.squadId, `entityType=agent&entityId=${bob.id}`)).map((e) => e.action)
    for (const a of ['agent.updated', 'agent.paused', 'agent.resumed', 'agent.terminated']) t.ok(actions.includes(a), `activity ${a}`)
  })

  await t.test('permissions, instructions path, runtime state, delete', async (t) => {
    const s = await api.seed('Misc')
    const bob = await addAgent(api, s.squadId, 'bob')

    const perms = await api.call('PATCH', `/api/agents/${bob.id}/permissions`, { canCreateIssues: true, maxParallel: 2 })
    t.equal(perms.status, 200)
    t.same(perms.body.agent.permissions, { canCreateIssues: true, maxParallel: 2 })
    t.same((await api.call('PATCH', `/api/agents/${bob.id}/permissions`, {})).body.agent.permissions, {}, 'the body replaces the set')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}/permissions`, { canCreateIssues: true }, bob.token), 403, 'forbidden', 'agent key sets permissions')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}/permissions`, [1, 2]), 400, 'invalid_payload', 'permissions must be an object')

    const ok = await api.call('PATCH', `/api/agents/${bob.id}/instructions-path`, { instructionsPath: 'docs/agents/BOB.md' })
    t.equal(ok.status, 200)
    t.equal(ok.body.agent.instructionsPath, 'docs/agents/BOB.md')
    t.equal((await api.call('PATCH', `/api/agents/${bob.id}/instructions-path`, { instructionsPath: './AGENTS.md' })).status, 200, './ is repo-relative')
    for (const bad of ['/etc/passwd', '../secrets.md', 'docs/../../x.md', 'docs/..', 'C:\\Users\\x.md', 'c:/x.md', '\\\\server\\share\\x.md', '~/notes.md', '   ', 'a\u0000b']) {
      const res = await api.call('PATCH', `/api/agents/${bob.id}/instructions-path`, { instructionsPath: bad })
      isError(t, res, 400, 'invalid_payload', `instructionsPath ${JSON.stringify(bad)}`)
    }
    t.equal((await api.call('GET', `/api/agents/${bob.id}`)).body.agent.instructionsPath, './AGENTS.md', 'rejected paths change nothing')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}/instructions-path`, { instructionsPath: 'x.md' }, bob.token), 403, 'forbidden', 'agent key sets its path')

    // Runtime state: the agent itself or an Operator.
    await api.instance.storage.agents.update(bob.id, { runtimeState: { sessionId: 'sess-1', turns: 3 } })
    const state = await api.call('GET', `/api/agents/${bob.id}/runtime-state`, undefined, bob.token)
    t.equal(state.status, 200)
    t.match(state.body.runtimeState, { agentId: bob.id, status: 'active', pauseReason: null, state: { sessionId: 'sess-1', turns: 3 } })
    t.equal((await api.call('GET', `/api/agents/${bob.id}/runtime-state`)).status, 200, 'an Operator reads it')
    isError(t, await api.call('GET', `/api/agents/${bob.id}/runtime-state`, undefined, s.agentToken), 403, 'forbidden', 'a squad mate may not')
    isError(t, await api.call('POST', `/api/agents/${bob.id}/runtime-state/reset-session`, undefined, s.agentToken), 403, 'forbidden', 'nor reset it')
    const reset = await api.call('POST', `/api/agents/${bob.id}/runtime-state/reset-session`, undefined, bob.token)
    t.same([reset.status, reset.body], [200, { ok: true }])
    t.same((await api.call('GET', `/api/agents/${bob.id}/runtime-state`)).body.runtimeState.state, {}, 'session state cleared')
    t.ok((await activityOf(api, s.squadId, `entityId=${bob.id}`)).some((e) => e.action === 'agent.session_reset' && e.actorType === 'agent'))

    // Delete: Operator only; issues unassigned; keys gone; the agent is gone.
    const issue = await addIssue(api, s.squadId, { title: 'bob work', assigneeAgentId: bob.id })
    isError(t, await api.call('DELETE', `/api/agents/${bob.id}`, undefined, bob.token), 403, 'forbidden', 'agent key deletes')
    const del = await api.call('DELETE', `/api/agents/${bob.id}`)
    t.same([del.status, del.body], [200, { ok: true }])
    isError(t, await api.call('GET', `/api/agents/${bob.id}`), 404, 'not_found', 'deleted agent')
    isError(t, await api.call('DELETE', `/api/agents/${bob.id}`), 404, 'not_found', 'delete twice')
    isError(t, await api.call('GET', '/api/agents/me', undefined, bob.token), 401, 'unauthorized', 'its key is gone')
    t.equal((await api.call('GET', `/api/issues/${issue.id}`)).body.issue.assigneeAgentId, null)
    const deleted = (await activityOf(api, s.squadId, `entityId=${bob.id}`)).find((e) => e.action === 'agent.deleted')
    t.match(deleted, { entityType: 'agent', details: { name: 'bob' } })
    t.same(
      (await api.call('GET', `/api/squads/${s.squadId}/agents`)).body.agents.map((a: any) => a.name),
      ['alice'],
    )
  })
})
