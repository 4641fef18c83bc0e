import http from 'node:http'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import type { Test } from 'tap'
import { startStandIn } from '@slaw/core/testing'

/**
 * A double of the protocol's public reference tower (Botfather), written from its published wire
 * shapes and behaviour, not from our tower or our schemas, so slaw is tried against what that
 * tower really accepts and answers (docs/tower.md lists what was checked):
 *
 * - lenient input: keys it does not know are dropped;
 * - nullable keys are required: a record whose nullable key is missing fails the whole batch (400);
 * - its own length limits (names 255, titles 500, models 128, statuses 32);
 * - the poll answer carries no `enrollmentId`; a key is minted on the first poll after approval;
 * - a revoked instance loses its key and is answered 401; enrolling again goes back to pending;
 * - the enrollment secret comes in the body or in `x-botfather-enrollment-secret`;
 * - a full skill has no `hasFiles` and no `updatedAt`;
 * - `acknowledgedCursor` echoes the batch's cursor; a fact re-sent with the same localId replaces it.
 */

type Check = ((v: unknown) => boolean) & { nullable?: boolean }
type Shape = Record<string, Check>

const text =
  (max: number): Check =>
  (v) =>
    typeof v === 'string' && v.length <= max
const localId: Check = (v) => typeof v === 'string' && v.length >= 1 && v.length <= 64
const count: Check = (v) => Number.isInteger(v) && (v as number) >= 0
const time: Check = (v) => typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) && !Number.isNaN(Date.parse(v))
const oneOf =
  (...values: string[]): Check =>
  (v) =>
    typeof v === 'string' && values.includes(v)
const flatObject: Check = (v) => !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => ['string', 'number', 'boolean'].includes(typeof x))
/** Present, and null or valid: the reference tower's `.nullable()` without `.optional()`. */
const nullable = (check: Check): Check => Object.assign((v: unknown) => v === null || check(v), { nullable: true })

const upsertShapes: Record<string, Shape> = {
  squad: { localId, name: text(255), status: text(32), budgetMonthlyCents: nullable(count), spentMonthlyCents: count, updatedAt: time },
  agent: {
    localId,
    squadLocalId: localId,
    name: text(255),
    role: text(64),
    status: text(32),
    adapterType: text(64),
    budgetMonthlyCents: nullable(count),
    spentMonthlyCents: count,
    title: nullable(text(255)),
    reportsToLocalId: nullable(localId),
    updatedAt: time,
  },
  squad_skill: {
    localId,
    squadLocalId: localId,
    key: text(200),
    name: text(255),
    description: nullable(text(4000)),
    sourceType: text(64),
    trustLevel: text(64),
    updatedAt: time,
  },
  project: { localId, squadLocalId: localId, name: text(255), status: text(32), updatedAt: time },
  issue: {
    localId,
    squadLocalId: localId,
    projectLocalId: nullable(localId),
    title: text(500),
    status: text(32),
    assigneeAgentLocalId: nullable(localId),
    updatedAt: time,
  },
}

const factShapes: Record<string, Shape> = {
  cost_event: {
    localId,
    squadLocalId: localId,
    agentLocalId: nullable(localId),
    issueLocalId: nullable(localId),
    projectLocalId: nullable(localId),
    provider: text(64),
    biller: nullable(text(64)),
    billingType: oneOf('metered_api', 'subscription_included', 'subscription_overage'),
    model: text(128),
    inputTokens: count,
    cachedInputTokens: count,
    outputTokens: count,
    costCents: count,
    occurredAt: time,
  },
  run_event: {
    localId,
    agentLocalId: localId,
    squadLocalId: localId,
    status: oneOf('queued', 'running', 'succeeded', 'failed', 'cancelled'),
    startedAt: nullable(time),
    finishedAt: nullable(time),
    occurredAt: time,
  },
  activity_event: {
    localId,
    squadLocalId: nullable(localId),
    action: oneOf('agent.created', 'agent.deleted', 'squad.created', 'cost.reported', 'budget_soft_threshold_crossed', 'budget_hard_threshold_crossed', 'squad.budget_updated', 'agent.budget_updated'),
    entityRef: nullable(text(255)),
    occurredAt: time,
  },
}

/** Fields the reference tower defaults when absent (zod `.default()`). */
const factDefaults: Record<string, Record<string, unknown>> = {
  run_event: { inputTokens: 0, outputTokens: 0 },
  activity_event: { details: {} },
}

class Refused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** The record's known fields (unknown ones dropped), or a 400 naming the first bad one. */
function parseRecord(shapes: Record<string, Shape>, raw: unknown, where: string): Record<string, unknown> {
  const record = raw as Record<string, unknown>
  const shape = record && typeof record === 'object' ? shapes[String(record.type)] : undefined
  if (!shape) throw new Refused(400, 'invalid_payload', `${where}.type: invalid discriminator value`)
  const out: Record<string, unknown> = { type: record.type, ...(factDefaults[String(record.type)] ?? {}) }
  for (const [field, check] of Object.entries(shape)) {
    const present = Object.prototype.hasOwnProperty.call(record, field)
    if (!present || !check(record[field])) throw new Refused(400, 'invalid_payload', `${where}.${field}: ${present ? 'invalid value' : 'Required'}`)
    out[field] = record[field]
  }
  for (const field of Object.keys(factDefaults[String(record.type)] ?? {})) {
    if (record[field] === undefined) continue
    if (field === 'details' ? !flatObject(record[field]) : !count(record[field])) throw new Refused(400, 'invalid_payload', `${where}.${field}: invalid value`)
    out[field] = record[field]
  }
  return out
}

interface ReferenceSkill {
  key: string
  name: string
  markdown: string
  files?: Array<{ path: string; content: string; encoding: 'utf8' | 'base64' }>
  trustLevel?: string
}

interface InstanceRow {
  id: string
  machineId: string
  instanceId: string
  status: 'pending' | 'ok' | 'rejected' | 'revoked'
  keyHash: string | null
  capabilities: Record<string, unknown>
  directives: unknown[]
}

interface EnrollmentRow {
  enrollmentId: string
  instance: InstanceRow
  state: 'pending' | 'active' | 'rejected' | 'revoked'
}

export interface ReferenceTowerOptions {
  /** Approve every enrollment at once (an auto-approve rule). Default false: an administrator approves. */
  autoApprove?: boolean
  /** BOTFATHER_ENROLLMENT_SECRET: POST /enroll must present it. */
  enrollmentSecret?: string
}

export interface ReferenceTower {
  url: string
  /** Every request: path, status answered, and the request headers (secret values included, for assertions). */
  requests: Array<{ path: string; status: number; headers: http.IncomingHttpHeaders; at: number }>
  count(path: string, status?: number): number
  /** Administrator actions. */
  approve(instanceId: string): void
  revoke(instanceId: string): void
  queueDirective(instanceId: string, directive: unknown): void
  publishSkill(skill: ReferenceSkill): void
  /** Answers every call to paths ending in `path` with `status` until cleared (a tower partly down). */
  failPath(path: string, status: number | null): void
  instance(instanceId: string): InstanceRow | undefined
  entities(type: string): Array<Record<string, unknown>>
  facts(type: string): Array<Record<string, unknown>>
  close(): Promise<void>
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex')

export async function referenceTower(t: Test, options: ReferenceTowerOptions = {}): Promise<ReferenceTower> {
  const instances = new Map<string, InstanceRow>()
  const enrollments = new Map<string, EnrollmentRow>()
  const entities = new Map<string, Record<string, unknown>>()
  const facts = new Map<string, Record<string, unknown>>()
  const skills = new Map<string, ReferenceSkill & { version: number; updatedAt: string }>()
  const failures = new Map<string, number>()
  const requests: ReferenceTower['requests'] = []
  let catalogVersion = 0

  const mintKey = (row: InstanceRow): string => {
    const key = `bf_${randomBytes(24).toString('hex')}`
    row.keyHash = hashKey(key)
    row.status = 'ok'
    return key
  }

  const newEnrollment = (row: InstanceRow, state: EnrollmentRow['state']): EnrollmentRow => {
    const e: EnrollmentRow = { enrollmentId: randomUUID(), instance: row, state }
    enrollments.set(e.enrollmentId, e)
    return e
  }

  const enroll = (body: Record<string, unknown>, headers: http.IncomingHttpHeaders) => {
    if (options.enrollmentSecret !== undefined) {
      const given = body.enrollmentSecret ?? headers['x-botfather-enrollment-secret']
      if (given !== options.enrollmentSecret) throw new Refused(401, 'enrollment_secret_required', 'enrollment secret required')
    }
    const identity = body.instance as Record<string, unknown> | undefined
    const valid =
      body.protocolVersion === 1 &&
      !!identity &&
      text(128)(identity.machineId) &&
      String(identity.machineId).length >= 8 &&
      typeof identity.instanceId === 'string' &&
      /^[a-zA-Z0-9_-]{1,64}$/.test(identity.instanceId) &&
      text(255)(identity.hostname) &&
      oneOf('darwin', 'linux', 'win32')(identity.os) &&
      text(32)(identity.slawVersion)
    if (!valid) throw new Refused(400, 'invalid_payload', 'enroll: invalid body')
    const id = `${String(identity!.machineId)}/${String(identity!.instanceId)}`
    let row = instances.get(id)
    if (row && row.status === 'ok') {
      // Re-enrollment of an admitted instance rotates its key.
      const apiKey = mintKey(row)
      return { status: 200, body: { enrollmentId: newEnrollment(row, 'active').enrollmentId, state: 'active', apiKey, pollIntervalSec: 10 } }
    }
    if (!row) {
      row = { id: randomUUID(), machineId: String(identity!.machineId), instanceId: String(identity!.instanceId), status: 'pending', keyHash: null, capabilities: {}, directives: [] }
      instances.set(id, row)
    }
    row.status = 'pending'
    row.capabilities = (body.capabilities as Record<string, unknown>) ?? {}
    if (options.autoApprove) {
      const apiKey = mintKey(row)
      return { status: 200, body: { enrollmentId: newEnrollment(row, 'active').enrollmentId, state: 'active', apiKey, pollIntervalSec: 10 } }
    }
    return { status: 202, body: { enrollmentId: newEnrollment(row, 'pending').enrollmentId, state: 'pending', pollIntervalSec: 10 } }
  }

  const poll = (body: Record<string, unknown>) => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
    if (body.protocolVersion !== 1 || typeof body.enrollmentId !== 'string' || !uuid.test(body.enrollmentId)) {
      throw new Refused(400, 'invalid_payload', 'poll: invalid body')
    }
    const e = enrollments.get(body.enrollmentId)
    if (!e) throw new Refused(404, 'enrollment_not_found', 'enrollment not found')
    // No enrollmentId in this answer: the reference tower leaves it out.
    if (e.state !== 'active') return { status: 200, body: { state: e.state, pollIntervalSec: 10 } }
    if (e.instance.keyHash) return { status: 200, body: { state: 'active', pollIntervalSec: 10 } }
    return { status: 200, body: { state: 'active', apiKey: mintKey(e.instance), pollIntervalSec: 10 } }
  }

  const authenticate = (headers: http.IncomingHttpHeaders): InstanceRow => {
    const auth = headers.authorization ?? ''
    const key = auth.startsWith('Bearer ') ? auth.slice(7) : ''
    if (!key) throw new Refused(401, 'unauthorized', 'missing bearer token')
    const row = [...instances.values()].find((i) => i.keyHash === hashKey(key))
    if (!row) throw new Refused(401, 'unauthorized', 'invalid api key')
    return row
  }

  const heartbeat = (row: InstanceRow, body: Record<string, unknown>) => {
    const counts = body.counts as Record<string, unknown> | undefined
    const spend = body.spend as Record<string, unknown> | undefined
    const valid =
      body.protocolVersion === 1 &&
      time(body.sentAt) &&
      oneOf('ok', 'degraded')(body.status) &&
      count(body.uptimeSec) &&
      !!counts &&
      ['squads', 'agents', 'activeRuns', 'openIssues'].every((k) => count(counts[k])) &&
      !!spend &&
      count(spend.todayCents) &&
      count(spend.monthCents) &&
      Object.prototype.hasOwnProperty.call(body, 'lastEventCursor') &&
      (body.lastEventCursor === null || typeof body.lastEventCursor === 'string')
    if (!valid) throw new Refused(400, 'invalid_payload', 'heartbeat: invalid body')
    const directives = row.directives.splice(0)
    const applied = typeof body.appliedSkillCatalogVersion === 'number' ? body.appliedSkillCatalogVersion : 0
    if (catalogVersion > applied) directives.push({ kind: 'skills_updated', catalogVersion })
    return { status: 200, body: { acknowledged: true, directives } }
  }

  const sync = (row: InstanceRow, body: Record<string, unknown>) => {
    const cursor = body.batchCursor
    if (body.protocolVersion !== 1 || !time(body.sentAt) || typeof cursor !== 'string' || cursor.length < 1 || cursor.length > 128) {
      throw new Refused(400, 'invalid_payload', 'sync: invalid envelope')
    }
    const upserts = ((body.upserts as unknown[]) ?? []).map((u, i) => parseRecord(upsertShapes, u, `upserts.${i}`))
    const parsedFacts = ((body.facts as unknown[]) ?? []).map((f, i) => parseRecord(factShapes, f, `facts.${i}`))
    // Validated whole before anything is stored: one bad record refuses the batch.
    for (const u of upserts) entities.set(`${row.id}:${String(u.type)}:${String(u.localId)}`, u)
    let stored = 0
    for (const f of parsedFacts) {
      const key = `${row.id}:${String(f.localId)}`
      if (JSON.stringify(facts.get(key)) !== JSON.stringify(f)) stored++
      facts.set(key, f)
    }
    const accepted = { upserts: upserts.length, facts: stored, deduplicated: parsedFacts.length - stored }
    return { status: 200, body: { acknowledgedCursor: cursor, accepted, directives: row.directives.splice(0) } }
  }

  const skillBody = (s: ReferenceSkill & { version: number }) => {
    const files = s.files ?? []
    const contentHash = createHash('sha256').update(s.markdown).update(JSON.stringify(files)).digest('hex')
    return { key: s.key, slug: s.key, name: s.name, description: null, category: null, trustLevel: s.trustLevel ?? 'markdown_only', version: s.version, contentHash, files }
  }

  const route = (method: string, path: string, body: Record<string, unknown>, headers: http.IncomingHttpHeaders) => {
    if (method === 'POST' && path === '/enroll') return enroll(body, headers)
    if (method === 'POST' && path === '/enroll/poll') return poll(body)
    const row = authenticate(headers)
    if (method === 'POST' && path === '/heartbeat') return heartbeat(row, body)
    if (method === 'POST' && path === '/sync') return sync(row, body)
    if (method === 'POST' && path === '/manifest') return { status: 200, body: { inSync: true, resyncTypes: [] } }
    if (method === 'GET' && path === '/skills') {
      const list = [...skills.values()].map((s) => {
        const { files, ...descriptor } = skillBody(s)
        return { ...descriptor, hasFiles: files.length > 0, metadata: {}, updatedAt: s.updatedAt }
      })
      return { status: 200, body: { catalogVersion, skills: list } }
    }
    const skill = method === 'GET' && /^\/skills\/[^/]+$/.test(path) ? skills.get(decodeURIComponent(path.slice('/skills/'.length))) : undefined
    if (skill) return { status: 200, body: { ...skillBody(skill), markdown: skill.markdown, metadata: {} } }
    if (method === 'GET' && path.startsWith('/skills/')) throw new Refused(404, 'skill_not_found', 'skill not found')
    throw new Refused(404, 'not_found', 'not found')
  }

  const server = await startStandIn((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!.replace(/^\/api\/ingest\/v1/, '')
      const answer = (status: number, payload: unknown) => {
        requests.push({ path, status, headers: req.headers, at: Date.now() })
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(payload))
      }
      const failing = [...failures.entries()].find(([p]) => path.endsWith(p))
      if (failing) return answer(failing[1], { error: 'injected failure', code: 'internal_error' })
      try {
        let raw = Buffer.concat(chunks)
        if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw)
        const body = raw.length ? (JSON.parse(raw.toString()) as Record<string, unknown>) : {}
        const out = route(req.method ?? 'GET', path, body, req.headers)
        answer(out.status, out.body)
      } catch (err) {
        if (err instanceof Refused) answer(err.status, { error: err.message, code: err.code })
        else answer(400, { error: err instanceof Error ? err.message : String(err), code: 'invalid_payload' })
      }
    })
  })
  const { url, close } = server
  t.teardown(close)
  const byInstanceId = (instanceId: string) => [...instances.values()].find((i) => i.instanceId === instanceId)
  const ofType = (map: Map<string, Record<string, unknown>>, type: string) => [...map.values()].filter((r) => r.type === type)
  return {
    url,
    requests,
    count: (path, status) => requests.filter((r) => r.path === path && (status === undefined || r.status === status)).length,
    approve(instanceId) {
      const row = byInstanceId(instanceId)
      const pending = [...enrollments.values()].filter((e) => e.instance === row && e.state === 'pending')
      for (const e of pending) e.state = 'active'
      if (row && pending.length) row.status = 'ok'
    },
    revoke(instanceId) {
      const row = byInstanceId(instanceId)
      if (!row) return
      row.status = 'revoked'
      row.keyHash = null
      newEnrollment(row, 'revoked')
    },
    queueDirective: (instanceId, directive) => byInstanceId(instanceId)?.directives.push(directive),
    publishSkill(skill) {
      const previous = skills.get(skill.key)
      skills.set(skill.key, { ...skill, version: (previous?.version ?? 0) + 1, updatedAt: new Date().toISOString() })
      catalogVersion++
    },
    failPath(path, status) {
      if (status === null) failures.delete(path)
      else failures.set(path, status)
    },
    instance: byInstanceId,
    entities: (type) => ofType(entities, type),
    facts: (type) => ofType(facts, type),
    close,
  }
}
