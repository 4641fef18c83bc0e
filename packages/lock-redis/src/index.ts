// Public surface of @slaw/lock-redis.
export { redisLocks } from './redis-locks.js'
export type { RedisLocksOptions } from './redis-locks.js'
export { redisEventBroker } from './event-broker.js'
export type { RedisEventBrokerOptions } from './event-broker.js'
