// The lobby: signing in, the matchmaking pools and the queue (waiting time and window), the
// open tables (join or watch), creating a table.

import { api } from "./api.js";
import { formField, h, toast } from "./ui.js";

const MODES = [["competitive", "Competitive (rated)"], ["boosted", "Boosted"],
  ["private", "Private room (never rated)"]];

export class LobbyView {
  constructor(app, { signIn }) {
    this.app = app;
    this.signIn = signIn;
    this.root = h("section", { class: "lobby", "aria-label": "lobby" });
    this.pools = null;
    this.tables = null;
    this.timers = [];
  }

  mount(main) {
    main.replaceChildren(this.root);
    this.render();
    this.loadPools();
    this.loadTables();
    this.timers.push(setInterval(() => this.drawQueue(), 1000));
    this.timers.push(setInterval(() => {
      this.loadPools();
      this.loadTables();
    }, 5000));
    requestAnimationFrame(() => performance.mark("lobby-drawn"));
  }

  destroy() {
    for (const t of this.timers) clearInterval(t);
  }

  onReconnect() {
    this.drawAccount();
    this.drawPools();
    this.drawCreate();
    this.loadTables();
  }

  handle(msg) {
    if (["queued", "queue_status", "queue_cancelled", "queue_expired"].includes(msg.type)) {
      this.drawQueue();
      this.drawPools();
    }
    if (msg.type === "queue_expired") toast("Your place in the queue expired.");
  }

  async loadPools() {
    try {
      this.pools = await api("/api/matchmaking");
    } catch (err) {
      this.pools = null;
    }
    this.drawPools();
  }

  async loadTables() {
    try {
      this.tables = await api("/api/tables");
    } catch (err) {
      this.tables = null;
    }
    this.drawTables();
  }

  render() {
    this.account = h("div", { class: "card account" });
    this.queueBox = h("div", { class: "queue", role: "status", "aria-live": "polite" });
    this.poolBox = h("div", { class: "pools" });
    this.tableBox = h("div", { class: "tables" });
    this.createBox = h("div", { class: "card create" });
    this.root.replaceChildren(
      h("h1", {}, "Table42 backgammon"),
      this.account,
      this.queueBox,
      h("section", { "aria-labelledby": "pools-h" }, h("h2", { id: "pools-h" }, "Play now"), this.poolBox),
      h("section", { "aria-labelledby": "tables-h" }, h("h2", { id: "tables-h" }, "Tables"),
        this.createBox, this.tableBox),
    );
    this.drawAccount();
    this.drawQueue();
    this.drawPools();
    this.drawTables();
    this.drawCreate();
  }

  drawAccount() {
    const app = this.app;
    if (app.token) {
      const me = app.me;
      this.account.replaceChildren(h("p", {},
        me ? `Signed in as ${me.name}${me.guest ? " (guest: Boosted and unrated games only)" : ""}.` : "Connecting…"));
      return;
    }
    const name = h("input", { name: "name", autocomplete: "username", required: true,
      minlength: 3, maxlength: 20, pattern: "[A-Za-z][A-Za-z0-9_]{2,19}" });
    const password = h("input", { name: "password", type: "password",
      autocomplete: "current-password", required: true, minlength: 8, maxlength: 128 });
    const error = h("p", { class: "error", role: "alert" });
    const submit = (kind) => async (ev) => {
      ev.preventDefault();
      if (kind !== "guest" && !form.reportValidity()) return;
      error.textContent = "";
      try {
        await this.signIn(kind, name.value, password.value);
      } catch (err) {
        error.textContent = err.message;
      }
    };
    const form = h("form", { class: "signin", onsubmit: submit("login") },
      h("h2", {}, "Sign in to play"),
      formField("Name", name), formField("Password (8 or more characters)", password),
      h("div", { class: "actions" },
        h("button", { type: "submit", class: "primary login" }, "Log in"),
        h("button", { type: "button", class: "signup", onclick: submit("register") }, "Sign up"),
        h("button", { type: "button", class: "guest", onclick: submit("guest") }, "Play as a guest")),
      error);
    this.account.replaceChildren(form);
  }

  drawPools() {
    const app = this.app;
    const box = this.poolBox;
    if (!box) return;
    if (!this.pools) {
      box.replaceChildren(h("p", {}, "Loading the pools…"));
      return;
    }
    const guest = app.me && app.me.guest;
    const cards = this.pools.pools.filter((p) => p.offered).map((p) => {
      const queued = app.queue && app.queue.pool === p.pool;
      const blocked = !app.token ? "sign in first" : guest && p.rated ? "guests play Boosted only (never rated)" : null;
      return h("article", { class: `pool${queued ? " active" : ""}`, "data-pool": p.pool },
        h("h3", {}, p.title),
        h("p", {}, p.rated ? `Rated (${p.ladder === "fibs" ? "FIBS" : "Table42"})` : p.mode === "boosted" ? "Boosted points, no Elo" : "Unrated"),
        h("p", { class: "waiting" }, `${p.waiting} waiting`),
        blocked ? h("p", { class: "note" }, blocked) : null,
        h("button", { type: "button", class: "primary queue-btn", disabled: Boolean(blocked) || queued || undefined,
          onclick: () => this.queue(p.pool) }, queued ? "In the queue" : "Find an opponent"));
    });
    const w = this.pools.window;
    box.replaceChildren(h("div", { class: "pool-grid" }, ...cards),
      h("p", { class: "note" }, `Opponents within ±${w.base} points at first, widening by ${w.rate} a second up to ±${w.cap}.`));
  }

  async queue(pool) {
    const reply = await this.app.socket.request({ type: "queue", pool });
    if (reply.type === "error") toast(reply.message || reply.code);
  }

  drawQueue() {
    const app = this.app;
    const box = this.queueBox;
    if (!box) return;
    const q = app.queue;
    if (!q) {
      box.replaceChildren();
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const elapsed = (performance.now() - q.at) / 1000;
    const rate = this.pools ? this.pools.window.rate : 0;
    const waited = q.waited + elapsed;
    const window = Math.min(q.window_cap, q.window + rate * elapsed);
    const toCap = Math.max(0, q.seconds_to_cap - elapsed);
    box.replaceChildren(h("div", { class: "card queue-card" },
      h("strong", {}, `Looking for an opponent (${q.pool})`),
      h("span", { class: "waited" }, `waiting ${Math.floor(waited)} s`),
      h("span", { class: "window" }, `window ±${Math.round(window)}` + (toCap > 0 ? ` (±${q.window_cap} in ${Math.ceil(toCap)} s)` : "")),
      h("span", {}, `your rating ${q.rating}`),
      h("button", { type: "button", class: "cancel-queue", onclick: async () => {
        await app.socket.request({ type: "cancel_queue" });
        app.queue = null;
        this.drawQueue();
        this.drawPools();
      } }, "Cancel")));
  }

  drawTables() {
    const box = this.tableBox;
    if (!box) return;
    if (!this.tables) {
      box.replaceChildren(h("p", {}, "Loading the tables…"));
      return;
    }
    const me = this.app.me && this.app.me.player;
    const rows = this.tables.tables.filter((t) => t.status === "open" || t.status === "playing").map((t) => {
      const players = t.players.map((p) => p || "—").join(" vs ");
      const mine = t.players.includes(me);
      let action = null;
      if (this.app.token && t.status === "open" && !mine) {
        action = h("button", { type: "button", class: "join", onclick: () => this.join(t.table) }, "Join");
      } else if (mine) {
        action = h("a", { href: `#/game/${t.table}`, class: "button" }, "Open");
      } else if (this.app.token && t.status === "playing") {
        action = h("a", { href: `#/watch/${t.table}`, class: "button watch" }, "Watch");
      }
      return h("tr", { "data-table": t.table },
        h("td", {}, t.mode + (t.match_length ? ` · match to ${t.match_length}` : "")),
        h("td", {}, players), h("td", {}, t.status), h("td", {}, String(t.watchers)),
        h("td", {}, action));
    });
    const refresh = h("button", { type: "button", class: "refresh", "aria-label": "refresh the tables",
      onclick: () => this.loadTables() }, "Refresh");
    box.replaceChildren(refresh, rows.length
      ? h("table", { class: "table-list" },
        h("thead", {}, h("tr", {}, ...["Mode", "Players", "Status", "Watchers", ""].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...rows))
      : h("p", {}, "No open tables right now: create one, or find an opponent above."));
  }

  async join(table) {
    const reply = await this.app.socket.request({ type: "join", table });
    if (reply.type === "error") {
      toast(reply.message || reply.code);
      return;
    }
    location.hash = `#/game/${table}`;
  }

  drawCreate() {
    if (!this.app.token) {
      this.createBox.replaceChildren();
      return;
    }
    const mode = h("select", { name: "mode" }, ...MODES.map(([v, t]) => h("option", { value: v }, t)));
    const length = h("select", { name: "match_length" },
      ...[[0, "single game"], [1, "match to 1"], [3, "match to 3"], [5, "match to 5"], [7, "match to 7"]]
        .map(([v, t]) => h("option", { value: v }, t)));
    const tableId = h("input", { name: "table", maxlength: 64, pattern: "[A-Za-z0-9_\\-]{1,64}", placeholder: "table id" });
    const create = async (ev) => {
      ev.preventDefault();
      const like = { mode: mode.value, match_length: Number(length.value) };
      const reply = await this.app.socket.request({ type: "create_table", ...like });
      if (reply.type === "error") {
        toast(reply.message || reply.code);
        return;
      }
      this.app.tableModes.set(reply.table, like);
      location.hash = `#/game/${reply.table}`;
    };
    const byId = (how) => (ev) => {
      ev.preventDefault();
      if (!tableId.value || !tableId.checkValidity()) {
        tableId.reportValidity();
        return;
      }
      if (how === "join") this.join(tableId.value);
      else location.hash = `#/watch/${tableId.value}`;
    };
    this.createBox.replaceChildren(
      h("form", { class: "create-form", onsubmit: create },
        formField("Mode", mode), formField("Length", length),
        h("button", { type: "submit", class: "create-btn" }, "Create a table")),
      h("form", { class: "byid-form", onsubmit: byId("join") },
        formField("Table id (private room)", tableId),
        h("button", { type: "submit" }, "Join"),
        h("button", { type: "button", onclick: byId("watch") }, "Watch")));
  }
}
