/**
 * The part of a test runner's test object that the contract kits in `@slaw/core/testing` use.
 *
 * It is structural, so core depends on no test runner: a tap `Test` fits as it is, and another
 * runner fits through a small wrapper. Every method mirrors tap's meaning:
 *
 * - `test(name, options, fn)` runs `fn` as a subtest; `options.skip`, when a string, skips it with
 *   that reason. The kits await the returned value when it is a promise.
 * - `ok(value, message)` passes when `value` is truthy.
 * - `equal(found, wanted, message)` passes when `found === wanted`.
 * - `same(found, wanted, message)` passes when `found` and `wanted` are deeply equal.
 * - `teardown(fn)` runs `fn` (and awaits it) after the test ends, pass or fail.
 *
 * @example
 * ```ts
 * import t from 'tap'
 * import { lockContract } from '@slaw/core/testing'
 * lockContract(t, () => myLocks())
 * ```
 */
export interface ContractTest {
  test(name: string, options: ContractTestOptions, fn: (t: ContractTest) => Promise<void>): unknown
  ok(value: unknown, ...message: ContractMessage): unknown
  equal(found: unknown, wanted: unknown, ...message: ContractMessage): unknown
  same(found: unknown, wanted: unknown, ...message: ContractMessage): unknown
  teardown(fn: () => unknown): unknown
}

/** An optional message, spelt as a tuple so that tap's `(…, ...[msg, extra])` signatures fit. */
export type ContractMessage = [] | [message: string]

export interface ContractTestOptions {
  /** A reason to skip the subtest, or false to run it. */
  skip?: string | false
}
