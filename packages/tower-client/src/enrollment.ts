import { ENROLLMENT_STATES, type EnrollResponse, type EnrollmentState } from '@slaw/core/ingest'
import { IngestError, type IngestHttp } from './http.js'
import { hostName, isValidInstanceId, machineIdFor, newInstanceId, newSalt, osName } from './identity.js'
import type { Reporter } from './reporter.js'
import type { EnrollmentRecord, IdentityState } from './state.js'

type EnrollAnswer = Omit<EnrollResponse, 'enrollmentId'> & { enrollmentId?: string }

/**
 * Who this instance is, and its enrollment with the tower: token-less enroll, then polls while
 * pending. The key the tower hands out is stored with the enrollment and never logged.
 */
export class Enrollment {
  /** When the last poll was sent (polls go every pollIntervalSec while pending). */
  lastPoll = 0

  constructor(private readonly r: Reporter) {}

  identity(): IdentityState {
    return this.r.store.data.identity!
  }

  /** Generates the identity once (salt, machine id, instance id) and keeps the configured overrides. */
  async ensureIdentity(): Promise<void> {
    const { store, options } = this.r
    const id = store.data.identity
    const storedInstanceId = id?.instanceId && isValidInstanceId(id.instanceId) ? id.instanceId : undefined
    const instanceId = options.instanceId ?? storedInstanceId ?? newInstanceId()
    const salt = id?.salt ?? newSalt()
    const machineId = options.machineId ?? id?.machineId ?? machineIdFor(salt)
    const changed = !id || id.instanceId !== instanceId || id.machineId !== machineId || id.salt !== salt
    if (changed) await store.save({ identity: { salt, machineId, instanceId } })
  }

  async enroll(http: IngestHttp, url: string, previous: EnrollmentRecord | undefined): Promise<EnrollmentRecord> {
    const { options, ctx } = this.r
    const id = this.identity()
    const secret = options.enrollmentSecret
    const body = {
      protocolVersion: options.protocolVersion,
      instance: { machineId: id.machineId, instanceId: id.instanceId, hostname: hostName(), os: osName(), slawVersion: ctx.slawVersion.slice(0, 32) },
      capabilities: { reportIssueTitles: options.reportIssueTitles, liveStream: options.liveStream },
      ...(secret ? { enrollmentSecret: secret } : {}),
    }
    // Both spellings of the secret header: ours and the reference tower's.
    const headers = secret ? { 'x-enrollment-secret': secret, 'x-botfather-enrollment-secret': secret } : undefined
    const res = await http.post<EnrollAnswer>('/enroll', body, { signal: this.r.signal, ...(headers ? { headers } : {}) })
    return this.record(url, previous, res.body, 'enroll')
  }

  async poll(http: IngestHttp, e: EnrollmentRecord): Promise<EnrollmentRecord> {
    this.lastPoll = Date.now()
    const body = { protocolVersion: this.r.options.protocolVersion, enrollmentId: e.enrollmentId }
    const res = await http.post<EnrollAnswer>('/enroll/poll', body, { signal: this.r.signal })
    return this.record(e.towerUrl, e, res.body, 'poll')
  }

  /**
   * The tower refused the instance key (a 401): the key is lost. Back to enrolling; in enforce
   * mode the API stays gated until the tower approves again (docs/ingest-protocol.md).
   */
  async credentialLost(e: EnrollmentRecord | undefined): Promise<void> {
    if (e) await this.r.store.save({ enrollment: { ...e, enrollmentId: null, state: null, apiKey: null, everActive: false } })
  }

  /** The tower rejected or revoked this instance: final, no automatic re-enrollment. */
  async refused(url: string, e: EnrollmentRecord | undefined, state: 'rejected' | 'revoked'): Promise<void> {
    const id = this.identity()
    const base: EnrollmentRecord = e ?? { towerUrl: url, machineId: id.machineId, instanceId: id.instanceId, enrollmentId: null, state: null, pollIntervalSec: 10, apiKey: null, everActive: false }
    await this.r.store.save({ enrollment: { ...base, state, apiKey: null } })
  }

  /** The tower no longer knows the enrollment being polled: enroll again, from scratch. */
  async forgotten(e: EnrollmentRecord | undefined): Promise<void> {
    if (e) await this.r.store.save({ enrollment: { ...e, enrollmentId: null, state: null, apiKey: null } })
  }

  private async record(url: string, previous: EnrollmentRecord | undefined, body: EnrollAnswer, via: 'enroll' | 'poll'): Promise<EnrollmentRecord> {
    // The reference tower's poll answer has no enrollmentId: the id is the one polled for.
    const polledId = via === 'poll' ? previous?.enrollmentId : undefined
    const answeredId = typeof body?.enrollmentId === 'string' ? body.enrollmentId : polledId
    if (!body || !answeredId || !ENROLLMENT_STATES.includes(body.state as EnrollmentState)) {
      throw new IngestError(502, 'invalid_response', `${via}: the tower answered without an enrollment`)
    }
    const id = this.identity()
    const apiKey = typeof body.apiKey === 'string' && body.apiKey ? body.apiKey : null
    let state: EnrollmentState | null = body.state
    let enrollmentId: string | null = answeredId
    if (state === 'active' && !apiKey && via === 'poll') {
      // The key of this enrollment was handed out and never reached us: enroll again (key recovery).
      state = null
      enrollmentId = null
    }
    const record: EnrollmentRecord = {
      towerUrl: url,
      machineId: id.machineId,
      instanceId: id.instanceId,
      enrollmentId,
      state,
      pollIntervalSec: Number.isInteger(body.pollIntervalSec) && body.pollIntervalSec > 0 ? body.pollIntervalSec : 10,
      apiKey: state === 'active' ? apiKey : null,
      everActive: (previous?.everActive ?? false) || (state === 'active' && !!apiKey),
    }
    await this.r.store.save({ enrollment: record })
    if (state === 'pending') this.lastPoll = Date.now()
    const log = this.r.ctx.log
    if (record.state === 'active' && record.apiKey && previous?.apiKey !== record.apiKey) {
      log.info({ enrollmentId: record.enrollmentId }, 'enrolled with the control tower')
    } else if (record.state !== previous?.state) {
      log.info({ enrollmentId: record.enrollmentId, state: record.state }, 'tower enrollment state')
    }
    return record
  }
}
