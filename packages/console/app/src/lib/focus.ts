/**
 * `/` pressed on another page opens the issues and puts the cursor in their search: the request is
 * kept here until the Issues page mounts and takes it (no timer guessing how long rendering takes).
 */
let searchFocusPending = false

export function requestSearchFocus(): void {
  searchFocusPending = true
}

export function takeSearchFocus(): boolean {
  const pending = searchFocusPending
  searchFocusPending = false
  return pending
}
