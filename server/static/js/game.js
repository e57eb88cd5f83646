// One table on screen, seated or watching: the versioned event stream (PROTOCOL.md §5) kept in
// order by `v` (a gap or a reconnect asks for `sync`), the board, the decisions, the clocks and
// the end-of-game panel with the rating change exactly as pushed.

import { boardArrows, drawBoard, flyChecker } from "./board.js";
import { Picker, findPlay, playText, sideView, toGame } from "./moves.js";
import { ChatBox } from "./chat.js";
import { t } from "./i18n.js";
import { api, qs } from "./api.js";
import { beep, errorText, h, kindText, modeText, num, personName, reasonText, roundText, shownRating, signed, toast, unratedText } from "./ui.js";

// Below this width a board point is narrower than a finger (44 CSS px): the move buttons under
// the board are the controls, the board only shows.
const NARROW = "(max-width: 600px)";
const narrow = () => window.matchMedia(NARROW).matches;

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

// One table event in words (the game log, a replay's step); null for events not worth a line.
export function eventText(msg, name) {
  const who = msg.side !== undefined ? name(msg.side) : "";
  const texts = {
    seated: () => t("log.seated", { name: personName(msg.player, msg.name) }),
    game_start: () => t("log.game_start", { no: msg.game_no }),
    rolled: () => t(msg.passed ? "log.rolled_passed" : "log.rolled", { name: who, dice: msg.dice.join("-") }),
    moved: () => t("log.moved", { name: who, play: msg.play }),
    doubled: () => t("log.doubled", { name: who, cube: msg.cube }),
    taken: () => t("log.taken", { name: who, cube: msg.cube }),
    dropped: () => t("log.dropped", { name: who }),
    resign_offered: () => t("log.resign_offered", { name: who, kind: kindText(msg.kind), n: msg.points }),
    resign_rejected: () => t("log.resign_rejected", { name: who }),
    timeout: () => t("log.timeout", { name: who, strikes: msg.strikes[msg.side] }),
    player_disconnected: () => t("log.disconnected", { name: who }),
    player_reconnected: () => t("log.reconnected", { name: who }),
    resumed: () => t("log.resumed"),
    game_over: () => t("log.game_over", { name: name(msg.winner_side), n: msg.points, kind: kindText(msg.kind), reason: reasonText(msg.reason) }),
    match_over: () => t("log.match_over", { score: msg.score.join("–") }),
    table_closed: () => t("log.table_closed"),
  };
  return texts[msg.type] ? texts[msg.type]() : null;
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
    this.root = h("section", { class: "game", "aria-label": t("game.label") });
    this.chat = new ChatBox(app, table);
    this.stakes = null;
    this.stakesAsked = false;
    this.svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    this.svg.setAttribute("class", "board");
    this.svg.setAttribute("role", "group");
    this.svg.setAttribute("aria-label", t("board.label"));
    this.top = h("div", { class: "player-bar top" });
    this.bottom = h("div", { class: "player-bar bottom" });
    this.info = h("div", { class: "game-info" });
    this.controls = h("div", { class: "controls", "aria-label": t("game.decisions") });
    this.panel = h("div", { class: "end-panel-slot" });
    this.logBox = h("ol", { class: "log", "aria-live": "polite", "aria-label": t("game.log") });
    // The page's one heading (for screen readers; the board and the players are the page).
    this.root.append(h("h1", { class: "visually-hidden" }, t("game.heading")), this.info, this.top, h("div", { class: "board-wrap" }, this.svg),
      this.bottom, this.controls, this.panel, this.chat.root,
      h("details", { class: "log-box" }, h("summary", {}, t("game.log")), this.logBox));
    this.tick = setInterval(() => this.drawClocks(), 250);
    this.controls.addEventListener("keydown", (ev) => this.pickerArrows(ev));
    this.svg.addEventListener("keydown", (ev) => {
      if (boardArrows(this.svg, ev)) return;
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
        this.info.replaceChildren(h("p", { class: "error" }, t("game.unavailable", { why: errorText(reply) })),
          h("a", { href: "#/" }, t("game.back_lobby")));
      }
      return;
    }
    for (const ev of reply.events || []) this.note(ev);
    if (reply.chat) this.chat.set(reply.chat);
    if (reply.type === "sync") await this.morePages(reply);
    this.setFull(reply.state, reply.v, reply.summary);
    const queued = this.buffer;
    this.buffer = [];
    for (const ev of queued) this.handle(ev);
  }

  // A `sync` answer is one page of the log (PROTOCOL.md §5.2): read the rest for what the
  // state alone does not say (the game's start and end); the answer's state is current.
  async morePages(reply) {
    let page = reply;
    this.syncing = true; // live events wait in the buffer meanwhile
    while (page.type === "sync" && !page.complete && page.next !== null && page.next !== undefined) {
      page = await this.app.socket.request({ type: "sync", table: this.table, since: page.next });
      for (const ev of page.events || []) this.note(ev);
    }
    this.syncing = false;
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
    if (msg.type === "chat") {
      this.chat.add(msg);
      return;
    }
    if (msg.type === "held") {
      // The server cannot store: no clock runs until "resumed" (a versioned event) comes.
      toast(t("game.held"));
      return;
    }
    if (msg.type === "resume") {
      this.side = msg.side;
      if (msg.chat) this.chat.set(msg.chat);
      // Below the view too: the table went back (a store failover lost events, PROTOCOL §15).
      if (msg.v !== this.v) this.setFull(msg.state, msg.v, msg.summary);
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
    await this.morePages(reply);
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
    return seat ? personName(seat.player, seat.name) : t("seat.empty");
  }

  addLog(msg) {
    const text = eventText(msg, (side) => this.name(side));
    if (!text) return;
    for (const r of msg.rolls || []) {
      if (msg.type !== "rolled") this.log.push(t(r.passed ? "log.rolled_passed" : "log.rolled", { name: this.name(r.side), dice: r.dice.join("-") }));
    }
    this.log.push(text);
    this.log = this.log.slice(-40);
    this.logBox.replaceChildren(...this.log.slice().reverse().map((line) => h("li", {}, line)));
  }

  // -- drawing ---------------------------------------------------------------------------------

  render() {
    const state = this.state;
    if (!state) {
      this.info.replaceChildren(h("p", {}, t("game.loading")));
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
        viewer: this.viewer, sources, selected: this.selected, dests, interactive: !narrow(),
        onPoint: (q) => this.pick(q), onDest: (d) => this.moveTo(d),
      });
    } else {
      this.svg.replaceChildren();
    }
    this.svg.dataset.v = String(this.v);
    this.drawControls();
    this.drawPanel();
    this.drawClocks();
    this.placeFocus();
  }

  // The focus after a render: where the last action asked for it (a picked checker: its first
  // destination; a move: the next checker or Confirm), or, when your move begins with the focus
  // nowhere (the Roll button is gone), on your first checker: the board is one key away.
  placeFocus() {
    const want = this.focusNext;
    this.focusNext = null;
    const game = this.state && this.state.game;
    const roll = this.controls.querySelector(".roll");
    const turnKey = this.picker ? `move|${this.pickerKey}` : roll && game ? `roll|${game.turn}|${game.position_id}` : null;
    const began = turnKey && turnKey !== this.focusedTurn;
    if (turnKey) this.focusedTurn = turnKey;
    const lost = !document.activeElement || document.activeElement === document.body;
    const first = this.picker ? this.controls.querySelector(".move-picker button, .forced") : roll;
    const target = want ? this.root.querySelector(want) : began && lost ? first : null;
    if (target && !target.disabled) target.focus();
  }

  // Left and right (up and down) move between the move buttons.
  pickerArrows(ev) {
    const keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
    const row = ev.target.closest && ev.target.closest(".move-picker");
    if (!row || !(ev.key in keys)) return;
    const buttons = [...row.querySelectorAll("button")];
    const at = buttons.indexOf(ev.target);
    ev.preventDefault();
    buttons[(at + keys[ev.key] + buttons.length) % buttons.length].focus();
  }

  // The tournament and the round of this table: from its tournament_table event, else read
  // once from the tournament's bracket (after a reload).
  tournamentInfo(tid) {
    const ev = this.app.tournamentTables.get(this.table);
    if (ev && ev.name) return ev;
    if (this.tInfo !== undefined) return this.tInfo;
    this.tInfo = null;
    const path = `/api/tournaments/${encodeURIComponent(tid)}`;
    Promise.all([api(path), api(`${path}/bracket`).catch(() => null)]).then(([d, b]) => {
      const count = b ? b.rounds.length : 0;
      const all = b ? [...b.rounds.flat(), ...(b.third_place ? [b.third_place] : [])] : [];
      const m = all.find((x) => (x.tables || []).includes(this.table) || x.table === this.table);
      const roundName = !m ? null : m.round === 0 ? "third_place" : m.round === count ? "final"
        : m.round === count - 1 ? "semi_final" : "round";
      this.tInfo = { name: d.tournament.name, round: m ? m.round : null, round_name: roundName };
      if (this.state) this.drawInfo();
    }).catch(() => {});
    return null;
  }

  drawInfo() {
    const state = this.state;
    const rating = this.ratingInfo || state.rating;
    const parts = [];
    const found = this.app.matches.get(this.table);
    const bot = this.app.computer.get(this.table);
    const mode = (this.summary && this.summary.mode) || (found && found.mode) || (bot && "computer") || "";
    const isBot = bot || (state.seats || []).some((s) => s && s.bot);
    const tid = (this.summary && this.summary.tournament_id) || (this.app.tournamentTables.get(this.table) || {}).tournament;
    const tInfo = tid ? this.tournamentInfo(tid) : null;
    const modeWords = tInfo ? t("tournament.at_table", { name: tInfo.name, round: tInfo.round_name
      ? roundText(tInfo.round_name, tInfo.round) : modeText("tournament") }) : isBot ? t("mode.practice") : modeText(mode);
    parts.push(h("span", { class: tInfo ? "badge tournament-badge" : "badge" },
      (this.mode === "watch" ? t("game.watching") + " · " : "") + modeWords));
    if (state.match) {
      parts.push(h("span", { class: "score" }, t(state.match.crawford ? "game.score_crawford" : "game.score", {
        length: state.match.length, me: state.match.score[this.viewer], them: state.match.score[1 - this.viewer] })));
    }
    if (isBot) {
      parts.push(h("span", { class: "unrated practice", "data-reason": "bot" }, t("computer.practice_short")));
    } else if (rating) {
      if (rating.rated) {
        parts.push(h("span", { class: "rated" }, t(rating.ladder === "fibs" ? "game.rated_fibs" : "game.rated_table42")));
      } else if (rating.unrated_reason) {
        parts.push(h("span", { class: "unrated", "data-reason": rating.unrated_reason },
          t("game.not_rated", { why: unratedText(rating.unrated_reason) })));
      }
    }
    const stakes = found && found.stakes ? found.stakes : this.stakes;
    if (stakes && stakes.player && this.mode === "play") {
      const s = stakes.player;
      const digits = stakes.system === "fibs" ? 2 : 0;
      const opponent = found ? found.opponent : null;
      parts.push(h("span", { class: "stakes", "data-win": s.win, "data-loss": s.loss },
        t(stakes.system === "table42" ? "game.stakes_cube" : "game.stakes", { win: signed(s.win, digits), loss: signed(s.loss, digits) })
        + (opponent ? " · " + t("game.stakes_vs", { me: shownRating(found.you.rating_shown), name: personName(opponent.player, opponent.name),
          them: shownRating(opponent.rating_shown) }) : "")));
    } else if (!found && rating && rating.rated && this.mode === "play") {
      this.loadStakes(rating);
    }
    if (state.status === "open") {
      const link = `${location.origin}${location.pathname}#/join/${encodeURIComponent(this.table)}`;
      const share = h("input", { class: "share-link", readonly: true, value: link, "aria-label": t("game.share_label"),
        onfocus: (ev) => ev.target.select() });
      parts.push(h("span", { class: "waiting-open" }, t("game.waiting_opponent"), " ", share, " ",
        h("button", { type: "button", class: "copy-link", onclick: async () => {
          try {
            await navigator.clipboard.writeText(link);
            toast(t("game.link_copied"));
          } catch (err) {
            share.select();
          }
        } }, t("game.copy_link"))));
    }
    this.info.replaceChildren(...parts);
  }

  // After a reload match_found is gone: the stakes of a rated game are asked again
  // (GET /api/stakes) for the two seated players and the game's pool.
  async loadStakes(rating) {
    if (this.stakesAsked || this.side === null || !this.state.seats) return;
    const seats = this.state.seats;
    if (!seats[0] || !seats[1]) return;
    this.stakesAsked = true;
    const length = (this.summary && this.summary.match_length) || (this.state.match && this.state.match.length) || 1;
    const pool = rating.ladder === "fibs" ? `match-${length}` : "competitive";
    try {
      const data = await api(`/api/stakes?${qs({ player: seats[this.side].player, opponent: seats[1 - this.side].player, pool })}`);
      this.stakes = data.stakes || data;
      this.drawInfo();
    } catch (err) {
      // No stakes line then; the rated badge still says how the game counts.
    }
  }

  drawBars() {
    const state = this.state;
    const me = this.viewer;
    for (const [box, side] of [[this.bottom, me], [this.top, 1 - me]]) {
      const seat = state.seats && state.seats[side];
      box.replaceChildren(...[
        h("span", { class: `swatch ${side === 0 ? "light" : "dark"}`, "aria-hidden": "true" }),
        h("strong", { class: "pname" }, seat ? personName(seat.player, seat.name) : t("seat.empty")),
        h("span", { class: "clock", "data-side": side, "aria-label": t("game.clock") }),
        state.game ? h("span", { class: "pipcount" }, t("game.pips", { pips: state.game.pips[side] })) : null,
        h("span", { class: "strikes", "data-side": side }),
        h("span", { class: "presence", "data-side": side, role: "status" }),
      ].filter(Boolean));
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
      s.textContent = clock ? t("game.strikes", { strikes: clock.strikes[side], max: clock.max_strikes }) : "";
      const seat = state.seats && state.seats[side];
      if (seat && !seat.connected && seat.grace_deadline && state.status === "playing") {
        const left = Math.max(0, Math.ceil(seat.grace_deadline - now));
        p.textContent = t("game.forfeits_in", { n: left });
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

  // Pick (or put back) the checker on q; `where` is where the action came from (the board or
  // the move buttons), so the focus stays there.
  pick(q, where = "board") {
    this.selected = this.selected === q ? null : q;
    this.focusNext = where === "picker" ? ".move-picker button" : this.selected !== null ? "svg.board .dest.clickable" : null;
    this.render();
  }

  async moveTo(d, where = "board") {
    const from = this.selected;
    this.picker.add(d.steps);
    this.selected = null;
    const done = this.picker.complete();
    this.focusNext = done ? ".controls .confirm" : where === "picker" ? ".move-picker button" : "svg.board .clickable";
    this.render();
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
      this.sound(game, mine);
      if (mine && game.phase === "roll") {
        out.push(button(t("game.roll"), () => this.send("roll"), { class: "primary roll", accesskey: "r" }));
        if (game.can_double) {
          out.push(button(t("game.double_to", { cube: game.cube * 2 }), () => this.send("double"), { class: "double" }));
        }
      } else if (mine && game.phase === "move") {
        const plays = game.legal_plays;
        if (plays.length === 1) {
          out.push(button(t("game.forced", { play: playText(plays[0]) }),
            () => this.send("play", { play: plays[0] }), { class: "primary forced" }));
        } else {
          out.push(h("span", { class: "hint" }, t("game.pick_hint", { dice: game.dice.join("-") })));
          if (this.picker && !this.picker.complete()) out.push(this.movePicker());
        }
        out.push(button(t("game.undo"), () => this.undo(), {
          class: "undo", disabled: this.busy || !this.picker || !this.picker.steps.length || undefined,
        }));
        out.push(button(t("game.confirm"), () => this.confirm(), {
          class: "primary confirm", disabled: this.busy || !(this.picker && this.picker.complete()) || undefined,
        }));
      } else if (mine && game.phase === "double_offered") {
        out.push(h("span", { class: "hint" }, t("game.doubles_you", { name: this.name(1 - this.side), cube: game.cube * 2 })));
        out.push(button(t("game.take", { cube: game.cube * 2 }), () => this.send("take"), { class: "primary take" }));
        out.push(button(t("game.drop", { cube: game.cube }), () => this.send("drop"), { class: "drop" }));
      } else if (mine && game.phase === "resign_offered" && game.resignation) {
        const r = game.resignation;
        out.push(h("span", { class: "hint" }, t("game.resign_offer", { name: this.name(r.side), kind: kindText(r.kind), n: r.points })));
        out.push(button(t("game.accept"), () => this.send("accept_resign"), { class: "primary accept" }));
        out.push(button(t("game.reject"), () => this.send("reject_resign"), { class: "reject" }));
      } else {
        const waiting = game.phase === "double_offered" ? t("game.wait_double")
          : game.phase === "resign_offered" ? t("game.wait_resign")
            : t("game.to_play", { name: this.name(1 - this.side) });
        out.push(h("span", { class: "hint waiting" }, waiting));
      }
      if (mine && (game.phase === "roll" || game.phase === "move")) {
        const kind = h("select", { "aria-label": t("game.resign_kind"), class: "resign-kind" },
          ...Object.keys(KIND_POINTS).map((k) => h("option", { value: k },
            t("game.resign_option", { kind: kindText(k), n: KIND_POINTS[k] * game.cube }))));
        out.push(h("span", { class: "resign-group" }, kind,
          button(t("game.resign"), () => this.send("resign", { kind: kind.value }), { class: "resign" })));
      }
    } else if (this.mode === "play" && state && state.status === "open") {
      out.push(button(t("game.leave"), () => this.send("leave").then(() => { location.hash = "#/"; })));
    }
    this.controls.replaceChildren(...out);
  }

  // The move as buttons (finger-sized, and the keyboard's short way): your checkers that can
  // move, then the picked one's destinations. The board shows the same.
  movePicker() {
    const row = h("div", { class: "move-picker", role: "group", "aria-label": t("game.move_picker") });
    const q = this.selected;
    if (q === null) {
      for (const src of this.picker.sources()) {
        row.append(h("button", { type: "button", class: "pick-src", "data-point": src === 25 ? "bar" : src,
          onclick: () => this.pick(src, "picker") }, src === 25 ? t("game.from_bar") : t("game.from_point", { q: src })));
      }
    } else {
      row.append(h("button", { type: "button", class: "pick-src", "aria-pressed": "true", "data-point": q === 25 ? "bar" : q,
        onclick: () => this.pick(q, "picker") }, q === 25 ? t("game.from_bar") : t("game.from_point", { q })));
      const dests = this.picker.destinations(q);
      for (const d of dests) {
        row.append(h("button", { type: "button", class: "pick-dest", "data-dest": d.to, onclick: () => this.moveTo(d, "picker") },
          d.to === 0 ? t("game.bear_off_short") : t("game.to_point", { q: d.to })));
      }
      // The first destination first: the picked checker's button (which puts it back) last.
      row.append(row.firstChild);
    }
    row.append(h("span", { class: "note keys-hint" }, t("game.keys_hint")));
    return row;
  }

  // A tone when it becomes your turn, when dice are rolled, when a double is offered.
  sound(game, mine) {
    const key = `${game.turn}|${game.phase}|${game.dice}|${game.to_act}`;
    if (this.soundKey === key) return;
    const first = this.soundKey === undefined;
    this.soundKey = key;
    if (first) return;
    if (game.phase === "double_offered") beep("double");
    else if (mine && game.phase === "roll") beep("turn");
    else if (game.phase === "move") beep("dice");
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
    const who = this.mode === "watch" || this.side === null
      ? t("end.wins", { name: this.name(o.winner_side) })
      : won ? t("end.you_won") : t("end.you_lost");
    const rows = [
      h("p", { class: "result", "data-winner": o.winner_side, "data-reason": o.reason,
        "data-kind": o.kind, "data-points": o.points },
      t("end.result", { who, kind: kindText(o.kind), n: o.points, cube: o.cube, reason: reasonText(o.reason) })),
    ];
    const rating = o.game_id ? this.app.ratings.get(o.game_id) : null;
    const mRating = this.matchOver ? this.app.ratings.get(`${this.table}-m`) : null;
    for (const r of [rating, mRating]) if (r) rows.push(ratingTable(r));
    const info = o.rating || this.ratingInfo || state.rating;
    const bot = this.app.computer.has(this.table) || (state.seats || []).some((s) => s && s.bot);
    if (!rating && !mRating) {
      if (bot) {
        rows.push(h("p", { class: "unrated" }, t("end.no_change", { why: unratedText("bot") })));
      } else if (info && !info.rated) {
        rows.push(h("p", { class: "unrated" }, t("end.no_change", { why: unratedText(info.unrated_reason) })));
      } else if (info && info.rated && !(state.match && !this.matchOver)) {
        rows.push(this.liveOver || !this.app.me
          ? h("p", { class: "pending" }, t("end.pending"))
          : h("p", { class: "pending" }, t("end.sent"), " ",
            h("a", { href: `#/player/${encodeURIComponent(this.app.me.player)}` }, t("end.see_profile"))));
      }
    }
    // What counts for the rating: on Table42 the cube, never the gammon; FIBS the match.
    const ladder = (rating && rating.ladder) || (info && info.rated && info.ladder);
    if (ladder && !(rating && rating.type === "boosted")) {
      rows.push(h("p", { class: "note counts" }, t(ladder === "fibs" ? "end.counts_fibs" : "end.counts_table42")));
    }
    const actions = h("div", { class: "actions" });
    const tournament = (this.summary && this.summary.tournament_id)
      || (this.app.tournamentTables.get(this.table) || {}).tournament;
    if (tournament) {
      actions.append(h("a", { href: `#/tournament/${encodeURIComponent(tournament)}`, class: "button primary to-bracket" },
        t("end.to_bracket")));
    } else if (this.mode === "play" && state.status !== "playing") {
      actions.append(h("button", { type: "button", class: "primary rematch", onclick: () => this.app.rematch(this.table) }, t("end.rematch")));
    }
    if (o.game_id) {
      actions.append(h("a", { href: `#/replay/${encodeURIComponent(o.game_id)}`, class: "button replay-link" }, t("end.replay")),
        h("a", { href: `#/review/${encodeURIComponent(o.game_id)}`, class: "button review-link" }, t("end.review")));
    }
    actions.append(h("a", { href: "#/", class: "button" }, t("game.back_lobby")));
    rows.push(actions);
    const box = h("section", { class: "end-panel", "aria-label": t("end.label"), tabindex: "-1" },
      h("h2", {}, this.matchOver ? t("end.match_over") : t("end.game_over")), ...rows);
    const had = this.panel.firstChild;
    this.panel.replaceChildren(box);
    if (!had) box.focus();
  }
}

export function ratingTable(r) {
  const fibs = r.ladder === "fibs";
  const d = fibs ? 2 : 0;
  const cells = r.type === "boosted"
    ? [["rt.boosted_points", num(r.points), r.points, "Boosted points"], ["rt.total", num(r.winner_total), r.winner_total, "Your total"]]
    : [
      ["rt.ladder", fibs ? "FIBS" : "Table42", r.ladder, "Ladder"],
      ["rt.old", num(r.old, d), r.old, "Old rating"],
      ["rt.new", num(r.new, d), r.new, "New rating"],
      ["rt.change", signed(r.change, d), r.change, "Change"],
      ...(fibs ? [["rt.match_length", num(r.match_length), r.match_length, "Match length"],
        ["rt.multiplier", String(r.multiplier), r.multiplier, "Multiplier"]]
        : [["rt.k", num(r.k), r.k, "K"], ["rt.cube", num(r.cube), r.cube, "Cube"],
          ["rt.cube_coefficient", num(r.cube_coefficient, 4), r.cube_coefficient, "Cube coefficient"]]),
      ["rt.opponent", `${personName(r.opponent)}: ${num(r.opponent_old, d)} ${signed(r.opponent_change, d)}`, r.opponent_change, "Opponent"],
    ];
  return h("table", { class: "rating-change", "data-game": r.game_id },
    h("caption", {}, r.type === "boosted" ? t("rt.boosted_points") : t("rt.caption")),
    h("tbody", {}, ...cells.map(([key, text, raw, field]) => h("tr", {},
      h("th", { scope: "row" }, t(key)),
      h("td", { "data-field": field, "data-value": JSON.stringify(raw) }, String(text))))));
}
