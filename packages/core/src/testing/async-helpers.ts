/**
 * Waiting without hanging: what the kits use, exported for a plugin's own tests of what the kits
 * cannot cause (a backend dying during a critical section, a wake that never ends).
 */

/** A promise the test resolves when it chooses: to hold a lock's `fn`, or to wait for a callback. */
export interface Gate<T = void> {
  promise: Promise<T>
  open(value: T): void
}

export function gate<T = void>(): Gate<T> {
  let open!: (value: T) => void
  const promise = new Promise<T>((resolve) => (open = resolve))
  return { promise, open }
}

/** How a promise ended: its value or its error. */
export type Settled<T> = { value: T } | { error: unknown }

/** The outcome of `promise` as a value, so a rejection can be asserted on rather than thrown. */
export function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  )
}

/** What `within` answers: the promise's value, or that it gave none in time. */
export type Within<T> = { value: T } | { timedOut: true }

/**
 * Waits for `promise` at most `ms`, so a broken plugin fails a test instead of hanging it.
 * A rejection comes back as a rejection (wrap the promise in `settle` to see it as a value).
 */
export async function within<T>(ms: number, promise: Promise<T>): Promise<Within<T>> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<{ timedOut: true }>((resolve) => {
    timer = setTimeout(() => resolve({ timedOut: true }), ms)
  })
  const answer = promise.then((value) => ({ value }))
  // A late rejection, after the timeout won, must not become an unhandled rejection.
  answer.catch(() => {})
  try {
    return await Promise.race([answer, timeout])
  } finally {
    clearTimeout(timer)
  }
}
