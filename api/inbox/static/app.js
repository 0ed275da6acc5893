// The inbox's only script. Pages work without it; it adds live updates (Server-Sent Events from
// /inbox/events: the live region of the page, or its other live parts, are fetched again when an
// event concerns them, and the counts in the navigation), local times, a confirmation on dangerous
// forms, Ctrl+Enter to send, canned replies on "/" in the reply box and keyboard shortcuts ("?"),
// Shift+E among them: Resolve the conversation (Reopen when it is resolved).
(function () {
  'use strict';
  document.documentElement.classList.add('js');

  // ---- Panels (a conversation's Consent and Goal, <details data-wide-open>): one line each on a
  // phone; open on a wide screen, where the stylesheet already shows them (this is for a browser
  // without ::details-content). A link or an address pointing at one (#consent) opens it.
  function openPanel(id) {
    var d = id && document.getElementById(id);
    if (d && d.matches('details[data-wide-open]')) d.open = true;
  }
  if (window.matchMedia('(min-width: 56rem)').matches) {
    document.querySelectorAll('details[data-wide-open]').forEach(function (d) { d.open = true; });
  }
  openPanel(location.hash.slice(1));
  window.addEventListener('hashchange', function () { openPanel(location.hash.slice(1)); });
  document.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[href^="#"]');
    if (a) openPanel(a.getAttribute('href').slice(1));
  });

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
      if (el.closest('.meta, .conv, .mark')) {
        el.textContent = t.toDateString() === now.toDateString() ? timeFmt.format(t) : dayFmt.format(t) + ', ' + timeFmt.format(t);
      } else {
        el.textContent = fullFmt.format(t);
      }
    });
    waitingTimes(root);
  }

  // How long an alert has waited ("waiting 23 min", as the server writes it), kept current.
  function waitingText(ms) {
    var m = Math.floor(ms / 60000);
    if (m < 1) return 'waiting under a minute';
    if (m < 60) return 'waiting ' + m + ' min';
    if (m < 24 * 60) return 'waiting ' + Math.floor(m / 60) + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
    if (m < 48 * 60) return 'waiting 1 day';
    return 'waiting ' + Math.floor(m / (24 * 60)) + ' days';
  }
  function waitingTimes(root) {
    var now = Date.now();
    root.querySelectorAll('[data-since]').forEach(function (el) {
      var t = new Date(el.getAttribute('data-since'));
      if (!isNaN(t)) el.textContent = waitingText(now - t);
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

  // A short message for what a shortcut could not do ("No next conversation").
  var toast = null, toastTimer = null;
  function say(text) {
    if (!toast) {
      toast = document.createElement('div');
      toast.className = 'toast';
      toast.setAttribute('role', 'status');
      document.body.appendChild(toast);
    }
    toast.textContent = text;
    toast.classList.add('on');
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { toast.classList.remove('on'); }, 2500);
  }

  // ---- Canned replies: "/" at the start of the reply box offers the account's canned replies (the
  // page holds them, filled for the contact, in its Canned replies list), filtered as the user types;
  // Enter, Tab or a click puts the chosen one in place of the "/shortcut".
  var suggest = null; // {box, list, items, index}
  function cannedReplies() {
    return Array.prototype.map.call(document.querySelectorAll('#canned-replies li[data-shortcut]'), function (li) {
      var body = li.querySelector('.cannedbody');
      return { shortcut: li.getAttribute('data-shortcut'), body: body ? body.textContent : '' };
    });
  }
  function closeSuggest() {
    if (!suggest) return;
    suggest.list.remove();
    suggest.box.setAttribute('aria-expanded', 'false');
    suggest.box.removeAttribute('aria-activedescendant');
    suggest = null;
  }
  function slashToken(box) {
    var m = /^\/(\S*)$/.exec(box.value.slice(0, box.selectionEnd));
    return m ? m[1] : null;
  }
  function updateSuggest(box) {
    var q = slashToken(box);
    var all = q === null ? [] : cannedReplies();
    if (!all.length) { closeSuggest(); return; }
    q = q.toLowerCase();
    var first = [], then = [];
    all.forEach(function (r) {
      var s = r.shortcut.toLowerCase();
      if (s.indexOf(q) === 0) first.push(r);
      else if (q && s.indexOf(q) > 0) then.push(r);
    });
    var items = first.concat(then);
    if (!suggest) {
      var list = document.createElement('ul');
      list.className = 'suggest';
      list.id = 'canned-suggest';
      list.setAttribute('role', 'listbox');
      list.setAttribute('aria-label', 'Canned replies');
      list.addEventListener('mousedown', function (e) { e.preventDefault(); }); // keep the focus in the box
      list.addEventListener('click', function (e) {
        var li = e.target.closest('li[data-index]');
        if (li && suggest) choose(suggest.items[+li.getAttribute('data-index')]);
      });
      box.form.appendChild(list);
      box.setAttribute('aria-controls', list.id);
      box.setAttribute('aria-expanded', 'true');
      suggest = { box: box, list: list, items: [], index: 0 };
    }
    suggest.items = items;
    suggest.index = 0;
    suggest.list.replaceChildren();
    if (!items.length) {
      var none = document.createElement('li');
      none.className = 'none';
      none.textContent = 'No canned reply starts with /' + q;
      suggest.list.appendChild(none);
      box.removeAttribute('aria-activedescendant');
      return;
    }
    items.forEach(function (r, i) {
      var li = document.createElement('li');
      li.id = 'canned-option-' + i;
      li.setAttribute('role', 'option');
      li.setAttribute('data-index', i);
      var code = document.createElement('code');
      code.textContent = '/' + r.shortcut;
      var prev = document.createElement('span');
      prev.className = 'prev';
      prev.textContent = r.body.replace(/\s+/g, ' ');
      li.append(code, prev);
      suggest.list.appendChild(li);
    });
    highlight(0);
  }
  function highlight(i) {
    if (!suggest || !suggest.items.length) return;
    suggest.index = (i + suggest.items.length) % suggest.items.length;
    Array.prototype.forEach.call(suggest.list.children, function (li, j) {
      li.setAttribute('aria-selected', j === suggest.index ? 'true' : 'false');
      if (j === suggest.index) li.scrollIntoView({ block: 'nearest' });
    });
    suggest.box.setAttribute('aria-activedescendant', 'canned-option-' + suggest.index);
  }
  // insertCanned puts a canned reply's body in the box in place of the "/shortcut" being typed (or at
  // the caret).
  function insertCanned(box, body) {
    var end = box.selectionEnd, start = box.selectionStart;
    if (slashToken(box) !== null) start = 0;
    box.value = box.value.slice(0, start) + body + box.value.slice(end);
    var caret = start + body.length;
    box.focus();
    box.setSelectionRange(caret, caret);
  }
  function choose(r) {
    if (!suggest || !r) return;
    var box = suggest.box;
    closeSuggest();
    insertCanned(box, r.body);
  }
  document.addEventListener('input', function (e) {
    if (e.target.id === 'reply-body') updateSuggest(e.target);
  });
  document.addEventListener('focusout', function (e) {
    if (suggest && e.target === suggest.box) setTimeout(function () { if (suggest && document.activeElement !== suggest.box) closeSuggest(); }, 150);
  });
  // Without suggestions open, the Canned replies list inserts the one clicked.
  document.addEventListener('click', function (e) {
    var li = e.target.closest && e.target.closest('#canned-replies li[data-shortcut]');
    var box = document.getElementById('reply-body');
    if (!li || !box) return;
    insertCanned(box, li.querySelector('.cannedbody').textContent);
    var details = li.closest('details');
    if (details) details.open = false;
  });

  // Keys in the reply box: the suggestions' own (arrows, Enter, Tab, Escape), then Ctrl+Enter sends
  // the reply or the note (listened for on the document: the reply box is a live part, replaced when
  // the contact's consent changes).
  document.addEventListener('keydown', function (e) {
    var box = e.target;
    if (suggest && box === suggest.box && !e.ctrlKey && !e.metaKey && !e.altKey) {
      switch (e.key) {
        case 'ArrowDown': highlight(suggest.index + 1); break;
        case 'ArrowUp': highlight(suggest.index - 1); break;
        case 'Enter': case 'Tab':
          if (!suggest.items.length) { closeSuggest(); return; }
          choose(suggest.items[suggest.index]);
          break;
        case 'Escape': closeSuggest(); break;
        default: return;
      }
      e.preventDefault();
      return;
    }
    if ((box.id !== 'reply-body' && box.id !== 'note-body') || e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || box.value.trim() === '') return;
    e.preventDefault();
    box.form.requestSubmit();
  });

  // ---- Counts: unread conversations, open alerts and deliveries that gave up lately, beside
  // Conversations, Alerts and Deliveries, the unread also in the title ("(2) Conversations · Inbox"),
  // fetched again when something may have changed them. A count with data-max stops there ("99+").
  var baseTitle = document.title.replace(/^\(\d+\) /, '');
  function setCount(name, n) {
    var el = document.querySelector('.navcount[data-count="' + name + '"]');
    if (!el || el.getAttribute('data-n') === String(n)) return;
    el.setAttribute('data-n', String(n));
    if (!n) { el.replaceChildren(); return; }
    var pre = document.createElement('span'), post = document.createElement('span');
    pre.className = post.className = 'sr-only';
    pre.textContent = ': ';
    post.textContent = ' ' + el.getAttribute('data-label');
    var max = parseInt(el.getAttribute('data-max'), 10);
    el.replaceChildren(pre, document.createTextNode(max && n >= max ? (max - 1) + '+' : String(n)), post);
  }
  function setCounts(c) {
    var unread = Math.max(0, c.unread | 0);
    setCount('unread', unread);
    setCount('openAlerts', Math.max(0, c.openAlerts | 0));
    setCount('gaveUp', Math.max(0, c.gaveUp | 0));
    document.title = (unread ? '(' + unread + ') ' : '') + baseTitle;
  }
  var hasCounts = !!document.querySelector('.navcount');
  document.querySelectorAll('.navcount').forEach(function (el) {
    el.setAttribute('data-n', (el.textContent.match(/\d+/) || ['0'])[0]);
  });
  var countsTimer = null;
  function refreshCounts() {
    if (!hasCounts) return;
    clearTimeout(countsTimer);
    countsTimer = setTimeout(function () {
      fetch('/inbox/counts', { headers: { 'X-Inbox-Live': 'counts', Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (c) { if (c) setCounts(c); })
        .catch(function () {});
    }, 150);
  }
  window.addEventListener('pageshow', function (e) { if (e.persisted) refreshCounts(); });

  var live = document.querySelector('[data-live]');
  var kind = live ? live.getAttribute('data-live') : '';
  var contact = live ? live.getAttribute('data-contact') : null;

  // ---- Keyboard shortcuts (the help lists them: "?"), ignored while typing in a field.
  var listKey = 'inbox.list';
  function listLinks() { return Array.prototype.slice.call(document.querySelectorAll('[data-live="list"] .conv > a')); }
  // The list's order is kept for the conversation pages' j and k: the conversation after this one in
  // the list the user came from.
  function saveListOrder() {
    try {
      sessionStorage.setItem(listKey, JSON.stringify({
        href: location.pathname + location.search,
        ids: listLinks().map(function (a) { return a.parentNode.getAttribute('data-contact'); })
      }));
    } catch (err) { /* storage off: j and k fetch the list */ }
  }
  var selected = null; // the list's selected conversation (contact id)
  function select(a, focus) {
    listLinks().forEach(function (x) { x.parentNode.classList.toggle('selected', x === a); });
    selected = a ? a.parentNode.getAttribute('data-contact') : null;
    if (a && focus) { a.focus(); a.scrollIntoView({ block: 'nearest' }); }
  }
  function storedOrder() {
    try { return JSON.parse(sessionStorage.getItem(listKey) || 'null'); } catch (err) { return null; }
  }
  // goConversation goes to the conversation delta places after this one in the list.
  function goConversation(delta) {
    var stored = storedOrder();
    var ids = stored && Array.isArray(stored.ids) ? stored.ids : [];
    var go = function (ids) {
      var i = ids.indexOf(contact);
      if (i < 0) { say('This conversation is not in the list'); return; }
      var next = ids[i + delta];
      if (!next) { say(delta > 0 ? 'No next conversation in the list' : 'No previous conversation in the list'); return; }
      location.href = '/inbox/conversations/' + encodeURIComponent(next);
    };
    if (ids.indexOf(contact) >= 0) { go(ids); return; }
    // Opened from elsewhere: the list as it is now.
    fetch((stored && stored.href) || '/inbox/', { headers: { 'X-Inbox-Live': '1' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) { return res.ok ? res.text() : ''; })
      .then(function (html) {
        var t = document.createElement('template');
        t.innerHTML = html;
        go(Array.prototype.map.call(t.content.querySelectorAll('.conv[data-contact]'), function (li) { return li.getAttribute('data-contact'); }));
      })
      .catch(function () {});
  }
  function move(delta) {
    if (kind === 'conversation') { goConversation(delta); return; }
    var links = listLinks();
    if (!links.length) return;
    var i = links.indexOf(document.activeElement);
    if (i < 0) i = links.findIndex(function (a) { return a.parentNode.classList.contains('selected'); });
    i = i < 0 ? 0 : Math.min(links.length - 1, Math.max(0, i + delta));
    select(links[i], true);
  }
  function compose(mode) {
    var radio = document.getElementById('mode-' + mode);
    var box = document.getElementById(mode === 'note' ? 'note-body' : 'reply-body');
    if (radio) radio.checked = true;
    if (box) { box.focus(); return; }
    var blocked = document.getElementById('reply');
    if (blocked) { blocked.scrollIntoView({ block: 'nearest' }); say('No reply possible here: see why under the messages'); }
  }
  function resolveAlert() {
    var form = kind === 'conversation' && document.querySelector('[data-live="conversation"] .alert form.resolve');
    if (form) form.requestSubmit();
    else if (kind === 'conversation') say('No open alert on this conversation');
  }
  // toggleStatus presses the conversation's Resolve button (Reopen when it is resolved).
  function toggleStatus() {
    if (kind !== 'conversation') return;
    var form = document.querySelector('[data-live-part="status"] form.statustoggle');
    if (form) form.requestSubmit();
    else say('No conversation to resolve yet: it has no messages');
  }
  function help() {
    var d = document.getElementById('shortcuts');
    if (d && !d.open && d.showModal) d.showModal();
  }
  function typing(el) {
    if (!el || !el.tagName) return false;
    if (el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') return true;
    return el.tagName === 'INPUT' && !/^(radio|checkbox|button|submit|reset)$/.test(el.type);
  }
  document.addEventListener('keydown', function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var d = document.getElementById('shortcuts');
    if (d && d.open) return; // the dialog closes itself on Escape
    if (typing(e.target)) {
      if (e.key === 'Escape' && e.target.tagName !== 'SELECT') e.target.blur();
      return;
    }
    switch (e.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'r': compose('reply'); break;
      case 'n': compose('note'); break;
      case 'e': resolveAlert(); break;
      case 'E': if (!e.shiftKey || kind !== 'conversation') return; toggleStatus(); break;
      case 'u': if (kind === 'conversation') { var s = storedOrder(); location.href = (s && s.href) || '/inbox/'; } else return; break;
      case '?': help(); break;
      default: return;
    }
    e.preventDefault();
  });

  var rendered = {};
  document.querySelectorAll('[data-live-part]').forEach(function (el) {
    rendered[el.getAttribute('data-live-part')] = el.innerHTML;
  });
  localTimes(document);
  setInterval(function () { waitingTimes(document); }, 30000);
  if (kind === 'list') saveListOrder();
  if (!live && !hasCounts) return;
  // A conversation opens at its newest message, unless the address points into the page (#consent,
  // where a form's result is shown).
  if (kind === 'conversation' && !location.search && (!location.hash || location.hash === '#bottom')) toBottom();

  // concerns tells whether an event changes what this page's live region shows.
  function concerns(type, data) {
    if (kind === 'list') return type !== 'note.created' && type !== 'alert.escalated';
    if (kind === 'alerts') return type.indexOf('alert.') === 0;
    if (kind !== 'conversation' || !data) return false;
    return (type === 'contact.updated' ? data.id : data.contactId) === contact;
  }

  // Set once the page is being left (a link, a form such as Sign out): a refresh that then finds the
  // session gone must not reload the page, which would cancel the navigation under way.
  var leaving = false;
  window.addEventListener('beforeunload', function () { leaving = true; });
  window.addEventListener('pageshow', function () { leaving = false; });

  // refresher returns a function that fetches the page again with the X-Inbox-Live header (what the
  // server then renders: "1" the live region, "parts" the other live parts) and hands the HTML, parsed
  // inert (a template loads and runs nothing), to apply; after runs once the answer is in. Calls close
  // together make one request, and never two at once.
  function refresher(header, apply, after) {
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
          .then(function () {
            inFlight = false;
            if (after) after();
          });
      }, 100);
    }
    return run;
  }

  // The conversation's timeline changes item by item (a new message is added, a message whose status
  // changed replaced), so that its live region announces only what is new; false when the order of
  // the items changed, for the caller to replace it all.
  function morphList(oldList, newList) {
    var olds = Array.prototype.slice.call(oldList.children), news = Array.prototype.slice.call(newList.children);
    var oldIds = {}, newIds = {};
    olds.forEach(function (o) { if (o.id) oldIds[o.id] = o; });
    news.forEach(function (n) { if (n.id) newIds[n.id] = n; });
    var both = function (list, other) { return list.filter(function (x) { return x.id && other[x.id]; }).map(function (x) { return x.id; }).join(' '); };
    if (both(olds, newIds) !== both(news, oldIds)) return false;
    olds.forEach(function (o) { if (!o.id || !newIds[o.id]) o.remove(); });
    var cursor = oldList.firstElementChild;
    news.forEach(function (n) {
      var o = n.id && oldIds[n.id];
      if (!o) { oldList.insertBefore(n, cursor); return; }
      if (o.outerHTML !== n.outerHTML) o.replaceWith(n);
      cursor = (o.parentNode ? o : n).nextElementSibling;
    });
    return true;
  }
  function outer(nodes) {
    return nodes.map(function (n) { return n.outerHTML !== undefined ? n.outerHTML : n.textContent.trim(); }).join('');
  }
  // around splits a region's nodes into those before and after its timeline.
  function around(nodes, list) {
    var before = [], after = [], seen = false;
    nodes.forEach(function (n) {
      if (n === list) seen = true;
      else (seen ? after : before).push(n);
    });
    return [before, after];
  }
  function applyConversation(next) {
    var oldList = live.querySelector('ol.messages'), newList = next.content.querySelector('ol.messages');
    if (!oldList || !newList) { live.replaceChildren(next.content); return; }
    var was = around(Array.prototype.slice.call(live.childNodes), oldList);
    var now = around(Array.prototype.slice.call(next.content.childNodes), newList);
    if (!morphList(oldList, newList)) { live.replaceChildren(next.content); return; }
    // The alerts above the timeline (and the links to other pages), replaced when they changed.
    if (outer(was[0]) !== outer(now[0])) {
      was[0].forEach(function (n) { n.remove(); });
      now[0].forEach(function (n) { live.insertBefore(n, oldList); });
    }
    if (outer(was[1]) !== outer(now[1])) {
      was[1].forEach(function (n) { n.remove(); });
      now[1].forEach(function (n) { live.appendChild(n); });
    }
  }

  // An unchanged region is left alone, so that a button being clicked is not swapped away. Showing a
  // conversation again marks it read: the counts follow.
  var refresh = refresher('1', function (next, stick) {
    localTimes(next.content);
    if (next.innerHTML === live.innerHTML) return;
    if (kind === 'conversation') {
      applyConversation(next);
    } else {
      // The list keeps its selected conversation (j, k), and the focus on it.
      var hadFocus = live.contains(document.activeElement);
      live.replaceChildren(next.content);
      if (kind === 'list') {
        saveListOrder();
        var a = selected && live.querySelector('.conv[data-contact="' + selected + '"] > a');
        if (a) select(a, hadFocus);
      }
    }
    if (stick) toBottom();
  }, kind === 'conversation' ? refreshCounts : null);

  // The page's other live parts (the conversation's assignee, consent, goals and reply box), each
  // replaced only when the server renders it differently; a reply being written is kept when the new
  // part has the reply box too.
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
      if (draft && suggest && suggest.box === draft) closeSuggest();
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

  function on(type, handle) {
    source.addEventListener(type, function (e) {
      var data = null;
      try { data = JSON.parse(e.data); } catch (err) { return; }
      handle(data);
    });
  }
  var source = new EventSource('/inbox/events');
  ['message.created', 'message.updated', 'alert.created', 'alert.resolved', 'alert.escalated', 'contact.updated', 'note.created'].forEach(function (type) {
    on(type, function (data) {
      // What waits for the user: a message may be unread, an alert open. (On a conversation page that
      // shows the message, the counts follow its refresh, which marks it read.)
      // A delivery that failed or is sent again may change the deliveries that gave up (not one sent).
      var counted = type === 'message.created' || type === 'alert.created' || type === 'alert.resolved' || type === 'contact.updated' ||
        (type === 'message.updated' && !!data && (data.status === 'failed' || data.status === 'pending'));
      if (!concerns(type, data)) {
        if (counted) refreshCounts();
        return;
      }
      refresh();
      if (counted && kind !== 'conversation') refreshCounts();
      // A new message can change where a reply goes and whether it may (a messaging window opens).
      if (hasParts && type === 'message.created') refreshParts();
    });
  });
  // A conversation given to someone ({"contactId","assignee"}): the list shows who owns each, the
  // conversation its assign control.
  on('contact.assigned', function (data) {
    if (kind === 'list') refresh();
    else if (hasParts && data && data.contactId === contact) refreshParts();
  });
  // A status change ({"contactId","status","snoozedUntil"}: this tab's, another's, the API's, or a
  // reopening) moves the conversation between the list's views, changes the conversation's status
  // controls, and the unread count, which counts open conversations only.
  on('conversation.status_changed', function (data) {
    if (kind === 'list') refresh();
    else if (hasParts && data && data.contactId === contact) refreshParts();
    refreshCounts();
  });
  // A consent change ({"id","consent"}) changes the conversation's consent and maybe its reply box.
  on('contact.consent_changed', function (data) {
    if (hasParts && data && data.id === contact) refreshParts();
  });
  // A goal recorded for the contact ({"contactId", ...}: the bot's, the API's, another tab's) changes
  // the conversation's Goal section.
  on('goal.reached', function (data) {
    if (hasParts && data && data.contactId === contact) refreshParts();
  });
  // Events stored before the stream opened were missed: those between the server rendering the page
  // and the first opening (a reply's delivery often ends in that time), and those of a lost
  // connection. Fetch the region each time the stream opens.
  source.addEventListener('open', function () {
    if (live) refresh();
    if (hasParts) refreshParts();
    if (!live || kind !== 'conversation') refreshCounts();
    document.documentElement.setAttribute('data-live-ready', '1');
  });
})();
