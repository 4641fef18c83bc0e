// Formatting in one place so every page writes money, tokens and times the same way.

const integer = new Intl.NumberFormat('en-US')
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 })

/** Cents as dollars: 12345 → "$123.45". Null (no figure) → "—". */
export function money(cents: number | null | undefined): string {
  if (cents === null || cents === undefined) return '—'
  const sign = cents < 0 ? '-' : ''
  const abs = Math.abs(cents)
  return `${sign}$${integer.format(Math.floor(abs / 100))}.${String(abs % 100).padStart(2, '0')}`
}

/** A run's or event's cost: cents when priced, "unpriced" when the usage has no price. */
export function runCost(usage: { costCents: number | null; costStatus: string | null; unpricedTokens: number }): string {
  if (usage.costStatus === 'unpriced' || (usage.costCents === null && usage.unpricedTokens > 0)) return 'unpriced'
  return money(usage.costCents)
}

export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : integer.format(n)
}

/** Tokens in short form past ten thousand: 1234 → "1,234", 2500000 → "2.5M". */
export function tokens(n: number): string {
  return n >= 10_000 ? compact.format(n) : integer.format(n)
}

export function percent(p: number): string {
  return `${Math.round(p)}%`
}

/** "3m ago", "2h ago", "5d ago" relative to now; the exact time goes in a title attribute. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—'
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000))
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`
  return `${Math.floor(s / 86_400)}d ago`
}

/** A run's duration: from start to finish, or to now while it runs. */
export function duration(startedAt: string | null, finishedAt: string | null, now = Date.now()): string {
  if (!startedAt) return '—'
  const ms = (finishedAt ? Date.parse(finishedAt) : now) - Date.parse(startedAt)
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
}

export function exactTime(iso: string | null | undefined): string {
  return iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : ''
}

/** snake_case status words as people read them: "in_progress" → "in progress". */
export function words(s: string): string {
  return s.replace(/_/g, ' ')
}
