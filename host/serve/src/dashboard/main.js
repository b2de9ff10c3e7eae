// weir dashboard: login/logout, whoami, hash routing and boot. Loads last:
// it needs every other script's part of window.weir. Adds weir.boot and
// weir.loggedOut (called by core.js's API client and banner).
'use strict';
(() => {
  const { TOKEN_KEY, app, $, Unreachable, api, listView, detailView } = window.weir;

  // ---- login --------------------------------------------------------------

  function showLogin(message) {
    stopView();
    app.who = null;
    $('#main').hidden = true;
    $('#main').innerHTML = '';
    $('#who-box').hidden = true;
    $('#login-screen').hidden = false;
    $('#login-error').textContent = message || '';
    $('#token').focus();
  }

  function loggedOut(detail) {
    sessionStorage.removeItem(TOKEN_KEY);
    app.token = '';
    showLogin(detail ? `Logged out: ${detail}` : '');
  }

  let booting = false;
  // `known` is a whoami answer the login form already has.
  async function boot(known) {
    if (!app.token) return showLogin();
    if (booting) return;
    booting = true;
    try {
      app.who = known || await api('/v1/whoami', { login: true });
    } catch (e) {
      if (e instanceof Unreachable) {
        // Keep the token: reachable() boots again when the service answers.
        $('#login-screen').hidden = true;
        return;
      }
      sessionStorage.removeItem(TOKEN_KEY);
      app.token = '';
      return showLogin(e.detail || e.message);
    } finally {
      booting = false;
    }
    $('#who').textContent = app.who.role === 'admin' ? 'admin' : app.who.tenant;
    $('#who-box').hidden = false;
    $('#login-screen').hidden = true;
    $('#main').hidden = false;
    route();
  }

  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = $('#token').value.trim();
    if (!token) return;
    $('#login').disabled = true;
    $('#login-error').textContent = '';
    app.token = token;
    booting = true; // the banner's recovery must not boot while we do
    try {
      const who = await api('/v1/whoami', { login: true });
      sessionStorage.setItem(TOKEN_KEY, token);
      $('#token').value = '';
      booting = false;
      await boot(who);
    } catch (e) {
      booting = false;
      app.token = '';
      $('#login-error').textContent = e instanceof Unreachable
        ? `weir serve is unreachable: ${e.message}` : (e.detail || e.message);
    } finally {
      $('#login').disabled = false;
    }
  });

  $('#logout').addEventListener('click', () => loggedOut());

  // ---- routing ------------------------------------------------------------

  function stopView() {
    if (app.view) app.view.stop();
    app.view = null;
  }

  function route() {
    if (!app.who) return;
    stopView();
    const m = (location.hash || '#/').match(/^#\/p\/([^/]+)\/([^/]+)\/?$/);
    window.scrollTo(0, 0);
    if (m) detailView(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
    else listView();
  }
  window.addEventListener('hashchange', route);

  Object.assign(window.weir, { boot, loggedOut });

  boot();
})();
