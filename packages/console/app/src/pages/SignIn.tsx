import { useMutation, useQueryClient } from '@tanstack/react-query'
import { useState, type FormEvent } from 'react'
import { ApiFailure, describeFailure, unwrap } from '../lib/api'
import { useApi } from '../state'

/** What a refused sign-in means, in words: a wrong key and too many tries read differently. */
export function signInMessage(err: unknown): string {
  if (err instanceof ApiFailure) {
    if (err.status === 401) return 'That Operator key was not accepted. Check it and try again.'
    if (err.status === 429) return 'Too many sign-in attempts. Wait a minute, then try again.'
  }
  return describeFailure(err)
}

/**
 * The key goes once to the server, which answers with an HttpOnly session cookie; it is kept only
 * in this form's state while typing and cleared after the attempt (never in storage).
 */
export function SignInPage() {
  const api = useApi()
  const queryClient = useQueryClient()
  const [key, setKey] = useState('')
  const signIn = useMutation({
    mutationFn: async (operatorKey: string) => unwrap(await api.POST('/api/console/session', { body: { operatorKey } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['session'] }),
    onSettled: () => setKey(''),
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (key.trim()) signIn.mutate(key.trim())
  }
  return (
    <main className="signin" id="main">
      <form onSubmit={submit} className="card">
        <h1>slaw console</h1>
        <p className="muted">Sign in with an Operator key. The console keeps a session cookie, not the key.</p>
        <label htmlFor="operator-key">Operator key</label>
        <input
          id="operator-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          autoFocus
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-describedby={signIn.error ? 'signin-error' : undefined}
        />
        {signIn.error ? (
          <p id="signin-error" className="error" role="alert">
            {signInMessage(signIn.error)}
          </p>
        ) : null}
        <button type="submit" disabled={signIn.isPending || !key.trim()}>
          {signIn.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}
