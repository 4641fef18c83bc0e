import { IngestError } from './http.js'
import type { Reporter } from './reporter.js'
import type { RejectionRecord } from './state.js'

/**
 * Parks what cannot go through so the rest flows (docs/ingest-protocol.md): a record the tower
 * refused (400) or a skill this instance cannot apply. Counted and shown in GET /api/tower
 * (`rejectedCount`, `lastRejection`) and logged; never dropped silently, never retried blindly.
 */
export async function recordRejection(r: Reporter, rejection: Omit<RejectionRecord, 'at'>): Promise<void> {
  const last: RejectionRecord = { ...rejection, at: new Date().toISOString() }
  const count = (r.store.data.rejections?.count ?? 0) + 1
  await r.store.save({ rejections: { count, last } })
  const { code, type, localId, message } = rejection
  r.ctx.log.error({ code, type, localId, error: message }, 'the tower refused a record; it is parked and the rest goes on')
}

/** Parks the record a refusal isolated (`item` undefined: an empty batch was refused). */
export function parkRecord(r: Reporter, err: unknown, item: { type: string; localId: string } | undefined): Promise<void> {
  return recordRejection(r, {
    code: err instanceof IngestError ? err.code : 'invalid_record',
    type: item?.type ?? 'batch',
    localId: item?.localId ?? '',
    message: err instanceof Error ? err.message : String(err),
  })
}
