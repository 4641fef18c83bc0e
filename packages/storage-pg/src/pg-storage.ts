import postgres, { type Sql } from 'postgres'
import { PostgresJsDialect } from './postgres-js-dialect.js'
import type { Storage } from '@slaw/core'
import { KyselyStorage } from './kysely-storage.js'
import { pgNotifyBroker } from './event-broker.js'

export interface PgStorageOptions {
  /** postgres://… connection string. Ignored when `client` is given. */
  url?: string
  /** A postgres.js client you own; slaw never closes it. Configure int8 and date parsing as below. */
  client?: Sql
  /** Pool size when slaw creates the client. Default 10. */
  max?: number
}

/** postgres.js settings slaw relies on: int8 as JS numbers (cents, counts), dates as 'YYYY-MM-DD'. */
export const postgresTypes = {
  bigint: { to: 20, from: [20], serialize: (x: number | bigint | string) => String(x), parse: (x: string) => Number(x) },
  date: { to: 1082, from: [1082], serialize: (x: string) => x, parse: (x: string) => x },
}

/** Storage on PostgreSQL through postgres.js, for one node or many sharing one database. */
export function pgStorage(options: PgStorageOptions): Storage & { readonly db: KyselyStorage['db'] } {
  if (!options.client && !options.url) throw new TypeError('pgStorage: give url or client')
  const owned = !options.client
  const client =
    options.client ??
    postgres(options.url!, {
      max: options.max ?? 10,
      types: postgresTypes,
      onnotice: () => undefined,
      // slaw binds no array parameters, so postgres.js need not look array types up on every new
      // connection; that lookup is also a promise nobody awaits, which crashes the process with an
      // unhandled rejection when the connection drops during it (e.g. right after a failover).
      fetch_types: false,
      connection: { application_name: 'slaw' },
    })
  // Kysely's destroy() ends the client through the dialect; a caller's client must stay open.
  const forDialect = owned ? client : (new Proxy(client, { get: (t, p) => (p === 'end' ? async () => undefined : Reflect.get(t, p)) }) as Sql)
  const dialect = new PostgresJsDialect(forDialect)
  const max = options.max ?? 10
  return new KyselyStorage({
    name: 'postgres',
    dialect,
    poolStats: () => ({ max, inUse: Math.min(max, dialect.busy()) }),
    eventBroker: pgNotifyBroker(client),
    // A first start's migrations go as one script (KyselyStorage.migrate).
    scripts: true,
  })
}
