import type { Storage } from './storage.js'

/**
 * TowerClient: reports this instance to a control tower (ingest protocol v1), applies its
 * directives and pulls its skills. It reads the outbox the services fill; nothing on a request
 * path ever waits for it.
 */
export interface TowerClient {
  readonly name: string
  start(ctx: TowerClientContext): Promise<void>
  /** Gate decision for `/api/*` requests (enforce mode): undefined lets the request through. */
  gate?(): { code: 'instance_not_enrolled'; message: string } | undefined
  /** Sends what is pending now, instead of at the next tick. */
  syncNow?(): Promise<void>
  status?(): Record<string, unknown>
  close(): Promise<void>
}

export interface TowerClientContext {
  storage: Storage
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void }
  slawVersion: string
}
