import { describe, expect, it } from 'vitest'
import { fillDays, lastDays, niceMax, stackedBars } from '../src/lib/chart'
import { actionFor, isTyping, moveSelection } from '../src/lib/keys'
import { signInMessage } from '../src/pages/SignIn'
import { secretBindings } from '../src/pages/Agents'
import { ApiFailure } from '../src/lib/api'

describe('keyboard', () => {
  it('maps keys and two-key sequences to actions', () => {
    expect(actionFor({ key: 'j' }, null)).toBe('next')
    expect(actionFor({ key: 'k' }, null)).toBe('previous')
    expect(actionFor({ key: '/' }, null)).toBe('search')
    expect(actionFor({ key: 'c' }, null)).toBe('create')
    expect(actionFor({ key: '?' }, null)).toBe('help')
    expect(actionFor({ key: 'i' }, 'g')).toBe('go-issues')
    expect(actionFor({ key: 'i' }, null)).toBe(null)
    expect(actionFor({ key: 'c', ctrlKey: true }, null)).toBe(null)
  })
  it('moves the selection within bounds', () => {
    expect(moveSelection(-1, 1, 3)).toBe(0)
    expect(moveSelection(-1, -1, 3)).toBe(2)
    expect(moveSelection(2, 1, 3)).toBe(2)
    expect(moveSelection(0, -1, 3)).toBe(0)
    expect(moveSelection(0, 1, 0)).toBe(-1)
  })
  it('leaves typing alone', () => {
    expect(isTyping({ tagName: 'INPUT' } as unknown as EventTarget)).toBe(true)
    expect(isTyping({ tagName: 'A', isContentEditable: false } as unknown as EventTarget)).toBe(false)
    expect(isTyping(null)).toBe(false)
  })
})

describe('chart geometry', () => {
  it('rounds the axis up to 1, 2 or 5 × 10ⁿ', () => {
    expect(niceMax(0)).toBe(1)
    expect(niceMax(7)).toBe(10)
    expect(niceMax(13)).toBe(20)
    expect(niceMax(420)).toBe(500)
  })
  it('stacks segments bottom-up inside the box', () => {
    const { bars, max } = stackedBars([{ label: 'd1', segments: [{ key: 'ok', value: 3 }, { key: 'bad', value: 1 }] }, { label: 'd2', segments: [{ key: 'ok', value: 0 }, { key: 'bad', value: 0 }] }], 100, 50, 0)
    expect(max).toBe(5)
    expect(bars[0]!.segments[0]).toMatchObject({ y: 20, height: 30 })
    expect(bars[0]!.segments[1]).toMatchObject({ y: 10, height: 10 })
    expect(bars[1]!.x).toBe(50)
  })
  it('fills the days without runs', () => {
    const days = lastDays(3, new Date('2026-03-01T10:00:00Z'))
    expect(days).toEqual(['2026-02-27', '2026-02-28', '2026-03-01'])
    const rows = fillDays([{ date: '2026-02-28', n: 4 }], days, (date) => ({ date, n: 0 }))
    expect(rows.map((r) => r.n)).toEqual([0, 4, 0])
  })
})

describe('sign-in messages', () => {
  it('tells a wrong key from too many attempts', () => {
    expect(signInMessage(new ApiFailure(401, 'unauthorized', 'x'))).toMatch(/not accepted/)
    expect(signInMessage(new ApiFailure(429, 'rate_limited', 'x'))).toMatch(/Too many sign-in attempts/)
  })
})

describe('secret bindings', () => {
  it('lists secret references by variable, never plain values', () => {
    const config = { env: { TOKEN: { type: 'secret_ref', secretId: 's1', version: 'latest' }, MODE: { type: 'plain', value: 'prod-value' }, RAW: 'x' } }
    expect(secretBindings(config)).toEqual([{ variable: 'TOKEN', secretId: 's1', version: 'latest' }])
    expect(JSON.stringify(secretBindings(config))).not.toContain('prod-value')
    expect(secretBindings(undefined)).toEqual([])
  })
})
