import './formats.js'
import { Value } from '@sinclair/typebox/value'
import type { TObject, TSchema } from '@sinclair/typebox'
import {
  ActivityEventFact,
  AgentUpsert,
  CostEventFact,
  IssueUpsert,
  MAX_FACTS,
  MAX_UPSERTS,
  ProjectUpsert,
  RunEventFact,
  SquadSkillUpsert,
  SquadUpsert,
  type Fact,
  type Upsert,
} from '@slaw/core/ingest'
import type { OutboxEntry } from '@slaw/core'

/**
 * The only shapes that ever leave the instance: each wire type's own fields, picked one by one from
 * the outbox payload and checked against the shared schema. Anything else in a payload (an issue's
 * identifier, a field a newer core adds) stays behind, and a row that does not fit is not sent.
 */
const upsertSchemas: Record<string, TObject> = {
  squad: SquadUpsert,
  agent: AgentUpsert,
  squad_skill: SquadSkillUpsert,
  project: ProjectUpsert,
  issue: IssueUpsert,
}
const factSchemas: Record<string, TObject> = {
  cost_event: CostEventFact,
  run_event: RunEventFact,
  activity_event: ActivityEventFact,
}

/** Display texts are capped on the wire; a longer name is cut rather than the row dropped. */
const TEXT_MAX = 1000

export interface WireOptions {
  /** False: issue titles are replaced by the issue identifier. */
  reportIssueTitles: boolean
}

export type WireItem = { kind: 'upsert'; key: string; value: Upsert } | { kind: 'fact'; value: Fact }

/** True when the wire field may be null (`Nullable` / `Maybe`). */
function isNullable(field: TSchema): boolean {
  return Array.isArray(field.anyOf) && field.anyOf.some((member: TSchema) => member.type === 'null')
}

/**
 * The wire type's fields, and only those. A nullable field the payload lacks is sent as null: the
 * reference tower rejects a batch whose nullable keys are missing (docs/ingest-protocol.md), so the
 * rule holds whoever built the payload.
 */
function pick(schema: TObject, payload: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [field, fieldSchema] of Object.entries(schema.properties)) {
    const v = payload[field]
    if (v !== undefined) out[field] = v
    else if (isNullable(fieldSchema)) out[field] = null
  }
  return out
}

function capTexts(o: Record<string, unknown>): void {
  for (const field of ['name', 'title']) {
    const v = o[field]
    if (typeof v === 'string' && v.length > TEXT_MAX) o[field] = v.slice(0, TEXT_MAX)
  }
}

/**
 * One wire item from a payload, or a reason it cannot be sent. `type` comes from the payload (core
 * writes it) or, failing that, from the row's entity type.
 */
export function toWire(kind: 'upsert' | 'fact', payload: Record<string, unknown>, options: WireOptions): WireItem | { skip: string } {
  const type = typeof payload.type === 'string' ? payload.type : undefined
  if (!type) return { skip: 'no type' }
  const schema = kind === 'upsert' ? upsertSchemas[type] : factSchemas[type]
  if (!schema) return { skip: `${kind} type "${type}" is not part of ingest v1` }
  const value = pick(schema, payload)
  if (type === 'issue' && !options.reportIssueTitles) {
    const identifier = payload.identifier
    // Never fall back to the title: without an identifier the row is not sent.
    if (typeof identifier !== 'string' || !identifier) return { skip: 'issue without identifier while issue titles are not reported' }
    value.title = identifier
  }
  if (kind === 'upsert') capTexts(value)
  if (!Value.Check(schema, value)) {
    const first = Value.Errors(schema, value).First()
    return { skip: `${type} does not match the wire schema${first ? ` (${first.path || '/'}: ${first.message})` : ''}` }
  }
  return kind === 'upsert' ? { kind, key: `${type}:${String(value.localId)}`, value: value as Upsert } : { kind, value: value as Fact }
}

export interface Batch {
  upserts: Upsert[]
  facts: Fact[]
  /** seq of the last outbox row the batch covers (sent or skipped); null when it covers none. */
  lastSeq: string | null
  /** Outbox rows covered. */
  rows: number
  skipped: Array<{ seq: string; reason: string }>
}

/**
 * Fills one sync batch from outbox rows in order, stopping before the row that would take it past
 * 2000 upserts or 5000 facts. Several upserts of one entity collapse into the latest (the tower keeps
 * the newest by updatedAt anyway), so a burst of edits costs one slot.
 */
export function fillBatch(rows: OutboxEntry[], options: WireOptions, limits = { upserts: MAX_UPSERTS, facts: MAX_FACTS }): Batch {
  const upserts = new Map<string, Upsert>()
  const facts: Fact[] = []
  const skipped: Batch['skipped'] = []
  let lastSeq: string | null = null
  let count = 0
  for (const row of rows) {
    const item = toWire(row.kind, row.payload, options)
    if ('skip' in item) {
      skipped.push({ seq: row.seq, reason: item.skip })
    } else if (item.kind === 'upsert') {
      if (!upserts.has(item.key) && upserts.size >= limits.upserts) break
      upserts.delete(item.key)
      upserts.set(item.key, item.value)
    } else {
      if (facts.length >= limits.facts) break
      facts.push(item.value)
    }
    lastSeq = row.seq
    count++
  }
  return { upserts: [...upserts.values()], facts, lastSeq, rows: count, skipped }
}

/** The cursor the protocol carries: the outbox seq, zero-padded to 20 digits so it also sorts as text. */
export function padCursor(seq: string): string {
  return seq.padStart(20, '0')
}

/** The outbox seq behind a padded cursor ('0' for none). */
function unpadCursor(cursor: string | null | undefined): string {
  if (!cursor) return '0'
  const s = cursor.replace(/^0+/, '')
  return s || '0'
}

/** a > b for decimal strings of any length. */
export function seqGreater(a: string, b: string): boolean {
  const x = unpadCursor(a)
  const y = unpadCursor(b)
  return x.length !== y.length ? x.length > y.length : x > y
}
