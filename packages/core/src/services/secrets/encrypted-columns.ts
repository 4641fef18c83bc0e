import type { EncryptedColumnRef, Storage } from '../../contracts/storage.js'
import { localEncryptedType, localSecretAad } from './local-encrypted.js'
import type { MasterKey } from './master-key.js'

/**
 * A column holding master-key envelopes, with the AAD its values were encrypted with. Master-key
 * rotation re-encrypts every registered column; a module that stores values with `ctx.masterKey`
 * registers its column here (`registerEncryptedColumn`) so rotation never leaves one behind.
 */
export interface EncryptedColumn extends EncryptedColumnRef {
  /** For reports, e.g. `secret_versions.ref`. */
  name: string
  /** The AAD the value was encrypted with, from the row's `aadColumns`. */
  aad(row: Record<string, unknown>): string
}

const registry: EncryptedColumn[] = [
  {
    name: 'secret_versions.ref',
    table: 'secret_versions',
    idColumns: ['secret_id', 'version'],
    column: 'ref',
    aadColumns: ['secret_id', 'version'],
    where: { provider: localEncryptedType },
    keyIdColumn: 'key_id',
    aad: (r) => localSecretAad(String(r.secret_id), Number(r.version)),
  },
  // Webhook HMAC secrets of routine triggers (migration 0007; AAD as routine-signatures.ts writes it).
  { name: 'routine_triggers.secret_ciphertext', table: 'routine_triggers', idColumns: ['id'], column: 'secret_ciphertext', aadColumns: ['id'], aad: (r) => `routine_trigger:${String(r.id)}` },
  // Per-agent webhook signing secrets of http agents (migration 0005; AAD as agents.ts writes it).
  { name: 'agents.webhook_secret', table: 'agents', idColumns: ['id'], column: 'webhook_secret', aadColumns: ['id'], aad: (r) => `webhook-secret:${String(r.id)}` },
]

export function registerEncryptedColumn(column: EncryptedColumn): void {
  if (registry.some((c) => c.name === column.name)) throw new TypeError(`encrypted column ${column.name} is registered twice`)
  registry.push(column)
}

export function encryptedColumns(): readonly EncryptedColumn[] {
  return registry
}

export interface RotationReport {
  fromKeyId: string
  toKeyId: string
  columns: Array<{ name: string; rewritten: number }>
}

/**
 * Re-encrypts every registered column from `from` to `to` and records `to` as the instance's key,
 * in one transaction: a failure (a value that does not decrypt under `from`) changes nothing.
 * Safe to run again after success (nothing is left under `from`). Stop every node first: a node
 * still holding the old key cannot read the new envelopes.
 */
export async function rotateMasterKey(storage: Storage, from: MasterKey, to: MasterKey, batch = 500): Promise<RotationReport> {
  if (from.keyId === to.keyId) throw new Error('The old and the new master key are the same key.')
  return storage.transaction(async (tx) => {
    const stored = await tx.secrets.getMasterKeyId()
    if (stored !== undefined && stored !== from.keyId && stored !== to.keyId) {
      throw new Error(`The instance's data is encrypted under master key ${stored}, which is neither the old key (${from.keyId}) nor the new one (${to.keyId}).`)
    }
    const columns: RotationReport['columns'] = []
    for (const column of registry) {
      let rewritten = 0
      for (;;) {
        const rows = await tx.secrets.scanEncrypted(column, from.keyId, batch)
        if (!rows.length) break
        for (const row of rows) {
          const aad = column.aad(row.aad)
          await tx.secrets.writeEncrypted(column, row.id, to.encrypt(from.decrypt(row.envelope, aad), aad), to.keyId)
          rewritten++
        }
      }
      columns.push({ name: column.name, rewritten })
    }
    await tx.secrets.setMasterKeyId(to.keyId)
    return { fromKeyId: from.keyId, toKeyId: to.keyId, columns }
  })
}
