import { isDeepStrictEqual } from 'node:util'
import type { ContractMessage, ContractTest, ContractTestOptions } from '@slaw/core/testing'

/** What one of a kit's checks (a subtest) recorded. */
export interface RecordedCheck {
  name: string
  skipped: string | false
  /** The messages of the assertions that failed (and of an error the check threw). */
  failures: string[]
  passes: number
}

/**
 * A ContractTest that records instead of reporting, so a test can run a kit against a deliberately
 * broken adapter and assert which checks fail. Assertions made outside a subtest count as failures
 * of a check named "(top level)".
 */
export function recordingTest(): { t: ContractTest; checks: RecordedCheck[]; finish(): Promise<void> } {
  const checks: RecordedCheck[] = []
  const node = (record: RecordedCheck, teardowns: Array<() => unknown>): ContractTest => {
    const assert = (pass: boolean, message: ContractMessage, fallback: string): void => {
      if (pass) record.passes += 1
      else record.failures.push(message[0] ?? fallback)
    }
    return {
      async test(name: string, options: ContractTestOptions, fn: (t: ContractTest) => Promise<void>) {
        const check: RecordedCheck = { name, skipped: options.skip ?? false, failures: [], passes: 0 }
        checks.push(check)
        if (check.skipped) return
        const own: Array<() => unknown> = []
        try {
          await fn(node(check, own))
        } catch (err) {
          check.failures.push(`threw: ${err instanceof Error ? err.message : String(err)}`)
        }
        for (const td of own.reverse()) await td()
      },
      ok: (value, ...message) => assert(Boolean(value), message, 'ok'),
      equal: (found, wanted, ...message) => assert(found === wanted, message, `equal ${String(found)} ${String(wanted)}`),
      same: (found, wanted, ...message) => assert(isDeepStrictEqual(found, wanted), message, 'same'),
      teardown: (fn) => {
        teardowns.push(fn)
      },
    }
  }
  const top: RecordedCheck = { name: '(top level)', skipped: false, failures: [], passes: 0 }
  const rootTeardowns: Array<() => unknown> = []
  return {
    t: node(top, rootTeardowns),
    checks,
    async finish() {
      for (const td of rootTeardowns.reverse()) await td()
      if (top.failures.length) checks.push(top)
    },
  }
}
