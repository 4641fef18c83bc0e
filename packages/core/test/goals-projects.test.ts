import t from 'tap'
import { outboxRows } from './helpers/governance.js'
import { eachBackend, type TestApi } from './helpers/instance.js'

const unknownId = '01a2016d-4579-7b3a-99bd-85bf68260266'

async function issueIn(api: TestApi, squadId: string, projectId: string | null, title = 'work'): Promise<string> {
  const res = await api.call('POST', `/api/squads/${squadId}/issues`, { title, ...(projectId ? { projectId } : {}) })
  if (res.status !== 201) throw new Error(`issue: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.issue.id
}

eachBackend(t, 'goals: CRUD, any status to any status, Operator writes, agent reads', async (t, api) => {
  const { squadId, agentToken } = await api.seed()
  const created = await api.call('POST', `/api/squads/${squadId}/goals`, { title: '  Ship v1 ', description: 'All of it', dueDate: '2030-01-31' })
  t.equal(created.status, 201)
  const goal = created.body.goal
  t.equal(goal.title, 'Ship v1')
  t.equal(goal.status, 'draft')
  t.equal(goal.dueDate, '2030-01-31')
  t.equal(goal.squadId, squadId)

  for (const [from, to] of [
    ['draft', 'done'],
    ['done', 'draft'],
    ['draft', 'in_progress'],
    ['in_progress', 'done'],
    ['done', 'in_progress'],
  ]) {
    const r = await api.call('PATCH', `/api/goals/${goal.id}`, { status: to })
    t.equal(r.status, 200, `${from} -> ${to}`)
    t.equal(r.body.goal.status, to)
  }
  t.equal((await api.call('PATCH', `/api/goals/${goal.id}`, { status: 'archived' })).status, 400, 'unknown status')
  t.equal((await api.call('PATCH', `/api/goals/${goal.id}`, { dueDate: '2030-02-30' })).status, 400, 'impossible date')
  t.equal((await api.call('POST', `/api/squads/${squadId}/goals`, { title: '   ' })).status, 400, 'blank title')
  t.equal((await api.call('POST', `/api/squads/${squadId}/goals`, { title: 'x', extra: 1 })).status, 400, 'unknown field')

  const list = await api.call('GET', `/api/squads/${squadId}/goals`, undefined, agentToken)
  t.equal(list.status, 200)
  t.same(list.body.goals, [{ id: goal.id, title: 'Ship v1', status: 'in_progress', dueDate: '2030-01-31' }])
  t.equal((await api.call('GET', `/api/goals/${goal.id}`, undefined, agentToken)).body.goal.description, 'All of it')

  const agentWrite = await api.call('PATCH', `/api/goals/${goal.id}`, { title: 'mine' }, agentToken)
  t.equal(agentWrite.status, 403)
  t.equal(agentWrite.body.code, 'forbidden')
  t.equal((await api.call('POST', `/api/squads/${squadId}/goals`, { title: 'x' }, agentToken)).status, 403)
  t.equal((await api.call('DELETE', `/api/goals/${goal.id}`, undefined, agentToken)).status, 403)

  // Another squad's agent learns nothing.
  const other = await api.seed()
  t.equal((await api.call('GET', `/api/goals/${goal.id}`, undefined, other.agentToken)).status, 404)
  t.equal((await api.call('GET', `/api/squads/${squadId}/goals`, undefined, other.agentToken)).status, 404)
  t.equal((await api.call('GET', '/api/goals/not-a-uuid')).status, 404)
  t.equal((await api.call('GET', `/api/goals/${unknownId}`)).status, 404)

  // Issues and projects pointing at a deleted goal keep existing.
  const project = await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P', goalId: goal.id })
  const issue = await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'I', goalId: goal.id })
  const deleted = await api.call('DELETE', `/api/goals/${goal.id}`)
  t.equal(deleted.status, 200)
  t.same(deleted.body, { ok: true })
  t.equal((await api.call('GET', `/api/goals/${goal.id}`)).status, 404)
  t.equal((await api.call('GET', `/api/projects/${project.body.project.id}`)).body.project.goalId, null)
  t.equal((await api.call('GET', `/api/issues/${issue.body.issue.id}`)).body.issue.goalId, null)
  const activity = await api.call('GET', `/api/squads/${squadId}/activity?entityType=goal`)
  t.same(activity.body.activity.map((a: { action: string }) => a.action).sort(), ['goal.created', 'goal.deleted', 'goal.updated', 'goal.updated', 'goal.updated', 'goal.updated', 'goal.updated'])
})

eachBackend(t, 'projects: CRUD, goal in squad, list shape, tower upserts, workspaces', async (t, api) => {
  const { squadId, agentToken, agentId } = await api.seed()
  const other = await api.seed()
  const foreignGoal = (await api.call('POST', `/api/squads/${other.squadId}/goals`, { title: 'theirs' })).body.goal.id
  t.equal((await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P', goalId: foreignGoal })).status, 400, 'goal of another squad')
  t.equal((await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P', budgetCents: -1 })).status, 400, 'negative budget')
  t.equal((await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P', budgetCents: 1.5 })).status, 400, 'fractional budget')
  t.equal((await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P' }, agentToken)).status, 403, 'agents do not create projects')

  const created = await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'Website', description: 'secret plans', budgetCents: 5000 })
  t.equal(created.status, 201)
  const project = created.body.project
  t.match(project, { name: 'Website', status: 'active', pausedAt: null, pauseReason: null, budgetCents: 5000, goalId: null })

  const list = await api.call('GET', `/api/squads/${squadId}/projects`, undefined, agentToken)
  t.same(list.body.projects, [{ id: project.id, name: 'Website', status: 'active', pausedAt: null, pauseReason: null, goalId: null, budgetCents: 5000 }])
  t.equal((await api.call('GET', `/api/projects/${project.id}`, undefined, other.agentToken)).status, 404)

  const renamed = await api.call('PATCH', `/api/projects/${project.id}`, { name: 'Site', status: 'in_progress' })
  t.equal(renamed.body.project.name, 'Site')
  t.equal(renamed.body.project.status, 'in_progress')
  t.equal((await api.call('PATCH', `/api/projects/${project.id}`, { name: 'x' }, agentToken)).status, 403)

  // The tower sees name and status, never the description.
  const outbox = await outboxRows(api)
  const upserts = outbox.filter((o) => o.entityType === 'project' && o.entityId === project.id).map((o) => o.payload)
  t.ok(upserts.length >= 2)
  t.same(Object.keys(upserts.at(-1)!).sort(), ['localId', 'name', 'squadLocalId', 'status', 'type', 'updatedAt'])
  t.match(upserts.at(-1), { type: 'project', localId: project.id, squadLocalId: squadId, name: 'Site', status: 'in_progress' })

  // Workspaces: listed and created through the project; agents of the squad register theirs.
  const issueId = await issueIn(api, squadId, project.id)
  const ws = await api.call(
    'POST',
    `/api/projects/${project.id}/workspaces`,
    { name: 'main checkout', cwd: '/work/site', repoUrl: 'https://example.com/site.git', repoRef: 'main', issueId, metadata: { shell: 'bash' } },
    agentToken,
  )
  t.equal(ws.status, 201)
  t.match(ws.body.workspace, { projectId: project.id, squadId, name: 'main checkout', cwd: '/work/site', repoRef: 'main', issueId, status: 'active', metadata: { shell: 'bash' } })
  const foreignIssue = await issueIn(api, other.squadId, null)
  t.equal((await api.call('POST', `/api/projects/${project.id}/workspaces`, { name: 'x', issueId: foreignIssue })).status, 400)
  t.equal((await api.call('POST', `/api/projects/${project.id}/workspaces`, { name: 'x' }, other.agentToken)).status, 404)
  await api.call('POST', `/api/projects/${project.id}/workspaces`, { name: 'second' })
  const wsList = await api.call('GET', `/api/projects/${project.id}/workspaces`, undefined, agentToken)
  t.same(
    wsList.body.workspaces.map((w: { name: string }) => w.name),
    ['second', 'main checkout'],
    'newest first',
  )
  t.equal((await api.call('GET', `/api/projects/${unknownId}/workspaces`)).status, 404)

  // Delete: the issue stays, without its project; workspaces go.
  t.equal((await api.call('DELETE', `/api/projects/${project.id}`, undefined, agentToken)).status, 403)
  t.equal((await api.call('DELETE', `/api/projects/${project.id}`)).status, 200)
  t.equal((await api.call('GET', `/api/projects/${project.id}`)).status, 404)
  t.equal((await api.call('GET', `/api/issues/${issueId}`)).body.issue.projectId, null)
  const last = (await outboxRows(api)).filter((o) => o.entityId === project.id).at(-1)
  t.equal(last?.payload.status, 'deleted')
  void agentId
})

eachBackend(t, 'project pause: reasons, pausedAt, and a pause racing checkouts (the checkout wins before the pause or gets 409, never after it)', async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed()
  const project = (await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P' })).body.project
  const a = await issueIn(api, squadId, project.id, 'a')
  const b = await issueIn(api, squadId, project.id, 'b')
  const outside = await issueIn(api, squadId, null, 'outside')

  const paused = await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'manual' })
  t.equal(paused.status, 200)
  t.equal(paused.body.project.pauseReason, 'manual')
  t.ok(paused.body.project.pausedAt)
  const pausedAt = paused.body.project.pausedAt

  const refused = await api.call('POST', `/api/issues/${a}/checkout`, { agentId }, agentToken)
  t.equal(refused.status, 409)
  t.equal(refused.body.code, 'project_paused')
  t.equal((await api.call('POST', `/api/issues/${outside}/checkout`, { agentId }, agentToken)).status, 200, 'issues outside the project are not affected')

  const budget = await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'budget' })
  t.equal(budget.body.project.pauseReason, 'budget')
  t.equal(budget.body.project.pausedAt, pausedAt, 'a new reason keeps the pause start')
  t.equal((await api.call('POST', `/api/issues/${b}/checkout`, { agentId }, agentToken)).body.code, 'project_paused')

  const resumed = await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: null })
  t.equal(resumed.body.project.pauseReason, null)
  t.equal(resumed.body.project.pausedAt, null, 'unpausing clears pausedAt')
  t.equal((await api.call('POST', `/api/issues/${a}/checkout`, { agentId }, agentToken)).status, 200)

  t.equal((await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'vacation' })).status, 400)
  t.equal((await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'manual' }, agentToken)).status, 403)
  const actions = (await api.call('GET', `/api/squads/${squadId}/activity?entityType=project&entityId=${project.id}`)).body.activity.map((x: { action: string }) => x.action)
  t.same(actions.slice(0, 3), ['project.resumed', 'project.updated', 'project.paused'])

  // A checkout holding the project row wins; a pause written first refuses the checkout.
  {
    const project = (await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P2' })).body.project
    const first = await issueIn(api, squadId, project.id, 'first')
    const second = await issueIn(api, squadId, project.id, 'second')

    // 1. The checkout reads the project (share lock) and is held inside its transaction; the pause
    //    must wait for it, and the checkout commits as the winner.
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let entered!: () => void
    const inside = new Promise<void>((r) => (entered = r))
    let holdNext = true
    api.instance.services.issues.addCheckoutGuard(async (tx, { issue }) => {
      if (!holdNext) return
      holdNext = false
      // The guards' reads go out together on the checkout's connection and run in order: once this
      // one answers, the project guard's share lock, sent before it, is held.
      await tx.projects.get(issue.projectId!, { forShare: true })
      entered()
      await gate
    })
    const checkout = api.call('POST', `/api/issues/${first}/checkout`, { agentId }, agentToken)
    await inside
    let pauseDone = false
    const pause = api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'manual' }).then((r) => {
      pauseDone = true
      return r
    })
    await new Promise((r) => setTimeout(r, 300))
    t.equal(pauseDone, false, 'the pause waits for the checkout that holds the project row')
    release()
    t.equal((await checkout).status, 200, 'the checkout that started first wins')
    t.equal((await pause).status, 200)
    const after = await api.call('POST', `/api/issues/${second}/checkout`, { agentId }, agentToken)
    t.equal(after.body.code, 'project_paused', 'after the pause, checkouts are refused')
    t.equal((await api.call('GET', `/api/issues/${first}`)).body.issue.checkoutAgentId, agentId)

    // 2. A pause is written but not committed yet; a checkout arriving meanwhile waits for it and
    //    then sees the pause (never a checkout after a committed pause).
    await api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: null })
    let commit!: () => void
    const held = new Promise<void>((r) => (commit = r))
    let written!: () => void
    const pauseWritten = new Promise<void>((r) => (written = r))
    const pauseTx = api.instance.storage.transaction(async (tx) => {
      await tx.projects.update(project.id, { pauseReason: 'manual', pausedAt: new Date() })
      written()
      await held
    })
    await pauseWritten
    let checkoutDone = false
    const late = api.call('POST', `/api/issues/${second}/checkout`, { agentId }, agentToken).then((r) => {
      checkoutDone = true
      return r
    })
    await new Promise((r) => setTimeout(r, 300))
    t.equal(checkoutDone, false, 'the checkout waits for the uncommitted pause')
    commit()
    await pauseTx
    const res = await late
    t.equal(res.status, 409)
    t.equal(res.body.code, 'project_paused')
    t.equal((await api.call('GET', `/api/issues/${second}`)).body.issue.checkoutAgentId, null)
  }

  // A pause against a burst of concurrent checkouts: every answer is 200 or 409 and the database agrees.
  {
    const project = (await api.call('POST', `/api/squads/${squadId}/projects`, { name: 'P3' })).body.project
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await issueIn(api, squadId, project.id, `i${i}`))
    const checkouts = ids.map((id) => api.call('POST', `/api/issues/${id}/checkout`, { agentId }))
    const pause = api.call('PATCH', `/api/projects/${project.id}`, { pauseReason: 'manual' })
    const results = await Promise.all(checkouts)
    t.equal((await pause).status, 200)
    const won = new Set<string>()
    results.forEach((r, i) => {
      t.ok(r.status === 200 || (r.status === 409 && r.body.code === 'project_paused'), `checkout ${i}: ${r.status} ${r.body.code ?? ''}`)
      if (r.status === 200) won.add(ids[i]!)
    })
    for (const id of ids) {
      const issue = (await api.call('GET', `/api/issues/${id}`)).body.issue
      t.equal(issue.checkoutAgentId === agentId, won.has(id), `issue ${issue.identifier} checked out exactly when the answer said so`)
    }
    for (const id of ids.filter((i) => !won.has(i))) t.equal((await api.call('POST', `/api/issues/${id}/checkout`, { agentId })).body.code, 'project_paused')
  }
})
