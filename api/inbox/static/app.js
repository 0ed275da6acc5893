// The inbox's only script. Pages work without it; it adds live updates (Server-Sent Events from
// /inbox/events: the live region of the page is fetched again when an event concerns it), local
// times, a confirmation on dangerous forms and Ctrl+Enter to send a reply.
(function () {
  'use strict';

  // Times are rendered in UTC on the server; show them in the reader's own time zone.
  var timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
  var dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
  var fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  function localTimes(root) {
    var now = new Date();
    root.querySelectorAll('time[datetime]').forEach(function (el) {
      var t = new Date(el.getAttribute('datetime'));
      if (isNaN(t)) return;
      el.title = fullFmt.format(t);
      if (el.closest('.meta, .conv')) {
        el.textContent = t.toDateString() === now.toDateString() ? timeFmt.format(t) : dayFmt.format(t) + ', ' + timeFmt.format(t);
      } else {
        el.textContent = fullFmt.format(t);
      }
    });
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  }
  function toBottom() { window.scrollTo(0, document.body.scrollHeight); }

  document.addEventListener('submit', function (e) {
    var msg = e.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  var reply = document.getElementById('reply-body');
  if (reply) {
    reply.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && reply.value.trim() !== '') {
        e.preventDefault();
        reply.form.requestSubmit();
      }
    });
  }

  var live = document.querySelector('[data-live]');
  localTimes(document);
  if (!live) return;
  var kind = live.getAttribute('data-live');
  var contact = live.getAttribute('data-contact');
  if (kind === 'conversation' && !location.search) toBottom();

  // concerns tells whether an event changes what this page shows.
  function concerns(type, data) {
    if (kind === 'list') return true;
    if (kind === 'alerts') return type.indexOf('alert.') === 0;
    if (!data) return false;
    return (type === 'contact.updated' ? data.id : data.contactId) === contact;
  }

  var pending = null;
  var inFlight = false;
  // Set once the page is being left (a link, a form such as Sign out): a refresh that then finds the
  // session gone must not reload the page, which would cancel the navigation under way.
  var leaving = false;
  window.addEventListener('beforeunload', function () { leaving = true; });
  window.addEventListener('pageshow', function () { leaving = false; });
  function refresh() {
    if (pending) return;
    pending = setTimeout(function () {
      pending = null;
      if (inFlight) { refresh(); return; }
      inFlight = true;
      var stick = kind === 'conversation' && nearBottom();
      fetch(location.href, { headers: { 'X-Inbox-Live': '1' }, credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (res.status === 401 || res.redirected) {
            if (!leaving) location.reload();
            return null;
          }
          return res.ok ? res.text() : null;
        })
        .then(function (html) {
          if (html === null) return;
          // Parsed inert (a template loads and runs nothing) and compared with what is shown: an
          // unchanged region is left alone, so that a button being clicked is not swapped away.
          var next = document.createElement('template');
          next.innerHTML = html;
          localTimes(next.content);
          if (next.innerHTML === live.innerHTML) return;
          live.replaceChildren(next.content);
          if (stick) toBottom();
        })
        .catch(function () {})
        .then(function () { inFlight = false; });
    }, 100);
  }

  var source = new EventSource('/inbox/events');
  ['message.created', 'message.updated', 'alert.created', 'alert.resolved', 'contact.updated'].forEach(function (type) {
    source.addEventListener(type, function (e) {
      var data = null;
      try { data = JSON.parse(e.data); } catch (err) { return; }
      if (concerns(type, data)) refresh();
    });
  });
  // Events stored before the stream opened were missed: those between the server rendering the page
  // and the first opening (a reply's delivery often ends in that time), and those of a lost
  // connection. Fetch the region each time the stream opens.
  source.addEventListener('open', function () {
    refresh();
    document.documentElement.setAttribute('data-live-ready', '1');
  });
})();
