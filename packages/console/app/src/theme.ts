// Dark by default; the choice (not a secret) is remembered in localStorage.
export type Theme = 'dark' | 'light'
const KEY = 'slaw-console-theme'

export function storedTheme(): Theme {
  try {
    return localStorage.getItem(KEY) === 'light' ? 'light' : 'dark'
  } catch {
    return 'dark'
  }
}

export function applyTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme
  try {
    localStorage.setItem(KEY, theme)
  } catch {
    // private mode: the theme still applies for this page
  }
}
