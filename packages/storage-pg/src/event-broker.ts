import type { Sql } from 'postgres'
import type { EventBroker } from '@slaw/core'

/** The channel slaw's nodes NOTIFY on when events may have committed. */
const eventsChannel = 'slaw_events'

/**
 * Wakes event readers on every node with PostgreSQL LISTEN/NOTIFY. The NOTIFY is sent after the
 * writer's commit, by itself, not inside the writing transaction: a NOTIFY in a transaction holds a
 * cluster-wide lock through its commit, which would serialise every write. Publishes made while one
 * is on its way are folded into one more, sent at least `minIntervalMs` after the last, so a burst of
 * commits costs two notifications and a busy node at most one every 5 ms. Nothing
 * is carried: readers read the events from storage, so a lost notification costs latency (until
 * the next one, or the readers' own poll), never an event.
 */
export function pgNotifyBroker(client: Sql, minIntervalMs = 5): EventBroker {
  let sending = false
  let again = false
  let last = 0
  const send = (): void => {
    sending = true
    again = false
    last = Date.now()
    client`select pg_notify(${eventsChannel}, '')`
      .catch(() => undefined)
      .finally(() => {
        if (!again) {
          sending = false
          return
        }
        // At most one NOTIFY per node every few milliseconds, however many commits.
        setTimeout(send, Math.max(0, last + minIntervalMs - Date.now())).unref()
      })
  }
  return {
    publish() {
      if (sending) again = true
      else send()
    },
    async subscribe(wake) {
      // postgres.js listens on a connection of its own and listens again after a reconnect; the
      // second callback runs on every (re)connect, when notifications may have been missed.
      const listener = await client.listen(
        eventsChannel,
        () => wake(),
        () => wake(),
      )
      return async () => {
        await listener.unlisten().catch(() => undefined)
      }
    },
  }
}
