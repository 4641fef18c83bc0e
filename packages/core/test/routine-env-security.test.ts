import t from 'tap'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { processAdapter } from '@slaw/adapters'
import { uuidv7, type HeartbeatRun } from '@slaw/core'
import { composeAgentEnv } from '../src/services/runs/agent-env.js'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { addAgent, isError } from './helpers/fixtures.js'

// Regression tests of the security review: what reaches an agent's process from a routine, and
// whose secrets a routine run carries. Each attack goes through the HTTP API and fails (docs/security.md).

const script = fileURLToPath(new URL('./helpers/agent-script.mjs', import.meta.url))

async function heartbeatRunOf(api: TestApi, issueId: string): Promise<HeartbeatRun> {
  for (;;) {
    const [run] = await api.instance.storage.heartbeatRuns.listForIssue(issueId, 10)
    if (run) return run
    await new Promise((r) => setTimeout(r, 20))
  }
}

async function finishedRun(api: TestApi, id: string): Promise<HeartbeatRun> {
  for (;;) {
    const run = await api.instance.storage.heartbeatRuns.get(id)
    if (run && run.status !== 'queued' && run.status !== 'running') return run
    await new Promise((r) => setTimeout(r, 20))
  }
}

const secretRef = (secretId: string) => ({ type: 'secret_ref', secretId, version: 'latest' })

t.test('the env rule: wake variables win, then the agent config, then an Operator routine env, then an agent one; agents never load code', async (t) => {
  const { planned, refused } = composeAgentEnv([
    {
      source: 'routine_agent',
      path: 'routine.env',
      bindings: { GH_TOKEN: 'agent', FOO: 'agent', NODE_OPTIONS: '--require x', Path: '/x', LD_AUDIT: 'x', SVC_API_KEY: 'x', S: { type: 'secret_ref', secretId: uuidv7(), version: 'latest' } },
    },
    { source: 'routine_operator', path: 'routine.env', bindings: { GH_TOKEN: 'routine-op', BAR: 'op', NODE_OPTIONS: '--max-old-space-size=64' } },
    { source: 'agent_config', path: 'adapterConfig.env', bindings: { GH_TOKEN: 'config', PATH: '/opt/bin' } },
    { source: 'wake', path: 'wake', bindings: { SVC_API_KEY: 'token' } },
  ])
  const env = Object.fromEntries(planned.map((p) => [p.name, [p.binding, p.source]]))
  t.same(env, {
    SVC_API_KEY: ['token', 'wake'],
    GH_TOKEN: ['config', 'agent_config'],
    PATH: ['/opt/bin', 'agent_config'],
    BAR: ['op', 'routine_operator'],
    NODE_OPTIONS: ['--max-old-space-size=64', 'routine_operator'],
    FOO: ['agent', 'routine_agent'],
  })
  const why = Object.fromEntries(refused.filter((r) => r.source === 'routine_agent').map((r) => [r.name, r.reason]))
  t.same(Object.keys(why).sort(), ['GH_TOKEN', 'LD_AUDIT', 'NODE_OPTIONS', 'Path', 'S', 'SVC_API_KEY'])
  t.match(why.NODE_OPTIONS, /only an Operator/)
  t.match(why.Path, /only an Operator/, 'names compare case-insensitively')
  t.match(why.S, /secret/)
  t.match(refused.find((r) => r.source === 'routine_operator' && r.name === 'GH_TOKEN')?.reason, /own configuration/)
})

eachBackend(
  t,
  "env (HIGH): an agent key puts no code-loading name and no override into another agent's process (real process adapter)",
  async (t, api) => {
    await api.instance.listen({ port: 0 })
    const dir = mkdtempSync(join(tmpdir(), 'slaw-env-attack-'))
    const out = join(dir, 'env.json')
    const marker = join(dir, 'pwned')
    const evil = join(dir, 'evil.cjs')
    writeFileSync(evil, `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')\n`)
    const squad = (await api.call('POST', '/api/squads', { name: 'Env attack' })).body.squad
    const gh = (await api.call('POST', `/api/squads/${squad.id}/secrets`, { name: 'gh token', value: 'victim-gh-value-51' })).body.secret
    const names = ['GH_TOKEN', 'NODE_OPTIONS', 'BASH_ENV', 'LD_PRELOAD', 'GIT_SSH_COMMAND', 'FOO']
    const victim = (
      await api.call('POST', `/api/squads/${squad.id}/agents`, {
        name: 'victim',
        role: 'general',
        adapterType: 'process',
        adapterConfig: { command: process.execPath, args: [script, 'env', out, ...names], timeoutSec: 120, env: { GH_TOKEN: secretRef(gh.id) } },
      })
    ).body.agent
    const attacker = await addAgent(api, squad.id, 'attacker')

    // Write time: each name that loads code is refused, with one detail per name.
    const hostile = { NODE_OPTIONS: `--require ${evil}`, PATH: dir, LD_PRELOAD: join(dir, 'x.so'), BASH_ENV: evil, PYTHONPATH: dir, GIT_SSH_COMMAND: `node ${evil}` }
    const refused = await api.call('POST', `/api/squads/${squad.id}/routines`, { title: 'Chores', assigneeAgentId: victim.id, env: hostile }, attacker.token)
    isError(t, refused, 400, 'invalid_payload', 'an agent key writes names that load code')
    t.same(
      refused.body.details.map((d: any) => d.path).sort(),
      Object.keys(hostile)
        .map((n) => `/env/${n}`)
        .sort(),
    )
    const own = await api.call(
      'POST',
      `/api/squads/${squad.id}/routines`,
      { title: 'Chores', assigneeAgentId: victim.id, concurrencyPolicy: 'always_enqueue', env: { GH_TOKEN: 'attacker-token', FOO: 'bar' } },
      attacker.token,
    )
    t.equal(own.status, 201, JSON.stringify(own.body))
    t.match(own.body.routine, { createdByAgentId: attacker.id, envWrittenBy: 'agent' }, 'the routine records who wrote it')
    isError(t, await api.call('PATCH', `/api/routines/${own.body.routine.id}`, { env: { NODE_OPTIONS: `--require ${evil}` } }, attacker.token), 400, 'invalid_payload', 'nor by PATCH')
    isError(t, await api.call('PATCH', `/api/routines/${own.body.routine.id}`, { env: { SVC_API_KEY: 'x' } }), 400, 'invalid_payload', 'SVC_ names are the wake variables, even for an Operator')

    // Use time: data stored before the rule (or by another path) is held to it by the run engine.
    await api.instance.storage.routines.update(own.body.routine.id, {
      env: { GH_TOKEN: 'attacker-token', FOO: 'bar', NODE_OPTIONS: `--require ${evil}`, BASH_ENV: evil, LD_PRELOAD: join(dir, 'x.so'), GIT_SSH_COMMAND: `node ${evil}` },
      envWrittenBy: 'agent',
    })
    const run = await api.call('POST', `/api/routines/${own.body.routine.id}/run`, {}, attacker.token)
    t.equal(run.status, 201, JSON.stringify(run.body))
    const done = await finishedRun(api, (await heartbeatRunOf(api, run.body.run.issueId)).id)
    t.equal(done.status, 'succeeded', done.error ?? done.outputTail ?? '')
    t.same(
      JSON.parse(readFileSync(out, 'utf8')),
      { GH_TOKEN: 'victim-gh-value-51', NODE_OPTIONS: null, BASH_ENV: null, LD_PRELOAD: null, GIT_SSH_COMMAND: null, FOO: 'bar' },
      'the victim keeps its Operator-bound GH_TOKEN, gets the harmless FOO and none of the code-loading names',
    )
    t.notOk(existsSync(marker), 'the injected --require never ran')

    // An Operator may set such names for an agent's routine.
    const byOperator = await api.call('POST', `/api/squads/${squad.id}/routines`, { title: 'Tuned', assigneeAgentId: victim.id, env: { NODE_OPTIONS: '--max-old-space-size=512' } })
    t.equal(byOperator.status, 201)
    t.match(byOperator.body.routine, { createdByAgentId: null, envWrittenBy: 'operator' })
  },
  () => ({ adapters: [processAdapter()], jobs: { pollIntervalMs: 50 } }),
)

eachBackend(t, "secrets (HIGH): an agent cannot run or re-assign a routine to get an Operator's secret; the run engine checks again", async (t, api) => {
  const { squadId, agentId: victimId } = await api.seed('Secret routine')
  const attacker = await addAgent(api, squadId, 'attacker')
  const secret = (await api.call('POST', `/api/squads/${squadId}/secrets`, { name: 'deploy key', value: 'deploy-value-93' })).body.secret
  const created = await api.call('POST', `/api/squads/${squadId}/routines`, {
    title: 'Deploy',
    assigneeAgentId: victimId,
    concurrencyPolicy: 'always_enqueue',
    env: { DEPLOY_KEY: secretRef(secret.id) },
  })
  const routine = created.body.routine
  const url = `/api/routines/${routine.id}`

  isError(t, await api.call('POST', `${url}/run`, { assigneeAgentId: attacker.id }, attacker.token), 403, 'forbidden', 'run for itself')
  isError(t, await api.call('PATCH', url, { assigneeAgentId: attacker.id }, attacker.token), 403, 'forbidden', 'become the assignee')
  t.same((await api.call('GET', `${url}/runs`)).body.runs, [], 'no run was recorded')
  t.equal((await api.call('GET', url)).body.routine.assigneeAgentId, victimId, 'the assignee is unchanged')
  const forVictim = await api.call('POST', `${url}/run`, {}, attacker.token)
  t.equal(forVictim.status, 201, 'running it for the assignee the Operator chose is fine')
  t.equal((await api.call('POST', `${url}/run`, { assigneeAgentId: attacker.id })).status, 201, 'an Operator may pick another assignee')

  // The attacker's own routine, to which an Operator bound a secret: the assignee is the Operator's choice now.
  const mine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Mine', assigneeAgentId: victimId, env: { PLAIN: 'x' } }, attacker.token)).body.routine
  t.equal((await api.call('PATCH', `/api/routines/${mine.id}`, { env: { DEPLOY_KEY: secretRef(secret.id) } })).status, 200)
  isError(t, await api.call('PATCH', `/api/routines/${mine.id}`, { assigneeAgentId: attacker.id }, attacker.token), 403, 'forbidden', 'move its own routine once it binds a secret')
  isError(t, await api.call('POST', `/api/routines/${mine.id}/run`, { assigneeAgentId: attacker.id }, attacker.token), 403, 'forbidden', 'run its own routine for itself')
  isError(t, await api.call('PATCH', `/api/routines/${mine.id}`, { env: {} }, attacker.token), 403, 'forbidden', "drop the Operator's env")

  // Use time: a run an agent aimed at itself, stored as if written before the rule, gets no secret.
  const engine = api.instance.services.runs.engine
  const attackerAgent = (await api.instance.storage.agents.get(attacker.id))!
  const routineRun = async (requestedByAgentId: string | null) =>
    (
      await api.instance.storage.routines.insertRun({
        id: uuidv7(),
        squadId,
        routineId: routine.id,
        triggerId: null,
        source: 'manual',
        status: 'issue_created',
        scheduledFor: null,
        idempotencyKey: null,
        variables: {},
        payload: null,
        projectId: null,
        assigneeAgentId: attacker.id,
        requestedByAgentId,
        issueId: null,
        linkedRunId: null,
        error: null,
      })
    ).run
  const wake = (routineRunId: string) => ({ id: uuidv7(), agentId: attacker.id, squadId, issueId: null, reason: 'routine', approvalId: null, commentId: null, routineRunId }) as unknown as HeartbeatRun
  const stolen = await engine.buildEnv(wake((await routineRun(attacker.id)).id), attackerAgent, 'token')
  t.notOk('DEPLOY_KEY' in stolen, 'a run the agent asked for itself carries no Operator env')
  const chosen = await engine.buildEnv(wake((await routineRun(null)).id), attackerAgent, 'token')
  t.equal(chosen.DEPLOY_KEY, 'deploy-value-93', 'the same run an Operator aimed at the agent carries it')
})

eachBackend(t, "env (HIGH): an agent's hire request carries no code-loading name into the hired agent's config", async (t, api) => {
  const { squadId, agentToken } = await api.seed('Hires')
  const hire = (env: Record<string, string>, token?: string) =>
    api.call(
      'POST',
      `/api/squads/${squadId}/agent-hires`,
      { name: `h${Math.random().toString(36).slice(2, 8)}`, role: 'helper', adapterType: 'process', adapterConfig: { command: 'node', env } },
      token,
    )
  const refused = await hire({ NODE_OPTIONS: '--require /tmp/x.cjs', LD_PRELOAD: '/tmp/x.so', FOO: 'ok' }, agentToken)
  isError(t, refused, 400, 'invalid_payload', 'an agent requests a hire whose env loads code')
  t.same(refused.body.details.map((d: any) => d.path).sort(), ['/adapterConfig/env/LD_PRELOAD', '/adapterConfig/env/NODE_OPTIONS'])
  t.equal((await hire({ FOO: 'ok' }, agentToken)).status, 202, 'harmless names are fine')
  t.equal((await hire({ NODE_OPTIONS: '--max-old-space-size=512' })).status, 202, 'an Operator may')
})
