import t from 'tap'
import { SecretProviderError, type SecretProvider } from '@slaw/core'
import { expectProviderFault, expectSecretProviderError, type ContractTest } from '@slaw/core/testing'

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
  t.same(await failed(() => Promise.reject(new SecretProviderError('unavailable', `cannot reach 127.0.0.1 storing ${value}`))), ['resolve, down: no value in the message, stack or properties'], 'the value in the message')
  const request = Object.assign(new Error('ECONNREFUSED'), { request: { body: 'no value, still a request' } })
  t.same(await failed(() => Promise.reject(new SecretProviderError('unavailable', 'cannot reach 127.0.0.1', { cause: request }))), ['resolve, down: no cause'], 'a cause')
})

/** A provider whose backend is down, reporting it with `error` and answering health with `health`. */
function downProvider(error: () => Error, health: { ok: boolean; message?: string }): SecretProvider {
  return {
    type: 'down_test',
    configKeys: [],
    store: () => Promise.reject(error()),
    resolve: () => Promise.reject(error()),
    delete: () => Promise.reject(error()),
    health: () => Promise.resolve(health),
  }
}

const fault = async (provider: SecretProvider) => {
  const run = recorder()
  const messages = { resolve: /cannot reach/, store: /cannot reach/, health: /cannot reach/ }
  await expectProviderFault(run.t, provider, { fault: 'down', code: 'unavailable', config: {}, ref: 'r', value, messages })
  return run.failed.map((m) => m.replace(/ \(.*$/s, ''))
}

void t.test('expectProviderFault checks resolve, store and health', async (t) => {
  const unreachable = () => new SecretProviderError('unavailable', 'cannot reach 127.0.0.1')
  t.same(await fault(downProvider(unreachable, { ok: false, message: 'cannot reach 127.0.0.1' })), [], 'a provider reporting the fault well passes')
  t.same(await fault(downProvider(unreachable, { ok: true })), ['health, down: not ok, and says why'], 'health answering ok')
  t.same(await fault(downProvider(unreachable, { ok: false, message: 'broken' })), ['health, down: not ok, and says why'], 'health not saying why')
  t.same(
    await fault(downProvider(() => new SecretProviderError('unavailable', 'down'), { ok: false, message: 'cannot reach 127.0.0.1' })),
    ['resolve, down: says why', 'store, down: says why'],
    'errors not saying why, from resolve and from store',
  )
})
