import t from 'tap'
import { fileURLToPath } from 'node:url'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { processAdapter } from '@slaw/adapters'
import { outboxRows } from './helpers/governance.js'
import { eachBackend } from './helpers/instance.js'
import { finished } from './helpers/runs.js'

const script = fileURLToPath(new URL('./helpers/agent-script.mjs', import.meta.url))

eachBackend(
  t,
  'done when: secrets bound into an agent and a routine resolve at run time, in access events and nowhere else',
  async (t, api) => {
    await api.instance.listen({ port: 0 })
    const out = join(mkdtempSync(join(tmpdir(), 'slaw-bindings-')), 'env.json')
    const squad = (await api.call('POST', '/api/squads', { name: 'Bindings' })).body.squad
    const secret = async (name: string, value: string) => (await api.call('POST', `/api/squads/${squad.id}/secrets`, { name, value })).body.secret
    const agentSecret = await secret('agent token', 'agent-value-7f3a91')
    const routineSecret = await secret('deploy key', 'routine-value-c02d44')
    const names = ['AGENT_TOKEN', 'DEPLOY_KEY', 'PLAIN_ROUTINE', 'AGENT_PLAIN']
    const agent = (
      await api.call('POST', `/api/squads/${squad.id}/agents`, {
        name: 'binder',
        role: 'general',
        adapterType: 'process',
        adapterConfig: {
          command: process.execPath,
          args: [script, 'env', out, ...names],
          timeoutSec: 120,
          env: { AGENT_TOKEN: { type: 'secret_ref', secretId: agentSecret.id, version: 'latest' }, AGENT_PLAIN: 'a' },
        },
      })
    ).body.agent
    const created = await api.call('POST', `/api/squads/${squad.id}/routines`, {
      title: 'Deploy',
      assigneeAgentId: agent.id,
      env: { DEPLOY_KEY: { type: 'secret_ref', secretId: routineSecret.id, version: 1 }, PLAIN_ROUTINE: 'r' },
    })
    t.equal(created.status, 201, JSON.stringify(created.body))
    const fired = await api.call('POST', `/api/routines/${created.body.routine.id}/run`, {})
    t.equal(fired.status, 201, JSON.stringify(fired.body))
    // The routine run's issue and its assignee's wake; the run engine takes it from there.
    let runs: any[] = []
    for (let i = 0; i < 500 && !runs.length; i++) {
      const issueId = (await api.call('GET', `/api/routines/${created.body.routine.id}/runs`)).body.runs[0]?.issueId
      if (issueId) runs = (await api.call('GET', `/api/issues/${issueId}/runs`)).body.runs
      if (!runs.length) await new Promise((r) => setTimeout(r, 20))
    }
    t.equal(runs.length, 1, 'one heartbeat run for the routine issue')
    const run = await finished(api.call, runs[0].id)
    t.equal(run.status, 'succeeded', run.error ?? run.outputTail ?? '')
    t.same(
      JSON.parse(readFileSync(out, 'utf8')),
      { AGENT_TOKEN: 'agent-value-7f3a91', DEPLOY_KEY: 'routine-value-c02d44', PLAIN_ROUTINE: 'r', AGENT_PLAIN: 'a' },
      'both bindings and both plain values reached the agent',
    )

    const events = async (id: string) => (await api.call('GET', `/api/secrets/${id}/access-events`)).body
    const agentEvents = JSON.stringify(await events(agentSecret.id))
    const routineEvents = JSON.stringify(await events(routineSecret.id))
    t.match(agentEvents, /"outcome":"success"/, 'the agent binding resolve is audited')
    t.match(agentEvents, new RegExp(run.id), 'with the run id')
    t.match(routineEvents, /"consumerType":"routine"/, 'the routine binding resolve is audited as the routine consuming it')
    t.match(routineEvents, new RegExp(run.id))

    // Nowhere else: responses, activity, tower payloads.
    const seen = [
      JSON.stringify((await api.call('GET', `/api/agents/${agent.id}`)).body),
      JSON.stringify((await api.call('GET', `/api/routines/${created.body.routine.id}`)).body),
      JSON.stringify((await api.call('GET', `/api/heartbeat-runs/${run.id}`)).body),
      JSON.stringify((await api.call('GET', `/api/squads/${squad.id}/activity?limit=500`)).body),
      JSON.stringify(await outboxRows(api)),
      agentEvents,
      routineEvents,
    ].join('\n')
    for (const value of ['agent-value-7f3a91', 'routine-value-c02d44']) t.notOk(seen.includes(value), `${value.split('-')[0]} secret value appears in no response, activity or tower payload`)
  },
  () => ({ adapters: [processAdapter()], jobs: { pollIntervalMs: 50 } }),
)
