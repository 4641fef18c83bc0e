import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import type { ContractTest, ContractTestOptions } from './contract-test.js'

/**
 * The part of node:test's `TestContext` the kits use: its own subtests (which node:test runs one
 * after another) and `after` for teardowns. Structural, so core does not import node:test.
 */
export interface NodeTestContext {
  test(name: string, options: { skip?: string | boolean }, fn: (t: NodeTestContext) => void | Promise<void>): Promise<unknown>
  after(fn: () => unknown): void
}

/**
 * Runs a contract kit under node:test: each check is a subtest of `t`, and a failed assertion fails
 * that check (node:assert, so a check stops at its first failure).
 *
 * @example
 * ```ts
 * import { test } from 'node:test'
 * import { nodeTestContract, secretProviderContract } from '@slaw/core/testing'
 * test('my provider keeps the contract', (t) => secretProviderContract(nodeTestContract(t), () => myProvider()))
 * ```
 */
export function nodeTestContract(t: NodeTestContext): ContractTest {
  return {
    test: (name: string, options: ContractTestOptions, fn: (t: ContractTest) => Promise<void>) => t.test(name, { skip: options.skip || false }, (sub) => fn(nodeTestContract(sub))),
    ok: (value, ...message) => assert.ok(value, message[0]),
    equal: (found, wanted, ...message) => assert.equal(found, wanted, message[0]),
    same: (found, wanted, ...message) => assert.deepStrictEqual(found, wanted, message[0]),
    teardown: (fn) => t.after(fn),
  }
}

/** A `ContractTest` that runs every check inside the one test that called it, and `done()`. */
export interface CollectingContractTest extends ContractTest {
  /** Waits for every check, then throws one error naming each failed check and its messages. */
  done(): Promise<void>
  /** Failed checks and their messages, by check name. */
  readonly failures: ReadonlyMap<string, string[]>
  /** Checks skipped, with their reasons. */
  readonly skipped: ReadonlyArray<{ name: string; reason: string }>
}

/**
 * For runners whose tests cannot start subtests while they run (vitest, jest, mocha): the kit's checks
 * run one after another inside the calling test, every failure is collected (a check goes on after a
 * failed assertion, as under tap), and `done()` fails the test with all of them at once.
 *
 * @example
 * ```ts
 * import { test } from 'vitest'
 * import { collectingContractTest, secretProviderContract } from '@slaw/core/testing'
 * test('my provider keeps the contract', async () => {
 *   const t = collectingContractTest()
 *   await secretProviderContract(t, () => myProvider())
 *   await t.done()
 * }, 120_000)
 * ```
 */
export function collectingContractTest(): CollectingContractTest {
  const failures = new Map<string, string[]>()
  const skipped: Array<{ name: string; reason: string }> = []
  // Checks run one at a time, in the order the kit asks for them, whether or not it awaits each.
  let queue: Promise<void> = Promise.resolve()
  const make = (path: string[], teardowns: Array<() => unknown>): ContractTest => {
    const fail = (message: string) => {
      const key = path.join(' > ') || '(outside a check)'
      failures.set(key, [...(failures.get(key) ?? []), message])
    }
    return {
      test(name, options, fn) {
        const run = async () => {
          if (options.skip) {
            skipped.push({ name: [...path, name].join(' > '), reason: options.skip })
            return
          }
          const own: Array<() => unknown> = []
          try {
            await fn(make([...path, name], own))
          } catch (error) {
            failures.set([...path, name].join(' > '), [...(failures.get([...path, name].join(' > ')) ?? []), `threw ${error instanceof Error ? (error.stack ?? error.message) : inspect(error)}`])
          } finally {
            for (const teardown of own.reverse()) await teardown()
          }
        }
        // A subtest started inside a running check runs within it, not after the whole queue.
        if (path.length > 0) return run()
        queue = queue.then(run)
        return queue
      },
      ok(value, ...message) {
        if (!value) fail(message[0] ?? 'expected a truthy value')
      },
      equal(found, wanted, ...message) {
        if (found !== wanted) fail(`${message[0] ?? 'equal'}: found ${inspect(found)}, wanted ${inspect(wanted)}`)
      },
      same(found, wanted, ...message) {
        try {
          assert.deepStrictEqual(found, wanted)
        } catch {
          fail(`${message[0] ?? 'same'}: found ${inspect(found, { depth: 6 })}, wanted ${inspect(wanted, { depth: 6 })}`)
        }
      },
      teardown(fn) {
        teardowns.push(fn)
      },
    }
  }
  const root = make([], [])
  return {
    ...root,
    failures,
    skipped,
    async done() {
      await queue
      if (failures.size === 0) return
      const lines = [...failures].map(([check, messages]) => `- ${check}\n${messages.map((m) => `    ${m}`).join('\n')}`)
      throw new Error(`${failures.size} contract check(s) failed:\n${lines.join('\n')}`)
    },
  }
}
