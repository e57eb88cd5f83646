// The lobby: signing in, playing the computer, the matchmaking pools and the queue (waiting
// time and window), the open tables (join or watch), creating a table (a private one gets a
// share link), a private table's link (#/join/<id>).

import { api } from "./api.js";
import { fmtNum, t } from "./i18n.js";
import { upcomingBox, upcomingOf } from "./pages.js";
import { errorText, formField, gameModeText, h, levelName, personName, ratingWords, toast } from "./ui.js";

const MODES = [["competitive", "create.competitive"], ["boosted", "create.boosted"],
  ["private", "create.private"]];
// The computer's levels, weakest first, as /api/levels lists them (with each one's measured
// error rate); until it answers, or when it cannot, these names alone.
const FALLBACK_LEVELS = { levels: ["random", "beginner", "casual", "intermediate", "advanced"]
  .map((level) => ({ level, memg: null })), default: "beginner" };
let levelsOnce = null;
const fetchLevels = () => {
  levelsOnce = levelsOnce || api("/api/levels").catch(() => {
    levelsOnce = null; // asked again on the next drawing
    return null;
  });
  return levelsOnce;
};
const LENGTHS = [[0, "length.single"], [1, "length.to1"], [3, "length.to3"], [5, "length.to5"], [7, "length.to7"]];
const STATUSES = { open: "table.open", playing: "table.playing" };

// "Intermediate — <memg> mEMG per move (intermediate)": a level's name, with its measured rate and
// GNU Backgammon's words for it when the server gave them.
const levelText = (x) => (x.memg === null || x.memg === undefined ? levelName(x.level)
  : t("computer.level_rate", { level: levelName(x.level), memg: fmtNum(x.memg, 1), words: ratingWords(x.words) }));

export class LobbyView {
  constructor(app, { signIn }) {
    this.app = app;
    this.signIn = signIn;
    this.root = h("section", { class: "lobby", "aria-label": t("lobby.title") });
    this.pools = null;
    this.tables = null;
    this.timers = [];
    this.levels = null;
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
    this.joinPending();
    this.loadTournaments();
    requestAnimationFrame(() => performance.mark("lobby-drawn"));
  }

  destroy() {
    for (const t0 of this.timers) clearInterval(t0);
  }

  onReconnect() {
    this.drawAccount();
    this.drawPools();
    this.drawComputer();
    this.drawCreate();
    this.loadTables();
    this.joinPending();
    this.loadTournaments();
  }

  // Your upcoming tournaments (entered, not ended), above the pools.
  async loadTournaments() {
    const me = this.app.me;
    if (!me || me.guest) {
      this.tournamentBox.replaceChildren();
      return;
    }
    const list = await upcomingOf(me.player).catch(() => []);
    this.tournamentBox.replaceChildren(list.length ? upcomingBox(list, "tournaments.upcoming", "upcoming-lobby-h") : "");
  }

  // A share link (#/join/<id>) opened: join that table once signed in and connected.
  joinPending() {
    const table = this.app.pendingJoin;
    if (!table || !this.app.socket || !this.app.socket.ready) return;
    this.app.pendingJoin = null;
    this.join(table);
  }

  handle(msg) {
    if (["queued", "queue_status", "queue_cancelled", "queue_expired"].includes(msg.type)) {
      this.drawQueue();
      this.drawPools();
    }
    if (msg.type === "queue_expired") toast(t("queue.expired"));
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
    this.computerBox = h("div", { class: "card computer" });
    this.poolBox = h("div", { class: "pools" });
    this.tableBox = h("div", { class: "tables" });
    this.createBox = h("div", { class: "card create" });
    this.tournamentBox = h("div", { class: "my-tournaments" });
    this.root.replaceChildren(
      h("h1", {}, t("lobby.title")),
      this.account,
      this.tournamentBox,
      this.queueBox,
      h("section", { "aria-labelledby": "computer-h" }, h("h2", { id: "computer-h" }, t("computer.title")), this.computerBox),
      h("section", { "aria-labelledby": "pools-h" }, h("h2", { id: "pools-h" }, t("lobby.play_now")), this.poolBox),
      h("section", { "aria-labelledby": "tables-h" }, h("h2", { id: "tables-h" }, t("lobby.tables")),
        this.createBox, this.tableBox),
    );
    this.drawAccount();
    this.drawQueue();
    this.drawPools();
    this.drawComputer();
    this.drawTables();
    this.drawCreate();
  }

  drawAccount() {
    const app = this.app;
    if (app.token) {
      const me = app.me;
      this.account.replaceChildren(h("p", {},
        me ? t(me.guest ? "account.signed_in_guest" : "account.signed_in", { name: personName(me.player, me.name) }) : t("account.connecting")));
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
        error.textContent = errorText(err);
      }
    };
    const form = h("form", { class: "signin", onsubmit: submit("login") },
      h("h2", {}, t("account.sign_in_title")),
      formField(t("account.name"), name), formField(t("account.password"), password),
      h("div", { class: "actions" },
        h("button", { type: "submit", class: "primary login" }, t("account.login")),
        h("button", { type: "button", class: "signup", onclick: submit("register") }, t("account.signup")),
        h("button", { type: "button", class: "guest", onclick: submit("guest") }, t("account.guest"))),
      error);
    this.account.replaceChildren(form);
  }

  drawComputer() {
    const box = this.computerBox;
    if (!box) return;
    if (!this.app.token) {
      box.replaceChildren(h("p", { class: "note" }, t("computer.sign_in")));
      return;
    }
    const known = this.levels || FALLBACK_LEVELS;
    // Drawn again (the levels arrived, a reconnect): what was chosen stays chosen.
    const before = box.querySelector("select[name=level]");
    const chosen = before ? before.value : known.default;
    const beforeLength = box.querySelector("select[name=computer_length]");
    const level = h("select", { name: "level" }, ...known.levels.map((x) =>
      h("option", { value: x.level, selected: x.level === chosen || undefined }, levelText(x))));
    const length = h("select", { name: "computer_length" }, ...LENGTHS.map(([v, key]) => h("option", { value: v }, t(key))));
    if (beforeLength) length.value = beforeLength.value;
    const start = async (ev) => {
      ev.preventDefault();
      await this.app.playComputer(level.value, Number(length.value));
    };
    box.replaceChildren(h("form", { class: "computer-form", onsubmit: start },
      h("p", { class: "practice" }, t("computer.practice")),
      formField(t("computer.level"), level), formField(t("create.length"), length),
      this.levels ? h("p", { class: "note rates" }, t("computer.rates")) : null,
      h("button", { type: "submit", class: "primary play-computer" }, t("computer.play"))));
    if (!this.levels) {
      fetchLevels().then((levels) => {
        if (!levels || this.levels) return;
        this.levels = levels;
        this.drawComputer();
      });
    }
  }

  drawPools() {
    const app = this.app;
    const box = this.poolBox;
    if (!box) return;
    if (!this.pools) {
      box.replaceChildren(h("p", {}, t("pools.loading")));
      return;
    }
    const guest = app.me && app.me.guest;
    const cards = this.pools.pools.filter((p) => p.offered).map((p) => {
      const queued = app.queue && app.queue.pool === p.pool;
      const blocked = !app.token ? t("pools.sign_in_first") : guest && p.rated ? t("pools.guest_rule") : null;
      const kind = p.rated ? t(p.ladder === "fibs" ? "pools.rated_fibs" : "pools.rated_table42")
        : p.mode === "boosted" ? t("pools.boosted") : t("pools.unrated");
      return h("article", { class: `pool${queued ? " active" : ""}`, "data-pool": p.pool },
        h("h3", {}, poolTitle(p)),
        h("p", {}, kind),
        h("p", { class: "waiting" }, t("pools.waiting", { n: p.waiting })),
        blocked ? h("p", { class: "note" }, blocked) : null,
        h("button", { type: "button", class: "primary queue-btn", disabled: Boolean(blocked) || queued || undefined,
          onclick: () => this.queue(p.pool) }, queued ? t("pools.in_queue") : t("pools.find")));
    });
    const w = this.pools.window;
    box.replaceChildren(h("div", { class: "pool-grid" }, ...cards),
      h("p", { class: "note" }, t("pools.window", { base: w.base, rate: w.rate, cap: w.cap })),
      h("p", { class: "note gammons" }, t("pools.gammons")));
  }

  async queue(pool) {
    const reply = await this.app.socket.request({ type: "queue", pool });
    if (reply.type === "error") toast(errorText(reply));
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
      h("strong", {}, t("queue.looking", { pool: q.pool })),
      h("span", { class: "waited" }, t("queue.waited", { n: Math.floor(waited) })),
      h("span", { class: "window" }, t("queue.window", { window: Math.round(window) })
        + (toCap > 0 ? " " + t("queue.to_cap", { cap: q.window_cap, n: Math.ceil(toCap) }) : "")),
      h("span", {}, t("queue.rating", { rating: q.rating })),
      q.note === "same_network" ? h("p", { class: "note same-network" }, t("queue.same_network")) : null,
      h("button", { type: "button", class: "cancel-queue", onclick: async () => {
        await app.socket.request({ type: "cancel_queue" });
        app.queue = null;
        this.drawQueue();
        this.drawPools();
      } }, t("common.cancel"))));
  }

  drawTables() {
    const box = this.tableBox;
    if (!box) return;
    if (!this.tables) {
      box.replaceChildren(h("p", {}, t("tables.loading")));
      return;
    }
    const me = this.app.me && this.app.me.player;
    const rows = this.tables.tables.filter((s) => s.status === "open" || s.status === "playing").map((s) => {
      const names = s.players.map((p, i) => (p ? personName(p, s.names && s.names[i]) : t("tables.free_seat")));
      const mine = s.players.includes(me);
      let action = null;
      if (this.app.token && s.status === "open" && !mine) {
        action = h("button", { type: "button", class: "join", onclick: () => this.join(s.table) }, t("tables.join"));
      } else if (mine) {
        action = h("a", { href: `#/game/${s.table}`, class: "button" }, t("tables.open_mine"));
      } else if (this.app.token && s.status === "playing") {
        action = h("a", { href: `#/watch/${s.table}`, class: "button watch" }, t("tables.watch"));
      }
      return h("li", { class: "table-row", "data-table": s.table },
        h("span", { class: "t-mode" }, gameModeText(s.mode, s.players)
          + (s.match_length ? " · " + t("tables.match_to", { length: s.match_length }) : "")),
        h("span", { class: "t-players" }, names.join(` ${t("tables.vs")} `)),
        h("span", { class: "t-status" }, STATUSES[s.status] ? t(STATUSES[s.status]) : s.status),
        h("span", { class: "t-watchers" }, t("tables.watchers", { n: s.watchers })),
        h("span", { class: "t-action" }, action));
    });
    const refresh = h("button", { type: "button", class: "refresh", "aria-label": t("tables.refresh_label"),
      onclick: () => this.loadTables() }, t("tables.refresh"));
    box.replaceChildren(refresh, rows.length
      ? h("ul", { class: "table-list" }, ...rows)
      : h("p", {}, t("tables.none")));
  }

  async join(table) {
    const reply = await this.app.socket.request({ type: "join", table });
    if (reply.type === "error") {
      toast(errorText(reply));
      return;
    }
    location.hash = `#/game/${table}`;
  }

  drawCreate() {
    if (!this.app.token) {
      this.createBox.replaceChildren();
      return;
    }
    // A guest may not create a rated table (the pools' rule): the choice is not offered.
    const guest = this.app.me && this.app.me.guest;
    const modes = MODES.filter(([v]) => !(guest && v === "competitive"));
    const mode = h("select", { name: "mode" }, ...modes.map(([v, key]) => h("option", { value: v }, t(key))));
    const length = h("select", { name: "match_length" }, ...LENGTHS.map(([v, key]) => h("option", { value: v }, t(key))));
    const tableId = h("input", { name: "table", maxlength: 64, pattern: "[A-Za-z0-9_\\-]{1,64}",
      placeholder: t("create.table_id_placeholder") });
    const create = async (ev) => {
      ev.preventDefault();
      const like = { mode: mode.value, match_length: Number(length.value) };
      const reply = await this.app.socket.request({ type: "create_table", ...like });
      if (reply.type === "error") {
        toast(errorText(reply));
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
    this.createBox.replaceChildren(...[
      h("form", { class: "create-form", onsubmit: create },
        formField(t("create.mode"), mode), formField(t("create.length"), length),
        h("button", { type: "submit", class: "create-btn" }, t("create.submit"))),
      guest ? h("p", { class: "note" }, t("create.guest_rule")) : null,
      h("form", { class: "byid-form", onsubmit: byId("join") },
        formField(t("create.table_id"), tableId),
        h("button", { type: "submit" }, t("tables.join")),
        h("button", { type: "button", onclick: byId("watch") }, t("tables.watch")))].filter(Boolean));
  }
}

const POOLS = { competitive: "pool.competitive", boosted: "pool.boosted" };

// A pool's title in the page's language (a match pool: "Match to n"); the server's otherwise.
function poolTitle(p) {
  if (POOLS[p.pool]) return t(POOLS[p.pool]);
  const m = /^match-(\d+)$/.exec(p.pool);
  return m ? t("pool.match", { n: Number(m[1]) }) : p.title;
}
