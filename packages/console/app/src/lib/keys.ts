/**
 * The console's keyboard shortcuts, as data: the `?` dialog lists this table, and the handler
 * reads it, so the two cannot disagree.
 */
export const shortcuts = [
  { key: 'j', action: 'next', label: 'Next row' },
  { key: 'k', action: 'previous', label: 'Previous row' },
  { key: 'Enter', action: 'open', label: 'Open the selected row' },
  { key: '/', action: 'search', label: 'Search issues' },
  { key: 'c', action: 'create', label: 'New issue' },
  { key: 'g o', action: 'go-overview', label: 'Go to the overview' },
  { key: 'g i', action: 'go-issues', label: 'Go to issues' },
  { key: 'g a', action: 'go-agents', label: 'Go to agents' },
  { key: 'g p', action: 'go-approvals', label: 'Go to approvals' },
  { key: '?', action: 'help', label: 'Show these shortcuts' },
  { key: 'Escape', action: 'close', label: 'Close a dialog' },
] as const

export type ShortcutAction = (typeof shortcuts)[number]['action']

/** True when typing goes to a field, where letters must stay letters. */
export function isTyping(target: EventTarget | null): boolean {
  if (!target || !(target as HTMLElement).tagName) return false
  const el = target as HTMLElement
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName)
}

/**
 * The action for a key press, given the previous key (for two-key sequences like `g i`).
 * Modified keys (Ctrl, Alt, Meta) are left to the browser.
 */
export function actionFor(e: { key: string; ctrlKey?: boolean; altKey?: boolean; metaKey?: boolean }, previousKey: string | null): ShortcutAction | null {
  if (e.ctrlKey || e.altKey || e.metaKey) return null
  if (previousKey === 'g') {
    const seq = `g ${e.key}`
    const hit = shortcuts.find((s) => s.key === seq)
    if (hit) return hit.action
  }
  const hit = shortcuts.find((s) => s.key === e.key)
  return hit ? hit.action : null
}

/** The index after moving by `delta` among `length` rows, staying in bounds; -1 (none) starts at the edge. */
export function moveSelection(current: number, delta: 1 | -1, length: number): number {
  if (length === 0) return -1
  if (current < 0) return delta > 0 ? 0 : length - 1
  return Math.min(length - 1, Math.max(0, current + delta))
}
