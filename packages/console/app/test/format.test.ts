import { describe, expect, it } from 'vitest'
import { ago, duration, money, runCost, tokens, words } from '../src/lib/format'

describe('formatting', () => {
  it('writes cents as dollars, with no float rounding', () => {
    expect(money(0)).toBe('$0.00')
    expect(money(5)).toBe('$0.05')
    expect(money(123456)).toBe('$1,234.56')
    expect(money(-250)).toBe('-$2.50')
    expect(money(null)).toBe('—')
  })
  it('says "unpriced" for usage without a price, never $0.00', () => {
    expect(runCost({ costCents: null, costStatus: 'unpriced', unpricedTokens: 900 })).toBe('unpriced')
    expect(runCost({ costCents: null, costStatus: null, unpricedTokens: 10 })).toBe('unpriced')
    expect(runCost({ costCents: 42, costStatus: 'reported', unpricedTokens: 0 })).toBe('$0.42')
    expect(runCost({ costCents: null, costStatus: null, unpricedTokens: 0 })).toBe('—')
  })
  it('shortens large token counts only', () => {
    expect(tokens(9999)).toBe('9,999')
    expect(tokens(2_500_000)).toBe('2.5M')
  })
  it('relative times and durations', () => {
    const now = Date.parse('2026-01-01T12:00:00Z')
    expect(ago('2026-01-01T11:59:30Z', now)).toBe('30s ago')
    expect(ago('2026-01-01T09:00:00Z', now)).toBe('3h ago')
    expect(ago('2025-12-29T12:00:00Z', now)).toBe('3d ago')
    expect(duration('2026-01-01T11:58:55Z', '2026-01-01T12:00:00Z')).toBe('1m 5s')
    expect(duration('2026-01-01T11:00:00Z', null, now)).toBe('1h 0m')
    expect(duration(null, null)).toBe('—')
    expect(words('in_progress')).toBe('in progress')
  })
})
