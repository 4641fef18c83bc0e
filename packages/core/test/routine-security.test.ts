import t from 'tap'
import { createHmac } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { processAdapter } from '@slaw/adapters'
import { queueWake, uuidv7, type HeartbeatRun, type TowerClient } from '@slaw/core'
import { composeAgentEnv } from '../src/services/runs/agent-env.js'
import { eachBackend, type TestApi } from './helpers/instance.js'
import { activityOf, addAgent, isError } from './helpers/fixtures.js'
import { steeredAdapter } from './helpers/runs.js'
import { addTrigger, fire } from './helpers/routines.js'

// Regression tests of the security review of routines, triggers and the tower gate: each attack
// goes through the HTTP API and fails (docs/security.md).

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
    { source: 'routine_agent', path: 'routine.env', bindings: { GH_TOKEN: 'agent', FOO: 'agent', NODE_OPTIONS: '--require x', Path: '/x', LD_AUDIT: 'x', SVC_API_KEY: 'x', S: { type: 'secret_ref', secretId: uuidv7(), version: 'latest' } } },
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
  'env (HIGH): an agent key puts no code-loading name and no override into another agent\'s process (real process adapter)',
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
    const victim = (await api.call('POST', `/api/squads/${squad.id}/agents`, {
      name: 'victim',
      role: 'general',
      adapterType: 'process',
      adapterConfig: { command: process.execPath, args: [script, 'env', out, ...names], timeoutSec: 120, env: { GH_TOKEN: secretRef(gh.id) } },
    })).body.agent
    const attacker = await addAgent(api, squad.id, 'attacker')

    // Write time: each name that loads code is refused, with one detail per name.
    const hostile = { NODE_OPTIONS: `--require ${evil}`, PATH: dir, LD_PRELOAD: join(dir, 'x.so'), BASH_ENV: evil, PYTHONPATH: dir, GIT_SSH_COMMAND: `node ${evil}` }
    const refused = await api.call('POST', `/api/squads/${squad.id}/routines`, { title: 'Chores', assigneeAgentId: victim.id, env: hostile }, attacker.token)
    isError(t, refused, 400, 'invalid_payload', 'an agent key writes names that load code')
    t.same(refused.body.details.map((d: any) => d.path).sort(), Object.keys(hostile).map((n) => `/env/${n}`).sort())
    const own = await api.call('POST', `/api/squads/${squad.id}/routines`, { title: 'Chores', assigneeAgentId: victim.id, concurrencyPolicy: 'always_enqueue', env: { GH_TOKEN: 'attacker-token', FOO: 'bar' } }, attacker.token)
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
      "the victim keeps its Operator-bound GH_TOKEN, gets the harmless FOO and none of the code-loading names",
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
  const created = await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Deploy', assigneeAgentId: victimId, concurrencyPolicy: 'always_enqueue', env: { DEPLOY_KEY: secretRef(secret.id) } })
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
    (await api.instance.storage.routines.insertRun({
      id: uuidv7(), squadId, routineId: routine.id, triggerId: null, source: 'manual', status: 'issue_created', scheduledFor: null, idempotencyKey: null,
      variables: {}, payload: null, projectId: null, assigneeAgentId: attacker.id, requestedByAgentId, issueId: null, linkedRunId: null, error: null,
    })).run
  const wake = (routineRunId: string) => ({ id: uuidv7(), agentId: attacker.id, squadId, issueId: null, reason: 'routine', approvalId: null, commentId: null, routineRunId }) as unknown as HeartbeatRun
  const stolen = await engine.buildEnv(wake((await routineRun(attacker.id)).id), attackerAgent, 'token')
  t.notOk('DEPLOY_KEY' in stolen, 'a run the agent asked for itself carries no Operator env')
  const chosen = await engine.buildEnv(wake((await routineRun(null)).id), attackerAgent, 'token')
  t.equal(chosen.DEPLOY_KEY, 'deploy-value-93', 'the same run an Operator aimed at the agent carries it')
})

eachBackend(t, 'replay (MEDIUM): a captured signed fire stays one run whatever unsigned headers say', async (t, api) => {
  const { squadId } = await api.seed('Replays')
  const routine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'On push', concurrencyPolicy: 'always_enqueue' })).body.routine
  const runs = async () => (await api.call('GET', `/api/routines/${routine.id}/runs`)).body.runs as any[]

  const hmac = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256', replayWindowSec: 300 })
  const body = JSON.stringify({ ref: 'main' })
  const ts = Math.floor(Date.now() / 1000).toString()
  const signed = { 'x-slaw-timestamp': ts, 'x-slaw-signature': `sha256=${createHmac('sha256', hmac.secret!).update(`${ts}.${body}`).digest('hex')}` }
  const first = await fire(api, hmac.trigger.fireUrl, body, signed)
  t.equal(first.status, 201)
  for (const key of ['replay-1', 'replay-2']) {
    const again = await fire(api, hmac.trigger.fireUrl, body, { ...signed, 'idempotency-key': key })
    t.equal(again.status, 200, `a new Idempotency-Key (${key}) does not make a new run`)
    t.equal(again.body.run.id, first.body.run.id)
  }
  const upper = await fire(api, hmac.trigger.fireUrl, body, { ...signed, 'x-slaw-signature': signed['x-slaw-signature'].toUpperCase().replace('SHA256=', 'sha256=') })
  t.equal(upper.body.run.id, first.body.run.id, 'nor does the same signature in upper case')
  t.equal((await runs()).length, 1)
  // A signed idempotencyKey in the body still names the run, under any new timestamp.
  const keyed = JSON.stringify({ ref: 'dev', idempotencyKey: 'deploy-7' })
  const sign = (at: string) => ({ 'x-slaw-timestamp': at, 'x-slaw-signature': `sha256=${createHmac('sha256', hmac.secret!).update(`${at}.${keyed}`).digest('hex')}` })
  const k1 = await fire(api, hmac.trigger.fireUrl, keyed, sign(ts))
  const k2 = await fire(api, hmac.trigger.fireUrl, keyed, sign(String(Number(ts) + 1)))
  t.equal(k1.status, 201)
  t.equal(k2.status, 200)
  t.equal(k2.body.run.id, k1.body.run.id)

  const vcs = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'vcs_hmac' })
  const push = JSON.stringify({ after: 'abc123' })
  const hub = { 'x-hub-signature-256': `sha256=${createHmac('sha256', vcs.secret!).update(push).digest('hex')}` }
  const d1 = await fire(api, vcs.trigger.fireUrl, push, { ...hub, 'x-github-delivery': 'd-1' })
  t.equal(d1.status, 201)
  for (const headers of [{ ...hub, 'x-github-delivery': 'd-2' }, hub, { ...hub, 'idempotency-key': 'x' }]) {
    const again = await fire(api, vcs.trigger.fireUrl, push, headers)
    t.equal(again.status, 200, 'a changed or dropped X-GitHub-Delivery replays the same run')
    t.equal(again.body.run.id, d1.body.run.id)
  }
  const other = JSON.stringify({ after: 'def456' })
  t.equal((await fire(api, vcs.trigger.fireUrl, other, { 'x-hub-signature-256': `sha256=${createHmac('sha256', vcs.secret!).update(other).digest('hex')}` })).status, 201, 'another delivery is another run')
  t.equal((await runs()).length, 4)

  // Bearer signs nothing about the request: there the header still names the run.
  const bearer = await addTrigger(api, routine.id, { kind: 'api' })
  const auth = { authorization: `Bearer ${bearer.secret}` }
  t.equal((await fire(api, bearer.trigger.fireUrl, '{}', { ...auth, 'idempotency-key': 'b-1' })).status, 201)
  t.equal((await fire(api, bearer.trigger.fireUrl, '{}', { ...auth, 'idempotency-key': 'b-1' })).status, 200)
})

eachBackend(t, "triggers (MEDIUM): agent keys change only routines and triggers they created; an Operator's stay as configured", async (t, api) => {
  const { squadId, agentId, agentToken } = await api.seed('Weakening')
  const other = await addAgent(api, squadId, 'other')
  const routine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Operator job', assigneeAgentId: agentId })).body.routine
  const hook = await addTrigger(api, routine.id, { kind: 'webhook', signingMode: 'hmac_sha256', replayWindowSec: 300 })
  const tid = hook.trigger.id
  const forbidden = async (method: string, url: string, body: unknown, what: string) => isError(t, await api.call(method, url, body, agentToken), 403, 'forbidden', what)
  await forbidden('PATCH', `/api/routine-triggers/${tid}`, { signingMode: 'none' }, 'switch to signingMode none')
  await forbidden('PATCH', `/api/routine-triggers/${tid}`, { replayWindowSec: 86_400 }, 'widen the replay window')
  await forbidden('PATCH', `/api/routine-triggers/${tid}`, { enabled: false }, 'disable it')
  await forbidden('POST', `/api/routine-triggers/${tid}/rotate-secret`, undefined, 'rotate its secret')
  await forbidden('DELETE', `/api/routine-triggers/${tid}`, undefined, 'delete it')
  await forbidden('POST', `/api/routines/${routine.id}/triggers`, { kind: 'webhook', signingMode: 'none' }, 'add an unsigned trigger')
  await forbidden('PATCH', `/api/routines/${routine.id}`, { title: 'mine now' }, 'edit the routine')
  await forbidden('PATCH', `/api/routines/${routine.id}`, { status: 'paused' }, 'pause the routine')
  await forbidden('POST', `/api/routines/${routine.id}/revisions/${routine.revisionId}/restore`, undefined, 'restore a revision')
  const now = (await api.call('GET', `/api/routines/${routine.id}`)).body
  t.match(now.triggers[0], { signingMode: 'hmac_sha256', replayWindowSec: 300, enabled: true }, 'the trigger is as the Operator configured it')
  t.equal(now.routine.revisionNumber, 2, 'nothing was recorded')
  const ts = Math.floor(Date.now() / 1000).toString()
  const sig = `sha256=${createHmac('sha256', hook.secret!).update(`${ts}.{}`).digest('hex')}`
  t.equal((await fire(api, hook.trigger.fireUrl, '{}', { 'x-slaw-timestamp': ts, 'x-slaw-signature': sig })).status, 201, 'the old secret still works')

  // Its own routine: the agent manages it and its triggers, but not a trigger an Operator added, and no other agent does.
  const mine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'My job' }, agentToken)).body.routine
  const myHook = await api.call('POST', `/api/routines/${mine.id}/triggers`, { kind: 'webhook' }, agentToken)
  t.equal(myHook.status, 201)
  t.equal((await api.call('PATCH', `/api/routine-triggers/${myHook.body.trigger.id}`, { label: 'mine' }, agentToken)).status, 200)
  t.equal((await api.call('PATCH', `/api/routines/${mine.id}`, { title: 'My job, renamed' }, agentToken)).status, 200)
  const opHook = await addTrigger(api, mine.id, { kind: 'webhook', signingMode: 'hmac_sha256' })
  await forbidden('PATCH', `/api/routine-triggers/${opHook.trigger.id}`, { signingMode: 'none' }, "weaken an Operator's trigger on its own routine")
  isError(t, await api.call('PATCH', `/api/routines/${mine.id}`, { title: 'taken' }, other.token), 403, 'forbidden', "another agent edits it")
  isError(t, await api.call('DELETE', `/api/routine-triggers/${myHook.body.trigger.id}`, undefined, other.token), 403, 'forbidden', "another agent deletes its trigger")
  // The Operator may do all of it.
  t.equal((await api.call('PATCH', `/api/routine-triggers/${tid}`, { replayWindowSec: 600 })).status, 200)
})

eachBackend(
  t,
  'quotas (LOW): routines created by agent keys per squad, and the shortest schedule an agent key may write',
  async (t, api) => {
    const { squadId, agentToken } = await api.seed('Quotas')
    const create = (token?: string) => api.call('POST', `/api/squads/${squadId}/routines`, { title: 'r' }, token)
    const first = await create(agentToken)
    t.equal(first.status, 201)
    t.equal((await create(agentToken)).status, 201)
    isError(t, await create(agentToken), 429, 'routine_quota_exceeded', 'a third agent routine in the squad')
    t.equal((await create()).status, 201, 'the Operator is not counted nor limited')
    const rid = first.body.routine.id
    isError(t, await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '* * * * *' }, agentToken), 400, 'schedule_too_frequent', 'minutely')
    isError(t, await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '0,5 * * * *' }, agentToken), 400, 'schedule_too_frequent', 'a burst within the hour')
    const ok = await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '*/10 * * * *' }, agentToken)
    t.equal(ok.status, 201)
    isError(t, await api.call('PATCH', `/api/routine-triggers/${ok.body.trigger.id}`, { cronExpression: '*/2 * * * *' }, agentToken), 400, 'schedule_too_frequent', 'nor by PATCH')
    t.equal((await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '* * * * *' })).status, 201, 'an Operator may schedule minutely')
  },
  { routines: { maxAgentRoutinesPerSquad: 2, minAgentScheduleIntervalSec: 600 } },
)

eachBackend(t, 'quotas (LOW): defaults', async (t, api) => {
  const { squadId, agentToken } = await api.seed('Default quotas')
  const rid = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'r' }, agentToken)).body.routine.id
  isError(t, await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '* * * * *' }, agentToken), 400, 'schedule_too_frequent')
  t.equal((await api.call('POST', `/api/routines/${rid}/triggers`, { kind: 'schedule', cronExpression: '*/5 * * * *' }, agentToken)).status, 201, 'every 5 minutes is the default floor')
  for (let i = 1; i < 20; i++) await api.call('POST', `/api/squads/${squadId}/routines`, { title: `r${i}` }, agentToken)
  isError(t, await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'r21' }, agentToken), 429, 'routine_quota_exceeded', 'the 21st')
})

eachBackend(t, "audit (LOW): an agent key stamps only its own runs; another agent's run id is a 403", async (t, api) => {
  const s = await api.seed('Forgery')
  const victim = await addAgent(api, s.squadId, 'victim')
  const runOf = async (agentId: string) => (await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: s.squadId, agentId, issueId: null, reason: 'manual' }))).run.id
  const victimRun = await runOf(victim.id)
  const ownRun = await runOf(s.agentId)
  const before = (await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'forged' }, s.agentToken, { 'x-svc-run-id': victimRun }), 403, 'forbidden', "another agent's run")
  const elsewhere = await api.seed('Elsewhere')
  const foreignRun = (await api.instance.storage.transaction((tx) => queueWake(tx, { squadId: elsewhere.squadId, agentId: elsewhere.agentId, issueId: null, reason: 'manual' }))).run.id
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'forged' }, s.agentToken, { 'x-svc-run-id': foreignRun }), 403, 'forbidden', "another squad's run")
  isError(t, await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'forged' }, s.agentToken, { 'x-svc-run-id': uuidv7() }), 403, 'forbidden', 'a run that does not exist')
  t.equal((await api.call('GET', `/api/squads/${s.squadId}/issues`)).body.issues.length, before, 'nothing was written')
  t.same(await api.instance.storage.heartbeatRuns.touchedIssues(victimRun), [], "the victim's run touched no issue")
  const own = await api.call('POST', `/api/squads/${s.squadId}/issues`, { title: 'traced' }, s.agentToken, { 'x-svc-run-id': ownRun })
  t.equal(own.status, 201, 'its own run is accepted')
  const [entry] = await activityOf(api, s.squadId, `entityId=${own.body.issue.id}`)
  t.equal(entry.runId, ownRun)
})

let gated = false
let gateAdapter = steeredAdapter('process')
const gateClient: TowerClient = {
  name: 'gate-test',
  start: async () => undefined,
  close: async () => undefined,
  gate: () => (gated ? { code: 'instance_not_enrolled', message: 'This instance is not enrolled with its control tower.' } : undefined),
}

eachBackend(
  t,
  'tower gate (LOW): a gated instance creates no issue from a public fire and wakes no agent',
  async (t, api) => {
    gated = false
    const adapter = gateAdapter
    const { squadId, agentId } = await api.seed('Gated')
    const routine = (await api.call('POST', `/api/squads/${squadId}/routines`, { title: 'Hook', assigneeAgentId: agentId, concurrencyPolicy: 'always_enqueue' })).body.routine
    const hook = await addTrigger(api, routine.id, { kind: 'api' })
    const issue = (await api.call('POST', `/api/squads/${squadId}/issues`, { title: 'work', assigneeAgentId: agentId })).body.issue
    t.ok(issue, 'an assigned issue queued a wake')

    gated = true
    isError(t, await api.call('GET', `/api/squads/${squadId}`), 403, 'instance_not_enrolled', 'the API is gated')
    isError(t, await fire(api, hook.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` }), 403, 'instance_not_enrolled', 'so is the public fire URL')
    t.same(await api.instance.storage.routines.listRuns(routine.id, { limit: 10 }), [], 'no run, no issue')
    t.equal(await api.instance.services.routines.tickSchedules(new Date(Date.now() + 86_400_000)), 0, 'the scheduler claims nothing')
    const jobs = await api.instance.storage.jobs.claim(['heartbeat_run'], 'test', 60_000, 10)
    t.equal(jobs.length, 1)
    await api.instance.services.runs.engine.runJob(jobs[0]!, { signal: new AbortController().signal })
    t.equal(adapter.calls.length, 0, 'the adapter was never called')
    const [run] = await api.instance.storage.heartbeatRuns.listForIssue(issue.id, 10)
    t.match(run, { status: 'cancelled', error: /instance_not_enrolled/ })

    gated = false
    t.equal((await fire(api, hook.trigger.fireUrl, '{}', { authorization: `Bearer ${hook.secret}` })).status, 201, 'once enrolled, fires work again')
  },
  () => {
    gateAdapter = steeredAdapter('process')
    return { tower: gateClient, jobs: false, adapters: [gateAdapter] }
  },
)
