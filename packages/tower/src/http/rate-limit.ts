import type { FastifyContextConfig, FastifyRequest } from 'fastify'
import type {} from '@fastify/rate-limit'
import { TowerError } from '../errors.js'
import { bearerToken, hashKey } from '../services/keys.js'

export interface RateLimitPolicy {
  /** Requests allowed per window. */
  max: number
  /** The window, in milliseconds. */
  timeWindowMs: number
}

/**
 * Request rates per tower node (counters live in memory: behind a load balancer each node counts its
 * own). Over the limit: 429 `rate_limited` with `Retry-After` in seconds.
 */
export interface RateLimitOptions {
  /** Authenticated ingest calls, per API key. Default 600 a minute (heartbeats come once a minute). */
  ingest?: RateLimitPolicy
  /** POST /enroll and /enroll/poll, and the live channel's upgrade, per client address. Default 120 a minute. */
  enroll?: RateLimitPolicy
  /** The admin API and everything else, per client address. Default 1200 a minute. */
  admin?: RateLimitPolicy
}

export const defaultRateLimits: Required<RateLimitOptions> = {
  ingest: { max: 600, timeWindowMs: 60_000 },
  enroll: { max: 120, timeWindowMs: 60_000 },
  admin: { max: 1200, timeWindowMs: 60_000 },
}

/** Per key when the request carries one (hashed: no key is kept in memory), else per address. */
export function keyByApiKey(request: FastifyRequest): string {
  const token = bearerToken(request.headers.authorization)
  return token ? `k:${hashKey(token).slice(0, 32)}` : `ip:${request.ip}`
}

export function keyByAddress(request: FastifyRequest): string {
  return `ip:${request.ip}`
}

export function rateLimitedError(_request: FastifyRequest, context: { after: string }): TowerError {
  return new TowerError('rate_limited', `Too many requests; retry in ${context.after}.`)
}

/** A route's `config.rateLimit`, or nothing when rate limiting is off. */
export function routeRateLimit(policy: RateLimitPolicy | null, keyGenerator: (request: FastifyRequest) => string): FastifyContextConfig {
  return policy ? { rateLimit: { max: policy.max, timeWindow: policy.timeWindowMs, keyGenerator } } : {}
}
