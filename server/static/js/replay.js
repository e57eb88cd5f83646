// A finished game replayed from its stored record (GET /api/games/{id}, PROTOCOL.md §17):
// #/replay/<game_id>, a public link. Every event of the record carries the table's whole state
// after it, so a step is drawn from its own state alone (board, dice, cube, clocks) with the
// chat said up to then; first/back/forward/last buttons and the arrow, Home and End keys.

import { api } from "./api.js";
import { drawBoard } from "./board.js";
import { ChatBox } from "./chat.js";
import { eventText } from "./game.js";
import { fmtDate, t } from "./i18n.js";
import { downloadMat } from "./pages.js";
import { gameModeText, h, personName, resultText, toast } from "./ui.js";

const clockText = (s) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, "0")}`;

// When each step happened, as near as the record tells: an event's clock started its decision
// (deadline − limit); a step without a running clock is no later than the next one that has it.
export function stepTimes(steps, finishedAt) {
  const times = steps.map((ev) => {
    const c = ev.state && ev.state.clock;
    return ev.at ?? (c && c.deadline ? c.deadline - c.limit : null);
  });
  let next = finishedAt ?? Infinity;
  for (let i = times.length - 1; i >= 0; i -= 1) {
    if (times[i] === null || times[i] > next) times[i] = next;
    next = times[i];
  }
  times[times.length - 1] = Math.max(times[times.length - 1], finishedAt ?? -Infinity);
  return times;
}

export class ReplayView {
  constructor(app, gameId) {
    this.app = app;
    this.gameId = gameId;
    this.record = null;
    this.steps = [];
    this.times = [];
    this.at = 0;
    this.root = h("section", { class: "replay game", "aria-label": t("replay.title") });
    this.svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    this.svg.setAttribute("class", "board");
    this.svg.setAttribute("role", "img");
    this.svg.setAttribute("aria-label", t("board.label"));
    this.onKey = (ev) => this.key(ev);
  }

  mount(main) {
    main.replaceChildren(this.root);
    this.root.replaceChildren(h("h1", {}, t("replay.title")), h("p", {}, t("common.loading")));
    document.addEventListener("keydown", this.onKey);
    this.load();
  }

  destroy() {
    document.removeEventListener("keydown", this.onKey);
  }

  async load() {
    let record;
    try {
      record = await api(`/api/games/${encodeURIComponent(this.gameId)}`, { token: this.app.token });
    } catch (err) {
      this.root.replaceChildren(h("h1", {}, t("replay.title")), h("p", { class: "error", role: "alert" },
        err.status === 404 ? t("replay.not_found") : t("common.unavailable", { why: err.message })),
      h("a", { href: "#/" }, t("game.back_lobby")));
      return;
    }
    const t0 = performance.now();
    this.show(record);
    requestAnimationFrame(() => {
      window.__t42replay = { steps: this.steps.length, ms: performance.now() - t0 };
      performance.mark("replay-drawn");
    });
  }

  show(record) {
    this.record = record;
    this.steps = (record.events || []).filter((ev) => ev.state && ev.state.game);
    this.times = stepTimes(this.steps, record.finished_at);
    this.chat = new ChatBox(this.app, record.table, { readOnly: true });
    this.stepBox = h("p", { class: "step", "aria-live": "polite" });
    this.clocks = h("p", { class: "replay-clocks" });
    this.position = h("span", { class: "step-no" });
    const button = (key, cls, go) => h("button", { type: "button", class: cls, onclick: go }, t(key));
    const names = (record.names || record.players).map((n, i) => personName(record.players[i], n));
    const length = record.match_length > 1 ? ` · ${t("tables.match_to", { length: record.match_length })}` : "";
    const winner = record.winner === null || record.winner === undefined ? "" : names[record.winner];
    const matchDownload = record.match_length > 1
      ? button("replay.download_match", "mat-match", () => downloadMat(this.app, this.gameId, true).catch((e) => toast(e.message)))
      : null;
    this.root.replaceChildren(
      h("h1", {}, t("replay.heading", { a: names[0], b: names[1] })),
      h("p", { class: "game-info" }, gameModeText(record.mode, record.players) + length, " · ", fmtDate(record.finished_at),
        winner ? ` · ${t("replay.winner", { name: winner, n: record.points })}` : "",
        record.result ? ` (${resultText(record.result)})` : ""),
      h("div", { class: "board-wrap" }, this.svg),
      this.clocks,
      h("div", { class: "controls replay-controls" },
        button("replay.first", "first", () => this.go(0)),
        button("replay.back", "back", () => this.go(this.at - 1)),
        this.position,
        button("replay.forward", "forward", () => this.go(this.at + 1)),
        button("replay.last", "last", () => this.go(this.steps.length - 1))),
      this.stepBox,
      h("div", { class: "actions" },
        button("replay.download", "mat", () => downloadMat(this.app, this.gameId).catch((e) => toast(e.message))),
        matchDownload,
        h("a", { href: `#/review/${encodeURIComponent(this.gameId)}`, class: "button review-link" }, t("end.review")),
        record.tournament_id ? h("a", { href: `#/tournament/${encodeURIComponent(record.tournament_id)}`, class: "button" },
          t("end.to_bracket")) : null),
      h("p", { class: "note" }, t("replay.public_link"), " ",
        h("input", { class: "share-link", readonly: true, value: location.href, "aria-label": t("replay.public_link"),
          onfocus: (ev) => ev.target.select() })),
      this.chat.root);
    this.go(0);
  }

  go(i) {
    if (!this.steps.length) {
      this.stepBox.textContent = t("replay.empty");
      return;
    }
    this.at = Math.max(0, Math.min(this.steps.length - 1, i));
    const ev = this.steps[this.at];
    const state = ev.state;
    drawBoard(this.svg, state.game, { viewer: 0, sources: [], selected: null, dests: [],
      onPoint: () => {}, onDest: () => {} });
    this.svg.dataset.step = String(this.at);
    this.svg.dataset.position = state.game.position_id || "";
    this.position.textContent = t("replay.step", { step: this.at + 1, total: this.steps.length });
    const seats = state.seats || [];
    const name = (side) => (seats[side] ? personName(seats[side].player, seats[side].name) : personName(this.record.players[side]));
    this.stepBox.textContent = eventText(ev, name) || "";
    const c = state.clock;
    this.clocks.replaceChildren(...[0, 1].map((side) => h("span", {
      class: `clock${c && c.side === side && c.deadline ? " running" : ""}`, "data-side": side },
    h("strong", {}, name(side)), " ",
    [c ? clockText(c.limit) : "", c ? t("game.strikes", { strikes: c.strikes[side], max: c.max_strikes }) : "",
      state.game.pips ? t("game.pips", { pips: state.game.pips[side] }) : ""].filter(Boolean).join(" · "))));
    const until = this.times[this.at];
    const last = this.at === this.steps.length - 1;
    this.chat.set((this.record.chat || []).filter((m) => last || m.at <= until));
  }

  key(ev) {
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
    const moves = { ArrowLeft: this.at - 1, ArrowRight: this.at + 1, Home: 0, End: this.steps.length - 1 };
    if (!(ev.key in moves) || !this.steps.length) return;
    ev.preventDefault();
    this.go(moves[ev.key]);
  }
}
