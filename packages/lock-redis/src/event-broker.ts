import { Redis } from 'ioredis'
import type { EventBroker } from '@slaw/core'

export interface RedisEventBrokerOptions {
  /** Where Redis is, for the clients this broker creates (and closes). Give `url` or `client`. */
  url?: string
  /** A client the caller owns, used to publish (and duplicated to subscribe); never closed here. */
  client?: Redis
  /** The pub/sub channel. Default `'slaw:events'`; nodes of one instance must share it. */
  channel?: string
}

/**
 * Wakes the other nodes' live event streams through Redis pub/sub (instead of PostgreSQL
 * LISTEN/NOTIFY): `createInstance({ eventBroker: redisEventBroker({ url }) })`. Like any broker it
 * carries no events, only "look again": streams read what to send from storage, so a message lost
 * while Redis is away costs latency (the streams' own poll finds the events), never an event.
 * Publishes made while one is on its way are folded into one more.
 */
export function redisEventBroker(options: RedisEventBrokerOptions = {}): EventBroker & { close(): Promise<void> } {
  if (options.url !== undefined && options.client !== undefined) throw new TypeError('redisEventBroker: give url or client, not both')
  const channel = options.channel ?? 'slaw:events'
  const owned = !options.client
  const publisher = options.client ?? new Redis(options.url ?? 'redis://127.0.0.1:6379', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 })
  const subscribers = new Set<Redis>()
  let sending = false
  let again = false
  const send = (): void => {
    sending = true
    again = false
    const done = () => {
      sending = false
      if (again) send()
    }
    const ready = publisher.status === 'wait' ? publisher.connect().catch(() => undefined) : Promise.resolve()
    ready.then(() => publisher.publish(channel, '')).then(done, done)
  }
  return {
    publish() {
      if (sending) again = true
      else send()
    },
    async subscribe(wake) {
      // A subscribed connection can do nothing else: it is a connection of its own.
      const sub = publisher.duplicate({ lazyConnect: true, enableOfflineQueue: true })
      subscribers.add(sub)
      sub.on('message', (from: string) => {
        if (from === channel) wake()
      })
      // After a reconnect notifications may have been missed: look again.
      sub.on('ready', () => wake())
      sub.on('error', () => undefined)
      await sub.subscribe(channel)
      return async () => {
        subscribers.delete(sub)
        await sub.quit().catch(() => sub.disconnect())
      }
    },
    async close() {
      for (const sub of subscribers) await sub.quit().catch(() => sub.disconnect())
      subscribers.clear()
      if (owned) await publisher.quit().catch(() => publisher.disconnect())
    },
  }
}
