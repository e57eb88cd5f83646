// The review of a finished game (GET /api/games/{game_id}/review, PROTOCOL.md §17): #/review/<id>.
// Per player: unforced moves, error rate (mEMG per move), total luck, the three worst decisions;
// then every decision in order with its dice, the play made, the equity it lost against the
// evaluator's best choice (the best shown when it differs) and the luck of its roll. The worst
// three of each player are highlighted and linked from the summary.

import { api } from "./api.js";
import { h } from "./ui.js";

// Every string this view shows, in one place (to be moved into the i18n catalogues).
export const REVIEW_TEXT = {
  title: "Game review",
  loading: "Loading the review…",
  unavailable: "This review is not available",
  notFound: "No finished game with this id, or a private game of other players.",
  judge: "Judged by the computer's expert evaluator (0 ply, cubeless money equity per unit of cube). Errors and luck are in thousandths of a point (mEMG).",
  player: "Player",
  side: (s) => `Side ${s}`,
  moves: "Unforced moves",
  rate: "Error rate (mEMG per move)",
  total: "Total error",
  luck: "Luck",
  worst: "Worst decisions",
  none: "none",
  decisions: "Decisions",
  number: "#",
  who: "Player",
  roll: "Roll",
  decision: "Decision",
  lost: "Lost",
  best: "Best",
  rollLuck: "Luck",
  forced: "forced",
  noMove: "(no move)",
  kinds: { double: "Double", no_double: "No double", take: "Take", drop: "Drop",
    play: "Play" },
  back: "Back to the lobby",
  replay: "Replay",
};
const T = REVIEW_TEXT;

const milli = (x) => Math.round(x * 1000);
const signedMilli = (x) => {
  const m = milli(x);
  return m > 0 ? `+${m}` : String(m);
};

export class ReviewView {
  constructor(app, gameId) {
    this.app = app;
    this.gameId = gameId;
    this.root = h("section", { class: "page review", "aria-label": T.title });
  }

  mount(main) {
    main.replaceChildren(this.root);
    this.root.replaceChildren(h("h1", {}, T.title), h("p", {}, T.loading));
    this.load();
  }

  destroy() {}

  async load() {
    let data;
    try {
      data = await api(`/api/games/${encodeURIComponent(this.gameId)}/review`,
        { token: this.app.token || undefined });
    } catch (err) {
      this.root.replaceChildren(h("h1", {}, T.title), h("p", { class: "error", role: "alert" },
        err.status === 404 ? T.notFound : `${T.unavailable}: ${err.message}`));
      return;
    }
    this.draw(data);
  }

  name(data, side) {
    const names = data.names || [];
    return names[side] || (data.player_ids || [])[side] || T.side(side);
  }

  draw(data) {
    const worst = new Set();
    for (const p of data.players) for (const i of p.worst) worst.add(i);
    const summary = h("table", { class: "review-summary" },
      h("thead", {}, h("tr", {}, ...[T.player, T.moves, T.rate, T.total, T.luck, T.worst]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...data.players.map((p) => h("tr", { "data-side": p.side },
        h("th", { scope: "row" }, this.name(data, p.side)),
        h("td", { class: "num" }, String(p.moves)),
        h("td", { class: "num", "data-field": "error_rate_memg" }, String(p.error_rate_memg)),
        h("td", { class: "num" }, String(milli(p.error_total))),
        h("td", { class: "num" }, signedMilli(p.luck_total)),
        h("td", {}, ...(p.worst.length ? p.worst.map((i, n) => [n ? ", " : "",
          h("a", { href: `#review-${i}`, onclick: (ev) => this.jump(ev, i) }, `#${i + 1}`)]).flat()
          : [T.none]))))));
    const rows = data.decisions.map((d) => {
      const play = d.kind === "play";
      const what = play ? (d.played || T.noMove) : T.kinds[d.kind] || d.kind;
      const bestText = play ? d.best : (T.kinds[d.best] || d.best);
      return h("tr", {
        id: `review-${d.index}`,
        class: [worst.has(d.index) ? "worst" : "", d.error > 0 ? "error" : ""].join(" ").trim(),
        "data-index": d.index, "data-error": d.error, "data-kind": d.kind,
      },
      h("td", { class: "num" }, String(d.index + 1)),
      h("td", {}, this.name(data, d.side)),
      h("td", {}, play ? `${d.dice[0]}-${d.dice[1]}` : ""),
      h("td", {}, what, d.forced ? h("span", { class: "forced" }, ` (${T.forced})`) : ""),
      h("td", { class: "num" }, d.error > 0 ? String(milli(d.error)) : ""),
      h("td", {}, d.error > 0 ? bestText : ""),
      h("td", { class: "num" }, play && d.luck !== undefined ? signedMilli(d.luck) : ""));
    });
    const list = h("table", { class: "review-decisions" },
      h("caption", {}, T.decisions),
      h("thead", {}, h("tr", {}, ...[T.number, T.who, T.roll, T.decision, T.lost, T.best,
        T.rollLuck].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...rows));
    this.root.replaceChildren(
      h("h1", {}, T.title),
      h("p", { class: "judge" }, T.judge),
      summary,
      list,
      h("div", { class: "actions" },
        h("a", { href: `#/replay/${encodeURIComponent(this.gameId)}`, class: "button" }, T.replay),
        h("a", { href: "#/", class: "button" }, T.back)));
  }

  jump(ev, index) {
    ev.preventDefault();
    const row = this.root.querySelector(`#review-${index}`);
    if (row) {
      row.scrollIntoView({ block: "center" });
      row.focus?.();
    }
  }
}
