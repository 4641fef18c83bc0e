import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { pgStorage } from '@slaw/storage-pg'
import { createInstance, uuidv7, type SlawInstance, type TowerClient } from '@slaw/core'
import { freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { eachBackend, makeApi, operatorToken, testAdapters, type TestApi, testMasterKey } from './helpers/instance.js'
import { processAdapter } from '@slaw/adapters'
import { steeredAdapter } from './helpers/runs.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'slaw-exports-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** Polls the export job until it leaves queued/running. */
async function waitForJob(api: TestApi, jobId: string, timeoutMs = 15_000): Promise<any> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const res = await api.call('GET', `/api/exports/${jobId}`)
    if (res.status !== 200) throw new Error(`GET export ${res.status} ${JSON.stringify(res.body)}`)
    if (res.body.job.status === 'completed' || res.body.job.status === 'failed') return res.body.job
    if (Date.now() > until) throw new Error(`export ${jobId} still ${res.body.job.status}`)
    await sleep(25)
  }
}

async function post(api: TestApi, url: string, body: unknown): Promise<any> {
  const res = await api.call('POST', url, body)
  if (res.status >= 300) throw new Error(`POST ${url}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/**
 * Squad "Origin": alice (seeded), lead (manager), bob reports to lead, ghost (terminated).
 * Issues: 1 parent (lead), 2 child of 1 (bob), 3 blocked by 1 and 2, 4 done, 5 checked out by alice.
 * Skill: git, with one file.
 */
async function seedOrigin(api: TestApi) {
  const origin = await api.seed('Origin Team')
  const s = `/api/squads/${origin.squadId}`
  const lead = (await post(api, `${s}/agents`, { name: 'lead', role: 'manager', adapterType: 'process', title: 'Team lead', prompt: 'You lead the team.' })).agent
  const bob = (await post(api, `${s}/agents`, { name: 'bob', role: 'software_engineer', adapterType: 'http', reportsToAgentId: lead.id, desiredSkills: ['git', 'review'] })).agent
  const ghost = (await post(api, `${s}/agents`, { name: 'ghost', role: 'general', adapterType: 'process' })).agent
  await post(api, `/api/agents/${ghost.id}/terminate`, undefined)
  const i1 = (await post(api, `${s}/issues`, { title: 'Plan the release', description: 'All the **steps**.', priority: 'high', assigneeAgentId: lead.id })).issue
  const i2 = (await post(api, `${s}/issues`, { title: 'Write the changelog', parentId: i1.id, assigneeAgentId: bob.id, status: 'backlog' })).issue
  const i3 = (await post(api, `${s}/issues`, { title: 'Publish', blockedByIssueIds: [i1.id, i2.id], priority: 'critical' })).issue
  const i4 = (await post(api, `${s}/issues`, { title: 'Old work', status: 'done', priority: 'low' })).issue
  const i5 = (await post(api, `${s}/issues`, { title: 'In flight' })).issue
  await post(api, `/api/issues/${i5.id}/checkout`, { agentId: origin.agentId })
  await post(api, `${s}/skills`, {
    key: 'git',
    name: 'Git',
    description: 'Version control',
    markdown: '# Git\n\nCommit often.',
    files: [{ path: 'scripts/check.sh', content: 'git status', encoding: 'utf8' }],
  })
  return { ...origin, lead, bob, ghost, issues: [i1, i2, i3, i4, i5] }
}

async function exportBundle(api: TestApi, squadId: string, include: string[]): Promise<any> {
  const started = await api.call('POST', `/api/squads/${squadId}/exports`, { include })
  if (started.status !== 202) throw new Error(`export: ${started.status} ${JSON.stringify(started.body)}`)
  const job = await waitForJob(api, started.body.jobId)
  if (job.status !== 'completed') throw new Error(`export failed: ${job.error}`)
  return (await api.call('GET', `/api/exports/${started.body.jobId}/download`)).body
}

eachBackend(t, 'exports: export, poll, download, then import into another squad', async (t, api) => {
  const origin = await seedOrigin(api)
  const key = await post(api, `/api/agents/${origin.bob.id}/keys`, { name: 'ci' })

  const preview = await api.call('POST', `/api/squads/${origin.squadId}/exports/preview`)
  t.equal(preview.status, 200, 'an empty POST previews every part')
  t.same(preview.body.preview, { include: ['squad', 'agents', 'issues', 'skills'], squad: { name: 'Origin Team', slug: 'origin-team' }, agents: 3, issues: 5, skills: 1 })
  const agentsOnly = await api.call('POST', `/api/squads/${origin.squadId}/exports/preview`, { include: ['agents'] })
  t.same(agentsOnly.body.preview, { include: ['agents'], agents: 3 })

  const started = await api.call('POST', `/api/squads/${origin.squadId}/exports`, { include: ['issues', 'agents', 'squad', 'skills'] })
  t.equal(started.status, 202)
  t.equal(started.body.status, 'queued')
  const jobId = started.body.jobId
  const first = await api.call('GET', `/api/exports/${jobId}`)
  t.equal(first.status, 200)
  t.ok(['queued', 'running', 'completed'].includes(first.body.job.status))
  const job = await waitForJob(api, jobId)
  t.equal(job.status, 'completed')
  t.same(job.include, ['squad', 'agents', 'issues', 'skills'], 'parts in canonical order')
  t.equal(job.squadId, origin.squadId)
  t.ok(job.finishedAt && Date.parse(job.finishedAt) >= Date.parse(job.createdAt))
  t.equal(job.error, null)

  const download = await api.call('GET', `/api/exports/${jobId}/download`)
  t.equal(download.status, 200)
  t.match(String(download.headers['content-disposition']), /attachment; filename="slaw-origin-team-export.json"/)
  const bundle = download.body
  t.equal(bundle.format, 'slaw.squad-export')
  t.equal(bundle.version, 1)
  t.ok(Date.parse(bundle.exportedAt))
  t.same(bundle.squad, { name: 'Origin Team', slug: 'origin-team' })
  t.same(bundle.skills, [
    { key: 'git', name: 'Git', description: 'Version control', markdown: '# Git\n\nCommit often.', files: [{ path: 'scripts/check.sh', content: 'git status', encoding: 'utf8' }] },
  ])
  t.same(
    bundle.agents.map((a: any) => a.name),
    ['alice', 'bob', 'lead'],
    'terminated agents are not exported',
  )
  t.same(
    bundle.agents.find((a: any) => a.name === 'bob'),
    {
      name: 'bob',
      role: 'software_engineer',
      title: null,
      adapterType: 'http',
      reportsTo: 'lead',
      desiredSkills: ['git', 'review'],
      prompt: null,
    },
  )
  t.equal(bundle.agents.find((a: any) => a.name === 'lead').prompt, 'You lead the team.')
  const p = origin.prefix
  t.same(bundle.issues, [
    { identifier: `${p}-1`, title: 'Plan the release', description: 'All the **steps**.', status: 'todo', priority: 'high', assignee: 'lead', parent: null, blockedBy: [] },
    { identifier: `${p}-2`, title: 'Write the changelog', description: null, status: 'backlog', priority: 'medium', assignee: 'bob', parent: `${p}-1`, blockedBy: [] },
    { identifier: `${p}-3`, title: 'Publish', description: null, status: 'todo', priority: 'critical', assignee: null, parent: null, blockedBy: [`${p}-1`, `${p}-2`] },
    { identifier: `${p}-4`, title: 'Old work', description: null, status: 'done', priority: 'low', assignee: null, parent: null, blockedBy: [] },
    { identifier: `${p}-5`, title: 'In flight', description: null, status: 'in_progress', priority: 'medium', assignee: 'alice', parent: null, blockedBy: [] },
  ])
  const text = JSON.stringify(bundle)
  t.notOk(text.includes(key.token), 'no agent key token')
  t.notOk(text.includes(origin.agentToken), 'no agent key token')
  for (const field of ['permissions', 'runtimeState', 'instructionsPath', 'budgetMonthlyCents', 'tokenHash', '"id"']) t.notOk(text.includes(field), `no ${field}`)

  const dir = await tempDir(t)
  const file = join(dir, 'origin.json')
  await writeFile(file, JSON.stringify(bundle))

  // Target squad already has an "alice": the default policy renames the incoming one.
  const target = await api.seed('Target Team')
  const tp = target.prefix
  // Background work of the origin squad (its in-progress issue's heartbeat runs) may write outbox
  // rows at any moment: what the preview must not write is a row of the target squad. The target
  // squad's own rows (seeded above) are published first, so that none gets its seq after the mark.
  const outboxBefore = await allPublished(api)
  const outboxCountBefore = await api.instance.storage.outbox.countAfter('0')
  const planned = await api.call('POST', `/api/squads/${target.squadId}/imports/preview`, { source: file })
  t.equal(planned.status, 200)
  t.same(planned.body.preview.conflicts, [{ type: 'agent', name: 'alice', reason: 'name_taken', resolution: 'renamed', as: 'alice (2)' }])
  t.same(planned.body.preview.skipped, [])
  t.same(
    planned.body.preview.added,
    [
      { type: 'agent', name: 'alice', as: 'alice (2)' },
      { type: 'agent', name: 'lead' },
      { type: 'agent', name: 'bob' },
      ...bundle.issues.map((i: any) => ({ type: 'issue', identifier: i.identifier, title: i.title })),
      { type: 'skill', key: 'git', title: 'Git' },
    ],
    'managers come before their reports',
  )
  t.equal((await api.call('GET', `/api/squads/${target.squadId}/agents`)).body.agents.length, 1, 'preview writes no agent')
  t.equal((await api.call('GET', `/api/squads/${target.squadId}/issues`)).body.issues.length, 0, 'preview writes no issue')
  await allPublished(api)
  t.same(
    (await api.instance.storage.outbox.readAfter(outboxBefore, 1_000)).filter((r) => r.squadId === target.squadId),
    [],
    'preview writes no outbox row',
  )

  const applied = await api.call('POST', `/api/squads/${target.squadId}/imports/apply`, { source: file })
  t.equal(applied.status, 200)
  const result = applied.body.result
  t.same(result.conflicts, planned.body.preview.conflicts)
  t.same(result.skipped, [])
  t.same(
    result.added.filter((x: any) => x.type === 'issue').map((x: any) => [x.identifier, x.as]),
    [1, 2, 3, 4, 5].map((n) => [`${p}-${n}`, `${tp}-${n}`]),
    'issues are numbered in the target squad',
  )
  for (const item of result.added) t.ok(item.id, `${item.type} ${item.name ?? item.identifier} has its new id`)

  const agents = (await api.call('GET', `/api/squads/${target.squadId}/agents`)).body.agents
  const byName = new Map<string, any>(agents.map((a: any) => [a.name, a]))
  t.same([...byName.keys()].sort(), ['alice', 'alice (2)', 'bob', 'lead'])
  t.equal(byName.get('bob').reportsToAgentId, byName.get('lead').id, 'reportsTo resolved by name to the new manager')
  const newBob = (await api.call('GET', `/api/agents/${byName.get('bob').id}`)).body.agent
  t.same(newBob.desiredSkills, ['git', 'review'])
  t.equal(newBob.adapterType, 'http')
  t.equal((await api.call('GET', `/api/agents/${byName.get('lead').id}`)).body.agent.prompt, 'You lead the team.')

  const issue = async (n: number) => (await api.call('GET', `/api/issues/${tp}-${n}`)).body.issue
  const [n1, n2, n3, n4, n5] = await Promise.all([1, 2, 3, 4, 5].map(issue))
  t.equal(n1.assigneeAgentId, byName.get('lead').id)
  t.equal(n1.description, 'All the **steps**.')
  t.equal(n1.priority, 'high')
  t.equal(n2.parentId, n1.id, 'parent resolved to the new issue')
  t.equal(n2.assigneeAgentId, byName.get('bob').id)
  t.equal(n2.status, 'backlog')
  t.same(n3.blockedByIssueIds.sort(), [n1.id, n2.id].sort(), 'blockers resolved to the new issues')
  t.equal(n4.status, 'done')
  t.equal(n5.status, 'todo', 'in_progress arrives unclaimed as todo')
  t.equal(n5.checkoutAgentId, null)
  t.equal(n5.assigneeAgentId, byName.get('alice (2)').id, 'bundle references follow the renamed agent')
  const skills = (await api.call('GET', `/api/squads/${target.squadId}/skills`)).body.skills
  t.same(
    skills.map((k: any) => [k.key, k.name, k.hasFiles]),
    [['git', 'Git', true]],
  )
  const skill = (await api.call('GET', `/api/skills/${skills[0].id}`)).body.skill
  t.equal(skill.markdown, '# Git\n\nCommit often.')
  t.same(skill.files, [{ path: 'scripts/check.sh', content: 'git status', encoding: 'utf8' }])

  const activity = (await api.call('GET', `/api/squads/${target.squadId}/activity?limit=500`)).body.activity
  const imported = activity.find((a: any) => a.action === 'squad.imported')
  t.ok(imported, 'squad.imported recorded')
  t.match(imported.details, { collision: 'rename', agents: 3, issues: 5, skills: 1, skipped: 0, conflicts: 1 })
  t.equal(activity.filter((a: any) => a.action === 'agent.created').length, 4, 'seeded alice and three imported agents')
  t.equal(activity.filter((a: any) => a.action === 'issue.created').length, 5)
  // Counted, not read: outbox rows are published only once every older transaction on the server ended.
  t.ok((await api.instance.storage.outbox.countAfter('0')) - outboxCountBefore >= 3 + 5, 'an outbox row per imported agent and issue, at least')
  const originActivity = (await api.call('GET', `/api/squads/${origin.squadId}/activity?limit=500`)).body.activity
  t.ok(originActivity.some((a: any) => a.action === 'squad.export_requested' && a.details.jobId === jobId))

  // The same bundle again: every name collides now.
  const again = (await post(api, `/api/squads/${target.squadId}/imports/apply`, { source: file, collision: 'rename' })).result
  t.same(
    again.conflicts.filter((c: any) => c.type === 'agent').map((c: any) => c.as),
    ['alice (3)', 'bob (2)', 'lead (2)'],
  )
  t.same(again.skipped, [{ type: 'skill', key: 'git', reason: 'key_taken' }], 'a taken skill key is never renamed')
  t.same(again.conflicts.at(-1), { type: 'skill', key: 'git', reason: 'key_taken', resolution: 'skipped' })
  const again2 = (await api.call('GET', `/api/squads/${target.squadId}/agents`)).body.agents
  const bob2 = again2.find((a: any) => a.name === 'bob (2)')
  const lead2 = again2.find((a: any) => a.name === 'lead (2)')
  t.equal(bob2.reportsToAgentId, lead2.id, 'renamed reports follow their renamed manager')
  t.equal((await api.call('GET', `/api/issues/${tp}-10`)).body.issue.assigneeAgentId, again2.find((a: any) => a.name === 'alice (3)').id)
})

async function importPolicies(t: Test, api: TestApi): Promise<void> {
  const origin = await seedOrigin(api)
  const bundle = await exportBundle(api, origin.squadId, ['agents', 'issues'])
  t.equal(bundle.squad, undefined, 'parts not included are absent')
  t.equal(bundle.skills, undefined)
  const dir = await tempDir(t)
  const file = join(dir, 'b.json')
  await writeFile(file, JSON.stringify(bundle))

  const target = await api.seed('Skip Team')
  const s = `/api/squads/${target.squadId}`
  const existingLead = (await post(api, `${s}/agents`, { name: 'lead', role: 'manager', adapterType: 'process' })).agent
  const preview = (await post(api, `${s}/imports/preview`, { source: file, collision: 'skip' })).preview
  t.same(preview.skipped, [
    { type: 'agent', name: 'alice', reason: 'name_taken' },
    { type: 'agent', name: 'lead', reason: 'name_taken' },
  ])
  t.same(preview.conflicts, [
    { type: 'agent', name: 'alice', reason: 'name_taken', resolution: 'skipped' },
    { type: 'agent', name: 'lead', reason: 'name_taken', resolution: 'skipped' },
  ])
  t.same(
    preview.added.filter((x: any) => x.type === 'agent'),
    [{ type: 'agent', name: 'bob' }],
  )
  const result = (await post(api, `${s}/imports/apply`, { source: file, collision: 'skip' })).result
  t.same(result.skipped, preview.skipped)
  const agents = (await api.call('GET', `${s}/agents`)).body.agents
  t.same(agents.map((a: any) => a.name).sort(), ['alice', 'bob', 'lead'], 'no renamed copies')
  const bob = agents.find((a: any) => a.name === 'bob')
  t.equal(bob.reportsToAgentId, existingLead.id, 'a skipped manager resolves to the squad’s own agent of that name')
  t.equal((await api.call('GET', `/api/issues/${target.prefix}-1`)).body.issue.assigneeAgentId, existingLead.id)
  t.equal((await api.call('GET', `/api/issues/${target.prefix}-5`)).body.issue.assigneeAgentId, target.agentId)

  // A hand-written bundle: an adapter this instance lacks, a dangling manager and assignee.
  const handMade = {
    format: 'slaw.squad-export',
    version: 1,
    exportedAt: new Date().toISOString(),
    agents: [
      { name: 'vendor-bot', role: 'general', title: null, adapterType: 'vendor-cli', reportsTo: null, desiredSkills: [], prompt: null },
      { name: 'helper', role: 'general', title: 'Helper', adapterType: 'process', reportsTo: 'vendor-bot', desiredSkills: [], prompt: 'help' },
    ],
    issues: [
      { identifier: 'X-1', title: 'For the vendor bot', description: null, status: 'todo', priority: 'medium', assignee: 'vendor-bot', parent: null, blockedBy: [] },
      { identifier: 'X-2', title: 'For a stranger', description: null, status: 'blocked', priority: 'low', assignee: 'nobody', parent: 'X-1', blockedBy: ['X-1'] },
    ],
    skills: [
      { key: 'git', name: 'Git', description: null, markdown: '# Git', files: [] },
      { key: 'Bad Key', name: 'Bad', description: null, markdown: '# Bad', files: [] },
      { key: 'unsafe', name: 'Unsafe', description: null, markdown: '# Unsafe', files: [{ path: '../escape.sh', content: 'x', encoding: 'utf8' }] },
    ],
  }
  const handFile = join(dir, 'hand.json')
  await writeFile(handFile, JSON.stringify(handMade))
  const other = await api.seed('Hand Team')
  const res = (await post(api, `/api/squads/${other.squadId}/imports/apply`, { source: handFile })).result
  t.same(res.skipped, [
    { type: 'agent', name: 'vendor-bot', reason: 'adapter_not_registered' },
    { type: 'skill', key: 'Bad Key', reason: 'skill_invalid' },
    { type: 'skill', key: 'unsafe', reason: 'skill_invalid' },
  ])
  t.same(res.conflicts.slice(0, 4), [
    { type: 'agent', name: 'vendor-bot', reason: 'adapter_not_registered', adapterType: 'vendor-cli', resolution: 'skipped' },
    { type: 'agent', name: 'helper', reason: 'reports_to_unresolved', reportsTo: 'vendor-bot', resolution: 'reports_to_cleared' },
    { type: 'issue', identifier: 'X-1', reason: 'assignee_unresolved', assignee: 'vendor-bot', resolution: 'unassigned' },
    { type: 'issue', identifier: 'X-2', reason: 'assignee_unresolved', assignee: 'nobody', resolution: 'unassigned' },
  ])
  t.same(
    res.conflicts.slice(4).map((c: any) => [c.key, c.reason, c.resolution]),
    [
      ['Bad Key', 'skill_invalid', 'skipped'],
      ['unsafe', 'skill_invalid', 'skipped'],
    ],
  )
  t.match(res.conflicts[4].message, /^\/key /)
  t.match(res.conflicts[5].message, /^\/files\/0\/path /)
  t.same(
    (await api.call('GET', `/api/squads/${other.squadId}/skills`)).body.skills.map((k: any) => k.key),
    ['git'],
  )
  const helper = (await api.call('GET', `/api/squads/${other.squadId}/agents`)).body.agents.find((a: any) => a.name === 'helper')
  t.equal(helper.reportsToAgentId, null)
  const x2 = (await api.call('GET', `/api/issues/${other.prefix}-2`)).body.issue
  t.equal(x2.assigneeAgentId, null)
  t.equal(x2.status, 'blocked')
  t.equal(x2.blockedByIssueIds.length, 1)
  t.equal(x2.parentId, x2.blockedByIssueIds[0])

  // Issues only: assignees resolve against the target squad's own agents.
  const issuesOnly = await exportBundle(api, origin.squadId, ['issues'])
  t.equal(issuesOnly.agents, undefined)
  const issuesFile = join(dir, 'issues.json')
  await writeFile(issuesFile, JSON.stringify(issuesOnly))
  const third = await api.seed('Third Team')
  const r3 = (await post(api, `/api/squads/${third.squadId}/imports/apply`, { source: issuesFile })).result
  t.equal(r3.added.length, 5)
  t.same(
    r3.conflicts.map((c: any) => c.assignee),
    ['lead', 'bob'],
    'only alice exists in the third squad',
  )
  t.equal((await api.call('GET', `/api/issues/${third.prefix}-5`)).body.issue.assigneeAgentId, third.agentId)
}

async function badSources(t: Test, api: TestApi): Promise<void> {
  const target = await api.seed('Bad Sources')
  const dir = await tempDir(t)
  const url = `/api/squads/${target.squadId}/imports/preview`
  const expect400 = async (source: string, path: string, label: string) => {
    const res = await api.call('POST', url, { source })
    t.equal(res.status, 400, label)
    t.equal(res.body.code, 'invalid_payload', label)
    t.ok(
      res.body.details?.some((d: any) => d.path.startsWith(path)),
      `${label}: details name ${path}`,
    )
    t.notOk(JSON.stringify(res.body).includes('TOPSECRET'), `${label}: contents not echoed`)
    return res.body
  }
  await expect400(join(dir, 'missing.json'), '/source', 'missing file')
  await expect400(dir, '/source', 'a directory')
  await writeFile(join(dir, 'text.json'), 'TOPSECRET is not json')
  await expect400(join(dir, 'text.json'), '/source', 'not JSON')
  await writeFile(join(dir, 'other.json'), JSON.stringify({ password: 'TOPSECRET', nested: { TOPSECRET: 1 } }))
  const other = await expect400(join(dir, 'other.json'), '/source', 'JSON that is not a bundle')
  t.notOk(JSON.stringify(other).includes('password'), 'no structure of a foreign file either')
  await writeFile(join(dir, 'v2.json'), JSON.stringify({ format: 'slaw.squad-export', version: 2, exportedAt: 'x' }))
  await expect400(join(dir, 'v2.json'), '/source/version', 'unsupported version')
  await writeFile(
    join(dir, 'malformed.json'),
    JSON.stringify({
      format: 'slaw.squad-export',
      version: 1,
      exportedAt: 'x',
      agents: [{ role: 'TOPSECRET', title: null, adapterType: 'process', reportsTo: null, desiredSkills: [], prompt: null }],
    }),
  )
  await expect400(join(dir, 'malformed.json'), '/source/agents/0/name', 'malformed bundle')
  const issue = (identifier: string, parent: string | null, blockedBy: string[] = []) => ({
    identifier,
    title: 'TOPSECRET',
    description: null,
    status: 'todo',
    priority: 'low',
    assignee: null,
    parent,
    blockedBy,
  })
  await writeFile(join(dir, 'dangling.json'), JSON.stringify({ format: 'slaw.squad-export', version: 1, exportedAt: 'x', issues: [issue('A-1', 'A-9')] }))
  await expect400(join(dir, 'dangling.json'), '/source/issues/0/parent', 'parent outside the bundle')
  await writeFile(
    join(dir, 'cycle.json'),
    JSON.stringify({ format: 'slaw.squad-export', version: 1, exportedAt: 'x', issues: [issue('A-1', 'A-2'), issue('A-2', 'A-1'), issue('A-3', null, ['A-3'])] }),
  )
  const cycle = await expect400(join(dir, 'cycle.json'), '/source/issues/0/parent', 'parent cycle')
  t.ok(
    cycle.details.some((d: any) => d.path === '/source/issues/2/blockedBy/0'),
    'self-blocking named',
  )
  const agent = (name: string, reportsTo: string | null) => ({ name, role: 'general', title: null, adapterType: 'process', reportsTo, desiredSkills: [], prompt: null })
  await writeFile(
    join(dir, 'agents.json'),
    JSON.stringify({ format: 'slaw.squad-export', version: 1, exportedAt: 'x', agents: [agent('a', 'b'), agent('b', 'a'), agent('c', null), agent('c', null)] }),
  )
  const agents = await expect400(join(dir, 'agents.json'), '/source/agents/0/reportsTo', 'manager cycle')
  t.ok(
    agents.details.some((d: any) => d.path === '/source/agents/3/name'),
    'duplicate name named',
  )
  await expect400('not a path', '/source', 'neither a path nor a reference')
  await expect400('owner/repo', '/source', 'a reference without a file path')
  await expect400('owner/repo/../secret.json', '/source', 'a reference that climbs')

  // No internet here: the default GitHub host is unreachable, and a short timeout keeps this quick.
  api.instance.services.imports.remote.timeoutMs = 1_500
  const started = Date.now()
  const unreachable = await expect400('octo-org/squads@v1/bundles/team.json', '/source', 'unreachable GitHub reference')
  // With a network after all, GitHub answers 404 for this made-up repository: a 400 just the same.
  t.match(unreachable.error, /could not be fetched|Nothing was found/)
  t.ok(Date.now() - started < 10_000, 'gives up within the timeout')
  t.equal((await api.call('GET', `/api/squads/${target.squadId}/agents`)).body.agents.length, 1, 'nothing was written')
}

async function remoteSources(t: Test, api: TestApi): Promise<void> {
  const origin = await seedOrigin(api)
  const bundle = await exportBundle(api, origin.squadId, ['agents'])
  const seen: string[] = []
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? '')
    if (req.url === '/acme/squads/HEAD/teams/core%20team.json' || req.url === '/acme/squads/v1.2/b.json') {
      res.setHeader('content-type', 'text/plain')
      res.end(JSON.stringify(bundle))
    } else if (req.url === '/acme/squads/HEAD/slow.json') {
      // Never answers: the timeout must end the wait.
    } else if (req.url === '/acme/squads/HEAD/broken.json') {
      res.statusCode = 500
      res.end('TOPSECRET')
    } else {
      res.statusCode = 404
      res.end('404: Not Found')
    }
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  const imports = api.instance.services.imports
  imports.remote.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  imports.remote.timeoutMs = 400

  const target = await api.seed('Remote Team')
  const url = `/api/squads/${target.squadId}/imports/preview`
  const ok = await api.call('POST', url, { source: 'acme/squads/teams/core team.json' })
  t.equal(ok.status, 200, 'fetched and planned')
  t.same(
    ok.body.preview.added.map((a: any) => a.as ?? a.name),
    ['alice (2)', 'lead', 'bob'],
  )
  const pinned = await api.call('POST', `/api/squads/${target.squadId}/imports/apply`, { source: 'acme/squads@v1.2/b.json', collision: 'skip' })
  t.equal(pinned.status, 200, 'a ref pins the version')
  t.same(
    pinned.body.result.added.map((a: any) => a.name),
    ['lead', 'bob'],
  )
  t.ok(seen.includes('/acme/squads/v1.2/b.json'))
  for (const [source, why] of [
    ['acme/squads/missing.json', /HTTP 404/],
    ['acme/squads/broken.json', /HTTP 500/],
    ['acme/squads/slow.json', /no answer within 400 ms/],
  ] as const) {
    const res = await api.call('POST', url, { source })
    t.equal(res.status, 400, source)
    t.equal(res.body.code, 'invalid_payload')
    t.match(res.body.error, why)
    t.notOk(JSON.stringify(res.body).includes('TOPSECRET'))
  }
}

async function scopesAndStates(t: Test, api: TestApi): Promise<void> {
  const squad = await api.seed('Scoped Team')
  const s = `/api/squads/${squad.squadId}`
  const dir = await tempDir(t)
  const bundle = await exportBundle(api, squad.squadId, ['agents'])
  const file = join(dir, 'b.json')
  await writeFile(file, JSON.stringify(bundle))
  const jobId = (await api.call('POST', `${s}/exports`, { include: ['agents'] })).body.jobId
  await waitForJob(api, jobId)

  for (const [method, url, body] of [
    ['POST', `${s}/exports/preview`, {}],
    ['POST', `${s}/exports`, { include: ['agents'] }],
    ['GET', `/api/exports/${jobId}`, undefined],
    ['GET', `/api/exports/${jobId}/download`, undefined],
    ['POST', `${s}/imports/preview`, { source: file }],
    ['POST', `${s}/imports/apply`, { source: file }],
  ] as const) {
    const res = await api.call(method, url, body, squad.agentToken)
    t.equal(res.status, 403, `agent key: ${method} ${url}`)
    t.equal(res.body.code, 'forbidden')
  }
  t.equal((await api.call('GET', '/api/exports/not-a-uuid')).status, 404, 'malformed job id')
  t.equal((await api.call('GET', `/api/exports/${uuidv7()}`)).status, 404, 'unknown job id')
  t.equal((await api.call('GET', `/api/exports/${uuidv7()}/download`)).status, 404)
  const otherKind = await api.instance.storage.jobs.enqueue({ id: uuidv7(), kind: 'something_else', squadId: squad.squadId, payload: {}, runAt: new Date(Date.now() + 3_600_000) })
  t.equal((await api.call('GET', `/api/exports/${otherKind.id}`)).status, 404, 'a job of another kind is not an export')
  t.equal((await api.call('POST', `/api/squads/${uuidv7()}/exports`, { include: ['agents'] })).status, 404)
  t.equal((await api.call('POST', '/api/squads/nope/imports/preview', { source: file })).status, 404)

  // A job not due yet stays queued; its download is not ready.
  const later = await api.instance.storage.jobs.enqueue({ id: uuidv7(), kind: 'squad_export', squadId: squad.squadId, payload: { include: ['agents'] }, runAt: new Date(Date.now() + 3_600_000) })
  const queued = await api.call('GET', `/api/exports/${later.id}`)
  t.equal(queued.body.job.status, 'queued')
  t.equal(queued.body.job.finishedAt, null)
  const early = await api.call('GET', `/api/exports/${later.id}/download`)
  t.equal(early.status, 422)
  t.equal(early.body.code, 'invalid_state')
  // A job the handler cannot run ends failed, with its error.
  const broken = await api.instance.storage.jobs.enqueue({ id: uuidv7(), kind: 'squad_export', squadId: squad.squadId, payload: { include: [] } })
  api.instance.jobs.kick()
  const failed = await waitForJob(api, broken.id)
  t.equal(failed.status, 'failed')
  t.match(failed.error, /at least one part/)
  t.equal((await api.call('GET', `/api/exports/${broken.id}/download`)).status, 422)

  for (const body of [{}, { include: [] }, { include: ['bogus'] }, { include: ['agents', 'agents'] }, { include: ['agents'], extra: 1 }]) {
    const res = await api.call('POST', `${s}/exports`, body)
    t.equal(res.status, 400, `export body ${JSON.stringify(body)}`)
  }
  t.equal((await api.call('POST', `${s}/imports/preview`, { source: file, collision: 'replace' })).status, 400)
  t.equal((await api.call('POST', `${s}/imports/preview`, {})).status, 400)

  await post(api, `${s}/archive`, undefined)
  const archivedExport = await api.call('POST', `${s}/exports`, { include: ['agents', 'issues'] })
  t.equal(archivedExport.status, 202, 'an archived squad can still be exported')
  t.equal((await waitForJob(api, archivedExport.body.jobId)).status, 'completed')
  for (const path of ['preview', 'apply']) {
    const res = await api.call('POST', `${s}/imports/${path}`, { source: file })
    t.equal(res.status, 409, `import ${path} into an archived squad`)
    t.equal(res.body.code, 'squad_archived')
  }
}

async function towerManagedSkills(t: Test, api: TestApi): Promise<void> {
  const origin = await api.seed('Skill Source')
  await post(api, `/api/squads/${origin.squadId}/skills`, { key: 'lint', name: 'Lint', markdown: '# Lint' })
  const bundle = await exportBundle(api, origin.squadId, ['agents', 'skills'])
  t.same(
    bundle.skills.map((k: any) => k.key),
    ['lint'],
  )
  const file = join(await tempDir(t), 'skills.json')
  await writeFile(file, JSON.stringify(bundle))
  const target = await api.seed('Skill Target')
  tower.managed = true
  t.teardown(() => {
    tower.managed = false
  })
  const result = (await post(api, `/api/squads/${target.squadId}/imports/apply`, { source: file })).result
  t.same(result.skipped, [{ type: 'skill', key: 'lint', reason: 'skills_managed_by_tower' }])
  t.same(
    result.added.map((x: any) => x.as ?? x.name),
    ['alice (2)'],
    'the rest of the bundle still imports',
  )
  t.same((await api.call('GET', `/api/squads/${target.squadId}/skills`)).body.skills, [])
}

/** A tower client that only answers whether the tower manages skills (the contract's optional member). */
const tower = { managed: false }
const testTower: TowerClient = { name: 'test-tower', start: async () => undefined, close: async () => undefined, managesSkills: () => tower.managed }

// One instance per backend serves several scenarios: starting an instance is the slow part.
eachBackend(
  t,
  'imports: skip policy, unregistered adapters, unresolved references, partial bundles, tower-managed skills; scopes and job states',
  async (t, api) => {
    await t.test('policies', (t) => importPolicies(t, api))
    await t.test('skills while the tower manages them', (t) => towerManagedSkills(t, api))
    await t.test('scopes and states', (t) => scopesAndStates(t, api))
  },
  { tower: testTower },
)

eachBackend(t, 'imports: bad local and remote sources answer 400 without echoing contents; remote references', async (t, api) => {
  await t.test('bad sources', (t) => badSources(t, api))
  await t.test('remote sources', (t) => remoteSources(t, api))
})

t.test('export jobs are claimed once with two nodes on one PostgreSQL database', testDatabaseUrl ? {} : { skip: 'set SLAW_TEST_DATABASE_URL to run' }, async (t) => {
  const db = await freshDatabase()
  const storages = [pgStorage({ url: db.url, max: 4 }), pgStorage({ url: db.url, max: 4 })]
  const nodes: SlawInstance[] = []
  for (const storage of storages) {
    nodes.push(await createInstance({ storage, operatorKey: operatorToken, masterKey: testMasterKey, adapters: testAdapters, logger: false, jobs: { pollIntervalMs: 20 } }))
  }
  t.teardown(async () => {
    // JobRunner.stop() does not wait for a claim already in flight; closing the pool under it can
    // hang postgres.js's end(). Stop both runners and let such a claim finish first.
    await Promise.all(nodes.map((n) => n.jobs.stop()))
    await sleep(250)
    for (const n of nodes) await n.close()
    await db.dispose()
  })
  const [a, b] = await Promise.all(nodes.map((n) => makeApi(n, 'postgres')))
  await Promise.all(nodes.map((n) => n.ready()))
  const squad = await a!.seed('Two Nodes')
  const runs = new Map<string, string[]>()
  for (const [name, node] of [
    ['a', nodes[0]!],
    ['b', nodes[1]!],
  ] as const) {
    // Counts what each node's runner actually hands to the export handler.
    node.jobs.register('squad_export', async (job) => {
      runs.set(job.id, [...(runs.get(job.id) ?? []), name])
      return node.services.exports.runJob(job)
    })
  }
  const ids: string[] = []
  for (let i = 0; i < 12; i++) {
    const via = i % 2 ? a! : b!
    ids.push((await via.call('POST', `/api/squads/${squad.squadId}/exports`, { include: ['squad', 'agents'] })).body.jobId)
  }
  for (const id of ids) t.equal((await waitForJob(a!, id)).status, 'completed')
  for (const id of ids) {
    t.same(runs.get(id)?.length, 1, `job ${id} ran once`)
    const job = await nodes[0]!.storage.jobs.get(id)
    t.equal(job?.attempts, 1, 'claimed once')
  }
  const bundle = (await b!.call('GET', `/api/exports/${ids[0]}/download`)).body
  t.equal(bundle.squad.slug, 'two-nodes', 'either node serves any node’s result')
  t.comment(`runs per node: a=${[...runs.values()].filter((r) => r[0] === 'a').length}, b=${[...runs.values()].filter((r) => r[0] === 'b').length}`)
})

/**
 * Waits until every outbox row has its seq, and returns the last one. A row is published once no
 * transaction older than its own is still running anywhere on the database server (the outbox's
 * xmin rule), so on a server shared with other tests' databases it can wait for theirs.
 */
async function allPublished(api: TestApi): Promise<string> {
  for (;;) {
    const published = await api.instance.storage.outbox.readAfter('0', 100_000)
    if (published.length === (await api.instance.storage.outbox.countAfter('0'))) return published.at(-1)?.seq ?? '0'
    await sleep(10)
  }
}

eachBackend(
  t,
  'an imported agent whose adapter needs config is flagged in the preview and the result',
  async (t, api) => {
    const target = await api.seed('Needs Config')
    const dir = await tempDir(t)
    const file = join(dir, 'bundle.json')
    const agent = { title: null, reportsTo: null, desiredSkills: [], prompt: null }
    await writeFile(
      file,
      JSON.stringify({
        format: 'slaw.squad-export',
        version: 1,
        exportedAt: new Date().toISOString(),
        agents: [
          { ...agent, name: 'runner', role: 'engineer', adapterType: 'process' },
          { ...agent, name: 'free', role: 'engineer', adapterType: 'steered' },
        ],
      }),
    )
    const url = `/api/squads/${target.squadId}/imports`
    const preview = (await post(api, `${url}/preview`, { source: file })).preview
    const runner = preview.added.find((x: any) => x.name === 'runner')
    t.equal(runner.needsAdapterConfig, true, 'the process agent needs a command')
    t.match(runner.message, /adapterConfig.*\/command/, 'the message names what is missing')
    t.equal(preview.added.find((x: any) => x.name === 'free').needsAdapterConfig, undefined, 'an adapter that takes any config is not flagged')
    const result = (await post(api, `${url}/apply`, { source: file })).result
    t.equal(result.added.find((x: any) => x.name === 'runner').needsAdapterConfig, true, 'the result says the same')
  },
  () => ({ adapters: [processAdapter(), steeredAdapter('steered')] }),
)
