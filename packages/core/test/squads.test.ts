import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { activityOf, addAgent, addIssue, isError, unknownId } from './helpers/fixtures.js'

eachBackend(t, 'squads', async (t, api) => {
  await t.test('create, slug rules, list, get, patch, org', async (t) => {
    const created = await api.call('POST', '/api/squads', { name: 'Platform Team' })
    t.equal(created.status, 201)
    t.equal(created.body.squad.slug, 'platform-team')
    t.equal(created.body.squad.issuePrefix, 'PLAT')
    const again = await api.call('POST', '/api/squads', { name: 'Other', slug: 'platform-team' })
    t.equal(again.status, 409)
    t.equal(again.body.code, 'slug_taken')
    const auto = await api.call('POST', '/api/squads', { name: 'Platform Team' })
    t.equal(auto.status, 201)
    t.equal(auto.body.squad.slug, 'platform-team-2')
    t.not(auto.body.squad.issuePrefix, 'PLAT', 'prefixes stay unique')
    const list = await api.call('GET', '/api/squads')
    t.same(list.body.squads.map((s: { slug: string }) => s.slug).sort(), ['platform-team', 'platform-team-2'])
    const bad = await api.call('POST', '/api/squads', { name: 'x', slug: 'Not A Slug' })
    t.equal(bad.status, 400)
    t.equal(bad.body.code, 'invalid_payload')
    t.ok(Array.isArray(bad.body.details))
    const patched = await api.call('PATCH', `/api/squads/${created.body.squad.id}`, { name: 'Platform' })
    t.equal(patched.body.squad.name, 'Platform')
    t.equal((await api.call('GET', '/api/squads/not-a-uuid')).status, 404)
    t.equal((await api.call('GET', '/api/squads/01a2016d-4579-7b3a-99bd-85bf68260266')).status, 404)
  })

  await t.test('slug rules and Operator-only writes', async (t) => {
    for (const slug of ['Upper', 'a--b', '-a', 'a-', 'a_b', 'a b', 'x'.repeat(65), '']) {
      isError(t, await api.call('POST', '/api/squads', { name: 'n', slug }), 400, 'invalid_payload', `slug ${JSON.stringify(slug)}`)
    }
    const ok = await api.call('POST', '/api/squads', { name: 'Ops', slug: 'ops-2024' })
    t.equal(ok.status, 201)
    t.equal(ok.body.squad.slug, 'ops-2024')
    t.equal(ok.body.squad.status, 'active')
    t.match(ok.body.squad.issuePrefix, /^[A-Z]{1,4}$/)
    const accented = await api.call('POST', '/api/squads', { name: '  Équipe Été!  ' })
    t.equal(accented.body.squad.slug, 'equipe-ete', 'generated slugs drop accents and punctuation')
    t.equal(accented.body.squad.name, 'Équipe Été!', 'names are trimmed')
    isError(t, await api.call('POST', '/api/squads', { name: '   ' }), 400, 'invalid_payload', 'blank name')
    isError(t, await api.call('POST', '/api/squads', { name: 'Dup', slug: 'ops-2024' }), 409, 'slug_taken')

    // Concurrent creates of one name: each gets its own slug and prefix, none fails.
    const racers = await Promise.all(Array.from({ length: 6 }, () => api.call('POST', '/api/squads', { name: 'Race Team' })))
    t.same(
      racers.map((r) => r.status),
      [201, 201, 201, 201, 201, 201],
      'concurrent creates all succeed',
    )
    t.equal(new Set(racers.map((r) => r.body.squad?.slug)).size, 6, 'distinct slugs')
    t.equal(new Set(racers.map((r) => r.body.squad?.issuePrefix)).size, 6, 'distinct prefixes')

    const s = await api.seed('Alpha')
    isError(t, await api.call('POST', '/api/squads', { name: 'x' }, s.agentToken), 403, 'forbidden', 'agent creates squad')
    isError(t, await api.call('PATCH', `/api/squads/${s.squadId}`, { name: 'y' }, s.agentToken), 403, 'forbidden', 'agent renames squad')
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/archive`, undefined, s.agentToken), 403, 'forbidden', 'agent archives squad')
    isError(t, await api.call('DELETE', `/api/squads/${s.squadId}`, undefined, s.agentToken), 403, 'forbidden', 'agent deletes squad')
    isError(t, await api.call('PATCH', `/api/squads/${s.squadId}`, { name: '  ' }), 400, 'invalid_payload', 'blank rename')
    isError(t, await api.call('PATCH', `/api/squads/${unknownId}`, { name: 'z' }), 404, 'not_found', 'rename unknown')
    const renamed = await api.call('PATCH', `/api/squads/${s.squadId}`, { name: 'Alpha Prime' })
    t.equal(renamed.body.squad.name, 'Alpha Prime')
    t.equal(renamed.body.squad.slug, 'alpha', 'renaming keeps the slug')
  })

  await t.test('an agent key sees only its own squad', async (t) => {
    const a = await api.seed('Alpha')
    const b = await api.seed('Beta')
    const list = await api.call('GET', '/api/squads', undefined, a.agentToken)
    t.equal(list.status, 200)
    t.same(
      list.body.squads.map((s: { id: string }) => s.id),
      [a.squadId],
    )
    t.same(Object.keys(list.body.squads[0]).sort(), ['createdAt', 'id', 'name', 'slug', 'status'])
    t.equal((await api.call('GET', `/api/squads/${a.squadId}`, undefined, a.agentToken)).status, 200)
    for (const path of ['', '/agents', '/issues', '/org', '/activity']) {
      isError(t, await api.call('GET', `/api/squads/${b.squadId}${path}`, undefined, a.agentToken), 404, 'not_found', `other squad ${path || '/'}`)
    }
    isError(t, await api.call('POST', `/api/squads/${b.squadId}/issues`, { title: 'x' }, a.agentToken), 404, 'not_found', 'create issue in other squad')
    const all = await api.call('GET', '/api/squads')
    const allIds = all.body.squads.map((s: { id: string }) => s.id)
    t.ok(allIds.includes(a.squadId) && allIds.includes(b.squadId), 'the Operator sees every squad')
  })

  await t.test('org chart', async (t) => {
    const s = await api.seed('Org')
    const ceo = await addAgent(api, s.squadId, 'ceo', { role: 'manager', title: 'Chief' })
    const cto = await addAgent(api, s.squadId, 'cto', { role: 'manager', reportsToAgentId: ceo.id })
    const dev = await addAgent(api, s.squadId, 'dev', { reportsToAgentId: cto.id })
    const qa = await addAgent(api, s.squadId, 'qa', { reportsToAgentId: cto.id })
    const res = await api.call('GET', `/api/squads/${s.squadId}/org`, undefined, s.agentToken)
    t.equal(res.status, 200)
    t.equal(res.body.org.squadId, s.squadId)
    const shape = (n: any): unknown => ({ name: n.name, reports: n.reports.map(shape) })
    t.same(res.body.org.roots.map(shape), [
      { name: 'alice', reports: [] },
      {
        name: 'ceo',
        reports: [
          {
            name: 'cto',
            reports: [
              { name: 'dev', reports: [] },
              { name: 'qa', reports: [] },
            ],
          },
        ],
      },
    ])
    const root = res.body.org.roots.find((n: any) => n.name === 'ceo')
    t.same(Object.keys(root).sort(), ['id', 'name', 'reports', 'role', 'status', 'title'])
    t.same([root.id, root.role, root.title, root.status], [ceo.id, 'manager', 'Chief', 'active'])
    t.equal(root.reports[0].reports.map((n: any) => n.id).join(), [dev.id, qa.id].join())
  })

  await t.test('archive pauses agents and makes issues read-only', async (t) => {
    const s = await api.seed('Arch')
    const bob = await addAgent(api, s.squadId, 'bob')
    const mine = await addIssue(api, s.squadId, { title: 'assigned to alice', assigneeAgentId: s.agentId })
    const other = await addIssue(api, s.squadId, { title: 'free' })
    t.equal((await api.call('POST', `/api/issues/${mine.id}/checkout`, { agentId: s.agentId }, s.agentToken)).status, 200)
    const ask = await api.call('POST', `/api/issues/${mine.id}/interactions`, { kind: 'request_confirmation', payload: { prompt: 'ok?' } }, s.agentToken)
    t.equal(ask.status, 201)
    const doc = await api.call('PUT', `/api/issues/${mine.id}/documents/plan`, { title: 'Plan', format: 'markdown', body: 'x' }, s.agentToken)
    t.equal(doc.status, 201)

    const res = await api.call('POST', `/api/squads/${s.squadId}/archive`)
    t.equal(res.status, 200)
    t.same(res.body, { ok: true })
    t.equal((await api.call('GET', `/api/squads/${s.squadId}`)).body.squad.status, 'archived')
    const agents = (await api.call('GET', `/api/squads/${s.squadId}/agents`)).body.agents
    t.same(
      agents.map((a: any) => a.status),
      ['paused', 'paused'],
      'every agent is paused',
    )
    t.equal((await api.call('GET', `/api/agents/${bob.id}`)).body.agent.pauseReason, 'squad_archived')

    const writes: Array<[string, string, unknown, string | undefined]> = [
      ['POST', `/api/squads/${s.squadId}/issues`, { title: 'new' }, undefined],
      ['POST', `/api/squads/${s.squadId}/issues`, { title: 'new' }, s.agentToken],
      ['PATCH', `/api/issues/${mine.id}`, { title: 'renamed' }, undefined],
      ['PATCH', `/api/issues/${mine.id}`, { status: 'done' }, s.agentToken],
      ['DELETE', `/api/issues/${other.id}`, undefined, undefined],
      ['POST', `/api/issues/${other.id}/checkout`, { agentId: bob.id }, undefined],
      ['POST', `/api/issues/${mine.id}/release`, undefined, undefined],
      ['POST', `/api/issues/${mine.id}/comments`, { body: 'hello' }, s.agentToken],
      ['POST', `/api/issues/${mine.id}/comments`, { body: 'hello' }, undefined],
      ['PUT', `/api/issues/${mine.id}/documents/plan`, { title: 'Plan', format: 'markdown', body: 'y', baseRevisionId: doc.body.document.revisionId }, undefined],
      ['DELETE', `/api/issues/${mine.id}/documents/plan`, undefined, undefined],
      ['POST', `/api/issues/${mine.id}/interactions`, { kind: 'request_confirmation', payload: { prompt: 'again?' } }, undefined],
      ['POST', `/api/issues/${mine.id}/interactions/${ask.body.interaction.id}/accept`, {}, undefined],
    ]
    for (const [method, url, body, token] of writes) {
      isError(t, await api.call(method, url, body, token), 409, 'squad_archived', `${method} ${url.replace(/[0-9a-f-]{36}/g, ':id')}`)
    }
    isError(t, await api.call('POST', `/api/squads/${s.squadId}/agents`, { name: 'carol', role: 'x', adapterType: 'process' }), 409, 'squad_archived', 'hire into archived squad')
    isError(t, await api.call('POST', `/api/agents/${bob.id}/resume`), 409, 'squad_archived', 'resume in archived squad')
    isError(t, await api.call('PATCH', `/api/agents/${bob.id}`, { status: 'active' }), 409, 'squad_archived', 'PATCH active in archived squad')
    t.equal((await api.call('GET', `/api/agents/${bob.id}`)).body.agent.status, 'paused', 'still paused')

    const after = (await api.call('GET', `/api/issues/${mine.id}`)).body.issue
    t.same([after.title, after.status, after.checkoutAgentId], ['assigned to alice', 'in_progress', s.agentId], 'nothing changed')
    t.equal((await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length, 2, 'reads still work')
    t.equal((await api.call('GET', `/api/issues/${mine.id}/documents/plan`)).status, 200)
    t.equal((await api.call('GET', `/api/issues/${mine.id}/interactions`)).body.interactions[0].status, 'pending')
    const archived = await activityOf(api, s.squadId, 'entityType=squad')
    t.equal(archived[0].action, 'squad.archived')
    t.equal(archived[0].details.pausedAgents, 2)
  })

  await t.test('delete (Operator only) removes everything the squad owns', async (t) => {
    const keep = await api.seed('Keep')
    const s = await api.seed('Gone')
    const bob = await addAgent(api, s.squadId, 'bob', { reportsToAgentId: s.agentId })
    const parent = await addIssue(api, s.squadId, { title: 'parent', assigneeAgentId: s.agentId })
    const child = await addIssue(api, s.squadId, { title: 'child', parentId: parent.id, blockedByIssueIds: [parent.id] })
    await api.call('POST', `/api/issues/${parent.id}/comments`, { body: 'note' })
    await api.call('PUT', `/api/issues/${parent.id}/documents/spec`, { title: 'Spec', format: 'markdown', body: 'x' })
    await api.call('POST', `/api/issues/${parent.id}/interactions`, { kind: 'request_confirmation', payload: { prompt: 'go?' }, continuationPolicy: 'wake_assignee' })
    const keptIssue = await addIssue(api, keep.squadId, { title: 'kept' })

    isError(t, await api.call('DELETE', `/api/squads/${s.squadId}`, undefined, keep.agentToken), 404, 'not_found', "another squad's agent: 404 before 403")
    isError(t, await api.call('DELETE', `/api/squads/${s.squadId}`, undefined, s.agentToken), 403, 'forbidden', 'its own agent')
    const res = await api.call('DELETE', `/api/squads/${s.squadId}`)
    t.equal(res.status, 200)
    t.same(res.body, { ok: true })
    isError(t, await api.call('GET', `/api/squads/${s.squadId}`), 404, 'not_found', 'squad gone')
    isError(t, await api.call('GET', `/api/agents/${bob.id}`), 404, 'not_found', 'agent gone')
    isError(t, await api.call('GET', `/api/issues/${child.id}`), 404, 'not_found', 'issue gone')
    isError(t, await api.call('GET', `/api/issues/${parent.identifier}/activity`), 404, 'not_found', 'issue activity gone')
    isError(t, await api.call('GET', '/api/agents/me', undefined, s.agentToken), 401, 'unauthorized', 'its keys stop at once')
    isError(t, await api.call('DELETE', `/api/squads/${s.squadId}`), 404, 'not_found', 'delete twice')
    const { storage } = api.instance
    t.same(await storage.activity.list({ squadId: s.squadId, limit: 10 }), [], 'activity removed')
    t.same(await storage.keys.listForAgent(s.agentId), [], 'keys removed')
    t.same(await storage.wakeups.listQueued(s.agentId), [])
    t.same(await storage.comments.list(parent.id, { order: 'asc', limit: 10 }), [], 'comments removed')
    t.same(await storage.documents.list(parent.id), [], 'documents removed')
    t.same(await storage.interactions.list(parent.id), [], 'interactions removed')
    t.equal((await api.call('GET', `/api/issues/${keptIssue.id}`)).status, 200, 'other squads untouched')
    t.equal((await api.call('GET', '/api/agents/me', undefined, keep.agentToken)).status, 200)
    const left = (await api.call('GET', '/api/squads')).body.squads.map((x: any) => x.id)
    t.ok(left.includes(keep.squadId) && !left.includes(s.squadId), 'the list lost only the deleted squad')
  })
})
