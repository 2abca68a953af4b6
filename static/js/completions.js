// Composer completion: "@" offers documents and MCP resources, "/" at the start offers commands.
(function () {
  "use strict";
  let items = [];
  let selected = -1;
  let token = null; // {start, end, text}
  let timer = null;

  function box() { return document.getElementById("completions"); }
  function input() { return document.getElementById("composer-input"); }

  function currentToken(el) {
    const upto = el.value.slice(0, el.selectionStart);
    const command = /^\/[\w.-]*$/.exec(upto);
    if (command) return { start: 0, end: el.selectionStart, text: command[0] };
    const mention = /(^|\s)(@"[^"\n]*|@[\w.\-/]*)$/.exec(upto);
    if (mention) {
      const start = el.selectionStart - mention[2].length;
      return { start, end: el.selectionStart, text: mention[2] };
    }
    return null;
  }

  // Assistive technology hears which completion Enter or Tab would pick. The box is a textarea,
  // which ARIA in HTML lets take no combobox role (nor so aria-expanded): it says it completes
  // (aria-autocomplete), into which list (aria-controls), and the option chosen.
  function announce() {
    const el = input();
    if (!el) return;
    const open = items.length > 0 && !box().hidden;
    if (open && selected >= 0) el.setAttribute("aria-activedescendant", "completion-" + selected);
    else el.removeAttribute("aria-activedescendant");
  }

  function close() {
    const list = box();
    if (list) { list.hidden = true; list.replaceChildren(); }
    items = []; selected = -1; token = null;
    announce();
  }

  function render() {
    const list = box();
    list.replaceChildren();
    items.forEach((item, index) => {
      const option = document.createElement("button");
      option.type = "button";
      option.setAttribute("role", "option");
      option.id = "completion-" + index;
      option.tabIndex = -1;
      option.setAttribute("aria-selected", index === selected ? "true" : "false");
      const label = document.createElement("strong");
      label.textContent = item.label;
      const detail = document.createElement("span");
      detail.className = "muted";
      detail.textContent = " " + item.detail;
      option.append(label, detail);
      option.addEventListener("mousedown", (event) => { event.preventDefault(); choose(index); });
      list.appendChild(option);
    });
    list.hidden = items.length === 0;
    announce();
  }

  // The list answers the @ word as it was when it was fetched: typing since may have left it
  // ("Remind me @" then " noon"), and a choice must not splice a stale item into the text.
  function fresh() {
    const now = currentToken(input());
    if (!now || !token || now.start !== token.start) { close(); return false; }
    token = now;
    return true;
  }

  function choose(index) {
    const el = input();
    if (!fresh() || !items[index]) return;
    const insert = items[index].insert;
    el.value = el.value.slice(0, token.start) + insert + el.value.slice(token.end);
    const caret = token.start + insert.length;
    el.setSelectionRange(caret, caret);
    close();
    el.focus();
  }

  async function lookup() {
    const el = input();
    token = currentToken(el);
    if (!token) { close(); return; }
    const asked = el.value;
    const url = box().dataset.url + "?q=" + encodeURIComponent(token.text);
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      const data = await response.json();
      // Typed on or sent meanwhile: this list answers text that is no longer there.
      if (el.value !== asked) return;
      items = data.items || [];
      selected = items.length ? 0 : -1;
      render();
    } catch (error) {
      close();
    }
  }

  document.addEventListener("input", (event) => {
    if (event.target.id !== "composer-input") return;
    if (items.length && !currentToken(event.target)) close();
    clearTimeout(timer);
    timer = setTimeout(lookup, 120);
  });

  document.addEventListener("keydown", (event) => {
    if (event.target.id !== "composer-input" || !items.length || box().hidden) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      selected = (selected + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      render();
    } else if (event.key === "Tab") {
      event.preventDefault();
      choose(selected);
    } else if (event.key === "Escape") {
      close();
    }
  }, true);

  window.NexusCompletions = {
    // Enter picks the highlighted completion instead of sending the message.
    handlesEnter() {
      if (!items.length || box().hidden || selected < 0 || !fresh()) return false;
      choose(selected);
      return true;
    },
  };
})();
