import type { FastifyInstance } from 'fastify'
import pino, { type Logger as PinoLogger, type LoggerOptions } from 'pino'
import { validatePluginShapes } from './plugin-shapes.js'
import type { AgentAdapter } from './contracts/agent-adapter.js'
import type { LockProvider } from './contracts/lock-provider.js'
import type { SecretProvider } from './contracts/secret-provider.js'
import type { Storage } from './contracts/storage.js'
import type { TowerClient } from './contracts/tower-client.js'
import { buildApp } from './http/app.js'
import { requestSerializer, secretLogPaths } from './logging.js'
import { memoryLocks } from './locks/memory-locks.js'
import type { ServiceContext } from './services/foundation/context.js'
import { createServices, type Services } from './services/index.js'
import { JobRunner, type JobRunnerOptions } from './services/runs/jobs.js'
import { checkMasterKey, loadMasterKey, type MasterKeyOption } from './services/secrets/master-key-loading.js'
import type { AuthFailureLimitOptions } from './services/foundation/auth-failures.js'
import { RoutineScheduler, type RoutineSchedulerOptions } from './services/routines/schedule-poller.js'
import { routineRunJobKind } from './services/routines/firing.js'
import type { RoutineLimits } from './services/routines/routine-access.js'
import { checkHealth } from './services/foundation/health.js'
import { SlawMetrics, type MetricsOptions } from './http/metrics.js'
import { runDeadlineJob, runRetentionJob, type RunOptions } from './services/runs/run-engine.js'
import { heartbeatRunJob } from './services/runs/wakes.js'
import { slawVersion } from './version.js'
import { EventHub, type EventStreamOptions } from './services/events/event-hub.js'
import { RunOutputRecorder } from './services/events/run-output.js'
import type { EventBroker } from './contracts/storage.js'

export interface InstanceOptions {
  /** Where everything lives. `pgStorage()` from `@slaw/storage-pg`, `pgliteStorage()` from `@slaw/storage-pg/pglite`. */
  storage: Storage
  /** Serialises checkouts; default in-process locks (one node). `redisLocks()` for several nodes. */
  locks?: LockProvider | undefined
  /** Extra secret providers; `local_encrypted` is always there. */
  secretProviders?: SecretProvider[] | undefined
  /** Agent adapters; an agent's `adapterType` must name one of them. */
  adapters?: AgentAdapter[] | undefined
  /** Reports to a control tower when given. */
  tower?: TowerClient | undefined
  /** `true` for pino JSON logs at info, `false` for none, pino options, or your own pino logger. */
  logger?: boolean | LoggerOptions | PinoLogger | undefined
  /** Bootstrap Operator token (SVC_OPERATOR_KEY). Without it, the first start creates one. */
  operatorKey?: string | undefined
  /** Told the created bootstrap token once, when one was created. Default: logged at warn. */
  onOperatorKeyCreated?: ((token: string) => void) | undefined
  /** Largest accepted request body in bytes; larger answers 413. Default 1 MiB. */
  bodyLimit?: number | undefined
  /** Run migrations at start. Default true. */
  migrate?: boolean | undefined
  /** Background job runner settings, or false to run no jobs on this node. */
  jobs?: JobRunnerOptions | false | undefined
  /**
   * The master key that encrypts local secrets and HMAC trigger secrets: SVC_MASTER_KEY's text (32
   * bytes as 64 hex digits or base64), raw bytes, a `MasterKey`, or `{ file }` (read, or generated
   * once with mode 0600; a file open to group or others is refused). Every node of one instance
   * must share it. Default: `master.key` in an embedded storage's data directory; a memory storage
   * gets a random key for this process only; any other storage without one (PostgreSQL) refuses to
   * start (`MasterKeyRequiredError`). A given or file key's id is recorded in storage: a node
   * holding another key refuses to start (`MasterKeyMismatchError`).
   */
  masterKey?: MasterKeyOption | undefined
  /**
   * Failed authentications allowed per client address before it answers 429 `rate_limited` with
   * Retry-After: `{ max (30), windowSec (60), maxTracked (10,000) }`, or false for no limit. Counted
   * per node, in memory; valid keys are never counted or slowed.
   */
  authFailureLimit?: AuthFailureLimitOptions | false | undefined
  /**
   * How long a console sign-in session lasts, in hours (above 0, at most 720). Default 12;
   * `slaw start` reads SVC_CONSOLE_SESSION_HOURS (docs/console.md).
   */
  consoleSessionHours?: number | undefined
  /** Deadline of one secret-provider call (resolve, store, health, list). Default 10 s. */
  secretProviderTimeoutMs?: number | undefined
  /** Routine schedule polling on this node, or false for none. Off too when `jobs` is false. */
  scheduler?: RoutineSchedulerOptions | false | undefined
  /** The clock services, schedules, replay windows, job leases and run deadlines read. Default: the system clock; tests pass a fake one. */
  now?: (() => Date) | undefined
  /**
   * Prometheus metrics at `GET /metrics`: on the API's port for an Operator key (default), on a
   * port of its own without a key (`{ port }`, SVC_METRICS_PORT), or `false` for none. docs/operations.md.
   */
  metrics?: MetricsOptions | false | undefined
  /**
   * Heartbeat run engine: concurrency caps (per agent, default 1; per squad; per instance; enforced
   * across nodes), liveness continuations and retention. `slaw start` reads SVC_MAX_CONCURRENT_RUNS,
   * SVC_MAX_CONCURRENT_RUNS_PER_SQUAD, SVC_MAX_CONCURRENT_RUNS_PER_AGENT, SVC_RUN_RETENTION_DAYS and
   * SVC_RUN_OUTPUT_RETENTION_DAYS (docs/heartbeats.md).
   */
  runs?: RunOptions | undefined
  /**
   * The base URL agents call back (SVC_API_URL in the wake environment; env SVC_PUBLIC_URL).
   * Default: the address `listen()` bound; before that (or for a host that never listens) none, and
   * agents get no SVC_API_URL (a warning says so once).
   */
  publicUrl?: string | undefined
  /**
   * The folder skill imports from disk may read (`POST /api/squads/{id}/skills/import`; env
   * SVC_SKILLS_DIR for `slaw start`). Default: none, and imports from disk answer 403
   * `skill_import_disabled`. Symbolic links and anything under the data directory or the master
   * key file are refused even inside it (docs/skills.md).
   */
  skillsDir?: string | undefined
  /**
   * Quotas on routines written by agent keys: `maxAgentRoutinesPerSquad` (default 20; 429
   * `routine_quota_exceeded`) and `minAgentScheduleIntervalSec` (default 300; 400
   * `schedule_too_frequent`). `slaw start` reads SVC_MAX_AGENT_ROUTINES_PER_SQUAD and
   * SVC_MIN_AGENT_SCHEDULE_INTERVAL_SEC (docs/routines.md).
   */
  routines?: RoutineLimits | undefined
  /**
   * Live events (`GET /api/squads/{id}/events`): retention of Last-Event-ID, streams per key,
   * buffer per stream, keep-alive and poll intervals (docs/events.md).
   */
  events?: EventStreamOptions | undefined
  /**
   * Wakes the other nodes' event streams, e.g. `redisEventBroker()` from `@slaw/lock-redis`. Default:
   * the storage's own (PostgreSQL LISTEN/NOTIFY); PGlite, one node, needs none.
   */
  eventBroker?: EventBroker | undefined
}

export interface ListenOptions {
  port?: number
  host?: string
}

export interface SlawInstance {
  /** The fastify app: `inject()` in tests, or register your own routes before `listen()`. */
  readonly app: FastifyInstance
  readonly services: Services
  readonly storage: Storage
  readonly locks: LockProvider
  readonly jobs: JobRunner
  readonly log: PinoLogger
  /** `starting` until the app is ready, `draining` once `close()` began. */
  readonly state: 'starting' | 'ready' | 'draining'
  /** The Operator token created on this start (first start without SVC_OPERATOR_KEY), else undefined. */
  readonly createdOperatorKey: string | undefined
  /** The Prometheus metrics of this instance (undefined with `metrics: false`). */
  readonly metrics: SlawMetrics | undefined
  /** Where `/metrics` listens when it has a port of its own, once `listen()` resolved. */
  readonly metricsAddress: string | undefined
  ready(): Promise<void>
  /** Starts listening; resolves to the address. */
  listen(options?: ListenOptions): Promise<string>
  /** Stops taking requests, finishes in-flight ones, then closes plugins in reverse order. */
  close(): Promise<void>
}

const isKeyFile = (k: MasterKeyOption | undefined): k is { file: string } => typeof k === 'object' && k !== null && 'file' in k && typeof k.file === 'string'

/** Log lines never carry a token, a secret value or an issue body. */
const redactPaths = ['req.headers.authorization', 'req.headers["x-enrollment-secret"]', '*.token', '*.apiKey', '*.value', '*.password', '*.secret', '*.description', '*.body']

function makeLogger(opt: InstanceOptions['logger']): PinoLogger {
  // A logger of the caller's keeps its own settings; its request lines still get a scrubbed URL.
  if (opt && typeof opt === 'object' && 'child' in opt && typeof opt.child === 'function') return (opt as PinoLogger).child({}, { serializers: { req: requestSerializer } })
  if (opt === false || opt === undefined) return pino({ enabled: false })
  const base: LoggerOptions = opt === true ? {} : (opt as LoggerOptions)
  return pino({
    level: 'info',
    ...base,
    serializers: { req: requestSerializer, ...base.serializers },
    redact: { paths: [...redactPaths, ...secretLogPaths, ...((base.redact as { paths?: string[] } | undefined)?.paths ?? [])], censor: '[REDACTED]' },
  })
}

/**
 * Assembles an instance: validates options, fills empty slots with built-ins, initialises plugins
 * in order (storage, locks, secrets, adapters, tower) and closes them in reverse.
 */
export async function createInstance(options: InstanceOptions): Promise<SlawInstance> {
  validatePluginShapes(options)
  const { storage } = options
  const locks = options.locks ?? memoryLocks()
  const log = makeLogger(options.logger)
  const adapters = new Map<string, AgentAdapter>()
  for (const a of options.adapters ?? []) {
    if (adapters.has(a.type)) throw new TypeError(`createInstance: two adapters claim type "${a.type}"`)
    adapters.set(a.type, a)
  }

  const loadedKey = await loadMasterKey(options.masterKey, storage, log)
  const masterKey = loadedKey.key

  let state: SlawInstance['state'] = 'starting'
  let jobs!: JobRunner
  let services!: Services
  const ctx: ServiceContext = {
    storage,
    locks,
    log,
    adapters,
    masterKey,
    // Replaced by the secrets service below; nothing resolves before services exist.
    secrets: { resolve: () => Promise.reject(new Error('services are not built yet')) },
    kickJobs: () => jobs.kick(),
    now: options.now ?? (() => new Date()),
    principalsChanged: () => services.auth.invalidate(),
    towerManagesSkills: () => options.tower?.managesSkills?.() ?? false,
    towerGate: () => options.tower?.gate?.(),
  }
  jobs = new JobRunner(ctx, options.jobs || {})
  services = createServices(ctx, {
    ...(options.secretProviders ? { secretProviders: options.secretProviders } : {}),
    ...(options.secretProviderTimeoutMs !== undefined ? { secretProviderTimeoutMs: options.secretProviderTimeoutMs } : {}),
    ...(options.runs ? { runs: options.runs } : {}),
    ...(options.authFailureLimit !== undefined ? { authFailureLimit: options.authFailureLimit } : {}),
    ...(options.consoleSessionHours !== undefined ? { consoleSessionHours: options.consoleSessionHours } : {}),
    node: { nodeId: jobs.nodeId, watchMs: Math.max(50, Math.floor(jobs.leaseMs / 3)) },
    ...(options.routines ? { routines: options.routines } : {}),
    skillImports: {
      dir: options.skillsDir ?? null,
      // What an import must never read, even inside the skills folder.
      protectedPaths: [storage.dataDir, isKeyFile(options.masterKey) ? options.masterKey.file : undefined].filter((p): p is string => typeof p === 'string'),
    },
  })
  ctx.secrets = services.secrets
  jobs.register('squad_export', (job) => services.exports.runJob(job))
  jobs.register(routineRunJobKind, (job) => services.routines.runJob(job))
  const scheduler = new RoutineScheduler(ctx, services.routines, options.scheduler || {})
  const engine = services.runs.engine
  if (options.publicUrl) engine.apiUrl = options.publicUrl.replace(/\/+$/, '')
  jobs.register(heartbeatRunJob, (job, control) => engine.runJob(job, control))
  jobs.register(runDeadlineJob, (job) => engine.deadlineJob(job))
  jobs.every(runRetentionJob, options.runs?.retentionIntervalMs ?? 3_600_000, () => engine.retentionJob())
  if (options.tower) services.tower.attach(options.tower)

  if (options.migrate !== false) await storage.migrate()
  // Refuses to start with a key other than the one the data is encrypted under.
  await checkMasterKey(storage, loadedKey, log)
  const { createdToken } = await services.auth.bootstrapOperatorKey(options.operatorKey)
  if (createdToken) {
    if (options.onOperatorKeyCreated) options.onOperatorKeyCreated(createdToken)
    else log.warn('An Operator key was created for this new instance; it is shown once by `slaw start`. Pass onOperatorKeyCreated to receive it.')
  }

  const eventHub = new EventHub(storage, options.eventBroker ?? storage.eventBroker, options.events ?? {}, log)
  const runOutput = new RunOutputRecorder(storage, options.events?.runOutput ?? {}, log)
  engine.onRunOutput(runOutput.onOutput)
  const metrics =
    options.metrics === false
      ? undefined
      : new SlawMetrics({ storage, tower: options.tower, eventStreams: () => eventHub.size, runs: engine, maxSquads: options.metrics ? options.metrics.maxSquads : undefined, now: options.now })
  const metricsPort = options.metrics ? options.metrics.port : undefined
  const app = await buildApp({
    services,
    logger: log,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    state: () => state,
    ...(options.tower ? { tower: options.tower } : {}),
    version: slawVersion,
    health: () => checkHealth({ storage, locks, tower: options.tower, jobs: options.jobs === false ? undefined : jobs }),
    ...(metrics ? { metrics: { metrics, route: metricsPort === undefined } } : {}),
    events: { hub: eventHub, storage },
  })
  // Background work (the job runner: wakes, runs, routine runs, exports; the schedule poller) starts
  // with the instance, not with HTTP: a host that only calls services gets its runs too.
  if (options.jobs !== false) jobs.start()
  if (options.jobs !== false && options.scheduler !== false) scheduler.start()
  app.addHook('onReady', async () => {
    if (options.tower) await options.tower.start({ storage, log, slawVersion, skills: () => services.tower.skills() })
    state = 'ready'
  })

  let closing: Promise<void> | undefined
  let metricsAddress: string | undefined
  const instance: SlawInstance = {
    app,
    services,
    storage,
    locks,
    jobs,
    log,
    get state() {
      return state
    },
    createdOperatorKey: createdToken,
    ready: async () => {
      await app.ready()
    },
    metrics,
    async listen(listenOptions = {}) {
      const address = await app.listen({ port: listenOptions.port ?? 3100, host: listenOptions.host ?? '127.0.0.1' })
      // Agents call back where the instance listens unless a public URL was given.
      if (!options.publicUrl) engine.apiUrl = address
      if (metrics && metricsPort !== undefined) {
        try {
          metricsAddress = await metrics.listen(metricsPort, options.metrics ? options.metrics.host : undefined)
        } catch (err) {
          await app.close()
          throw err
        }
      }
      return address
    },
    get metricsAddress() {
      return metricsAddress
    },
    close() {
      closing ??= (async () => {
        state = 'draining'
        await app.close()
        await scheduler.stop()
        await metrics?.close()
        await jobs.stop()
        await runOutput.close()
        if (options.tower) await options.tower.close().catch((err) => log.warn({ err }, 'tower client close failed'))
        for (const a of [...adapters.values()].reverse()) await a.close?.().catch((err) => log.warn({ err }, 'adapter close failed'))
        await services.secretProviders.registry.close(log)
        await locks.close().catch((err) => log.warn({ err }, 'lock provider close failed'))
        await storage.close()
      })()
      return closing
    },
  }
  return instance
}
