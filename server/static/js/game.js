// One table on screen, seated or watching: the versioned event stream (PROTOCOL.md §5) kept in
// order by `v` (a gap or a reconnect asks for `sync`), the board, the decisions, the clocks and
// the end-of-game panel with the rating change exactly as pushed.

import { drawBoard, flyChecker } from "./board.js";
import { Picker, findPlay, playText, sideView, toGame } from "./moves.js";
import { REASONS, UNRATED, h, num, signed, toast } from "./ui.js";

const KIND_POINTS = { single: 1, gammon: 2, backgammon: 3 };

// A change-only event (PROTOCOL.md §5.1) applied to a state: `game` and `clock` are merged key
// by key, every other key is replaced. Returns a new state; `state` is not changed.
export function applyChanges(state, changes) {
  const out = { ...state };
  for (const [key, value] of Object.entries(changes)) {
    const old = out[key];
    if ((key === "game" || key === "clock") && value && old && typeof value === "object"
        && typeof old === "object" && !Array.isArray(value)) {
      out[key] = { ...old, ...value };
    } else {
      out[key] = value;
    }
  }
  return out;
}
const perf = (window.__t42perf = window.__t42perf || []);

export class GameView {
  constructor(app, table, mode) {
    this.app = app;
    this.table = table;
    this.mode = mode; // "play" or "watch"
    this.v = 0;
    this.state = null;
    this.summary = null;
    this.side = null;
    this.syncing = false;
    this.buffer = [];
    this.over = null;
    this.matchOver = null;
    this.gameId = null;
    this.ratingInfo = null;
    this.picker = null;
    this.pickerKey = null;
    this.selected = null;
    this.busy = false;
    this.log = [];
    this.root = h("section", { class: "game", "aria-label": "game" });
    this.svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    this.svg.setAttribute("class", "board");
    this.svg.setAttribute("role", "group");
    this.svg.setAttribute("aria-label", "backgammon board");
    this.top = h("div", { class: "player-bar top" });
    this.bottom = h("div", { class: "player-bar bottom" });
    this.info = h("div", { class: "game-info" });
    this.controls = h("div", { class: "controls", "aria-label": "your decisions" });
    this.panel = h("div", { class: "end-panel-slot" });
    this.logBox = h("ol", { class: "log", "aria-live": "polite", "aria-label": "game log" });
    this.root.append(this.info, this.top, h("div", { class: "board-wrap" }, this.svg),
      this.bottom, this.controls, this.panel,
      h("details", { class: "log-box" }, h("summary", {}, "Game log"), this.logBox));
    this.tick = setInterval(() => this.drawClocks(), 250);
    this.svg.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && this.selected !== null) {
        const q = this.selected;
        this.selected = null;
        this.render();
        const back = this.svg.querySelector(`g[data-point="${q === 25 ? "bar" : q}"]`);
        if (back) back.focus();
      }
    });
  }

  mount(main) {
    main.replaceChildren(this.root);
    this.render();
    this.start();
  }

  destroy() {
    clearInterval(this.tick);
    if (this.mode === "watch") this.app.socket?.send({ type: "unwatch", table: this.table });
  }

  // Get the full state: `watch` for a watcher, `sync` from 0 for a player.
  async start() {
    if (!this.app.socket || !this.app.socket.ready) return;
    this.syncing = true;
    const req = this.mode === "watch"
      ? { type: "watch", table: this.table }
      : { type: "sync", table: this.table, since: 0 };
    const reply = await this.app.socket.request(req);
    this.syncing = false;
    if (reply.type === "error") {
      // A table just made by matchmaking may not be known yet where the request went: the
      // events that came meanwhile say everything; otherwise ask again shortly.
      const queued = this.buffer;
      this.buffer = [];
      if (queued.length) {
        for (const ev of queued) this.handle(ev);
        return;
      }
      if (reply.code === "no_such_table" && (this.retries = (this.retries || 0) + 1) <= 10) {
        setTimeout(() => { if (!this.state) this.start(); }, 300);
        return;
      }
      if (reply.code !== "disconnected") {
        this.info.replaceChildren(h("p", { class: "error" }, `This table is not available (${reply.message}).`),
          h("a", { href: "#/" }, "Back to the lobby"));
      }
      return;
    }
    for (const ev of reply.events || []) this.note(ev);
    this.setFull(reply.state, reply.v, reply.summary);
    const queued = this.buffer;
    this.buffer = [];
    for (const ev of queued) this.handle(ev);
  }

  onReconnect() {
    this.start();
  }

  // Remember what the full state alone does not say (the game's id, its rating terms, the end).
  note(ev) {
    if (ev.type === "game_start") {
      this.gameId = ev.game_id;
      this.ratingInfo = ev.rating;
      this.over = null;
    } else if (ev.type === "game_over") {
      this.over = ev;
      this.gameId = ev.game_id;
    } else if (ev.type === "match_over") {
      this.matchOver = ev;
    }
  }

  setFull(state, v, summary) {
    this.state = state;
    this.v = v;
    if (summary) this.summary = summary;
    this.findSide();
    this.render();
  }

  findSide() {
    if (this.mode !== "play" || !this.state || !this.app.me) return;
    const seat = (this.state.seats || []).find((s) => s && s.player === this.app.me.player);
    if (seat) this.side = seat.side;
  }

  get viewer() {
    return this.side === null ? 0 : this.side;
  }

  handle(msg) {
    if (msg.type === "rating" || msg.type === "boosted") {
      if (msg.table === this.table) this.render();
      return;
    }
    if (msg.table !== this.table) return;
    if (msg.type === "error") {
      // An answer to one of our requests is handled where it was asked.
      if (msg.ref === undefined) toast(msg.message || msg.code);
      return;
    }
    if (msg.type === "resume") {
      this.side = msg.side;
      if (msg.v > this.v) this.setFull(msg.state, msg.v, msg.summary);
      return;
    }
    if (msg.v === undefined || ["ack", "sync", "watching"].includes(msg.type)) return;
    if (this.syncing) {
      this.buffer.push(msg);
      return;
    }
    if (msg.v <= this.v) return;
    if (msg.v > this.v + 1 && this.v > 0) {
      this.resync();
      return;
    }
    this.apply(msg);
  }

  async resync() {
    if (this.syncing) return;
    this.syncing = true;
    const reply = await this.app.socket.request({ type: "sync", table: this.table, since: this.v });
    this.syncing = false;
    if (reply.type !== "sync") return;
    for (const ev of reply.events || []) this.note(ev);
    this.setFull(reply.state, reply.v, reply.summary);
    const queued = this.buffer;
    this.buffer = [];
    for (const ev of queued) this.handle(ev);
  }

  apply(msg) {
    const t0 = performance.now();
    const before = this.state && this.state.game;
    this.note(msg);
    if (msg.type === "game_over") this.liveOver = true;
    if (msg.state) this.state = msg.state;
    else if (msg.changes) {
      if (!this.state) {
        this.resync(); // changes need the state they apply to
        return;
      }
      this.state = applyChanges(this.state, msg.changes);
    }
    this.v = msg.v;
    if (this.side === null) this.findSide();
    this.addLog(msg);
    this.render();
    if (msg.state || msg.changes) {
      const v = msg.v;
      const render = performance.now() - t0;
      requestAnimationFrame(() => {
        perf.push({ type: msg.type, v, render, ms: performance.now() - t0,
          drawn: Number(this.svg.dataset.v) >= v });
      });
    }
    const moved = msg.type === "moved" || (msg.type === "timeout" && msg.action === "play");
    if (moved && before && this.state.game && !(msg.side === this.side && this.mode === "play"
      && msg.type === "moved")) {
      const steps = findPlay(before, this.state.game, msg.side);
      if (steps) this.animate(steps, msg.side);
    }
  }

  async animate(steps, side) {
    const mine = side === this.viewer;
    const map = (p) => (mine ? p : p === 25 ? -25 : p === 0 ? -1 : 25 - p);
    for (const [a, b] of steps) {
      await flyChecker(this.svg, map(a), map(b), side, this.viewer, this.state.game);
    }
  }

  name(side) {
    const seat = this.state && this.state.seats && this.state.seats[side];
    return seat ? seat.name : "(empty seat)";
  }

  addLog(msg) {
    const who = msg.side !== undefined ? this.name(msg.side) : "";
    const texts = {
      seated: () => `${msg.name} sat down`,
      game_start: () => `Game ${msg.game_no} starts`,
      rolled: () => `${who} rolled ${msg.dice.join("-")}${msg.passed ? " and cannot move" : ""}`,
      moved: () => `${who} played ${msg.play}`,
      doubled: () => `${who} doubles to ${msg.cube}`,
      taken: () => `${who} takes; the cube is at ${msg.cube}`,
      dropped: () => `${who} drops`,
      resign_offered: () => `${who} offers to resign (${msg.kind}, ${msg.points} points)`,
      resign_rejected: () => `${who} rejects the resignation`,
      timeout: () => `${who}'s time ran out (${msg.action}); strike ${msg.strikes[msg.side]}`,
      player_disconnected: () => `${who} lost the connection`,
      player_reconnected: () => `${who} is back`,
      game_over: () => `${this.name(msg.winner_side)} wins ${msg.points} points (${msg.kind}, ${REASONS[msg.reason] || msg.reason})`,
      match_over: () => `The match is over: ${msg.score.join("–")}`,
      table_closed: () => `The table closed (${msg.reason})`,
    };
    const text = texts[msg.type] ? texts[msg.type]() : null;
    if (!text) return;
    for (const r of msg.rolls || []) {
      if (msg.type !== "rolled") this.log.push(`${this.name(r.side)} rolled ${r.dice.join("-")}${r.passed ? " and cannot move" : ""}`);
    }
    this.log.push(text);
    this.log = this.log.slice(-40);
    this.logBox.replaceChildren(...this.log.slice().reverse().map((t) => h("li", {}, t)));
  }

  // -- drawing ---------------------------------------------------------------------------------

  render() {
    const state = this.state;
    if (!state) {
      this.info.replaceChildren(h("p", {}, "Loading the table…"));
      return;
    }
    const game = state.game;
    this.drawInfo();
    this.drawBars();
    if (game) {
      this.updatePicker(game);
      const shown = this.picker ? toGame(this.picker.view, this.side, game) : game;
      const sources = this.picker && this.selected === null ? this.picker.sources()
        : this.picker ? [this.selected] : [];
      const dests = this.picker && this.selected !== null ? this.picker.destinations(this.selected) : [];
      drawBoard(this.svg, shown, {
        viewer: this.viewer, sources, selected: this.selected, dests,
        onPoint: (q) => this.pick(q), onDest: (d) => this.moveTo(d),
      });
    } else {
      this.svg.replaceChildren();
    }
    this.svg.dataset.v = String(this.v);
    this.drawControls();
    this.drawPanel();
    this.drawClocks();
  }

  drawInfo() {
    const state = this.state;
    const rating = this.ratingInfo || state.rating;
    const parts = [];
    const found = this.app.matches.get(this.table);
    const mode = (this.summary && this.summary.mode) || (found && found.mode) || "";
    const MODES = { competitive: "Competitive", boosted: "Boosted", private: "Private room",
      tournament: "Tournament", rated_match: "Rated match" };
    parts.push(h("span", { class: "badge" }, (this.mode === "watch" ? "Watching · " : "")
      + (MODES[mode] || mode || "Table")));
    if (state.match) {
      parts.push(h("span", { class: "score" }, `Match to ${state.match.length}: ${state.match.score[this.viewer]}–${state.match.score[1 - this.viewer]}${state.match.crawford ? " (Crawford)" : ""}`));
    }
    if (rating) {
      if (rating.rated) {
        parts.push(h("span", { class: "rated" }, `Rated on ${rating.ladder === "fibs" ? "FIBS" : "Table42"}`));
      } else if (rating.unrated_reason) {
        parts.push(h("span", { class: "unrated", "data-reason": rating.unrated_reason },
          `Not rated: ${UNRATED[rating.unrated_reason] || rating.unrated_reason}`));
      }
    }
    if (found && found.stakes && this.mode === "play") {
      const s = found.stakes.player;
      const digits = found.stakes.system === "fibs" ? 2 : 0;
      parts.push(h("span", { class: "stakes", "data-win": s.win, "data-loss": s.loss },
        `Stakes: win ${signed(s.win, digits)} / lose ${signed(s.loss, digits)}`
        + (found.stakes.system === "table42" ? " at cube 1" : "")
        + ` · you ${found.you.rating_shown} vs ${found.opponent.name} ${found.opponent.rating_shown}`));
    }
    if (state.status === "open") {
      parts.push(h("span", {}, `Waiting for an opponent. Table id: `, h("code", {}, this.table)));
    }
    this.info.replaceChildren(...parts);
  }

  drawBars() {
    const state = this.state;
    const me = this.viewer;
    for (const [box, side] of [[this.bottom, me], [this.top, 1 - me]]) {
      const seat = state.seats && state.seats[side];
      box.replaceChildren(
        h("span", { class: `swatch ${side === 0 ? "light" : "dark"}`, "aria-hidden": "true" }),
        h("strong", { class: "pname" }, seat ? seat.name : "(empty seat)",
          seat && seat.guest ? " (guest)" : ""),
        h("span", { class: "clock", "data-side": side, "aria-label": "clock" }),
        state.game ? h("span", { class: "pipcount" }, `pips ${state.game.pips[side]}`) : null,
        h("span", { class: "strikes", "data-side": side }),
        h("span", { class: "presence", "data-side": side, role: "status" }),
      );
    }
  }

  drawClocks() {
    const state = this.state;
    if (!state) return;
    const clock = state.clock;
    const now = Date.now() / 1000 + this.app.skew;
    for (const side of [0, 1]) {
      const c = this.root.querySelector(`.clock[data-side="${side}"]`);
      const s = this.root.querySelector(`.strikes[data-side="${side}"]`);
      const p = this.root.querySelector(`.presence[data-side="${side}"]`);
      if (!c) continue;
      if (clock && state.status === "playing") {
        const running = clock.side === side && clock.deadline;
        const left = running ? Math.max(0, clock.deadline - now) : clock.limit;
        c.textContent = `${Math.floor(left / 60)}:${String(Math.floor(left % 60)).padStart(2, "0")}`;
        c.classList.toggle("running", Boolean(running));
        c.classList.toggle("low", Boolean(running) && left < 10);
      } else {
        c.textContent = "";
      }
      s.textContent = clock ? `strikes ${clock.strikes[side]}/${clock.max_strikes}` : "";
      const seat = state.seats && state.seats[side];
      if (seat && !seat.connected && seat.grace_deadline && state.status === "playing") {
        const left = Math.max(0, Math.ceil(seat.grace_deadline - now));
        p.textContent = `disconnected: forfeits in ${left} s`;
        p.className = "presence away";
      } else {
        p.textContent = "";
        p.className = "presence";
      }
    }
  }

  updatePicker(game) {
    const mine = this.mode === "play" && this.side !== null && game.phase === "move"
      && game.to_act === this.side && this.state.status === "playing";
    if (!mine) {
      this.picker = null;
      this.pickerKey = null;
      this.selected = null;
      return;
    }
    const key = `${game.position_id}|${game.dice}|${game.turn}`;
    if (this.pickerKey !== key) {
      this.picker = new Picker(game.legal_plays, sideView(game, this.side));
      this.pickerKey = key;
      this.selected = null;
    }
  }

  pick(q) {
    this.selected = this.selected === q ? null : q;
    this.render();
    const first = this.svg.querySelector(".dest");
    if (first) first.focus();
  }

  async moveTo(d) {
    const from = this.selected;
    this.picker.add(d.steps);
    this.selected = null;
    this.render();
    const done = this.picker.complete();
    const next = done ? this.controls.querySelector(".confirm") : this.svg.querySelector(".clickable");
    if (next) next.focus();
    const game = this.state.game;
    const shown = toGame(this.picker.view, this.side, game);
    let at = from;
    for (const [, b] of d.steps) {
      flyChecker(this.svg, at, b, this.side, this.viewer, shown);
      at = b;
    }
  }

  undo() {
    if (!this.picker || !this.picker.steps.length) return;
    this.picker.undo();
    this.selected = null;
    this.render();
  }

  async send(type, extra = {}) {
    if (this.busy) return;
    this.busy = true;
    this.drawControls();
    const reply = await this.app.socket.request({ type, table: this.table, ...extra });
    this.busy = false;
    if (reply.type === "error") toast(reply.message || reply.code);
    this.drawControls();
  }

  confirm() {
    const play = this.picker && this.picker.complete();
    if (play) this.send("play", { play });
  }

  drawControls() {
    const state = this.state;
    const game = state && state.game;
    const out = [];
    const button = (label, action, attrs = {}) => h("button", {
      type: "button", onclick: action, disabled: this.busy || undefined, ...attrs,
    }, label);
    if (this.mode === "play" && this.side !== null && game && state.status === "playing"
      && game.phase !== "over") {
      const mine = game.to_act === this.side;
      if (mine && game.phase === "roll") {
        out.push(button("Roll", () => this.send("roll"), { class: "primary roll", accesskey: "r" }));
        if (game.can_double) {
          out.push(button(`Double to ${game.cube * 2}`, () => this.send("double"), { class: "double" }));
        }
      } else if (mine && game.phase === "move") {
        const plays = game.legal_plays;
        if (plays.length === 1) {
          out.push(button(`Play the forced move ${playText(plays[0])}`,
            () => this.send("play", { play: plays[0] }), { class: "primary forced" }));
        } else {
          out.push(h("span", { class: "hint" }, `Your dice: ${game.dice.join("-")}. Pick a checker, then where it goes.`));
        }
        out.push(button("Undo", () => this.undo(), {
          class: "undo", disabled: this.busy || !this.picker || !this.picker.steps.length || undefined,
        }));
        out.push(button("Confirm move", () => this.confirm(), {
          class: "primary confirm", disabled: this.busy || !(this.picker && this.picker.complete()) || undefined,
        }));
      } else if (mine && game.phase === "double_offered") {
        out.push(h("span", { class: "hint" }, `${this.name(1 - this.side)} doubles to ${game.cube * 2}.`));
        out.push(button(`Take (cube ${game.cube * 2})`, () => this.send("take"), { class: "primary take" }));
        out.push(button(`Drop (lose ${game.cube})`, () => this.send("drop"), { class: "drop" }));
      } else if (mine && game.phase === "resign_offered" && game.resignation) {
        const r = game.resignation;
        out.push(h("span", { class: "hint" }, `${this.name(r.side)} offers to resign a ${r.kind} (${r.points} points).`));
        out.push(button("Accept", () => this.send("accept_resign"), { class: "primary accept" }));
        out.push(button("Reject", () => this.send("reject_resign"), { class: "reject" }));
      } else {
        const waiting = game.phase === "double_offered" ? "Waiting for the answer to your double…"
          : game.phase === "resign_offered" ? "Waiting for the answer to your resignation…"
            : `${this.name(1 - this.side)} to play…`;
        out.push(h("span", { class: "hint waiting" }, waiting));
      }
      if (mine && (game.phase === "roll" || game.phase === "move")) {
        const kind = h("select", { "aria-label": "resign kind", class: "resign-kind" },
          ...Object.keys(KIND_POINTS).map((k) => h("option", { value: k }, `${k} (${KIND_POINTS[k] * game.cube})`)));
        out.push(h("span", { class: "resign-group" }, kind,
          button("Resign", () => this.send("resign", { kind: kind.value }), { class: "resign" })));
      }
    } else if (this.mode === "play" && state && state.status === "open") {
      out.push(button("Leave the table", () => this.send("leave").then(() => { location.hash = "#/"; })));
    }
    this.controls.replaceChildren(...out);
  }

  drawPanel() {
    const state = this.state;
    const outcome = state.game && state.game.outcome;
    if (!this.over && !outcome) {
      this.panel.replaceChildren();
      return;
    }
    const o = this.over || {
      winner_side: outcome.winner, kind: outcome.kind, reason: outcome.reason,
      cube: outcome.cube, points: outcome.points, game_id: this.gameId,
    };
    const won = this.side !== null && o.winner_side === this.side;
    const title = this.mode === "watch" || this.side === null
      ? `${this.name(o.winner_side)} wins`
      : won ? "You won" : "You lost";
    const rows = [
      h("p", { class: "result", "data-winner": o.winner_side, "data-reason": o.reason,
        "data-kind": o.kind, "data-points": o.points },
      `${title}: ${o.kind === "single" ? "a single game" : `a ${o.kind}`}, ${o.points} point${o.points === 1 ? "" : "s"}`
      + ` (cube ${o.cube}, ${REASONS[o.reason] || o.reason}).`),
    ];
    const rating = o.game_id ? this.app.ratings.get(o.game_id) : null;
    const mRating = this.matchOver ? this.app.ratings.get(`${this.table}-m`) : null;
    for (const r of [rating, mRating]) if (r) rows.push(ratingTable(r));
    if (!rating && !mRating) {
      const info = o.rating || this.ratingInfo || state.rating;
      if (info && !info.rated) {
        rows.push(h("p", { class: "unrated" }, `No rating change: ${UNRATED[info.unrated_reason] || info.unrated_reason || "unrated"}.`));
      } else if (info && info.rated && !(state.match && !this.matchOver)) {
        rows.push(this.liveOver || !this.app.me
          ? h("p", { class: "pending" }, "The rating change is on its way…")
          : h("p", { class: "pending" }, "The rating change was sent when the game ended: ",
            h("a", { href: `#/player/${encodeURIComponent(this.app.me.player)}` }, "see your profile"), "."));
      }
    }
    const actions = h("div", { class: "actions" });
    if (this.mode === "play" && state.status !== "playing") {
      actions.append(h("button", { type: "button", class: "primary rematch", onclick: () => this.app.rematch(this.table) }, "Rematch"));
    }
    if (o.game_id) actions.append(h("a", { href: `#/review/${encodeURIComponent(o.game_id)}`, class: "button review-link" }, "Review"));
    actions.append(h("a", { href: "#/", class: "button" }, "Back to the lobby"));
    rows.push(actions);
    const box = h("section", { class: "end-panel", "aria-label": "game over", tabindex: "-1" },
      h("h2", {}, this.matchOver ? "Match over" : "Game over"), ...rows);
    const had = this.panel.firstChild;
    this.panel.replaceChildren(box);
    if (!had) box.focus();
  }
}

function ratingTable(r) {
  const fibs = r.ladder === "fibs";
  const d = fibs ? 2 : 0;
  const cells = r.type === "boosted"
    ? [["Boosted points", r.points, r.points], ["Your total", r.winner_total, r.winner_total]]
    : [
      ["Ladder", fibs ? "FIBS" : "Table42", r.ladder],
      ["Old rating", num(r.old, d), r.old],
      ["New rating", num(r.new, d), r.new],
      ["Change", signed(r.change, d), r.change],
      ...(fibs ? [["Match length", r.match_length, r.match_length],
        ["Multiplier", r.multiplier, r.multiplier]]
        : [["K", r.k, r.k], ["Cube", r.cube, r.cube],
          ["Cube coefficient", Number(r.cube_coefficient).toFixed(4), r.cube_coefficient]]),
      ["Opponent", `${r.opponent}: ${num(r.opponent_old, d)} ${signed(r.opponent_change, d)}`, r.opponent_change],
    ];
  return h("table", { class: "rating-change", "data-game": r.game_id },
    h("caption", {}, r.type === "boosted" ? "Boosted points" : "Rating change"),
    h("tbody", {}, ...cells.map(([label, text, raw]) => h("tr", {},
      h("th", { scope: "row" }, label),
      h("td", { "data-field": label, "data-value": JSON.stringify(raw) }, String(text))))));
}
