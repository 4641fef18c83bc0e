// Small value checks the adapters share (their configs are checked by each one's config schema).

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** setTimeout fires at once for delays past 2^31-1 ms (about 24.8 days); longer ones are clamped to that. */
export function timerMs(ms: number): number {
  return Math.max(0, Math.min(ms, 2_147_483_647))
}
