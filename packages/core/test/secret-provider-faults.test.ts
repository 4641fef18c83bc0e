import t, { type Test } from 'tap'
import { SecretProviderError, type SecretProvider } from '@slaw/core'
import { expectProviderFaults, expectSecretProviderError, type ContractTest } from '@slaw/core/testing'

// The fault checks against failures reported well (nothing fails) and badly: each bad report fails
// exactly the assertion that names its fault.

const value = 'fault-value-5e1c'

/** A ContractTest that records the messages of failed assertions instead of reporting to tap. */
function recorder(): { t: ContractTest; failed: string[] } {
  const failed: string[] = []
  const t: ContractTest = {
    test: () => Promise.reject(new Error('not used by the fault checks')),
    ok: (ok, ...message) => void (ok || failed.push(message[0] ?? 'ok')),
    equal: (found, wanted, ...message) => void (found === wanted || failed.push(message[0] ?? 'equal')),
    same: () => failed.push('not used by the fault checks'),
    teardown: () => undefined,
  }
  return { t, failed }
}

const failed = async (call: () => Promise<unknown>) => {
  const run = recorder()
  await expectSecretProviderError(run.t, call, { what: 'resolve, down', code: 'unavailable', message: /cannot reach/, value })
  return run.failed.map((m) => m.replace(/ \(.*$/s, ''))
}

void t.test('expectSecretProviderError fails exactly the assertion its fault breaks', async (t) => {
  t.same(await failed(() => Promise.reject(new SecretProviderError('unavailable', 'cannot reach 127.0.0.1'))), [], 'a well-made error passes')
  t.same(await failed(() => Promise.resolve('the value')), ['resolve, down: a SecretProviderError', 'resolve, down: code unavailable', 'resolve, down: says why'], 'a call that succeeds')
  t.same(await failed(() => Promise.reject(new Error('cannot reach 127.0.0.1'))), ['resolve, down: a SecretProviderError', 'resolve, down: code unavailable'], 'a plain Error')
  t.same(await failed(() => Promise.reject(new SecretProviderError('timeout', 'cannot reach 127.0.0.1'))), ['resolve, down: code unavailable'], 'another code')
  t.same(await failed(() => Promise.reject(new SecretProviderError('unavailable', 'down'))), ['resolve, down: says why'], 'a message that does not say why')
  t.same(
    await failed(() => Promise.reject(new SecretProviderError('unavailable', `cannot reach 127.0.0.1 storing ${value}`))),
    ['resolve, down: no value in the message, stack or properties'],
    'the value in the message',
  )
  const request = Object.assign(new Error('ECONNREFUSED'), { request: { body: 'no value, still a request' } })
  t.same(await failed(() => Promise.reject(new SecretProviderError('unavailable', 'cannot reach 127.0.0.1', { cause: request }))), ['resolve, down: no cause'], 'a cause')
})

type Mode = 'ok' | 'hang' | 'forbid'
const messageOf = { hang: 'no answer within 300 ms', forbid: 'access denied (HTTP 403)', down: 'cannot reach 127.0.0.1 (ECONNREFUSED)' }
const codeOf = { hang: 'timeout', forbid: 'access_denied', down: 'unavailable' } as const
const messages = { hanging: /no answer within 300 ms/, forbidden: /access denied \(HTTP 403\)/, down: /ECONNREFUSED/ }

/** A provider over a pretend backend, reporting each fault well unless `bad` says how not to. */
function providerOver(backend: { mode: Mode }, bad: { healthOk?: boolean; vague?: keyof typeof messageOf; afterwards?: string } = {}): SecretProvider {
  const fault = (config: Record<string, unknown>) => (config.down ? 'down' : backend.mode === 'ok' ? undefined : backend.mode)
  const fail = (config: Record<string, unknown>) => {
    const f = fault(config)
    if (f) throw new SecretProviderError(codeOf[f], f === bad.vague ? 'failed' : messageOf[f])
  }
  return {
    type: 'pretend_test',
    configKeys: ['down'],
    store: async ({ config }) => (fail(config), { ref: 'r' }),
    resolve: async ({ config }) => (fail(config), bad.afterwards ?? value),
    delete: async ({ config }) => fail(config),
    health: async (config) => {
      const f = fault(config)
      return f && !bad.healthOk ? { ok: false, message: f === bad.vague ? 'failed' : messageOf[f] } : { ok: true }
    },
  }
}

const faults = async (t: Test, bad?: Parameters<typeof providerOver>[1], hangingClosed = () => Promise.resolve()) => {
  const run = recorder()
  const backend = { mode: 'ok' as Mode, hangingClosed }
  await expectProviderFaults(run.t, providerOver(backend, bad), { backend, config: {}, downConfig: { down: true }, ref: 'r', value, messages, abortWithinMs: 100 })
  t.equal(backend.mode, 'ok', 'the backend is left working')
  return run.failed.map((m) => m.replace(/ \(.*$/s, ''))
}

void t.test('expectProviderFaults puts the backend into each fault and checks resolve, store and health', async (t) => {
  t.same(await faults(t), [], 'a provider reporting every fault well passes')
  t.same(await faults(t, { healthOk: true }), ['health, hanging: not ok, and says why', 'health, 403: not ok, and says why', 'health, down: not ok, and says why'], 'health answering ok')
  t.same(await faults(t, { vague: 'forbid' }), ['resolve, 403: says why', 'store, 403: says why', 'health, 403: not ok, and says why'], 'a 403 reported without saying so')
  t.same(await faults(t, undefined, () => new Promise<void>(() => {})), ['hanging: the timed-out requests were aborted, no socket is left open'], 'requests left open after their timeout')
  t.same(await faults(t, { afterwards: 'another value' }), ['and once the backend answers again, the value resolves'], 'a wrong value once the backend works again')
})
