import { parseArgs } from 'node:util'
import { createSlawClient, type HeartbeatRun, type SlawClient } from '@slaw/client'

// `slaw status` and `slaw runs tail`: an operator's view of a running instance without a browser,
// through the typed client (the same API the console uses).

/** Where output goes; the tests pass their own. */
export interface Output {
  out(line: string): void
  err(line: string): void
}

const stdio: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}

class UsageError extends Error {
  override name = 'UsageError'
}

interface Target {
  url: string
  client: SlawClient
}

/** `--url` (or SVC_URL, else this machine's PORT) and `--key` (or SVC_OPERATOR_KEY). */
function target(values: { url?: string; key?: string }, env: NodeJS.ProcessEnv, fetchImpl?: typeof fetch): Target {
  const url = (values.url ?? env.SVC_URL ?? `http://127.0.0.1:${env.PORT || 3100}`).replace(/\/+$/, '')
  const key = values.key ?? env.SVC_OPERATOR_KEY
  if (!key) throw new UsageError('an Operator key is needed: --key KEY or SVC_OPERATOR_KEY')
  return { url, client: createSlawClient({ baseUrl: url, token: key, ...(fetchImpl ? { fetch: (r: Request) => fetchImpl(r) } : {}) }) }
}

const money = (cents: number) => `$${(cents / 100).toFixed(2)}`
const count = (n: number) => (n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 10_000 ? `${Math.round(n / 1_000)}k` : String(n))
const short = (id: string) => id.slice(-8)

function since(iso: string | null, now: number): string {
  if (!iso) return ''
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000))
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`
}

/** Runs in flight of a squad (running first, then queued), at most `limit`. */
async function inFlight(client: SlawClient, squadId: string, limit: number): Promise<HeartbeatRun[]> {
  const runs: HeartbeatRun[] = []
  for (const status of ['running', 'queued']) {
    const { data } = await client.GET('/api/squads/{squadId}/heartbeat-runs', { params: { path: { squadId }, query: { status, limit } } })
    runs.push(...(data?.runs ?? []))
  }
  return runs.slice(0, limit)
}

/**
 * `slaw status [--url URL] [--key KEY] [--runs N]`: the instance's health, then each squad's agents,
 * issues, approvals and month spend, and its runs in flight. Exit 0 when the instance is healthy,
 * 1 when it is not or cannot be reached, 2 on a usage error.
 */
export async function status(argv: string[], env: NodeJS.ProcessEnv = process.env, io: Output = stdio, fetchImpl?: typeof fetch): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { url: { type: 'string' }, key: { type: 'string' }, runs: { type: 'string' } }, allowPositionals: false })
  const limit = values.runs === undefined ? 10 : Number(values.runs)
  if (!Number.isInteger(limit) || limit < 0 || limit > 100) throw new UsageError('--runs must be an integer from 0 to 100')
  const { url, client } = target(values, env, fetchImpl)
  const health = await client.GET('/api/health').catch((err: unknown) => ({ error: err, data: undefined, response: undefined }))
  const body = health.data as { status?: string; parts?: Record<string, { status: string; reason?: string }> } | undefined
  if (!body) {
    io.err(`slaw at ${url}: not reachable (${health.error instanceof Error ? health.error.message : `HTTP ${health.response?.status}`})`)
    return 1
  }
  const parts = Object.entries(body.parts ?? {}).map(([name, p]) => `${name} ${p.status}${p.reason ? ` (${p.reason})` : ''}`)
  io.out(`slaw at ${url}: ${body.status}${parts.length ? ` — ${parts.join(', ')}` : ''}`)

  const squads = await client.GET('/api/squads')
  if (!squads.data) {
    io.err(`GET /api/squads answered ${squads.response.status}: ${squads.error?.error ?? ''}`)
    return 1
  }
  const now = Date.now()
  for (const squad of squads.data.squads) {
    const [dash, agents, runs] = await Promise.all([
      client.GET('/api/squads/{squadId}/dashboard', { params: { path: { squadId: squad.id } } }),
      client.GET('/api/squads/{squadId}/agents', { params: { path: { squadId: squad.id } } }),
      inFlight(client, squad.id, limit),
    ])
    const d = dash.data
    io.out('')
    io.out(`squad ${squad.name}`)
    if (d) {
      const tokens = d.costs.monthInputTokens + d.costs.monthOutputTokens
      const budget = d.costs.monthBudgetCents === null ? 'no budget' : `of ${money(d.costs.monthBudgetCents)} (${d.costs.monthUtilizationPercent}%)`
      io.out(`  agents   ${d.agents.active} active, ${d.agents.running} running, ${d.agents.paused} paused, ${d.agents.error} error`)
      io.out(`  issues   ${d.tasks.open} open, ${d.tasks.inProgress} in progress, ${d.tasks.blocked} blocked, ${d.tasks.done} done`)
      io.out(`  pending  ${d.pendingApprovals} approval(s)`)
      io.out(
        `  month    ${money(d.costs.monthSpendCents)} ${budget}; ${count(tokens)} tokens${d.costs.monthUnpricedTokens ? ` (${count(d.costs.monthUnpricedTokens)} unpriced, not in the dollars)` : ''}`,
      )
    }
    const names = new Map((agents.data?.agents ?? []).map((a) => [a.id, a.name]))
    if (runs.length === 0) io.out('  runs     none in flight')
    for (const run of runs) {
      const who = names.get(run.agentId) ?? short(run.agentId)
      const when = run.status === 'running' ? `running for ${since(run.startedAt, now)}` : `queued ${since(run.createdAt, now)} ago`
      io.out(`  run ${short(run.id)}  ${run.status.padEnd(7)}  ${who}  ${run.reason}${run.issueId ? ` issue ${short(run.issueId)}` : ''}  ${when}`)
    }
  }
  return body.status === 'ok' ? 0 : 1
}

/**
 * `slaw runs tail [--squad ID] [--url URL] [--key KEY]`: follows the squad's run events (queued,
 * started, output, finished) until interrupted. Without `--squad`, the instance's only squad.
 */
export async function runsTail(argv: string[], env: NodeJS.ProcessEnv = process.env, io: Output = stdio, signal?: AbortSignal, fetchImpl?: typeof fetch): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { url: { type: 'string' }, key: { type: 'string' }, squad: { type: 'string' } }, allowPositionals: false })
  const { client } = target(values, env, fetchImpl)
  let squadId = values.squad
  if (!squadId) {
    const squads = await client.GET('/api/squads')
    const list = squads.data?.squads ?? []
    if (list.length !== 1) throw new UsageError(list.length ? `--squad is needed: ${list.map((s) => `${s.id} (${s.name})`).join(', ')}` : 'the instance has no squad yet')
    squadId = list[0]!.id
  }
  const names = new Map(((await client.GET('/api/squads/{squadId}/agents', { params: { path: { squadId } } })).data?.agents ?? []).map((a) => [a.id, a.name]))
  const time = () => new Date().toISOString().slice(11, 19)
  for await (const event of client.events(squadId, { types: ['run.*'], ...(signal ? { signal } : {}) })) {
    if (event.type === 'resync') {
      io.out(`${time()} (some events were missed: older than the stream keeps)`)
      continue
    }
    const runId = short(event.runId ?? event.entityId)
    if (event.type === 'run.output') {
      const text = typeof event.data.text === 'string' ? event.data.text : ''
      for (const line of text.split('\n').filter((l) => l !== '')) io.out(`${time()} ${runId} | ${line}`)
      continue
    }
    const who = event.agentId ? (names.get(event.agentId) ?? short(event.agentId)) : ''
    // run.finished carries the outcome in its action (run.succeeded, run.failed, …) and the error in its data.
    const error = typeof event.data.error === 'string' ? `: ${event.data.error}` : ''
    const code = typeof event.data.errorCode === 'string' ? ` ${event.data.errorCode}` : ''
    const detail = event.type === 'run.finished' ? ` ${event.action.replace(/^run\./, '')}${code}${error}` : ''
    io.out(`${time()} ${runId} ${event.type} ${who}${detail}`)
  }
  return 0
}
