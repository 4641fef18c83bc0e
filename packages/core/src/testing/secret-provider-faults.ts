import { inspect } from 'node:util'
import type { SecretProvider, SecretProviderErrorCode } from '../contracts/secret-provider.js'
import { SecretProviderError } from '../contracts/secret-provider.js'
import type { ContractTest } from './contract-test.js'
import { leaks, secretId } from './secret-provider-contract.js'

/**
 * Fault tests the secret provider kit cannot cause by itself: put the provider's backend (a
 * stand-in, see `startStandIn`) into the fault, then check how the provider reports it.
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

export interface ProviderFaultOptions {
  /** Names the fault in assertion messages, e.g. `hanging`, `403`, `down`. */
  fault: string
  /** The code `resolve` and `store` must fail with, e.g. `timeout`. */
  code: SecretProviderErrorCode
  /** The configuration that reaches the faulty backend. */
  config: Record<string, unknown>
  /** A ref that resolves while the backend works, and its value. */
  ref: string
  value: string
  /** What resolve's and store's error messages, and health's message, must match. */
  messages: { resolve: RegExp; store: RegExp; health: RegExp }
}

/**
 * With the backend in a fault: `resolve(ref)` and a `store` of `value` (under a fresh secretId)
 * each fail as `expectSecretProviderError` checks, and `health` answers `{ ok: false }` with a
 * message saying why, without throwing.
 */
export async function expectProviderFault(t: ContractTest, provider: SecretProvider, options: ProviderFaultOptions): Promise<void> {
  const { fault, code, config, ref, value, messages } = options
  await expectSecretProviderError(t, () => provider.resolve({ ref, config }), { what: `resolve, ${fault}`, code, message: messages.resolve, value })
  await expectSecretProviderError(t, () => provider.store({ secretId: secretId(), version: 1, value, config }), { what: `store, ${fault}`, code, message: messages.store, value })
  const health = await provider.health(config)
  t.ok(health.ok === false && typeof health.message === 'string' && messages.health.test(health.message), `health, ${fault}: not ok, and says why (${inspect(health, { breakLength: Infinity })})`)
}
