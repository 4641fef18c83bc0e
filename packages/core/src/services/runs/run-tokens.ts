import type { MasterKey } from '../secrets/master-key.js'

/**
 * jose is loaded with the first token minted or checked, not at start: an instance that runs no
 * heartbeats never needs it, and it is most of a megabyte of heap (docs/startup-and-memory.md).
 */
let jose: Promise<typeof import('jose')> | undefined
const loadJose = () => (jose ??= import('jose'))

/** Who a run token speaks for. */
export interface RunTokenClaims {
  runId: string
  agentId: string
  squadId: string
}

const issuer = 'slaw'
const audience = 'slaw-api'

/**
 * Run JWTs (HS256, `jose`): minted per heartbeat run, signed with `masterKey.derive('run-token')`
 * (every node shares the master key, so every node accepts every node's tokens). A token names its
 * run (`jti`), agent (`sub`) and squad (`squad`), and expires `timeout + grace + 60 s` after the run
 * starts; the API also refuses it as soon as the run has ended (docs/heartbeats.md).
 */
export class RunTokens {
  private readonly key: Uint8Array

  constructor(masterKey: MasterKey) {
    this.key = masterKey.derive('run-token')
  }

  /** Extra lifetime past timeout + grace: room for the final report after a run's last second. */
  static readonly slackSec = 60

  async mint(claims: RunTokenClaims, issuedAt: Date, lifetimeSec: number): Promise<string> {
    const { SignJWT } = await loadJose()
    const iat = Math.floor(issuedAt.getTime() / 1000)
    return new SignJWT({ squad: claims.squadId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(issuer)
      .setAudience(audience)
      .setSubject(claims.agentId)
      .setJti(claims.runId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + lifetimeSec)
      .sign(this.key)
  }

  /** The claims of a valid, unexpired token signed by this instance; null for anything else. */
  async verify(token: string, at: Date): Promise<RunTokenClaims | null> {
    const { errors: joseErrors, jwtVerify } = await loadJose()
    try {
      const { payload } = await jwtVerify(token, this.key, { issuer, audience, algorithms: ['HS256'], currentDate: at })
      if (typeof payload.sub !== 'string' || typeof payload.jti !== 'string' || typeof payload.squad !== 'string') return null
      return { runId: payload.jti, agentId: payload.sub, squadId: payload.squad }
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null
      throw err
    }
  }

  /** Cheap shape test: three base64url parts, the first a JWT header. */
  static looksLikeJwt(token: string): boolean {
    return token.startsWith('eyJ') && token.split('.').length === 3
  }
}
