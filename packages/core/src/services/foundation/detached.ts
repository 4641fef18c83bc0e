import { AsyncResource } from 'node:async_hooks'

// Created at module load, outside any request: its async context carries no open transaction.
const root = new AsyncResource('slaw.detached')

/**
 * Wraps `fn` so that it runs outside the async context of whoever calls it. Background work that
 * is started from inside a request's transaction (a job runner poll kicked after a write, a group
 * commit's next batch) would otherwise inherit that context, and the storage's AsyncLocalStorage
 * would run its queries inside that transaction, or fail on it once it has committed.
 */
export function detached<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args: A) => root.runInAsyncScope(fn, undefined, ...args)
}
