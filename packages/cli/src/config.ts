import type { TowerClientOptions } from '@slaw/tower-client'
import { parseArgs } from 'node:util'

/** Everything `slaw start` reads, from flags first and the environment second (docs/runtime-contract.md; every variable in docs/configuration.md). */
export interface StartConfig {
  port: number
  host: string
  operatorKey: string | undefined
  databaseUrl: string | undefined
  redisUrl: string | undefined
  dataDir: string
  masterKey: string | undefined
  /** SVC_AUTH_FAILURE_LIMIT (0: no limit) and SVC_AUTH_FAILURE_WINDOW_SEC: failed authentications per client address. */
  authFailureLimit: { max: number; windowSec: number } | false
  /** SVC_HTTP_EGRESS_LOOPBACK, _PRIVATE (default 1) and _LINK_LOCAL (default 0): where the http adapter may connect. */
  httpEgress: { loopback: boolean; privateNetworks: boolean; linkLocal: boolean }
  logLevel: string
  /** SVC_METRICS_PORT: `/metrics` on a port of its own (no key); unset: on the API port for an Operator key. */
  metricsPort: number | undefined
  /** SVC_METRICS_HOST, default 127.0.0.1. */
  metricsHost: string
  /** SVC_METRICS_MAX_SQUADS: squads in the per-squad figures of `/metrics`; unset: core's default (50). */
  metricsMaxSquads: number | undefined
  /** SVC_CONSOLE (default on; `off` or `0`): serve the operator console at `/` (@slaw/console). */
  console: boolean
  /** SVC_CONSOLE_SESSION_HOURS: how long a console sign-in lasts; unset: 12 h. */
  consoleSessionHours: number | undefined
  tower:
    | {
        url: string
        mode: 'enforce' | 'advisory'
        instanceId: string | undefined
        heartbeatSec: number
        syncSec: number
        enrollmentSecret: string | undefined
        /** SVC_TOWER_LIVE_STREAM=1: offer the live channel (capability `liveStream`). */
        liveStream: boolean
      }
    | undefined
}

export class ConfigError extends Error {}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${raw}")`)
  return n
}

function flag(name: string, raw: string | undefined): boolean {
  const value = raw?.trim().toLowerCase() ?? ''
  if (value === '' || value === '0' || value === 'false') return false
  if (value === '1' || value === 'true') return true
  throw new ConfigError(`${name} must be 1 or 0 (got "${raw}")`)
}

/** Cadences from the environment: 1 s to 1 h (the tower's set_sync_interval is bounded 10 s to 1 h on its own). */
const CADENCE_MIN_SEC = 1
const CADENCE_MAX_SEC = 3600

export function readStartConfig(argv: string[], env: NodeJS.ProcessEnv): StartConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-level': { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  })
  const databaseUrl = env.DATABASE_URL?.trim() || undefined
  // postgres.js reads any URL as a server address (`memory://` would dial a host named "memory"):
  // say what DATABASE_URL takes instead of failing later with a connection error.
  if (databaseUrl && !/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    throw new ConfigError(
      `DATABASE_URL must be a postgres:// or postgresql:// URL (got "${databaseUrl.split(':')[0]}:..."); ` +
        'for the embedded database leave it unset and set SVC_DATA_DIR (memory:// keeps everything in memory)',
    )
  }
  const towerUrl = env.SVC_TOWER_URL?.trim()
  const mode = env.SVC_TOWER_MODE?.trim() || 'enforce'
  if (mode !== 'enforce' && mode !== 'advisory') throw new ConfigError(`SVC_TOWER_MODE must be enforce or advisory (got "${mode}")`)
  return {
    port: int('PORT', values.port ?? env.PORT, 3100, 0, 65535),
    host: values.host ?? env.HOST ?? '127.0.0.1',
    operatorKey: env.SVC_OPERATOR_KEY || undefined,
    databaseUrl,
    redisUrl: env.REDIS_URL || undefined,
    dataDir: values['data-dir'] ?? env.SVC_DATA_DIR ?? './.slaw',
    masterKey: env.SVC_MASTER_KEY || undefined,
    authFailureLimit: authFailureLimit(env),
    httpEgress: {
      loopback: env.SVC_HTTP_EGRESS_LOOPBACK === undefined ? true : flag('SVC_HTTP_EGRESS_LOOPBACK', env.SVC_HTTP_EGRESS_LOOPBACK),
      privateNetworks: env.SVC_HTTP_EGRESS_PRIVATE === undefined ? true : flag('SVC_HTTP_EGRESS_PRIVATE', env.SVC_HTTP_EGRESS_PRIVATE),
      linkLocal: flag('SVC_HTTP_EGRESS_LINK_LOCAL', env.SVC_HTTP_EGRESS_LINK_LOCAL),
    },
    logLevel: values['log-level'] ?? env.LOG_LEVEL ?? 'info',
    metricsPort: env.SVC_METRICS_PORT ? int('SVC_METRICS_PORT', env.SVC_METRICS_PORT, 0, 0, 65535) : undefined,
    metricsHost: env.SVC_METRICS_HOST || '127.0.0.1',
    metricsMaxSquads: env.SVC_METRICS_MAX_SQUADS ? int('SVC_METRICS_MAX_SQUADS', env.SVC_METRICS_MAX_SQUADS, 0, 0, 10_000) : undefined,
    console: consoleSwitch(env.SVC_CONSOLE),
    consoleSessionHours: consoleSessionHours(env.SVC_CONSOLE_SESSION_HOURS),
    tower: towerUrl
      ? {
          url: towerUrl,
          mode,
          instanceId: env.SVC_INSTANCE_ID || undefined,
          heartbeatSec: int('SVC_TOWER_HEARTBEAT_SEC', env.SVC_TOWER_HEARTBEAT_SEC, 60, CADENCE_MIN_SEC, CADENCE_MAX_SEC),
          syncSec: int('SVC_TOWER_SYNC_SEC', env.SVC_TOWER_SYNC_SEC, 30, CADENCE_MIN_SEC, CADENCE_MAX_SEC),
          enrollmentSecret: env.SVC_TOWER_ENROLLMENT_SECRET || undefined,
          liveStream: flag('SVC_TOWER_LIVE_STREAM', env.SVC_TOWER_LIVE_STREAM),
        }
      : undefined,
  }
}

function consoleSwitch(raw: string | undefined): boolean {
  const value = raw?.trim().toLowerCase() ?? ''
  if (value === '' || value === 'on' || value === '1' || value === 'true') return true
  if (value === 'off' || value === '0' || value === 'false') return false
  throw new ConfigError(`SVC_CONSOLE must be on or off (got "${raw}")`)
}

function consoleSessionHours(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0 || n > 720) throw new ConfigError(`SVC_CONSOLE_SESSION_HOURS must be a number of hours above 0 and at most 720 (got "${raw}")`)
  return n
}

function authFailureLimit(env: Record<string, string | undefined>): StartConfig['authFailureLimit'] {
  const max = int('SVC_AUTH_FAILURE_LIMIT', env.SVC_AUTH_FAILURE_LIMIT, 30, 0, 1_000_000)
  if (max === 0) return false
  return { max, windowSec: int('SVC_AUTH_FAILURE_WINDOW_SEC', env.SVC_AUTH_FAILURE_WINDOW_SEC, 60, 1, 86_400) }
}

/** The tower client's options for `slaw start`: without SVC_TOWER_URL it starts disconnected. */
export function towerClientOptions(tower: StartConfig['tower']): TowerClientOptions {
  if (!tower) return {}
  return {
    url: tower.url,
    mode: tower.mode,
    instanceId: tower.instanceId,
    heartbeatSec: tower.heartbeatSec,
    syncSec: tower.syncSec,
    enrollmentSecret: tower.enrollmentSecret,
    liveStream: tower.liveStream,
  }
}
