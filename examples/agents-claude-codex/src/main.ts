// A squad of two CLI agents: "claude" runs Claude Code, "codex" runs Codex. Each gets an issue; the
// assignment wakes it; slaw runs the CLI in the work directory with the wake prompt, and the run
// records the CLI's summary, its tokens and cost (Codex: unpriced), its session and any error code.
// Needs only the `claude` and `codex` CLIs on PATH, logged in (or ANTHROPIC_API_KEY / OPENAI_API_KEY
// bound in the agents' env).
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { claudeAdapter } from '@slaw/adapter-claude'
import { codexAdapter } from '@slaw/adapter-codex'

const operatorKey = 'slaw_op_agents_example_key'

export interface AgentOutcome {
  agent: string
  issue: string
  status: string
  summary: string | null
  errorCode: string | null
  error: string | null
  usage: Record<string, unknown>
  sessionId: string | null
}

/** Starts slaw on in-memory PGlite with the two CLI adapters, listening on a free local port. */
export async function startSquad(): Promise<SlawInstance> {
  const instance = await createInstance({
    storage: await pgliteStorage({ dataDir: 'memory://' }),
    adapters: [claudeAdapter(), codexAdapter()],
    operatorKey,
    logger: false,
  })
  // The agents call back at SVC_API_URL: the instance must listen.
  await instance.listen({ port: 0, host: '127.0.0.1' })
  return instance
}

/** Creates the squad, its two agents and an issue for each, and waits until both runs end. */
export async function runSquad(instance: SlawInstance, workdir: string, timeoutMs = 15 * 60_000): Promise<AgentOutcome[]> {
  mkdirSync(workdir, { recursive: true })
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await instance.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${operatorKey}` }, ...(body ? { payload: body as object } : {}) })
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const squad = (await call('POST', '/api/squads', { name: 'CLI agents' })).squad
  const agents = [
    {
      name: 'claude',
      adapterType: 'claude_local',
      adapterConfig: { cwd: workdir, maxTurns: 20, timeoutSec: 900, extraArgs: ['--permission-mode', 'acceptEdits'] },
      prompt: 'You are a careful software engineer. Keep changes small and explain them in a comment.',
      task: { title: 'Write a haiku about the repository into HAIKU.md', description: 'Look at the files here first. Comment with the haiku, then set the issue to in_review.' },
    },
    {
      name: 'codex',
      adapterType: 'codex_local',
      // The example's work directory need not be a git repository.
      adapterConfig: { cwd: workdir, timeoutSec: 900, extraArgs: ['--skip-git-repo-check'] },
      prompt: null,
      task: { title: 'List the files in the work directory in FILES.md', description: 'One line per file. Comment when done and set the issue to in_review.' },
    },
  ]
  const runs: Array<{ agent: string; issue: string; runId: string }> = []
  for (const a of agents) {
    const agent = (await call('POST', `/api/squads/${squad.id}/agents`, { name: a.name, role: 'software_engineer', adapterType: a.adapterType, adapterConfig: a.adapterConfig })).agent
    if (a.prompt) await call('PATCH', `/api/agents/${agent.id}`, { prompt: a.prompt })
    // Assigning the issue wakes the agent.
    const issue = (await call('POST', `/api/squads/${squad.id}/issues`, { ...a.task, assigneeAgentId: agent.id })).issue
    const [run] = (await call('GET', `/api/issues/${issue.id}/runs`)).runs
    runs.push({ agent: a.name, issue: issue.identifier, runId: run.id })
  }
  const deadline = Date.now() + timeoutMs
  const outcomes: AgentOutcome[] = []
  for (const r of runs) {
    for (;;) {
      const run = (await call('GET', `/api/heartbeat-runs/${r.runId}`)).run
      if (run.status !== 'queued' && run.status !== 'running') {
        outcomes.push({ agent: r.agent, issue: r.issue, status: run.status, summary: run.summary, errorCode: run.errorCode, error: run.error, usage: run.usage, sessionId: run.sessionId })
        break
      }
      if (Date.now() > deadline) throw new Error(`run ${r.runId} of ${r.agent} did not finish in time`)
      await new Promise((done) => setTimeout(done, 250))
    }
  }
  return outcomes
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const instance = await startSquad()
  try {
    // What POST /api/agents/{id}/check-environment answers: is each CLI there, and logged in?
    for (const adapter of [claudeAdapter(), codexAdapter()]) {
      const report = await adapter.checkEnvironment!({ cwd: process.cwd() })
      console.log(adapter.type, report.checks.map((c) => `${c.name}: ${c.status} (${c.message})`).join('; '))
    }
    const outcomes = await runSquad(instance, resolve(process.argv[2] ?? 'work'))
    for (const o of outcomes) console.log(JSON.stringify(o, null, 2))
  } finally {
    await instance.close()
  }
}
