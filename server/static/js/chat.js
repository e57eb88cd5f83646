// The chat at a table (PROTOCOL.md §16): the messages (players' and watchers' channels), a
// line to write one, mute/unmute a player for yourself, report a message. Read-only in a replay.

import { fmtDate, t } from "./i18n.js";
import { errorText, h, personName } from "./ui.js";

const MAX = 300;
const KEEP = 100;

export class ChatBox {
  // `app` gives the socket and the muted set; `table` where to write; `readOnly` for a replay.
  constructor(app, table, { readOnly = false } = {}) {
    this.app = app;
    this.table = table;
    this.readOnly = readOnly;
    this.messages = [];
    this.list = h("ol", { class: "chat-list", "aria-live": "polite", "aria-label": t("chat.messages") });
    this.error = h("p", { class: "chat-error", role: "alert" });
    this.root = h("section", { class: "chat", "aria-label": t("chat.title") }, h("h2", {}, t("chat.title")), this.list);
    if (!readOnly) {
      this.input = h("input", { name: "chat", maxlength: MAX, autocomplete: "off", "aria-label": t("chat.write"),
        placeholder: t("chat.placeholder") });
      this.root.append(h("form", { class: "chat-form", onsubmit: (ev) => this.send(ev) },
        this.input, h("button", { type: "submit", class: "chat-send" }, t("chat.send"))), this.error);
    }
  }

  // Replace the messages (a `resume`/`watching` history, or a replay's step).
  set(messages) {
    this.messages = (messages || []).slice(-KEEP);
    this.draw();
  }

  add(msg) {
    if (this.messages.some((m) => m.msg === msg.msg)) return;
    this.messages.push(msg);
    this.messages = this.messages.slice(-KEEP);
    this.draw();
  }

  draw() {
    const me = this.app.me && this.app.me.player;
    const muted = this.app.muted || new Set();
    const shown = this.messages.filter((m) => !muted.has(m.from));
    this.list.replaceChildren(...shown.map((m) => {
      const mine = m.from === me;
      const tools = this.readOnly || mine || !me ? [] : [
        // Named by whom they act on: the visible word first, then the name (label in name).
        h("button", { type: "button", class: "link mute", "data-player": m.from, onclick: () => this.mute(m.from),
          "aria-label": t("chat.mute_who", { name: personName(m.from, m.name) }) }, t("chat.mute")),
        h("button", { type: "button", class: "link report", onclick: () => this.report(m),
          "aria-label": t("chat.report_who", { name: personName(m.from, m.name) }) }, t("chat.report")),
      ];
      return h("li", { class: `chat-msg ${m.channel}`, "data-msg": m.msg, "data-from": m.from },
        h("time", { datetime: new Date(m.at * 1000).toISOString(), title: fmtDate(m.at) },
          new Date(m.at * 1000).toLocaleTimeString(document.documentElement.lang, { hour: "2-digit", minute: "2-digit" })),
        " ", h("strong", {}, personName(m.from, m.name)),
        m.channel === "watchers" ? h("span", { class: "channel" }, t("chat.watchers_channel")) : null,
        ": ", h("span", { class: "text" }, m.text), ...tools);
    }));
    if (muted.size && !this.readOnly) {
      const unmute = [...muted].filter((p) => this.messages.some((m) => m.from === p));
      for (const p of unmute) {
        this.list.append(h("li", { class: "muted-note" }, t("chat.muted_note", { name: personName(p) }), " ",
          h("button", { type: "button", class: "link unmute", "data-player": p, onclick: () => this.unmute(p),
          "aria-label": t("chat.unmute_who", { name: personName(p) }) }, t("chat.unmute"))));
      }
    }
    this.list.scrollTop = this.list.scrollHeight;
  }

  async send(ev) {
    ev.preventDefault();
    const text = this.input.value.trim();
    if (!text) return;
    const reply = await this.app.socket.request({ type: "chat", table: this.table, text });
    if (reply.type === "error") {
      this.error.textContent = errorText(reply);
      return;
    }
    this.error.textContent = "";
    this.input.value = "";
  }

  async mute(player) {
    const reply = await this.app.socket.request({ type: "mute", player });
    if (reply.type === "error") {
      this.error.textContent = errorText(reply);
      return;
    }
    this.app.muted.add(player);
    this.draw();
  }

  async unmute(player) {
    const reply = await this.app.socket.request({ type: "unmute", player });
    if (reply.type === "error") {
      this.error.textContent = errorText(reply);
      return;
    }
    this.app.muted.delete(player);
    this.draw();
  }

  async report(m) {
    const reply = await this.app.socket.request({ type: "report", table: this.table, msg: m.msg });
    this.error.textContent = reply.type === "error" ? errorText(reply) : t("chat.reported");
  }
}
