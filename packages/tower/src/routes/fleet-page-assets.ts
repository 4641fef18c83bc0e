/**
 * The fleet page's two static files: its stylesheet and its one script (the Approve, Reject,
 * sign-in and sign-out buttons). Served from the tower itself, so the page's Content-Security-Policy
 * allows nothing but this origin and no inline script or style.
 */
export const fleetCss = `:root{color-scheme:dark;--bg:#0f1115;--panel:#181b22;--line:#2a2f3a;--text:#e6e8ee;--muted:#a3aab8;--ok:#4ade80;--off:#f87171;--accent:#60a5fa;--danger:#fca5a5}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{display:flex;flex-wrap:wrap;gap:.75rem;align-items:center;justify-content:space-between;padding:1rem;border-bottom:1px solid var(--line)}
header h1{font-size:1.15rem;margin:0}
main{max-width:72rem;margin:0 auto;padding:1rem}
h2{font-size:1.05rem;margin:1.5rem 0 .75rem}
.cards{list-style:none;margin:0;padding:0;display:grid;gap:.75rem;grid-template-columns:repeat(auto-fill,minmax(min(100%,20rem),1fr))}
.card{background:var(--panel);border:1px solid var(--line);border-radius:.5rem;padding:.85rem}
.card h3{font-size:1rem;margin:0 0 .5rem;overflow-wrap:anywhere}
dl{display:grid;grid-template-columns:auto 1fr;gap:.2rem .75rem;margin:0}
dt{color:var(--muted)}
dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:0 .5rem;border-radius:1rem;font-size:.85rem;font-weight:600;border:1px solid currentColor}
.online{color:var(--ok)}
.offline{color:var(--off)}
.muted{color:var(--muted)}
.actions{display:flex;gap:.5rem;margin-top:.75rem;flex-wrap:wrap}
button{font:inherit;min-height:2.75rem;padding:.4rem 1rem;border-radius:.4rem;border:1px solid var(--line);background:#232833;color:var(--text);cursor:pointer}
button:hover{border-color:var(--accent)}
button:focus-visible,input:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff}
button.danger{color:var(--danger)}
form.sign-in{max-width:24rem;margin:3rem auto;background:var(--panel);border:1px solid var(--line);border-radius:.5rem;padding:1.25rem;display:grid;gap:.75rem}
label{font-weight:600}
input{font:inherit;min-height:2.75rem;padding:.4rem .6rem;border-radius:.4rem;border:1px solid var(--line);background:var(--bg);color:var(--text);width:100%}
[role=status],[role=alert]{min-height:1.5rem}
.error{color:var(--danger)}
`

export const fleetJs = `'use strict'
;(function () {
  var status = document.getElementById('status')
  function say(text, isError) {
    if (!status) return
    status.textContent = text
    status.className = isError ? 'error' : ''
  }
  async function send(method, url, body) {
    var init = { method: method, credentials: 'same-origin', headers: {} }
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json'
      init.body = JSON.stringify(body)
    }
    var res = await fetch(url, init)
    if (res.ok) return null
    var message = res.status + ' ' + res.statusText
    try { message = (await res.json()).error || message } catch (e) {}
    return message
  }
  var signIn = document.getElementById('sign-in')
  if (signIn) {
    signIn.addEventListener('submit', async function (event) {
      event.preventDefault()
      var key = document.getElementById('admin-key').value
      say('Signing in…', false)
      var failed = await send('POST', '/api/console/session', { adminKey: key })
      if (failed) say(failed, true)
      else location.reload()
    })
  }
  document.addEventListener('click', async function (event) {
    var button = event.target.closest('button[data-action]')
    if (!button) return
    var action = button.getAttribute('data-action')
    button.disabled = true
    var failed
    if (action === 'sign-out') failed = await send('DELETE', '/api/console/session')
    else failed = await send('POST', '/api/admin/enrollments/' + encodeURIComponent(button.getAttribute('data-id')) + '/' + action)
    if (failed) {
      button.disabled = false
      say(failed, true)
    } else location.reload()
  })
})()
`
