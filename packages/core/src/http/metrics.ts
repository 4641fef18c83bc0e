import { createServer, type Server } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { MetricFigures, Storage } from '../contracts/storage.js'
import type { TowerClient, TowerStatus } from '../contracts/tower-client.js'
import type { SlawError } from '../errors.js'
import type { Agent } from '../records.js'
import type { RunEngine } from '../services/runs/run-engine.js'
import type { WakeReason } from '../services/runs/wakes.js'
import { monthPeriod } from '../services/money/periods-and-models.js'
import { Type } from '@sinclair/typebox'
import { errors } from '../schemas/common.js'
import { requireOperator } from '../services/foundation/actor.js'

/** Where `GET /metrics` is served. docs/operations.md. */
export interface MetricsOptions {
  /**
   * A separate port for `/metrics`, without a key (bind it to a private interface). Without it,
   * `/metrics` is served on the API's port and needs an Operator key.
   */
  port?: number
  /** Host of the separate port. Default `127.0.0.1`. */
  host?: string
  /**
   * At most this many squads in the per-squad figures (spend and tokens this month: the highest
   * spenders; pending approvals: the most waiting). Default 50; `slaw_metrics_squads_omitted` says
   * how many were left out.
   */
  maxSquads?: number
}

/** Default of `maxSquads`. */
const defaultMetricsMaxSquads = 50
/** A scrape waits this long for a storage or tower read, then goes without those figures. */
const readTimeoutMs = 5_000

/** Why a gate refused a wake, as `slaw_wakes_refused_total{reason}` names it (a bounded set). */
const wakeRefusalReasons = ['agent_paused', 'agent_terminated', 'squad_archived', 'not_enrolled', 'project_paused', 'budget', 'tower_limit', 'other'] as const

/** `slaw_wakes_queued_total{reason}`: the built-in causes; a manual wake's free-text reason counts as `manual`. */
const wakeReasons = ['assignment', 'mention', 'interaction', 'children_done', 'approval_decided', 'routine', 'manual', 'continuation'] as const satisfies readonly WakeReason[]

function wakeReasonLabel(reason: string): (typeof wakeReasons)[number] {
  return (wakeReasons as readonly string[]).includes(reason) ? (reason as (typeof wakeReasons)[number]) : 'manual'
}

function refusalReason(error: SlawError, agent: Agent): (typeof wakeRefusalReasons)[number] {
  switch (error.code) {
    case 'agent_not_active':
      // An agent the budget paused is refused for the budget, as the checkout guard would.
      return agent.status === 'terminated' ? 'agent_terminated' : agent.pauseReason === 'budget' ? 'budget' : 'agent_paused'
    case 'squad_archived':
      return 'squad_archived'
    case 'instance_not_enrolled':
      return 'not_enrolled'
    case 'project_paused':
      return 'project_paused'
    case 'budget_exhausted':
      return 'budget'
    case 'tower_limit_reached':
      return 'tower_limit'
    default:
      return 'other'
  }
}

/**
 * One read shared by every collector of a scrape, and by scrapes that overlap: at most one read of
 * each kind is in flight per node, whatever the scrape rate. A read slower than `readTimeoutMs` (or
 * one that fails) leaves its figures out of this scrape; it is not started again until it settles.
 */
function sharedRead<T>(read: () => Promise<T>): () => Promise<T | undefined> {
  let pending: Promise<T | undefined> | undefined
  return () => {
    if (!pending) {
      const p: Promise<T | undefined> = read().catch(() => undefined)
      pending = p
      void p.finally(() => {
        if (pending === p) pending = undefined
      })
    }
    const current = pending
    return new Promise<T | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), readTimeoutMs)
      timer.unref()
      void current.then((v) => {
        clearTimeout(timer)
        resolve(v)
      })
    })
  }
}

const towerStates: TowerStatus['state'][] = ['disabled', 'disconnected', 'enrolling', 'pending', 'connected', 'unreachable', 'rejected', 'revoked', 'protocol_unsupported']

/**
 * The instance's Prometheus metrics, on prom-client (the maintained Prometheus client for Node:
 * the text exposition format, histograms and process metrics are solved problems). One registry per
 * instance, so two instances in one process never mix their figures.
 */
export class SlawMetrics {
  readonly registry = new Registry()
  private readonly requests: Counter<'method' | 'route' | 'status'>
  private readonly duration: Histogram<'method' | 'route' | 'status'>
  private readonly checkoutConflicts: Counter
  private server: Server | undefined
  private offCommit: (() => void) | undefined

  constructor(
    private readonly sources: {
      storage: Storage
      tower?: TowerClient | undefined
      eventStreams?: () => number
      /** The run engine of this node: finished runs, refused wakes and deferred starts are counted from it. */
      runs?: RunEngine | undefined
      maxSquads?: number | undefined
      /** The instance clock (the month of the spend figures). */
      now?: (() => Date) | undefined
    },
  ) {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry, prefix: 'slaw_' })
    this.requests = new Counter({ name: 'slaw_http_requests_total', help: 'HTTP requests answered, by route template and status.', labelNames: ['method', 'route', 'status'], registers })
    this.duration = new Histogram({
      name: 'slaw_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    })
    this.checkoutConflicts = new Counter({ name: 'slaw_checkout_conflicts_total', help: 'Checkouts refused with 409 (issue checked out by another agent, paused project, budget).', registers })
    const tower = sources.tower
    // GET /api/tower's source, read once per scrape for every tower figure.
    const towerStatus = sharedRead(async () => (tower?.status ? tower.status() : undefined))
    new Gauge({
      name: 'slaw_outbox_depth',
      help: 'Outbox entries not yet acknowledged by the control tower (instance-wide).',
      registers,
      async collect() {
        const s = await towerStatus()
        if (s) this.set(s.spoolDepth)
      },
    })
    new Gauge({
      name: 'slaw_outbox_oldest_unsent_age_seconds',
      help: 'Age of the oldest outbox entry the tower has not acknowledged; 0 when none is waiting.',
      registers,
      async collect() {
        const s = await towerStatus()
        if (!s || s.oldestUnsentAt === undefined) return
        this.set(s.oldestUnsentAt ? Math.max(0, (Date.now() - s.oldestUnsentAt.getTime()) / 1000) : 0)
      },
    })
    new Gauge({
      name: 'slaw_tower_state',
      help: 'The tower client state: 1 for the current state, 0 for the others.',
      labelNames: ['state'],
      registers,
      async collect() {
        const s = (await towerStatus())?.state ?? (tower ? undefined : 'disabled')
        if (!s) return
        for (const state of towerStates) this.set({ state }, state === s ? 1 : 0)
      },
    })
    new Gauge({
      name: 'slaw_tower_last_success_timestamp_seconds',
      help: 'When the tower last accepted a heartbeat or a sync batch (Unix seconds).',
      registers,
      async collect() {
        const s = await towerStatus()
        const last = Math.max(s?.lastHeartbeatAt?.getTime() ?? 0, s?.lastSyncAt?.getTime() ?? 0)
        if (last) this.set(last / 1000)
      },
    })
    new Gauge({
      name: 'slaw_tower_sync_lag_seconds',
      help: 'Seconds since the tower last accepted a sync batch (instance-wide); absent before the first one.',
      registers,
      async collect() {
        this.reset()
        const at = (await towerStatus())?.lastSyncAt
        if (at) this.set(Math.max(0, (Date.now() - at.getTime()) / 1000))
      },
    })
    const eventStreams = sources.eventStreams
    new Gauge({
      name: 'slaw_event_streams',
      help: 'Live event streams (GET /api/squads/{id}/events) open on this node.',
      registers,
      collect() {
        this.set(eventStreams?.() ?? 0)
      },
    })
    const storage = sources.storage
    new Gauge({
      name: 'slaw_db_pool_connections',
      help: 'Database pool connections: `max` configured, `in_use` held by queries and transactions.',
      labelNames: ['kind'],
      registers,
      collect() {
        const p = storage.poolStats?.()
        if (!p) return
        this.set({ kind: 'max' }, p.max)
        this.set({ kind: 'in_use' }, p.inUse)
      },
    })
    this.runFigures(registers, sources.runs)
    this.storageFigures(registers)
  }

  /** Run figures counted on this node, fed by the run engine. */
  private runFigures(registers: Registry[], engine: RunEngine | undefined): void {
    const finished = new Counter({ name: 'slaw_runs_finished_total', help: 'Runs this node finished, by final status and adapter type.', labelNames: ['status', 'adapter'], registers })
    const duration = new Histogram({
      name: 'slaw_run_duration_seconds',
      help: 'From start to finish of the runs this node finished that had started, by adapter type.',
      labelNames: ['adapter'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600],
      registers,
    })
    // Counted from the commit notes of this node's transactions: a wake that rolled back never ran.
    const queued = new Counter({
      name: 'slaw_wakes_queued_total',
      help: 'Wakes queued as new runs by this node (a wake folded into a queued run is not counted), by reason.',
      labelNames: ['reason'],
      registers,
    })
    for (const reason of wakeReasons) queued.inc({ reason }, 0)
    this.offCommit = this.sources.storage.onCommit?.((notes) => {
      for (const note of notes) if (note.kind === 'wake_queued') queued.inc({ reason: wakeReasonLabel(note.reason) })
    })
    const refused = new Counter({ name: 'slaw_wakes_refused_total', help: 'Wakes and run starts a gate refused on this node, by reason.', labelNames: ['reason'], registers })
    const deferred = new Counter({ name: 'slaw_run_starts_deferred_total', help: 'Run starts this node postponed because a concurrency cap was full.', labelNames: ['reason'], registers })
    for (const reason of wakeRefusalReasons) refused.inc({ reason }, 0)
    deferred.inc({ reason: 'concurrency_cap' }, 0)
    if (!engine) return
    engine.metrics = {
      wakeRefused: (error, agent) => refused.inc({ reason: refusalReason(error, agent) }),
      runDeferred: (reason) => deferred.inc({ reason }),
      runFinished: (run, adapter) => {
        finished.inc({ status: run.status, adapter })
        if (run.startedAt && run.finishedAt) duration.observe({ adapter }, Math.max(0, (run.finishedAt.getTime() - run.startedAt.getTime()) / 1000))
      },
    }
  }

  /** Instance-wide figures read from storage at scrape time, in one round trip shared by their gauges. */
  private storageFigures(registers: Registry[]): void {
    const { storage } = this.sources
    const maxSquads = Math.max(0, this.sources.maxSquads ?? defaultMetricsMaxSquads)
    const now = this.sources.now ?? (() => new Date())
    const read = storage.dashboard.metricFigures?.bind(storage.dashboard)
    if (!read) return
    const figures = sharedRead<MetricFigures>(() => read({ period: monthPeriod(now()), maxSquads }))
    const gauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge<string>, f: MetricFigures) => void) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          const f = await figures()
          // Rows that left the list (a run ended, a squad dropped out of the top) leave the scrape too.
          this.reset()
          if (f) fill(this, f)
        },
      })
    gauge('slaw_runs_in_flight', 'Runs queued and running on the whole instance, by adapter type (instance-wide).', ['status', 'adapter'], (g, f) => {
      for (const r of f.runsInFlight) g.set({ status: r.status, adapter: r.adapterType }, r.count)
    })
    gauge('slaw_squad_month_spend_cents', 'Spend of the squad this UTC month, in cents (instance-wide; the highest spenders, at most maxSquads).', ['squad', 'squad_name'], (g, f) => {
      for (const r of f.spend) g.set({ squad: r.squadId, squad_name: r.name }, r.costCents)
    })
    gauge('slaw_squad_month_tokens', 'Tokens the squad used this UTC month, by kind (instance-wide; same squads as the spend).', ['squad', 'squad_name', 'kind'], (g, f) => {
      for (const r of f.spend) {
        const labels = { squad: r.squadId, squad_name: r.name }
        g.set({ ...labels, kind: 'input' }, r.inputTokens)
        g.set({ ...labels, kind: 'cached_input' }, r.cachedInputTokens)
        g.set({ ...labels, kind: 'cache_write' }, r.cacheWriteTokens)
        g.set({ ...labels, kind: 'output' }, r.outputTokens)
      }
    })
    gauge('slaw_squad_month_unpriced_tokens', 'Tokens of the squad this UTC month that no price covers, so not in the spend (instance-wide).', ['squad', 'squad_name'], (g, f) => {
      for (const r of f.spend) g.set({ squad: r.squadId, squad_name: r.name }, r.unpricedTokens)
    })
    gauge('slaw_squad_pending_approvals', 'Approvals waiting for a decision, by squad (instance-wide; the squads with the most, at most maxSquads).', ['squad', 'squad_name'], (g, f) => {
      for (const r of f.pendingApprovals) g.set({ squad: r.squadId, squad_name: r.name }, r.count)
    })
    gauge('slaw_metrics_squads_omitted', 'Squads left out of the per-squad figures by maxSquads (instance-wide).', ['figure'], (g, f) => {
      g.set({ figure: 'spend' }, Math.max(0, f.spendSquads - f.spend.length))
      g.set({ figure: 'approvals' }, Math.max(0, f.approvalSquads - f.pendingApprovals.length))
    })
  }

  /** Counts every answered request; `route` is the template (`/api/issues/:id`), never the raw URL. */
  attach(app: FastifyInstance): void {
    // A callback hook: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched'
      const labels = { method: request.method, route, status: String(reply.statusCode) }
      this.requests.inc(labels)
      this.duration.observe(labels, reply.elapsedTime / 1000)
      if (route === '/api/issues/:id/checkout' && reply.statusCode === 409) this.checkoutConflicts.inc()
      done()
    })
  }

  /** `GET /metrics` on the API's port, for an Operator key. */
  route(app: FastifyInstance): void {
    const schema = {
      tags: ['operations'],
      summary: 'Prometheus metrics (text exposition format); Operator key',
      response: { 200: Type.String({ description: 'Prometheus text format 0.0.4' }), ...errors },
    }
    app.get('/metrics', { config: { ungated: true }, schema }, async (request, reply) => {
      requireOperator(request.actor)
      return reply.type(this.registry.contentType).send(await this.registry.metrics())
    })
  }

  /** `/metrics` on a port of its own, without a key. Resolves to its address. */
  async listen(port: number, host = '127.0.0.1'): Promise<string> {
    const server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Not found.', code: 'not_found' }))
        return
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Internal error.', code: 'internal_error' })),
      )
    })
    this.server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => resolve())
    })
    const a = server.address() as { port: number }
    return `http://${host}:${a.port}`
  }

  async close(): Promise<void> {
    this.offCommit?.()
    this.offCommit = undefined
    const server = this.server
    this.server = undefined
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
