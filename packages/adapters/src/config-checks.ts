import type { ErrorDetail } from '@slaw/core'

// Small checks shared by the adapters' validateConfig. Paths are JSON pointers inside the adapter
// config (`/command`); the caller prefixes where the config sits in its request.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function checkOptionalString(config: Record<string, unknown>, key: string, details: ErrorDetail[]): void {
  const value = config[key]
  if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
    details.push({ path: `/${key}`, message: `${key} must be a non-empty string` })
  }
}

/** `timeoutSec` / `graceSec`: whole seconds, at least `min`. */
export function checkSeconds(config: Record<string, unknown>, key: string, min: number, details: ErrorDetail[]): void {
  const value = config[key]
  if (value === undefined) return
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    details.push({ path: `/${key}`, message: `${key} must be a whole number of seconds, at least ${min}` })
  }
}

/** `env` bindings are resolved by the run engine; here only their container is checked. */
export function checkEnvContainer(config: Record<string, unknown>, details: ErrorDetail[]): void {
  if (config.env !== undefined && !isRecord(config.env)) details.push({ path: '/env', message: 'env must be an object of NAME: binding' })
}

/** setTimeout fires at once for delays past 2^31-1 ms (about 24.8 days); longer ones are clamped to that. */
export function timerMs(ms: number): number {
  return Math.max(0, Math.min(ms, 2_147_483_647))
}
