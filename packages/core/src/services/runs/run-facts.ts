import type { NewOutboxEntry } from '../../records/activity.js'
import type { HeartbeatRun } from '../../records.js'

/**
 * The tower's `run_event` fact for a run (docs/ingest-protocol.md): upserted by localId, so each status
 * change re-sends it. A local `timed_out` is sent as `failed`; every nullable key is sent, as null
 * when empty. Never output, errors or config.
 */
export function runEventFact(run: HeartbeatRun, occurredAt: Date): NewOutboxEntry {
  return {
    kind: 'fact',
    entityType: 'run_event',
    entityId: run.id,
    squadId: run.squadId,
    payload: {
      type: 'run_event',
      localId: run.id,
      agentLocalId: run.agentId,
      squadLocalId: run.squadId,
      status: run.status === 'timed_out' ? 'failed' : run.status,
      startedAt: run.startedAt ? run.startedAt.toISOString() : null,
      finishedAt: run.finishedAt ? run.finishedAt.toISOString() : null,
      inputTokens: run.usage.inputTokens,
      outputTokens: run.usage.outputTokens,
      occurredAt: occurredAt.toISOString(),
    },
  }
}
