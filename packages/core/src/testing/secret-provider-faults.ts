import { inspect } from 'node:util'
import type { SecretProvider, SecretProviderErrorCode } from '../contracts/secret-provider.js'
import { SecretProviderError } from '../contracts/secret-provider.js'
import { within } from './async-helpers.js'
import type { ContractTest } from './contract-test.js'
import { leaks, secretId } from './secret-provider-contract.js'

/**
 * Fault tests over a stand-in for a provider's backend (see `startStandIn`), which the contract kit
 * cannot cause with a configuration alone: the backend hangs, refuses, or is down, and the
 * provider must say so clearly, without the value.
 */

export interface ExpectedProviderError {
  /** Names the call in assertion messages, e.g. `resolve, hanging`. */
  what: string
  code: SecretProviderErrorCode
  /** What the error's message must match: it says why, e.g. `/within 300 ms/`. */
  message: RegExp
  /** A secret value the error must not hold anywhere. */
  value?: string
}

/**
 * Asserts that `call` rejects with a `SecretProviderError` of `code` whose message matches, that
 * holds `value` nowhere (message, stack, properties) and has no cause: a client library's error
 * often holds the request, the value included.
 */
export async function expectSecretProviderError(t: ContractTest, call: () => Promise<unknown>, expected: ExpectedProviderError): Promise<void> {
  const { what, code, message, value } = expected
  const failure = await call().then(
    (answer: unknown) => new Error(`the call succeeded (answered ${inspect(answer, { breakLength: Infinity })})`),
    (error: unknown) => error,
  )
  const error = failure instanceof Error ? failure : new Error(inspect(failure))
  t.ok(failure instanceof SecretProviderError, `${what}: a SecretProviderError (got ${error.name}: ${error.message})`)
  t.equal((failure as Partial<SecretProviderError>).code, code, `${what}: code ${code}`)
  t.ok(message.test(error.message), `${what}: says why (${inspect(error.message)} matches ${String(message)})`)
  t.ok(value === undefined || !leaks(failure, value), `${what}: no value in the message, stack or properties`)
  t.equal(error.cause, undefined, `${what}: no cause (a client library's error can hold the request)`)
}

/** A stand-in for the provider's backend that the checks can put into a fault. */
export interface FaultyBackend {
  /**
   * `ok`: it works; `hang`: it holds every request unanswered (see `StandIn.hold`); `forbid`: it
   * answers every request 403, in the vendor's own error shape.
   */
  mode: 'ok' | 'hang' | 'forbid'
  /** Resolves once every request it held has been given up by its client (`StandIn.hangingClosed`). */
  hangingClosed(): Promise<void>
}

export interface ProviderFaultsOptions {
  backend: FaultyBackend
  /** Reaches `backend`, with a timeout of a few hundred ms, so the hanging fault is quick. */
  config: Record<string, unknown>
  /** Reaches a port nothing listens on (see `freePort`). */
  downConfig: Record<string, unknown>
  /** A ref stored under `config`, and its value. */
  ref: string
  value: string
  /** What the error messages of resolve and store, and health's message, must match in each fault. */
  messages: { hanging: RegExp; forbidden: RegExp; down: RegExp }
  /** How long the provider may take to abort the requests it gave up on. Default 5,000 ms. */
  abortWithinMs?: number
}

/**
 * The faults of a backend over the network, one after the other: it hangs (`timeout`, and the
 * provider aborts the requests it gave up on), it answers 403 (`access_denied`), it is down
 * (`unavailable`). In each, `resolve(ref)` and a `store` of `value` (under a fresh secretId) fail
 * as `expectSecretProviderError` checks, and `health` answers `{ ok: false }` with a message that
 * says why, without throwing. Last, with the backend working again, `ref` resolves to `value`.
 */
export async function expectProviderFaults(t: ContractTest, provider: SecretProvider, options: ProviderFaultsOptions): Promise<void> {
  const { backend, config, ref, value, messages } = options
  const expectFault = async (fault: string, code: SecretProviderErrorCode, config: Record<string, unknown>, message: RegExp) => {
    await expectSecretProviderError(t, () => provider.resolve({ ref, config }), { what: `resolve, ${fault}`, code, message, value })
    await expectSecretProviderError(t, () => provider.store({ secretId: secretId(), version: 1, value, config }), { what: `store, ${fault}`, code, message, value })
    const health = await provider.health(config)
    t.ok(health.ok === false && typeof health.message === 'string' && message.test(health.message), `health, ${fault}: not ok, and says why (${inspect(health, { breakLength: Infinity })})`)
  }
  try {
    backend.mode = 'hang'
    await expectFault('hanging', 'timeout', config, messages.hanging)
    const aborted = await within(options.abortWithinMs ?? 5_000, backend.hangingClosed())
    t.ok('value' in aborted, 'hanging: the timed-out requests were aborted, no socket is left open')
    backend.mode = 'forbid'
    await expectFault('403', 'access_denied', config, messages.forbidden)
  } finally {
    backend.mode = 'ok'
  }
  await expectFault('down', 'unavailable', options.downConfig, messages.down)
  t.equal(await provider.resolve({ ref, config }), value, 'and once the backend answers again, the value resolves')
}
