// The review of a finished game (GET /api/games/{game_id}/review, PROTOCOL.md §17): #/review/<id>.
// Per player: unforced moves, error rate (mEMG per move), total luck, the three worst decisions;
// then every decision in order with its dice, the play made, the equity it lost against the
// evaluator's best choice (the best shown when it differs) and the luck of its roll. The worst
// three of each player are highlighted and linked from the summary.

import { api } from "./api.js";
import { fmtNum, fmtSigned, t } from "./i18n.js";
import { h } from "./ui.js";

const KINDS = { double: "review.kind_double", no_double: "review.kind_no_double",
  take: "review.kind_take", drop: "review.kind_drop", play: "review.kind_play" };
const kind = (k) => (KINDS[k] ? t(KINDS[k]) : k);

const milli = (x) => fmtNum(Math.round(x * 1000));
const signedMilli = (x) => fmtSigned(Math.round(x * 1000));

export class ReviewView {
  constructor(app, gameId) {
    this.app = app;
    this.gameId = gameId;
    this.root = h("section", { class: "page review", "aria-label": t("review.title") });
  }

  mount(main) {
    main.replaceChildren(this.root);
    this.root.replaceChildren(h("h1", {}, t("review.title")), h("p", {}, t("review.loading")));
    this.load();
  }

  destroy() {}

  async load() {
    let data;
    try {
      data = await api(`/api/games/${encodeURIComponent(this.gameId)}/review`,
        { token: this.app.token || undefined });
    } catch (err) {
      this.root.replaceChildren(h("h1", {}, t("review.title")), h("p", { class: "error", role: "alert" },
        err.status === 404 ? t("review.not_found") : t("review.unavailable", { message: err.message })));
      return;
    }
    this.draw(data);
  }

  name(data, side) {
    const names = data.names || [];
    return names[side] || (data.player_ids || [])[side] || t("review.side", { side });
  }

  draw(data) {
    const worst = new Set();
    for (const p of data.players) for (const i of p.worst) worst.add(i);
    const summary = h("table", { class: "review-summary" },
      h("thead", {}, h("tr", {}, ...[t("review.player"), t("review.moves"), t("review.rate"), t("review.total"), t("review.luck"), t("review.worst")]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...data.players.map((p) => h("tr", { "data-side": p.side },
        h("th", { scope: "row" }, this.name(data, p.side)),
        h("td", { class: "num" }, String(p.moves)),
        h("td", { class: "num", "data-field": "error_rate_memg" }, String(p.error_rate_memg)),
        h("td", { class: "num" }, String(milli(p.error_total))),
        h("td", { class: "num" }, signedMilli(p.luck_total)),
        h("td", {}, ...(p.worst.length ? p.worst.map((i, n) => [n ? ", " : "",
          h("a", { href: `#review-${i}`, onclick: (ev) => this.jump(ev, i) }, `#${i + 1}`)]).flat()
          : [t("review.none")]))))));
    const rows = data.decisions.map((d) => {
      const play = d.kind === "play";
      const what = play ? (d.played || t("review.no_move")) : kind(d.kind);
      const bestText = play ? d.best : kind(d.best);
      return h("tr", {
        id: `review-${d.index}`,
        class: [worst.has(d.index) ? "worst" : "", d.error > 0 ? "error" : ""].join(" ").trim(),
        "data-index": d.index, "data-error": d.error, "data-kind": d.kind,
      },
      h("td", { class: "num" }, String(d.index + 1)),
      h("td", {}, this.name(data, d.side)),
      h("td", {}, play ? `${d.dice[0]}-${d.dice[1]}` : ""),
      h("td", {}, what, d.forced ? h("span", { class: "forced" }, " " + t("review.forced")) : ""),
      h("td", { class: "num" }, d.error > 0 ? String(milli(d.error)) : ""),
      h("td", {}, d.error > 0 ? bestText : ""),
      h("td", { class: "num" }, play && d.luck !== undefined ? signedMilli(d.luck) : ""));
    });
    const list = h("table", { class: "review-decisions" },
      h("caption", {}, t("review.decisions")),
      h("thead", {}, h("tr", {}, ...[t("review.number"), t("review.player"), t("review.roll"), t("review.decision"), t("review.lost"), t("review.best"),
        t("review.luck")].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...rows));
    this.root.replaceChildren(
      h("h1", {}, t("review.title")),
      // A review kept from before the levels' search has no search_depth (0 ply).
      h("p", { class: "judge" }, t(data.search_depth === 2 ? "review.judge" : "review.judge_flat")),
      summary,
      list,
      h("div", { class: "actions" },
        h("a", { href: `#/replay/${encodeURIComponent(this.gameId)}`, class: "button" }, t("review.replay")),
        h("a", { href: "#/", class: "button" }, t("review.back"))));
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
