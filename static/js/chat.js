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

  function sync() {
    if (socket) socket.send(JSON.stringify({ type: "sync", cursor: cursor() }));
  }

  function setPanelOpen(panel, open) {
    const list = panel.querySelector("ol.trace");
    const head = panel.querySelector(".trace-head");
    if (!list || !head) return;
    list.hidden = !open;
    head.setAttribute("aria-expanded", open ? "true" : "false");
    panel.classList.toggle("open", open);
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

  function scrollThread(force) {
    const thread = document.getElementById("thread");
    if (thread && (force || nearBottom(thread))) thread.scrollTop = thread.scrollHeight;
  }

  function applyPreferredState(root) {
    const app = document.getElementById("app");
    const open = app && app.dataset.traceOpen === "true";
    root.querySelectorAll(".trace-panel").forEach((panel) => setPanelOpen(panel, open));
  }

  function updateTitle() {
    const status = document.getElementById("status-line");
    if (status && status.dataset.title) document.title = status.dataset.title;
  }

  function addCopyButtons(root) {
    root.querySelectorAll(".markdown pre").forEach((pre) => {
      if (pre.querySelector(".copy-code")) return;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = "Copy";
      pre.appendChild(button);
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

  // --- events ---------------------------------------------------------------------------

  document.addEventListener("click", (event) => {
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
      if (window.NexusCompletions && window.NexusCompletions.handlesEnter()) return;
      event.preventDefault();
      if (input.value.trim()) input.form.requestSubmit();
      return;
    }
    if (event.ctrlKey && event.code === "Period") {
      event.preventDefault();
      if (event.shiftKey) clearLatest(); else toggleAll();
    }
  });

  // A websocket (re)connect: ask for everything after what this page already shows.
  document.addEventListener("htmx:wsOpen", (event) => {
    socket = event.detail.socketWrapper;
    sync();
  });
  // 4503: the server has no Redis right now. Say so under the composer; the ws extension
  // keeps reconnecting, and the next open clears the message.
  document.addEventListener("htmx:wsClose", (event) => {
    socket = null;
    const closed = event.detail && event.detail.event;
    const box = document.getElementById("composer-error");
    if (closed && closed.code === 4503 && box) {
      box.replaceChildren(Object.assign(document.createElement("p"), {
        className: "error live-updates", role: "alert",
        textContent: closed.reason || "Live updates are unavailable; reload in a moment.",
      }));
    }
  });
  document.addEventListener("htmx:wsOpen", () => {
    const stale = document.querySelector("#composer-error .live-updates");
    if (stale) stale.remove();
  });

  // Drop fragments this page already has (live push and catch-up can overlap).
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const fragment = event.detail.fragment;
    if (!fragment || !fragment.querySelectorAll) return;
    const target = event.detail.target;
    if (!target || !target.matches || !target.matches("ol.trace")) return;
    fragment.querySelectorAll("li[id]").forEach((li) => {
      if (document.getElementById(li.id)) li.remove();
    });
  });

  document.addEventListener("htmx:oobAfterSwap", (event) => {
    const target = event.detail.target;
    if (target && target.matches && target.matches("ol.trace")) {
      const panel = target.closest(".trace-panel");
      const seqs = Array.from(target.querySelectorAll("li[data-seq]")).map((li) => Number(li.dataset.seq));
      const last = Math.max(Number(panel.dataset.lastSeq || 0), ...seqs);
      panel.dataset.lastSeq = String(last);
    }
    if (target && target.id === "status-line") updateTitle();
    if (target && target.id && target.id.startsWith("trace-head-")) {
      // The server renders the head with the saved preference; keep it true to this panel.
      const head = document.getElementById(target.id);
      const list = head && document.getElementById(head.getAttribute("aria-controls"));
      if (list) head.setAttribute("aria-expanded", list.hidden ? "false" : "true");
    }
    if (target && target.classList && target.classList.contains("answer")) addCopyButtons(target);
    scrollThread(false);
  });

  // A new turn from the composer: clear the box, then catch up on events that raced ahead.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!elt || elt.id !== "composer") return;
    const retargeted = event.detail.xhr.getResponseHeader("HX-Retarget");
    if (!retargeted) {
      const error = document.getElementById("composer-error");
      if (error) error.replaceChildren();
    }
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    const elt = event.detail.elt;
    if (!elt || elt.id !== "composer" || !event.detail.successful) return;
    if (!event.detail.xhr.getResponseHeader("HX-Retarget")) {
      elt.reset();
      applyPreferredState(document.getElementById("thread"));
      scrollThread(true);
      sync();
    }
  });

  document.addEventListener("DOMContentLoaded", () => {
    addCopyButtons(document);
    updateTitle();
    scrollThread(true);
  });
})();
