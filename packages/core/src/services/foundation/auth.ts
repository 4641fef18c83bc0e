import { SlawError, invalid, notFound } from '../../errors.js'
import type { ApiKeyRecord } from '../../records.js'
import { UniqueViolation } from '../../contracts/storage.js'
import { requireOperator, type Actor } from './actor.js'
import type { ServiceContext } from './context.js'
import { createHmac } from 'node:crypto'
import { hashToken, isUuid, newToken, uuidv7 } from './ids.js'
import { RunTokens } from '../runs/run-tokens.js'
import { AuthFailureLimiter, type AuthFailureLimitOptions } from './auth-failures.js'

/** RFC 7235: the scheme is case-insensitive; the token is a b64token of 16 to 512 characters. */
const bearer = /^Bearer +([A-Za-z0-9._~+/=-]{16,512})$/i

/** The name of the Operator key SVC_OPERATOR_KEY (`operatorKey`) registers: a key its owner chose. */
const chosenKeyName = 'bootstrap (SVC_OPERATOR_KEY)'

/** How long a resolved key stays cached on this node. Revocation through this node is immediate. */
const cacheTtlMs = 2_000

/**
 * Bearer token → Actor. Keys are looked up by the SHA-256 of the token; the token itself is never
 * stored. A short per-node cache keeps the hot path to one lookup every couple of seconds per key.
 */
export class AuthService {
  private readonly cache = new Map<string, { actor: Actor; expiresAt: number; keyExpiresAt: number | null }>()
  private readonly runTokens: RunTokens
  private readonly failures: AuthFailureLimiter | undefined
  private readonly chosenKeyPepper: Buffer

  constructor(
    private readonly ctx: ServiceContext,
    /** Failed authentications allowed per client address (`false`: no limit). */
    failureLimit: AuthFailureLimitOptions | false = {},
  ) {
    this.runTokens = new RunTokens(ctx.masterKey)
    this.chosenKeyPepper = Buffer.from(ctx.masterKey.derive('chosen-operator-key'))
    this.failures = failureLimit === false ? undefined : new AuthFailureLimiter(failureLimit, () => ctx.now().getTime())
  }

  /**
   * Bearer token → Actor. With `client` (the caller's address), failures are counted per address:
   * past the limit the address gets 429 `rate_limited` with `retryAfterSec` (the Retry-After header)
   * instead of a key check, so guessing keys stops. A key this node validated moments ago (in the
   * cache) still passes: valid keys are never slowed, even from an address an attacker shares.
   */
  async authenticate(authorization: string | undefined, runId: string | undefined, client?: string): Promise<Actor> {
    return this.limited(
      client,
      () => this.isCachedKey(authorization),
      () => this.check(authorization, runId),
    )
  }

  /**
   * Runs a credential check under the per-address failure limit: 429 `rate_limited` once `client`
   * is past it (unless `trusted()` says the credential is known good), and a 401 `unauthorized`
   * from `check` counts as a failure. Console sign-in and session cookies use it too.
   */
  async limited<T>(client: string | undefined, trusted: () => boolean, check: () => Promise<T>): Promise<T> {
    if (!this.failures || client === undefined) return check()
    const wait = this.failures.blockedFor(client)
    if (wait > 0 && !trusted()) throw new AuthRateLimitedError(wait)
    try {
      return await check()
    } catch (err) {
      if (err instanceof SlawError && err.code === 'unauthorized') this.failures.fail(client)
      throw err
    }
  }

  /** Whether the header carries a key this node resolved and still holds in its cache. */
  private isCachedKey(authorization: string | undefined): boolean {
    const match = authorization ? bearer.exec(authorization) : null
    if (!match) return false
    const cached = this.cache.get(hashToken(match[1]!))
    const now = this.ctx.now().getTime()
    return Boolean(cached && cached.expiresAt > now && (cached.keyExpiresAt === null || cached.keyExpiresAt > now))
  }

  private async check(authorization: string | undefined, runId: string | undefined): Promise<Actor> {
    const match = authorization ? bearer.exec(authorization) : null
    if (!match) throw new SlawError('unauthorized', 'Send Authorization: Bearer <API key>.')
    if (RunTokens.looksLikeJwt(match[1]!)) return this.authenticateRun(match[1]!, runId)
    const hash = hashToken(match[1]!)
    const now = this.ctx.now().getTime()
    const cached = this.cache.get(hash)
    let actor: Actor
    if (cached && cached.expiresAt > now && (cached.keyExpiresAt === null || cached.keyExpiresAt > now)) {
      actor = cached.actor
    } else {
      const resolved = await this.resolve(hash, match[1]!)
      actor = resolved.actor
      if (this.cache.size > 10_000) this.cache.clear()
      this.cache.set(hash, { actor, expiresAt: now + cacheTtlMs, keyExpiresAt: resolved.keyExpiresAt })
    }
    // Checked after the key: an unauthenticated caller gets 401 whatever else it sent.
    if (runId !== undefined && !isUuid(runId)) throw invalid('/headers/x-svc-run-id', 'X-Svc-Run-Id must be a UUID')
    if (actor.type !== 'agent') return actor
    // An agent stamps only its own runs on what it writes: another agent's run id would forge that
    // run's audit trail (its activity, the issues it touched).
    if (runId !== undefined) {
      const run = await this.ctx.storage.heartbeatRuns.get(runId.toLowerCase())
      if (!run || run.agentId !== actor.agentId || run.squadId !== actor.squadId) throw new SlawError('forbidden', 'X-Svc-Run-Id must name a run of this agent.')
    }
    return { ...actor, runId: runId?.toLowerCase() ?? null }
  }

  /**
   * A run JWT: valid signature and expiry, and its run still `running` (read on every request, never
   * cached, so a token stops working the moment its run ends on any node). The run id of the token
   * is the actor's run id; an X-Svc-Run-Id naming another run is refused.
   */
  private async authenticateRun(token: string, runId: string | undefined): Promise<Actor> {
    const rejected = new SlawError('unauthorized', 'The run token is invalid, expired, or its run has ended.')
    const claims = await this.runTokens.verify(token, this.ctx.now())
    if (!claims) throw rejected
    const run = await this.ctx.storage.heartbeatRuns.get(claims.runId)
    if (!run || run.status !== 'running' || run.agentId !== claims.agentId || run.squadId !== claims.squadId) throw rejected
    const agent = await this.ctx.storage.agents.get(claims.agentId)
    if (!agent || agent.status === 'terminated') throw rejected
    if (runId !== undefined && runId.toLowerCase() !== claims.runId) throw invalid('/headers/x-svc-run-id', 'X-Svc-Run-Id must name the run of the run token')
    return { type: 'agent', agentId: agent.id, squadId: agent.squadId, keyId: `run:${run.id}`, runId: run.id }
  }

  /**
   * The stored hash of a key its owner chose (SVC_OPERATOR_KEY): HMAC-SHA256 under a key derived
   * from the master key. Generated keys are 256-bit random, so their plain SHA-256 cannot be
   * reversed; a chosen one may be guessable, and a dump of the keys table alone must not let anyone
   * test guesses offline.
   */
  private chosenKeyHash(token: string): string {
    return `hmac1:${createHmac('sha256', this.chosenKeyPepper).update(token).digest('hex')}`
  }

  private async resolve(hash: string, token: string): Promise<{ actor: Actor; keyExpiresAt: number | null }> {
    const { storage } = this.ctx
    // Generated keys (and chosen ones stored before keyed hashes) by SHA-256; chosen keys by HMAC.
    let key = (await storage.keys.findByHash(hash)) ?? (await storage.keys.findByHash(this.chosenKeyHash(token)))
    const rejected = new SlawError('unauthorized', 'The API key is unknown, revoked or expired.')
    if (!key || key.revokedAt) throw rejected
    // A chosen key still stored by its plain SHA-256 moves to the keyed form on its first use.
    if (key.kind === 'operator' && key.name === chosenKeyName && key.tokenHash === hash) {
      await storage.keys.rehash(key.id, this.chosenKeyHash(token))
      key = { ...key, tokenHash: this.chosenKeyHash(token) }
    }
    if (key.expiresAt && key.expiresAt.getTime() <= this.ctx.now().getTime()) throw rejected
    const keyExpiresAt = key.expiresAt?.getTime() ?? null
    if (key.kind === 'operator') return { actor: { type: 'operator', keyId: key.id }, keyExpiresAt }
    const agent = key.agentId ? await storage.agents.get(key.agentId) : undefined
    // A terminated agent's keys stop working (docs/authorization.md).
    if (!agent || agent.status === 'terminated') throw rejected
    return { actor: { type: 'agent', agentId: agent.id, squadId: agent.squadId, keyId: key.id, runId: null }, keyExpiresAt }
  }

  /** Drops cached principals, e.g. after a revocation or termination on this node. */
  invalidate(): void {
    this.cache.clear()
  }

  /**
   * Bootstrap (docs/runtime-contract.md): a given token becomes an Operator key; with none given and no
   * Operator key stored, one is created and returned so the caller can print it once.
   */
  async bootstrapOperatorKey(token: string | undefined): Promise<{ createdToken?: string }> {
    // Nodes starting together must not both create a first key: the lock makes one go first.
    return this.ctx.locks.withLock('slaw:bootstrap-operator-key', 30_000, () => this.bootstrapLocked(token))
  }

  private async bootstrapLocked(token: string | undefined): Promise<{ createdToken?: string }> {
    const { storage } = this.ctx
    if (token) {
      if (!bearer.test(`Bearer ${token}`)) throw new Error('SVC_OPERATOR_KEY must be 16-512 characters of [A-Za-z0-9._~+/=-]')
      const hash = this.chosenKeyHash(token)
      let existing = await storage.keys.findByHash(hash)
      const legacy = existing ? undefined : await storage.keys.findByHash(hashToken(token))
      if (legacy && legacy.kind === 'operator' && !legacy.revokedAt) {
        // Stored by an earlier slaw as a plain SHA-256: keyed from now on (the key keeps working).
        await storage.keys.rehash(legacy.id, hash)
        existing = { ...legacy, tokenHash: hash }
      } else if (legacy) existing = legacy
      if (!existing) {
        try {
          await storage.keys.insert({ id: uuidv7(), kind: 'operator', name: chosenKeyName, agentId: null, squadId: null, tokenHash: hash, expiresAt: null })
        } catch (err) {
          // Another node (with in-process locks) inserted the same key first: that is the outcome we want.
          if (!(err instanceof UniqueViolation)) throw err
        }
      } else if (existing.kind !== 'operator' || existing.revokedAt) throw new Error('SVC_OPERATOR_KEY matches a revoked or non-operator key')
      return {}
    }
    if ((await storage.keys.countOperatorKeys()) > 0) return {}
    const created = await this.createOperatorKey({ type: 'system', id: 'bootstrap' }, 'bootstrap')
    return { createdToken: created.token }
  }

  async createOperatorKey(actor: Actor, name: string, expiresAt?: string): Promise<{ key: ApiKeyRecord; token: string }> {
    requireOperator(actor)
    if (!name.trim()) throw invalid('/name', 'name must not be blank')
    let expires: Date | null = null
    if (expiresAt !== undefined) {
      expires = new Date(expiresAt)
      if (Number.isNaN(expires.getTime()) || expires.getTime() <= Date.now()) throw invalid('/expiresAt', 'expiresAt must be a future ISO 8601 timestamp')
    }
    const token = newToken('slaw_op')
    const key = await this.ctx.storage.keys.insert({ id: uuidv7(), kind: 'operator', name: name.trim(), agentId: null, squadId: null, tokenHash: hashToken(token), expiresAt: expires })
    return { key, token }
  }

  async listOperatorKeys(actor: Actor): Promise<ApiKeyRecord[]> {
    requireOperator(actor)
    return (await this.ctx.storage.keys.listOperatorKeys()).filter((k) => !k.revokedAt)
  }

  async revokeOperatorKey(actor: Actor, id: string): Promise<void> {
    requireOperator(actor)
    const key = isUuid(id) ? (await this.ctx.storage.keys.listOperatorKeys()).find((k) => k.id === id && !k.revokedAt) : undefined
    if (!key) throw notFound('Key')
    if (actor.type === 'operator' && actor.keyId === id) throw new SlawError('invalid_state', 'An Operator key cannot revoke itself.')
    await this.ctx.storage.transaction(async (tx) => {
      await tx.keys.revoke(id)
      // The key's console sessions end with it (docs/console.md).
      await tx.consoleSessions.deleteForKey(id)
    })
    this.invalidate()
  }
}

/** 429 for an address past its failed-authentication limit; `retryAfterSec` becomes Retry-After. */
class AuthRateLimitedError extends SlawError {
  constructor(readonly retryAfterSec: number) {
    super('rate_limited', `Too many failed authentications from this address; retry in ${retryAfterSec} s.`)
  }
}
