import { Transaction, type DatabaseConnection, type Dialect, type Driver } from 'kysely'

/**
 * A view of a Kysely transaction whose queries go to its connection as soon as they are made.
 * Kysely hands a transaction's connection to one query at a time, so `Promise.all` of reads in a
 * transaction cost one round trip each; postgres.js pipelines the queries given to one connection
 * (one write, one round trip), and PGlite runs them in order. Nothing else changes: it is a Kysely
 * `Transaction` (`isTransaction`, no nested `transaction()`) over the same connection, with the same
 * plugins and commit-or-rollback, and a query after the transaction ended still fails.
 */
export async function pipelined<DB>(trx: Transaction<DB>, dialect: Dialect): Promise<Transaction<DB>> {
  const executor = trx.getExecutor()
  // The transaction's connection, free at this point: nothing has run on it but `begin`.
  const connection = await executor.provideConnection(async (c) => c)
  return new Transaction<DB>({
    config: { dialect },
    dialect,
    driver: noDriver,
    executor: executor.withConnectionProvider({ provideConnection: <T>(consume: (c: DatabaseConnection) => Promise<T>) => consume(connection) }),
  })
}

const refuse = () => Promise.reject(new Error('a transaction view opens no connection or transaction of its own'))

/** The view is never asked for a connection, a transaction or a shutdown: those belong to the Kysely it came from. */
const noDriver: Driver = {
  init: async () => {},
  acquireConnection: refuse,
  beginTransaction: refuse,
  commitTransaction: refuse,
  rollbackTransaction: refuse,
  releaseConnection: refuse,
  destroy: async () => {},
}
