import { sql, type Kysely } from 'kysely'
import type { TestApi } from './instance.js'

/**
 * Outbox rows as written, in write order. Read straight from the table: the outbox publishes a row
 * only once every older transaction on the server has finished, and the test server is shared.
 */
export async function outboxRows(api: TestApi): Promise<Array<{ kind: string; entityType: string; entityId: string; payload: Record<string, any> }>> {
  const db = (api.instance.storage as unknown as { db: Kysely<unknown> }).db
  const { rows } = await sql<{ kind: string; entityType: string; entityId: string; payload: Record<string, any> }>`
    select kind, entity_type as "entityType", entity_id as "entityId", payload from outbox order by id`.execute(db)
  return rows
}
