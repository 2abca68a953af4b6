// Nexus chat page behaviour: composer keys, reasoning panels, live trace sync, copy buttons.
// No inline scripts or eval: the page runs under a strict Content-Security-Policy.
(function () {
  "use strict";

  let socket = null; // the htmx ws socket wrapper, once open

  function panels() {
    return Array.from(document.querySelectorAll(".trace-panel[data-run-id]"));
  }

  function cursor() {
    const result = {};
    for (const panel of panels()) {
      result[panel.dataset.runId] = Number(panel.dataset.lastSeq || 0);
    }
    return result;
  }

  // The cursor: each run's last event this page has; `after`: its newest run, so questions
  // asked since (in another tab while this page's socket was down) are sent whole.
  function sync() {
    if (!socket) return;
    const runs = cursor();
    const after = Math.max(0, ...Object.keys(runs).map(Number));
    socket.send(JSON.stringify({ type: "sync", cursor: runs, after }));
  }

  function setPanelOpen(panel, open) {
    const list = panel.querySelector("ol.trace");
    const head = panel.querySelector(".trace-head");
    if (!list || !head) return;
    list.hidden = !open;
    head.setAttribute("aria-expanded", open ? "true" : "false");
    panel.classList.toggle("open", open);
  }

  // A card waiting for the person (a tool approval, a server's question) lives in the trace;
  // a collapsed panel would hide its buttons, so the panel opens while one is pending (the
  // saved preference is left alone).
  function revealPending() {
    panels().forEach((panel) => {
      const list = panel.querySelector("ol.trace");
      if (list && list.hidden && list.querySelector(".approval-card.approval-pending")) setPanelOpen(panel, true);
    });
  }

  function rememberOpen(open) {
    const app = document.getElementById("app");
    if (!app) return;
    app.dataset.traceOpen = open ? "true" : "false";
    const token = document.querySelector("input[name=csrfmiddlewaretoken]");
    const body = new URLSearchParams({ trace_open: open ? "true" : "false" });
    fetch(app.dataset.prefUrl, {
      method: "POST", body, credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "" },
    });
  }

  function toggleAll() {
    const all = panels();
    if (!all.length) return;
    const open = all[all.length - 1].querySelector("ol.trace").hidden;
    all.forEach((panel) => setPanelOpen(panel, open));
    rememberOpen(open);
  }

  function clearLatest() {
    const all = panels();
    if (!all.length) return;
    const list = all[all.length - 1].querySelector("ol.trace");
    if (list) list.replaceChildren();
  }

  function nearBottom(el) {
    return el.scrollHeight - el.scrollTop - el.clientHeight < 160;
  }

  // Whether the thread follows the latest message. Remembered from the person's scrolling, not
  // measured after a swap: a tall answer, once in, left the bottom out of reach of nearBottom,
  // and the page stopped following with the answer below the fold.
  let pinned = true;
  let lastTop = 0;
  function followScroll() {
    const thread = document.getElementById("thread");
    if (!thread) return;
    // Moving up (the person, or content above shrinking) decides; content growing below moves
    // nothing, and neither does following it down, so neither unpins.
    if (thread.scrollTop < lastTop - 1) pinned = nearBottom(thread);
    else if (nearBottom(thread)) pinned = true;
    lastTop = thread.scrollTop;
    updateJump();
  }

  function scrollThread(force) {
    const thread = document.getElementById("thread");
    // A move up whose scroll event has not come yet (it comes with the next frame, and a swap
    // can land first): it decides before the swap may pull the reader back down.
    if (thread && !force && thread.scrollTop < lastTop - 1) followScroll();
    if (thread && (force || pinned)) {
      thread.scrollTop = thread.scrollHeight;
      pinned = true;
      lastTop = thread.scrollTop;
    }
    updateJump();
  }

  // Scrolled up to read while answers arrive: a ↓ button goes back to the latest.
  function updateJump() {
    const thread = document.getElementById("thread");
    const jump = document.getElementById("jump-latest");
    if (thread && jump) jump.hidden = nearBottom(thread);
  }

  function updateTitle() {
    const status = document.getElementById("status-line");
    if (status && status.dataset.title) document.title = status.dataset.title;
  }

  // A wide table scrolls inside the answer: keyboard users reach it too (WCAG 2.1.1).
  function focusableTables(root) {
    root.querySelectorAll(".markdown table").forEach((table) => {
      if (table.hasAttribute("tabindex")) return;
      table.tabIndex = 0;
      table.setAttribute("aria-label", "Table (scrolls sideways when wide)");
    });
  }

  function addCopyButtons(root) {
    focusableTables(root);
    root.querySelectorAll(".markdown pre").forEach((pre) => {
      if (pre.querySelector(".copy-code")) return;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = "Copy";
      pre.appendChild(button);
      const language = /language-([\w+#-]+)/.exec(pre.querySelector("code")?.className || "");
      if (language) {
        const label = document.createElement("span");
        label.className = "code-lang";
        label.textContent = language[1];
        pre.appendChild(label);
      }
    });
  }

  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Copy failed";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  }

  // --- errors, stop, drafts, versions, theme, sidebar ---------------------------------------

  // An Edit box's own request: its refusal is said under it, where the person typed, whatever
  // answered it (the server's words, a stale page's 403, a 401 after signing out, no network).
  function editErrorBox(elt) {
    return (elt && elt.closest && elt.closest(".edit-question") && elt.querySelector(".edit-error")) || null;
  }

  function showError(text, kind, elt) {
    const box = editErrorBox(elt) || document.getElementById("composer-error") || document.getElementById("page-error");
    if (!box) return;
    // The chat was deleted in another tab: that says more than any error about it can.
    if (box.querySelector(".gone")) return;
    const p = document.createElement("p");
    p.className = kind ? `error ${kind}` : "error";
    p.setAttribute("role", "alert");
    p.textContent = text;
    box.replaceChildren(p);
  }

  function clearError() {
    const box = document.getElementById("composer-error") || document.getElementById("page-error");
    if (box) box.replaceChildren();
  }

  function errorText(xhr) {
    const type = xhr.getResponseHeader("Content-Type") || "";
    const body = (xhr.responseText || "").trim();
    if (type.startsWith("text/plain") && body && body.length < 300) return body;
    if (xhr.status === 429) return "Too many requests; wait a minute and try again.";
    if (xhr.status === 403) return "That was refused (403). Reload the page and sign in again if needed.";
    if (xhr.status === 404) return "That is no longer there (404). Reload the page.";
    if (xhr.status >= 500) return `Nexus hit an error (${xhr.status}). Try again in a moment; if it persists, tell your admin.`;
    return `The request failed (${xhr.status}).`;
  }

  function activeAnswer() {
    return document.querySelector(".turn .answer[data-active='true']");
  }

  // Enter while a run works sends nothing: a note under the box says why, until the run ends.
  function sayBusy() {
    const box = document.getElementById("composer-error");
    if (!box || box.querySelector(".gone, .busy")) return;
    const note = Object.assign(document.createElement("p"), {
      className: "note busy",
      textContent: "Nexus is still answering: your message stays here. Send it once the answer is in, or press Stop first.",
    });
    note.setAttribute("role", "status");
    box.append(note);
  }

  // Send becomes Stop while a run works (the box keeps what the person is typing).
  function updateComposer() {
    const composer = document.getElementById("composer");
    if (!composer) return;
    const active = activeAnswer();
    if (!active) composer.querySelectorAll("#composer-error .busy").forEach((p) => p.remove());
    const send = composer.querySelector("button.send");
    const stop = document.getElementById("stop-button");
    composer.dataset.running = active ? "true" : "false";
    if (send) send.hidden = Boolean(active);
    if (stop) {
      stop.hidden = !active;
      if (stop.hidden && stop.dataset.refocus) {
        delete stop.dataset.refocus;
        document.getElementById("composer-input")?.focus();
      }
      stop.dataset.url = active ? active.dataset.stopUrl || "" : "";
      stop.dataset.target = active ? "#" + active.id : "";
    }
  }

  function stopRun(button) {
    if (!button.dataset.url || !window.htmx) return;
    // Stop hides itself once the run has stopped: a keyboard user goes on from the message box.
    if (document.activeElement === button) button.dataset.refocus = "true";
    button.disabled = true;
    window.htmx.ajax("POST", button.dataset.url, { source: button, target: button.dataset.target, swap: "outerHTML" })
      .finally(() => { button.disabled = false; updateComposer(); });
  }

  function codePoints(text) {
    return Array.from(text).length;
  }

  // What each draft box has beyond its last Markdown render: {draft, base, text} (the text
  // from code point `base` on). Text frames append to it, shown as plain text; a render from
  // the server replaces the box with sanitised HTML up to `upto` and keeps the rest as text.
  const drafts = new Map();

  function draftState(box) {
    let state = drafts.get(box.id);
    if (!state || state.draft !== box.dataset.draft) {
      state = { draft: box.dataset.draft, base: Number(box.dataset.length || 0), text: "" };
      drafts.set(box.id, state);
    }
    return state;
  }

  function appendTail(body, text) {
    let tail = body.querySelector(":scope > .draft-tail");
    if (!tail) {
      tail = document.createElement("span");
      tail.className = "draft-tail";
      body.append(tail);
    }
    // Shown without direction overrides, as the server renders it (offsets count the raw text).
    tail.append(document.createTextNode(text.replace(OVERRIDES, "")));
  }

  // A draft frame: text appended to the run's draft if it continues what the page has, and
  // now and then the draft so far as HTML.
  function applyDraft(frame) {
    const box = document.getElementById("draft-" + frame.run);
    if (!box) return;
    const body = box.querySelector(".draft-text");
    if (!body) return;
    if (typeof frame.text === "string") {
      const have = Number(box.dataset.length || 0);
      let added = "";
      if (frame.offset === 0 || box.dataset.draft !== frame.draft) {
        if (frame.offset !== 0) { sync(); return; } // a new draft began and we missed its start
        body.replaceChildren();
        box.dataset.draft = frame.draft;
        drafts.set(box.id, { draft: frame.draft, base: 0, text: "" });
        added = frame.text;
        box.dataset.length = String(codePoints(frame.text));
      } else if (frame.offset <= have) {
        draftState(box); // before the length moves on: a page-loaded draft's text starts there
        added = Array.from(frame.text).slice(have - frame.offset).join("");
        box.dataset.length = String(Math.max(have, frame.offset + codePoints(frame.text)));
      } else {
        sync(); // a gap: the sync sends the stored draft whole
        return;
      }
      if (added) {
        draftState(box).text += added;
        appendTail(body, added);
      }
    }
    if (typeof frame.html === "string" && frame.draft === box.dataset.draft) {
      const state = draftState(box);
      if (frame.upto >= state.base) {
        const tail = Array.from(state.text).slice(frame.upto - state.base).join("");
        // Rendered from Markdown and sanitised by the server (nh3 allow-list), like the answer.
        body.innerHTML = frame.html;
        state.base = frame.upto;
        state.text = tail;
        if (tail) appendTail(body, tail);
        box.dataset.length = String(Math.max(Number(box.dataset.length || 0), frame.upto));
      }
    }
    box.classList.remove("empty-draft");
    scrollThread(false);
  }

  // Regenerated and edited questions: one version of a turn shows, the others are a click away.
  function normaliseVersions(shown) {
    const thread = document.getElementById("thread");
    if (!thread) return;
    const groups = new Map();
    thread.querySelectorAll("article.turn[data-group]").forEach((turn) => {
      const list = groups.get(turn.dataset.group) || [];
      list.push(turn);
      groups.set(turn.dataset.group, list);
    });
    groups.forEach((turns) => {
      if (shown && turns.includes(shown)) turns.forEach((turn) => { turn.hidden = turn !== shown; });
      // One version shows: when a new one arrives by another path (the websocket) before the
      // page's own swap, the newest visible one wins.
      const visible = turns.filter((turn) => !turn.hidden);
      if (visible.length > 1) turns.forEach((turn) => { turn.hidden = turn !== visible[visible.length - 1]; });
      if (!turns.some((turn) => !turn.hidden)) turns[turns.length - 1].hidden = false;
      turns.forEach((turn, index) => {
        turn.querySelectorAll(".variants").forEach((nav) => {
          nav.hidden = turns.length < 2;
          const label = nav.querySelector(".variant-label");
          if (label) label.textContent = `${index + 1}/${turns.length}`;
          const prev = nav.querySelector(".variant-prev");
          const next = nav.querySelector(".variant-next");
          if (prev) prev.disabled = index === 0;
          if (next) next.disabled = index === turns.length - 1;
        });
      });
    });
  }

  // The conversation goes on from each question's latest version (conversation_history on the
  // server): an older one shown as a question is sent gives way to the latest, so the page
  // shows what the next answer builds on (it showed the older one, and a reload the latest).
  function showLatestVersions() {
    const latest = new Map();
    document.querySelectorAll("#thread article.turn[data-group]").forEach((turn) => latest.set(turn.dataset.group, turn));
    latest.forEach((turn) => { if (turn.hidden) normaliseVersions(turn); });
  }

  function showVersion(button, step) {
    const turn = button.closest("article.turn");
    const turns = Array.from(document.querySelectorAll(`article.turn[data-group="${turn.dataset.group}"]`));
    const target = turns[turns.indexOf(turn) + step];
    if (!target) return;
    normaliseVersions(target);
    const nav = target.querySelector(step < 0 ? ".variant-prev" : ".variant-next");
    (nav && !nav.disabled ? nav : target.querySelector(".variant-label") || target).focus?.();
  }

  function afterThreadChange(added) {
    const thread = document.getElementById("thread");
    if (thread && thread.querySelector("article.turn")) {
      const empty = document.getElementById("empty-state");
      if (empty) empty.remove();
    }
    normaliseVersions(added || null);
    updateComposer();
  }

  function setTheme(theme, url) {
    document.documentElement.dataset.theme = theme;
    const token = document.querySelector("input[name=csrfmiddlewaretoken]");
    fetch(url, {
      method: "POST", body: new URLSearchParams({ theme }), credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "" },
    }).then((response) => { if (!response.ok) showError("Could not save the theme."); })
      .catch(() => showError("Could not reach Nexus to save the theme."));
  }

  function setSidebar(open) {
    const app = document.getElementById("app");
    if (!app) return;
    const was = app.classList.contains("nav-open");
    app.classList.toggle("nav-open", open);
    document.querySelectorAll(".sidebar-toggle").forEach((b) => b.setAttribute("aria-expanded", open ? "true" : "false"));
    if (open === was || !drawerMode()) return;
    // The drawer takes the focus as it opens and gives it back to ☰ as it closes.
    const stops = drawerStops();
    if (open && stops.length) stops[0].focus();
    if (!open && document.getElementById("sidebar")?.contains(document.activeElement)) {
      document.querySelector(".chat-head .sidebar-toggle")?.focus();
    }
  }

  // On a phone the chat list is a drawer over the chat (and over ☰): while it is open, Tab goes
  // round its links, not into the page behind; Escape or a tap beside it closes it.
  function drawerMode() {
    const toggle = document.querySelector(".chat-head .sidebar-toggle");
    return Boolean(toggle && toggle.offsetParent !== null);
  }
  function drawerStops() {
    const sidebar = document.getElementById("sidebar");
    return sidebar
      ? Array.from(sidebar.querySelectorAll("a[href], button, input, select, textarea, summary"))
          .filter((el) => !el.disabled && el.getClientRects().length > 0)
      : [];
  }
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || !document.getElementById("app")?.classList.contains("nav-open") || !drawerMode()) return;
    const stops = drawerStops();
    if (!stops.length) return;
    const at = stops.indexOf(document.activeElement);
    const next = event.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : (at === -1 || at === stops.length - 1 ? 0 : at + 1);
    event.preventDefault();
    stops[next].focus();
  });

  // --- events ---------------------------------------------------------------------------

  // The header's menus (⋯, Share) close on a click elsewhere or Escape, like any app's menus.
  function closeMenus(except) {
    document.querySelectorAll(".session-actions[open], .share-dialog[open]").forEach((menu) => {
      if (menu !== except) menu.open = false;
    });
  }

  document.addEventListener("click", (event) => {
    closeMenus(event.target.closest(".session-actions, .share-dialog"));
    const stop = event.target.closest("#stop-button");
    // Stop appears where Send was: the second click of a double-click on Send is not a Stop.
    if (stop) { if (event.detail < 2) stopRun(stop); return; }
    if (event.target.closest("#jump-latest")) {
      const thread = document.getElementById("thread");
      if (thread) thread.scrollTo({ top: thread.scrollHeight, behavior: "smooth" });
      document.getElementById("composer-input")?.focus({ preventScroll: true });
      return;
    }
    const prev = event.target.closest(".variant-prev");
    if (prev) { showVersion(prev, -1); return; }
    const next = event.target.closest(".variant-next");
    if (next) { showVersion(next, 1); return; }
    const toggle = event.target.closest(".sidebar-toggle");
    if (toggle) { setSidebar(toggle.getAttribute("aria-expanded") !== "true"); return; }
    if (event.target.closest(".app.nav-open .chat") && !event.target.closest(".chat-head")) setSidebar(false);
    const head = event.target.closest(".trace-head");
    if (head) {
      const panel = head.closest(".trace-panel");
      const open = head.getAttribute("aria-expanded") !== "true";
      setPanelOpen(panel, open);
      rememberOpen(open);
      return;
    }
    const copyCode = event.target.closest(".copy-code");
    if (copyCode) {
      const code = copyCode.parentElement.querySelector("code");
      copyText(code ? code.innerText : "", copyCode);
      return;
    }
    const copyAnswer = event.target.closest(".copy-answer");
    if (copyAnswer) {
      const source = copyAnswer.closest(".answer").querySelector("template.answer-source");
      copyText(source ? source.content.textContent : "", copyAnswer);
    }
  });

  document.addEventListener("keydown", (event) => {
    const input = event.target.closest && event.target.closest("#composer-input");
    if (input && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault(); // never a newline: Enter picks a completion or sends
      if (window.NexusCompletions && window.NexusCompletions.handlesEnter()) return;
      if (activeAnswer()) {
        // Stop first: Enter keeps the text for the next question, and says so (it was silent,
        // and a newcomer pressed it again and again).
        sayBusy();
        return;
      }
      if (input.form.dataset.sending === "true") return; // the last one is on its way; keep this
      // Like Send, even when blank: the server says "Type a message first." (it was silent).
      input.form.requestSubmit();
      return;
    }
    // The Edit box under a question sends like the message box: Enter sends, Shift+Enter is a
    // new line (it put a newline in the question instead).
    const edit = event.target.closest && event.target.closest(".edit-question textarea");
    if (edit && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      // Even when blank, like the message box: the server says why under the Edit box.
      edit.form.requestSubmit();
      return;
    }
    // Escape in an open Edit box cancels the edit, like a menu's Escape: the box closes with
    // the question as it was, and the keyboard is back on Edit (it stayed open, with no way
    // out but a click on Edit).
    const editing = event.key === "Escape" && event.target.closest && event.target.closest(".edit-question[open]");
    if (editing) {
      const box = editing.querySelector("textarea");
      if (box) box.value = box.defaultValue;
      editing.open = false;
      editing.querySelector("summary")?.focus();
      return;
    }
    if (event.key === "Escape" && document.querySelector(".session-actions[open], .share-dialog[open]")) {
      const open = document.querySelector(".session-actions[open], .share-dialog[open]");
      closeMenus(null);
      open.querySelector("summary")?.focus();
      return;
    }
    if (event.key === "Escape" && document.getElementById("app")?.classList.contains("nav-open")) setSidebar(false);
    if (event.ctrlKey && event.code === "Period") {
      event.preventDefault();
      if (event.shiftKey) clearLatest(); else toggleAll();
    }
  });

  // Opening Edit puts the keyboard in its box, at the end of the question (it stayed on Edit,
  // and typing did nothing until the box was clicked).
  document.addEventListener("toggle", (event) => {
    const edit = event.target;
    if (!(edit instanceof HTMLDetailsElement) || !edit.matches(".edit-question") || !edit.open) return;
    const box = edit.querySelector("textarea");
    if (!box) return;
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }, true);

  // The first page's box starts a chat with a full page load: once, and not over the limit
  // (the box says so already).
  // So does "+ New chat" beside the documents, search and memory: a double-click made two.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!form || (form.id !== "start-composer" && !form.classList.contains("new-chat-form"))) return;
    const input = form.querySelector("#composer-input");
    if (form.dataset.sending === "true" || (input && tooLong(input))) {
      event.preventDefault();
      return;
    }
    form.dataset.sending = "true";
  });
  // A page shown again by Back from the browser's cache sends again when asked.
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    document.querySelectorAll("#start-composer, form.new-chat-form").forEach((form) => { delete form.dataset.sending; });
  });
  // A lost socket reconnects within 8 s of the server's return (the ws extension's own backoff
  // reached 64 s, and a page stayed stale for a minute after a restart).
  if (window.htmx) {
    htmx.config.wsReconnectDelay = (retry) => backoff(retry, 8000);
  }
  // Pauses that double from a second up to `most` ms, each shortened at random by up to half
  // (pages that lost their socket together do not all come back at once).
  function backoff(retry, most) {
    return Math.min(most, 1000 * 2 ** retry) * (0.5 + Math.random() / 2);
  }

  // A websocket (re)connect: ask for everything after what this page already shows.
  document.addEventListener("htmx:wsOpen", (event) => {
    socket = event.detail.socketWrapper;
    sync();
  });
  // 4503: the server has no Redis right now; 4429: this person has too many tabs open. Say
  // so under the composer; the next open clears it.
  const CLOSE_REASONS = {
    4503: "Live updates are unavailable for a moment; they come back on their own.",
    4429: "Too many Nexus tabs are open: close some, then reload this one for live updates.",
    4401: "You are signed out in this browser: reload the page to sign in again.",
  };
  // After a 4503 the page tries again itself, less and less often (the ws extension retries
  // only the standard codes, and a page stayed without live updates once Redis was back).
  let retries = 0;
  document.addEventListener("htmx:wsOpen", () => { retries = 0; });
  document.addEventListener("htmx:wsClose", (event) => {
    const closed = event.detail && event.detail.event;
    const wrapper = event.detail && event.detail.socketWrapper;
    if (closed && closed.code === 4503 && wrapper && wrapper.reconnect) {
      const delay = backoff(retries, 30000);
      retries += 1;
      setTimeout(() => wrapper.reconnect(), delay);
    }
  });
  // Any other close but the page's own leaving (the server restarting, the network gone): the
  // ws extension reconnects by itself; if it has not within a moment, say so, beside any error
  // already there (a send that could not reach the server keeps its text).
  const LOST = "The connection to Nexus was lost; reconnecting… What happens meanwhile shows when it is back.";
  let lostTimer = null;
  function sayLiveUpdates(text) {
    const box = document.getElementById("composer-error");
    if (!box || box.querySelector(".gone")) return;
    const note = Object.assign(document.createElement("p"), { className: "error live-updates", role: "alert", textContent: text });
    box.querySelectorAll(".live-updates").forEach((p) => p.remove());
    if (box.querySelector(".error")) box.append(note); else box.replaceChildren(note);
  }
  document.addEventListener("htmx:wsClose", (event) => {
    socket = null;
    const closed = event.detail && event.detail.event;
    if (!closed) return;
    if (CLOSE_REASONS[closed.code]) {
      sayLiveUpdates(closed.reason || CLOSE_REASONS[closed.code]);
    } else if (closed.code !== 1000 && closed.code !== 1001 && lostTimer === null) {
      lostTimer = setTimeout(() => { lostTimer = null; if (!socket) sayLiveUpdates(LOST); }, 2000);
    }
  });
  // Back: the notes about live updates go, and so does a send's "could not reach Nexus" (the
  // text it could not send is still in the box).
  document.addEventListener("htmx:wsOpen", () => {
    clearTimeout(lostTimer);
    lostTimer = null;
    document.querySelectorAll("#composer-error .live-updates, #composer-error .unreachable").forEach((p) => p.remove());
  });
  // The network back while the socket stayed open (no wsOpen): "could not reach" goes too.
  window.addEventListener("online", () => {
    document.querySelectorAll("#composer-error .unreachable").forEach((p) => p.remove());
  });

  // A pushed part marked data-if-present replaces its element only if the page still has it:
  // the "working" line a socket push rendered just before Stop was pressed could arrive after
  // Stop's reply had replaced it with the stopped answer, and htmx logged an error for a
  // target that was rightly gone. The socket's messages pass through extensions' transform.
  htmx.defineExtension("if-present", {
    transformResponse: (text) => {
      if (typeof text !== "string" || text.indexOf("data-if-present") < 0) return text;
      const template = document.createElement("template");
      template.innerHTML = text;
      for (const part of Array.from(template.content.children)) {
        if (!part.hasAttribute("data-if-present") || document.getElementById(part.id)) continue;
        // Or brought by this same message (a turn swapped in before it).
        if (template.content.querySelectorAll(`[id="${CSS.escape(part.id)}"]`).length < 2) part.remove();
      }
      return template.innerHTML;
    },
  });

  // Draft text arrives as small JSON frames, not HTML: handle them here, never swap them.
  document.addEventListener("htmx:wsBeforeMessage", (event) => {
    const text = event.detail.message;
    if (typeof text !== "string" || text.charAt(0) !== "{") return;
    event.preventDefault();
    let frame;
    try { frame = JSON.parse(text); } catch (error) { return; }
    if (frame && frame.nexus === "draft") applyDraft(frame);
  });

  // htmx swaps no 4xx/5xx: an error the server aimed at the error box is swapped anyway,
  // any other is said there in words; a network failure too. The next success clears it.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const xhr = event.detail.xhr;
    if (xhr.status >= 400 && xhr.getResponseHeader("HX-Retarget")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("htmx:responseError", (event) => showError(errorText(event.detail.xhr), "", event.detail.elt));
  document.addEventListener("htmx:sendError", (event) => showError("Could not reach Nexus. Check your connection and try again.", "unreachable", event.detail.elt));
  document.addEventListener("htmx:timeout", (event) => showError("Nexus took too long to answer that request. Try again.", "", event.detail.elt));

  // The message box grows with what is typed (up to 40% of the screen), then scrolls.
  function fitComposer(input) {
    input.style.height = "auto";
    const limit = Math.round(window.innerHeight * 0.4);
    input.style.height = Math.min(input.scrollHeight + 2, limit) + "px";
    input.style.overflowY = input.scrollHeight + 2 > limit ? "auto" : "hidden";
  }
  document.addEventListener("input", (event) => {
    const input = event.target.closest && event.target.closest("#composer-input");
    if (input) {
      fitComposer(input);
      sayIfTooLong(input);
      keepDraft(input);
    }
  });
  // What is typed in a chat's box and not sent is kept for this tab (sessionStorage: gone with
  // the tab, never left behind on a shared computer) and is there again when the chat is
  // opened again: opening another chat to look something up lost it.
  function draftKey(input) {
    const form = input.form;
    return form && form.id === "composer" ? "nexus-unsent:" + form.getAttribute("action") : null;
  }
  function keepDraft(input) {
    const key = draftKey(input);
    if (!key) return;
    try {
      if (input.value.trim()) sessionStorage.setItem(key, input.value);
      else sessionStorage.removeItem(key);
    } catch (error) { /* storage full or refused: the box still holds the text */ }
  }
  function restoreDraft() {
    const input = document.querySelector("#composer #composer-input");
    if (!input || input.value) return;
    let kept = null;
    try { kept = sessionStorage.getItem(draftKey(input)); } catch (error) { kept = null; }
    if (!kept) return;
    input.value = kept;
    fitComposer(input);
    sayIfTooLong(input);
  }
  // Over the limit, the box says so while the text is typed or pasted (a maxlength cut a
  // long paste off silently, its end lost); the server refuses it with the same words.
  // The length the server counts (services.message_validate): code points, not UTF-16 units,
  // without direction overrides, leading blank lines or trailing white space ("word " * 4100
  // was 20,500 here and 20,499 in the server's refusal).
  const OVERRIDES = /[\u202a-\u202e]/g;
  const LEADING_BLANK_LINES = /^(?:[ \t]*\r?\n)+/;
  const SPACE = /[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/; // Python's isspace
  function countedLength(value) {
    const text = value.replace(OVERRIDES, "").replace(LEADING_BLANK_LINES, "");
    let end = text.length;
    while (end > 0 && SPACE.test(text[end - 1])) end -= 1; // a loop: a regex at the end backtracks
    return codePoints(text.slice(0, end));
  }
  function tooLong(input) {
    const limit = Number(input.dataset.limit || 0);
    return limit > 0 && countedLength(input.value) > limit;
  }
  function sayIfTooLong(input) {
    const limit = Number(input.dataset.limit || 0);
    const box = document.getElementById("composer-error");
    if (!limit || !box) return;
    box.querySelector(".too-long")?.remove();
    if (!tooLong(input)) return;
    const p = document.createElement("p");
    p.className = "error too-long";
    p.setAttribute("role", "alert");
    p.textContent = `This message is ${countedLength(input.value).toLocaleString("en")} characters; the limit is ` +
      `${limit.toLocaleString("en")}. Shorten it, or upload it as a document and mention it with @.`;
    box.replaceChildren(p);
  }
  document.addEventListener("reset", (event) => {
    const input = event.target.querySelector && event.target.querySelector("#composer-input");
    if (input) setTimeout(() => fitComposer(input), 0);
  });

  document.addEventListener("change", (event) => {
    const select = event.target.closest("#theme-select");
    if (select) setTheme(select.value, select.dataset.url);
  });

  // A form that deletes for good asks first (data-confirm: what it will delete).
  document.addEventListener("submit", (event) => {
    const form = event.target.closest && event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  // Drop fragments this page already has (live push and catch-up can overlap).
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const fragment = event.detail.fragment;
    if (!fragment || !fragment.querySelectorAll) return;
    const target = event.detail.target;
    if (target && target.id === "thread") {
      // A turn from another tab, or this tab's own racing its POST response: keep one.
      fragment.querySelectorAll("article.turn[id]").forEach((turn) => {
        if (document.getElementById(turn.id)) turn.remove();
      });
      return;
    }
    if (!target || !target.matches || !target.matches("ol.trace")) return;
    fragment.querySelectorAll("li[id]").forEach((li) => {
      if (document.getElementById(li.id)) li.remove();
    });
  });

  // A step finished: its line in the plan above says done (or failed) instead of pending.
  function markSteps(trace) {
    trace.querySelectorAll(".step-done[data-step]").forEach((mark) => {
      trace.querySelectorAll(`.plan li[data-step="${CSS.escape(mark.dataset.step)}"]`).forEach((li) => {
        const status = mark.dataset.status || "completed";
        li.className = `step st-${status}`;
        const badge = li.querySelector(".badge");
        if (badge) { badge.className = `badge st-${status}`; badge.textContent = status; }
      });
    });
  }

  // Live pushes and a catch-up can also arrive out of order (the catch-up asked before the
  // push, answered after it): the steps are put back in their sequence, phase heading first.
  function keepInOrder(list) {
    const items = Array.from(list.children).filter((li) => li.matches("li[data-seq]"));
    const rank = (li) => Number(li.dataset.seq) * 2 + (li.classList.contains("phase") ? 0 : 1);
    if (items.every((li, i) => i === 0 || rank(items[i - 1]) <= rank(li))) return;
    items.sort((a, b) => rank(a) - rank(b)).forEach((li) => list.append(li));
  }

  document.addEventListener("htmx:oobAfterSwap", (event) => {
    const target = event.detail.target;
    if (target && target.matches && target.matches("ol.trace")) keepInOrder(target);
    if (target && target.matches && target.matches("ol.trace")) markSteps(target);
    if (target && target.matches && target.matches("ol.trace")) {
      const panel = target.closest(".trace-panel");
      const seqs = Array.from(target.querySelectorAll("li[data-seq]")).map((li) => Number(li.dataset.seq));
      const last = Math.max(Number(panel.dataset.lastSeq || 0), ...seqs);
      panel.dataset.lastSeq = String(last);
      // The run has events: the queue took its job, so "the job queue is unreachable" is over.
      if (last > 0) document.querySelector(`.notice.queue-down[data-run-id="${panel.dataset.runId}"]`)?.remove();
    }
    if (target && target.id === "status-line") updateTitle();
    if (target && target.id === "session-heading") {
      // Renamed in another tab, or named by the first message: the rename box shows the new
      // title unless it is being edited. `target` is the heading swapped out; read the new one.
      const heading = document.getElementById("session-heading");
      const input = document.querySelector("#session-title .session-actions:not([open]) input[name=title]");
      if (heading && input) input.value = heading.textContent;
    }
    if (target && target.id && target.id.startsWith("trace-head-")) {
      // The server renders the head with the saved preference; keep it true to this panel.
      const head = document.getElementById(target.id);
      const list = head && document.getElementById(head.getAttribute("aria-controls"));
      if (list) head.setAttribute("aria-expanded", list.hidden ? "false" : "true");
    }
    if (target && target.classList && target.classList.contains("answer")) addCopyButtons(target);
    if (target && target.id === "thread") {
      // The socket brought the turn before the send's reply: it stands in for "Sending…".
      const sending = document.querySelector("#sending-turn .bubble");
      const arrived = sending && Array.from(target.querySelectorAll("article.turn .msg.user .bubble"))
        .some((bubble) => bubble.textContent === sending.textContent);
      if (arrived) removeSending();
      sync();
    }
    revealPending();
    afterThreadChange(null);
    scrollThread(false);
  });

  // A new turn (the composer, regenerate, edit): drop a copy the socket delivered first.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const target = event.detail.target;
    if (!target || target.id !== "thread" || !event.detail.shouldSwap) return;
    const match = /id="turn-(\d+)"/.exec(event.detail.serverResponse || "");
    const existing = match && document.getElementById("turn-" + match[1]);
    if (existing) existing.remove();
  });
  // After a swap, not after the request: the clicked element may have been re-rendered by
  // the socket meanwhile, and events on a detached element never reach the document.
  function afterSuccess(xhr) {
    return xhr && xhr.status < 400 && !xhr.getResponseHeader("HX-Retarget");
  }
  document.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.successful && afterSuccess(event.detail.xhr)) clearError();
  });
  document.addEventListener("htmx:afterSwap", (event) => {
    if (!afterSuccess(event.detail.xhr)) return;
    clearError();
    const target = event.detail.target;
    if (!target || target.id !== "thread") return;
    const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    const turns = target.querySelectorAll("article.turn");
    afterThreadChange(turns[turns.length - 1] || null);
    scrollThread(true);
    sync();
  });
  document.addEventListener("htmx:afterSettle", () => updateComposer());
  // Sending: the box empties at once, so what the person types next is theirs to keep (the
  // reply does not reset the form over it); a refused or failed send puts the text back.
  // The message shows in the thread while it is on its way (a busy server can take seconds to
  // store it), then gives way to the turn the server sends back, or goes if the send failed.
  function showSending(text) {
    const thread = document.getElementById("thread");
    if (!thread || !text.trim()) return;
    removeSending();
    const turn = document.createElement("div");
    turn.className = "turn sending";
    turn.id = "sending-turn";
    turn.setAttribute("aria-busy", "true");
    const message = document.createElement("div");
    message.className = "msg user";
    const bubble = document.createElement("div");
    bubble.className = "bubble";
    bubble.textContent = text;
    const note = document.createElement("p");
    note.className = "sending-note muted";
    note.textContent = "Sending…";
    message.append(bubble, note);
    turn.append(message);
    thread.append(turn);
    document.getElementById("empty-state")?.setAttribute("hidden", "");
    scrollThread(true);
  }
  function removeSending() {
    document.getElementById("sending-turn")?.remove();
  }
  // Each question goes with a key of its own, kept while the same text is sent again after a
  // send whose reply never came (the server restarted under it, the network dropped): the
  // server knows the key if the question was stored, and answers with its turn instead of
  // asking it twice. Random bytes, not crypto.randomUUID (absent over plain http on a LAN).
  function questionKey(form, text) {
    if (!form.dataset.key || form.dataset.keyFor !== text) {
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      form.dataset.key = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      form.dataset.keyFor = text;
    }
    return form.dataset.key;
  }
  document.addEventListener("htmx:configRequest", (event) => {
    const form = event.detail.elt;
    if (!form || form.id !== "composer") return;
    const text = form.querySelector("#composer-input")?.value || "";
    event.detail.parameters.key = questionKey(form, text);
  });
  // An edit sent again: the reason the last one was refused goes (the next refusal replaces it).
  document.addEventListener("htmx:beforeSend", (event) => {
    const form = event.detail.elt;
    editErrorBox(form)?.replaceChildren();
  });
  document.addEventListener("htmx:beforeSend", (event) => {
    const form = event.detail.elt;
    if (!form || form.id !== "composer") return;
    const input = form.querySelector("#composer-input");
    form.dataset.sending = "true";
    form.dataset.sent = input.value;
    showLatestVersions();
    // The last send's error is about that send; the notices that live updates paused, or that
    // the chat was deleted in another tab, stay.
    document.querySelectorAll("#composer-error .error:not(.live-updates):not(.gone)").forEach((p) => p.remove());
    showSending(input.value);
    input.value = "";
    keepDraft(input); // sent: nothing unsent to keep (a refusal puts the text back, and keeps it)
    fitComposer(input);
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (elt && elt.id === "composer") removeSending();
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    const form = event.detail.elt;
    if (!form || form.id !== "composer" || form.dataset.sending !== "true") return;
    const input = form.querySelector("#composer-input");
    const sent = form.dataset.sent || "";
    form.dataset.sending = "false";
    form.dataset.sent = "";
    removeSending();
    if (event.detail.successful && afterSuccess(event.detail.xhr)) {
      delete form.dataset.key; // stored: the next question is another
      return;
    }
    if (!document.querySelector("#thread article.turn")) document.getElementById("empty-state")?.removeAttribute("hidden");
    if (sent && !input.value.startsWith(sent)) input.value = sent + (input.value ? "\n" + input.value : "");
    keepDraft(input);
    fitComposer(input);
  });
  // Renamed: the header was drawn again, and focus would fall back to the page's top; a
  // keyboard user goes on from the chat menu they used.
  document.addEventListener("htmx:afterSwap", (event) => {
    const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!elt || !elt.matches || !elt.matches("form[action$='/rename/']")) return;
    if (!afterSuccess(event.detail.xhr)) return;
    document.querySelector("#session-title .session-actions summary")?.focus();
  });

  document.addEventListener("DOMContentLoaded", () => {
    // A first question or an upload refused (over a limit, say) came back as the page of the
    // form's POST: the address is the page's own again, so a reload shows it instead of
    // offering to send the form again.
    const address = document.querySelector("#start-composer[data-address], form.upload[data-address]")?.dataset.address;
    if (address) history.replaceState(null, "", address);
    document.getElementById("thread")?.addEventListener("scroll", followScroll, { passive: true });
    afterThreadChange(null);
    revealPending();
    restoreDraft();
    addCopyButtons(document);
    updateTitle();
    scrollThread(true);
  });
})();
