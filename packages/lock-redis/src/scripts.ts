import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

/** A Lua script run by its SHA1, sent in full only when the server does not know it yet. */
export interface LuaScript {
  readonly source: string
  readonly sha: string
}

function lua(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') }
}

/** KEYS[1] lock key, ARGV[1] token. Deletes the key only if the token still owns it; 1 if deleted. */
export const compareAndDelete = lua("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")

/** KEYS[1] lock key, ARGV[1] token, ARGV[2] ttl in ms. Extends the key only if the token still owns it; 1 if extended. */
export const compareAndExpire = lua("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0")

export async function runScript(client: Redis, script: LuaScript, keys: string[], args: Array<string | number>): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args)
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err
    return await client.eval(script.source, keys.length, ...keys, ...args)
  }
}
