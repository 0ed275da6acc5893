// The inbox's only script. Pages work without it; it adds live updates (Server-Sent Events from
// /inbox/events: the live region of the page, or its other live parts, are fetched again when an
// event concerns them), local times, a confirmation on dangerous forms and Ctrl+Enter to send a reply.
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

  // Ctrl+Enter sends the reply (listened for on the document: the reply box is a live part, replaced
  // when the contact's consent changes).
  document.addEventListener('keydown', function (e) {
    var reply = e.target;
    if (reply.id !== 'reply-body' || e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || reply.value.trim() === '') return;
    e.preventDefault();
    reply.form.requestSubmit();
  });

  var live = document.querySelector('[data-live]');
  // The live parts as the server rendered them (before local times), by name: a part is replaced when
  // the server renders it differently, whatever happened to it in the page since.
  var rendered = {};
  document.querySelectorAll('[data-live-part]').forEach(function (el) {
    rendered[el.getAttribute('data-live-part')] = el.innerHTML;
  });
  localTimes(document);
  if (!live) return;
  var kind = live.getAttribute('data-live');
  var contact = live.getAttribute('data-contact');
  // A conversation opens at its newest message, unless the address points into the page (#consent,
  // where a form's result is shown).
  if (kind === 'conversation' && !location.search && (!location.hash || location.hash === '#bottom')) toBottom();

  // concerns tells whether an event changes what this page shows.
  function concerns(type, data) {
    if (kind === 'list') return true;
    if (kind === 'alerts') return type.indexOf('alert.') === 0;
    if (!data) return false;
    return (type === 'contact.updated' ? data.id : data.contactId) === contact;
  }

  // Set once the page is being left (a link, a form such as Sign out): a refresh that then finds the
  // session gone must not reload the page, which would cancel the navigation under way.
  var leaving = false;
  window.addEventListener('beforeunload', function () { leaving = true; });
  window.addEventListener('pageshow', function () { leaving = false; });

  // refresher returns a function that fetches the page again with the X-Inbox-Live header (what the
  // server then renders: "1" the live region, "parts" the other live parts) and hands the HTML, parsed
  // inert (a template loads and runs nothing), to apply. Calls close together make one request, and
  // never two at once.
  function refresher(header, apply) {
    var pending = null;
    var inFlight = false;
    function run() {
      if (pending) return;
      pending = setTimeout(function () {
        pending = null;
        if (inFlight) { run(); return; }
        inFlight = true;
        var stick = kind === 'conversation' && nearBottom();
        fetch(location.href, { headers: { 'X-Inbox-Live': header }, credentials: 'same-origin', cache: 'no-store' })
          .then(function (res) {
            if (res.status === 401 || res.redirected) {
              if (!leaving) location.reload();
              return null;
            }
            return res.ok ? res.text() : null;
          })
          .then(function (html) {
            if (html === null) return;
            var next = document.createElement('template');
            next.innerHTML = html;
            apply(next, stick);
          })
          .catch(function () {})
          .then(function () { inFlight = false; });
      }, 100);
    }
    return run;
  }

  // An unchanged region is left alone, so that a button being clicked is not swapped away.
  var refresh = refresher('1', function (next, stick) {
    localTimes(next.content);
    if (next.innerHTML === live.innerHTML) return;
    live.replaceChildren(next.content);
    if (stick) toBottom();
  });

  // The page's other live parts (the conversation's consent, goals and reply box), each replaced only
  // when the server renders it differently; a reply being written is kept when the new part has the
  // reply box too.
  var refreshParts = refresher('parts', function (next, stick) {
    var changed = false;
    next.content.querySelectorAll('[data-live-part]').forEach(function (part) {
      var name = part.getAttribute('data-live-part');
      var shown = document.querySelector('[data-live-part="' + name + '"]');
      if (!shown || rendered[name] === part.innerHTML) return;
      rendered[name] = part.innerHTML;
      changed = true;
      localTimes(part);
      var draft = shown.querySelector('#reply-body');
      var focused = draft && document.activeElement === draft;
      shown.replaceChildren.apply(shown, Array.prototype.slice.call(part.childNodes));
      var box = shown.querySelector('#reply-body');
      if (draft && box) {
        box.value = draft.value;
        if (focused) box.focus();
      }
    });
    if (changed && stick) toBottom();
  });
  var hasParts = !!document.querySelector('[data-live-part]');

  var source = new EventSource('/inbox/events');
  ['message.created', 'message.updated', 'alert.created', 'alert.resolved', 'contact.updated'].forEach(function (type) {
    source.addEventListener(type, function (e) {
      var data = null;
      try { data = JSON.parse(e.data); } catch (err) { return; }
      if (!concerns(type, data)) return;
      refresh();
      // A new message can change where a reply goes and whether it may (a messaging window opens).
      if (hasParts && type === 'message.created') refreshParts();
    });
  });
  // A consent change ({"id","consent"}) changes the conversation's consent and maybe its reply box.
  source.addEventListener('contact.consent_changed', function (e) {
    var data = null;
    try { data = JSON.parse(e.data); } catch (err) { return; }
    if (hasParts && data && data.id === contact) refreshParts();
  });
  // A goal recorded for the contact ({"contactId", ...}: the bot's, the API's, another tab's) changes
  // the conversation's Goal section.
  source.addEventListener('goal.reached', function (e) {
    var data = null;
    try { data = JSON.parse(e.data); } catch (err) { return; }
    if (hasParts && data && data.contactId === contact) refreshParts();
  });
  // Events stored before the stream opened were missed: those between the server rendering the page
  // and the first opening (a reply's delivery often ends in that time), and those of a lost
  // connection. Fetch the region each time the stream opens.
  source.addEventListener('open', function () {
    refresh();
    if (hasParts) refreshParts();
    document.documentElement.setAttribute('data-live-ready', '1');
  });
})();
