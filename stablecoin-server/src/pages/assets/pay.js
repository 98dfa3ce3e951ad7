// The hosted payment page's live updates (pages/pay.rs). Plain JS, no framework, no
// network beyond this origin: polls GET /pay/{session_id}/status every 2 s and updates
// the page in place, ticks the countdown every second, enables the copy buttons, and
// says what changed through the aria-live region. The page works without it.
(function () {
  'use strict';
  var main = document.getElementById('pay');
  if (!main) { return; }
  var sessionId = main.getAttribute('data-session') || '';
  var statusUrl = '/pay/' + encodeURIComponent(sessionId) + '/status';
  var live = document.getElementById('live');
  var deadline = Date.now() + Number(main.getAttribute('data-expires-in') || 0) * 1000;
  var status = main.getAttribute('data-status');
  var phase = main.getAttribute('data-phase');
  var polling = true;
  var NETWORKS = {
    polygon: 'Polygon', ethereum: 'Ethereum', base: 'Base', arbitrum: 'Arbitrum',
    optimism: 'Optimism', tron: 'TRON', solana: 'Solana', simulated: 'Simulated network'
  };

  function networkName(n) { return NETWORKS[n] || n; }
  function isZero(a) { return !/[1-9]/.test(String(a || '')); }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }
  function isFinal(v) {
    return /^(paid|expired|failed)$/.test(v.status) && /^(paid|overpaid|expired|failed)$/.test(v.phase);
  }
  function kind(v) {
    if (v.phase === 'underpaid') { return 'warn'; }
    if (v.phase === 'paid' || v.phase === 'overpaid') { return 'ok'; }
    if (v.phase === 'expired' || v.phase === 'failed') { return 'bad'; }
    if (v.status === 'paid') { return 'ok'; }
    if (v.status === 'expired' || v.status === 'failed') { return 'bad'; }
    return 'wait';
  }
  function confirming(v) {
    var n = null;
    (v.deposits || []).forEach(function (d) {
      if (d.status !== 'confirmed' && (n === null || d.confirmations < n)) { n = d.confirmations; }
    });
    return n === null ? 0 : n;
  }
  // The same words as phase_words in pay.rs.
  function phaseWords(v) {
    var p = v.phase || v.status;
    switch (p) {
      case 'awaiting_payment': case 'pending': return 'Awaiting payment';
      case 'confirming': return 'Payment received, confirming (' + plural(confirming(v), 'confirmation') + ')';
      case 'underpaid': return 'Underpaid: ' + v.amount_due + ' ' + v.currency + ' still due';
      case 'paid': return 'Paid';
      case 'overpaid': return 'Paid \u2014 overpaid by ' + v.excess + ' ' + v.currency;
      case 'expired': return v.late ? 'Expired \u2014 late payment received' : 'Expired';
      case 'failed': return v.failure_reason ? 'Failed: ' + v.failure_reason : 'Failed';
      default: return String(p).replace(/_/g, ' ');
    }
  }
  function depositWords(d) {
    return d.amount + ' ' + d.token + ' on ' + networkName(d.network) + ' \u2014 ' +
      (d.status === 'confirmed' ? 'confirmed' : 'confirming') +
      ' (' + plural(d.confirmations, 'confirmation') + ')';
  }
  function announce(text) {
    if (!live) { return; }
    live.textContent = '';
    window.setTimeout(function () { live.textContent = text; }, 50);
  }
  function pad(n) { return (n < 10 ? '0' : '') + n; }
  function formatRemaining(secs) {
    var s = Math.max(0, Math.floor(secs));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    return h > 0 ? h + ':' + pad(m) + ':' + pad(s) : m + ':' + pad(s);
  }
  function tick() {
    var el = document.getElementById('countdown');
    if (!el) { return; }
    var left = Math.round((deadline - Date.now()) / 1000);
    el.textContent = left > 0 ? 'Expires in ' + formatRemaining(left) : 'Expiring now';
  }

  function renderDeposits(list) {
    var ul = document.getElementById('deposits');
    var none = document.getElementById('no-deposits');
    if (!ul) { return; }
    while (ul.firstChild) { ul.removeChild(ul.firstChild); }
    list.forEach(function (d) {
      var li = document.createElement('li');
      li.appendChild(document.createTextNode(depositWords(d)));
      if (d.tx_hash) {
        var tx = document.createElement('span');
        tx.className = 'tx';
        tx.appendChild(document.createTextNode('Transaction '));
        var code = document.createElement('code');
        code.textContent = d.tx_hash;
        tx.appendChild(code);
        li.appendChild(document.createTextNode(' '));
        li.appendChild(tx);
      }
      ul.appendChild(li);
    });
    if (none) { none.hidden = list.length > 0; }
  }

  function update(v) {
    var fields = main.querySelectorAll('[data-field]');
    for (var i = 0; i < fields.length; i++) {
      var name = fields[i].getAttribute('data-field');
      if (typeof v[name] === 'string') { fields[i].textContent = v[name]; }
    }
    var rows = main.querySelectorAll('[data-hide-zero]');
    for (var j = 0; j < rows.length; j++) {
      rows[j].hidden = isZero(v[rows[j].getAttribute('data-row')]);
    }
    var words = phaseWords(v);
    var statusEl = document.getElementById('status');
    var phaseEl = document.getElementById('phase-text');
    var changed = phaseEl && phaseEl.textContent !== words;
    if (statusEl) { statusEl.className = 'status status-' + kind(v); }
    if (phaseEl) { phaseEl.textContent = words; }
    var pending = v.status === 'pending';
    // Addresses only while money is asked for: not while a payment is confirming.
    var options = document.getElementById('options');
    if (options) { options.hidden = !pending || v.phase === 'confirming'; }
    // The wallet requests (QR, "Open in wallet") ask for the amount due when the page
    // was rendered: once another amount is due and asked for, render them afresh.
    var walletDue = main.getAttribute('data-wallet-due');
    if (walletDue && options && !options.hidden && v.amount_due !== walletDue) {
      polling = false;
      window.location.reload();
      return;
    }
    var line = document.getElementById('countdown-line');
    if (line) { line.hidden = !pending; }
    deadline = Date.now() + Math.max(0, Number(v.expires_in_secs) || 0) * 1000;
    tick();
    renderDeposits(v.deposits || []);
    main.setAttribute('data-status', v.status);
    main.setAttribute('data-phase', v.phase);
    if (changed) { announce('Payment status: ' + words); }
    status = v.status;
    phase = v.phase;
    if (isFinal(v)) { polling = false; }
  }

  function poll() {
    if (!polling) { return; }
    fetch(statusUrl, { cache: 'no-store', credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (v) { if (v && v.session_id === sessionId) { update(v); } })
      .catch(function () { /* offline for a moment: try again at the next tick */ })
      .then(function () { if (polling) { window.setTimeout(poll, 2000); } });
  }

  function selectAndCopy(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    try { return document.execCommand('copy'); } catch (e) { return false; }
  }
  function copied(button, ok) {
    button.textContent = ok ? 'Copied' : 'Selected: press Ctrl+C to copy';
    announce(ok ? 'Address copied' : 'Address selected; copy it with your keyboard or menu');
    window.setTimeout(function () { button.textContent = 'Copy address'; }, 2500);
  }
  function setUpCopy(button) {
    var target = document.getElementById(button.getAttribute('data-copy'));
    if (!target) { return; }
    button.hidden = false;
    button.addEventListener('click', function () {
      var text = target.textContent;
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(
          function () { copied(button, true); },
          function () { copied(button, selectAndCopy(target)); });
      } else {
        copied(button, selectAndCopy(target));
      }
    });
  }

  var buttons = document.querySelectorAll('button[data-copy]');
  for (var k = 0; k < buttons.length; k++) { setUpCopy(buttons[k]); }
  tick();
  if (isFinal({ status: status, phase: phase })) {
    polling = false;
  } else {
    window.setInterval(tick, 1000);
    window.setTimeout(poll, 2000);
  }
})();
