import t from 'tap'
import { fileURLToPath } from 'node:url'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { processAdapter } from '@slaw/adapters'
import { eachBackend } from './helpers/instance.js'
import { finished } from './helpers/runs.js'
import { outboxOnce } from './helpers/fixtures.js'

const script = fileURLToPath(new URL('./helpers/agent-script.mjs', import.meta.url))

eachBackend(
  t,
  'done when: an assigned agent is woken through the process adapter, works with its run token and finishes',
  async (t, api) => {
    await api.instance.listen({ port: 0 })
    const report = join(mkdtempSync(join(tmpdir(), 'slaw-e2e-')), 'agent.json')
    const squad = (await api.call('POST', '/api/squads', { name: 'Runs E2E' })).body.squad
    const created = await api.call('POST', `/api/squads/${squad.id}/agents`, {
      name: 'ada',
      role: 'software_engineer',
      adapterType: 'process',
      adapterConfig: { command: process.execPath, args: [script, 'work', report], timeoutSec: 120, env: { GREETING: 'hello', PLAIN: { type: 'plain', value: 'v' } } },
    })
    t.equal(created.status, 201)
    const agent = created.body.agent
    t.same(agent.adapterConfig.args, [script, 'work', report], 'the Operator sees the adapter config')

    // Assignment wakes the agent (the wake is written with the issue).
    const issue = (await api.call('POST', `/api/squads/${squad.id}/issues`, { title: 'Ship it', assigneeAgentId: agent.id })).body.issue
    const queued = (await api.call('GET', `/api/issues/${issue.id}/runs`)).body.runs
    t.equal(queued.length, 1, 'one run for the assignment')
    t.equal(queued[0].reason, 'assignment')

    const run = await finished(api.call, queued[0].id)
    t.equal(run.status, 'succeeded', run.error ?? run.outputTail ?? '')
    t.match(run.usage, { inputTokens: 1200, outputTokens: 300, costCents: 42, costStatus: 'reported', unpricedTokens: 0 }, 'usage reported with the run token')
    t.equal(run.liveness, 'completed')
    const out = JSON.parse(readFileSync(report, 'utf8'))
    t.ok(out.envNames.includes('GREETING') && out.envNames.includes('PLAIN'), 'adapterConfig.env bindings reach the agent')
    for (const name of ['SVC_API_KEY', 'SVC_AGENT_ID', 'SVC_SQUAD_ID', 'SVC_API_URL', 'SVC_RUN_ID', 'SVC_TASK_ID']) t.ok(out.envNames.includes(name), `${name} is set`)
    t.notOk(out.envNames.includes('SVC_MASTER_KEY') || out.envNames.includes('DATABASE_URL'), 'no server secrets')

    // The issue, its comment, its cost and the run's touched issues.
    const after = (await api.call('GET', `/api/issues/${issue.id}`)).body.issue
    t.equal(after.status, 'done')
    t.equal(after.assigneeAgentId, agent.id)
    const touched = (await api.call('GET', `/api/heartbeat-runs/${run.id}/issues`)).body.issues
    t.same(
      touched.map((i: any) => i.id),
      [issue.id],
      'the run touched the issue',
    )
    t.same((await api.call('GET', '/api/heartbeat-runs/00000000-0000-7000-8000-000000000000/issues')).body.issues, [], 'unknown run: empty array')
    const cost = (await api.call('GET', `/api/issues/${issue.id}/cost-summary`)).body.summary
    t.equal(cost.costCents, 42, 'the cost shows on the issue')
    const activity = (await api.call('GET', `/api/issues/${issue.id}/activity`)).body
    const entries = activity.activity ?? activity.entries ?? activity
    t.ok(
      entries.some((e: any) => e.action === 'issue.comment_added' && e.runId === run.id),
      'activity carries the run id',
    )

    // The run token stops working once the run ended.
    const late = await api.call('GET', '/api/agents/me', undefined, out.token)
    t.equal(late.status, 401, 'token refused after the run ended')

    // Dashboard and the tower outbox.
    const dash = (await api.call('GET', `/api/squads/${squad.id}/dashboard`)).body
    const today = dash.dashboard?.runActivity ?? dash.runActivity
    t.equal(today[today.length - 1].succeeded, 1, 'runActivity counts the run today')
    const facts = await outboxOnce(
      api.instance.storage,
      (rows) => rows.some((f) => f.entityType === 'run_event' && f.entityId === run.id && f.payload.status === 'succeeded') && rows.some((f) => f.entityType === 'cost_event'),
    )
    const runFacts = facts.filter((f) => f.entityType === 'run_event' && f.entityId === run.id)
    t.ok(runFacts.length >= 2, 'run_event facts for queued/running/succeeded')
    const last = runFacts[runFacts.length - 1]!.payload
    t.match(last, { type: 'run_event', localId: run.id, agentLocalId: agent.id, squadLocalId: squad.id, status: 'succeeded', inputTokens: 1200, outputTokens: 300 })
    t.ok('startedAt' in last && 'finishedAt' in last, 'nullable keys are sent')
    t.notOk(JSON.stringify(facts).includes('adapterConfig') || JSON.stringify(facts).includes(script), 'no adapter config in tower payloads')
    t.ok(
      facts.some((f) => f.entityType === 'cost_event'),
      'the cost event is a tower fact',
    )

    // An agent key never sees the adapter config.
    const key = (await api.call('POST', `/api/agents/${agent.id}/keys`, { name: 'k' })).body.token
    const seen = (await api.call('GET', `/api/agents/${agent.id}`, undefined, key)).body.agent
    t.notOk('adapterConfig' in seen, 'agents do not see adapterConfig')
    const runAsAgent = (await api.call('GET', `/api/heartbeat-runs/${run.id}`, undefined, key)).body.run
    t.notOk('outputTail' in runAsAgent, 'output stays with the operator')
  },
  () => ({ adapters: [processAdapter()], jobs: { pollIntervalMs: 50 } }),
)
