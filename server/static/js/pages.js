// Pages over the public read API (docs/browser-client.md): leaderboards, a player's profile
// with a rating graph and their games (replay, .mat download), tournaments and their bracket
// (kept live), the rating calculator of all three systems.

import { api, qs } from "./api.js";
import { fmtDate, t } from "./i18n.js";
import { errorText, formField, gameModeText, h, num, personName, resultText, roundText, shownRating, signed, toast } from "./ui.js";

const LADDERS = [["table42", "ladder.table42"], ["fibs", "ladder.fibs"], ["boosted", "ladder.boosted"]];

// A page: a title and a body that `build` fills (again on refresh()). `build` may return
// {handle, destroy} hooks for live pages.
function page(title, build) {
  const view = {
    hooks: {},
    mount(main) {
      const body = h("div", { class: "page-body" }, h("p", {}, t("common.loading")));
      main.replaceChildren(h("section", { class: "page", "aria-label": title }, h("h1", {}, title), body));
      view.body = body;
      view.refresh();
    },
    refresh() {
      return build(view.body, view).catch((err) => {
        view.body.replaceChildren(h("p", { class: "error", role: "alert" }, err.status === 404
          ? t("common.not_found") : t("common.unavailable", { why: err.message })));
      });
    },
    handle(msg) {
      if (view.hooks.handle) view.hooks.handle(msg);
    },
    // Signed in again (a reload's welcome): what depends on who you are is drawn again.
    onReconnect() {
      if (view.hooks.signedIn) view.refresh();
    },
    destroy() {
      if (view.hooks.destroy) view.hooks.destroy();
    },
  };
  return view;
}

const playerLink = (p, name) => h("a", { href: `#/player/${encodeURIComponent(p)}` }, personName(p, name));

const BOARD_PAGE = 50;
const GAMES_PAGE = 20;

// A leaderboard, BOARD_PAGE players a page: #/leaders/<ladder>/<offset>.
function leaders(app, ladder = "table42", from = "0") {
  return page(t("leaders.title"), async (body) => {
    const offset = Math.max(0, Math.floor(Number(from)) || 0);
    const me = app.me && !app.me.guest ? app.me.player : "";
    const data = await api(`/api/leaderboard/${encodeURIComponent(ladder)}?${qs({ offset, limit: BOARD_PAGE, player: me })}`);
    const at = (o) => `#/leaders/${encodeURIComponent(ladder)}/${o}`;
    const pager = h("nav", { class: "pager", "aria-label": t("common.pages") },
      offset > 0 ? h("a", { href: at(Math.max(0, offset - BOARD_PAGE)), rel: "prev" }, t("common.previous")) : "",
      data.total ? ` ${t("common.range", { from: Math.min(offset + 1, data.total), to: Math.min(offset + data.entries.length, data.total), total: data.total })} ` : "",
      offset + BOARD_PAGE < data.total ? h("a", { href: at(offset + BOARD_PAGE), rel: "next" }, t("common.next")) : "");
    const tabs = h("nav", { class: "tabs", "aria-label": t("leaders.ladders") }, ...LADDERS.map(([id, key]) =>
      h("a", { href: `#/leaders/${id}`, "aria-current": id === ladder ? "page" : undefined }, t(key))));
    const rows = data.entries.map((e) => h("tr", { class: e.player === me ? "me" : "" },
      h("td", {}, num(e.rank)), h("td", {}, playerLink(e.player, e.name)), h("td", { class: "num" }, shownRating(e.shown, e.rating))));
    const mine = data.player ? h("p", { class: "my-rank" },
      data.player.rank ? t("leaders.my_rank", { rank: data.player.rank, rating: shownRating(data.player.shown, data.player.rating) })
        : t("leaders.not_ranked")) : null;
    body.replaceChildren(...[tabs, mine].filter(Boolean),
      h("table", { class: "leaderboard", "data-ladder": data.ladder },
        h("caption", {}, t("leaders.players", { n: data.total })),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, t("leaders.player")),
          h("th", { scope: "col" }, ladder === "boosted" ? t("leaders.points") : t("leaders.rating")))),
        h("tbody", {}, ...rows)), pager);
  });
}

// A line graph of rating_after over the history (oldest left), in SVG.
function graph(entries) {
  const pts = entries.slice().reverse();
  const W = 600;
  const H = 200;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "rating-graph");
  svg.setAttribute("role", "img");
  if (!pts.length) {
    svg.setAttribute("aria-label", t("profile.no_rated"));
    return svg;
  }
  const values = [pts[0].rating_before, ...pts.map((e) => e.rating_after)];
  const lo = Math.min(...values) - 10;
  const hi = Math.max(...values) + 10;
  const x = (i) => 30 + (i * (W - 40)) / Math.max(1, values.length - 1);
  const y = (v) => H - 20 - ((v - lo) * (H - 40)) / (hi - lo);
  const path = values.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  svg.setAttribute("aria-label", t("profile.graph_label", { from: values[0], to: values[values.length - 1], n: pts.length }));
  const ns = "http://www.w3.org/2000/svg";
  const line = document.createElementNS(ns, "path");
  line.setAttribute("d", path);
  line.setAttribute("class", "line");
  svg.append(line);
  for (const [v, yy] of [[hi - 10, y(hi - 10)], [lo + 10, y(lo + 10)]]) {
    const tx = document.createElementNS(ns, "text");
    tx.setAttribute("x", "2");
    tx.setAttribute("y", String(yy + 4));
    tx.textContent = num(v);
    svg.append(tx);
  }
  values.forEach((v, i) => {
    const c = document.createElementNS(ns, "circle");
    c.setAttribute("cx", x(i).toFixed(1));
    c.setAttribute("cy", y(v).toFixed(1));
    c.setAttribute("r", "3");
    svg.append(c);
  });
  return svg;
}


// Download a game (or its match) as .mat: fetched with the token (a private game needs it),
// then saved under the game's name.
export async function downloadMat(app, gameId, match = false) {
  const headers = app.token ? { Authorization: `Bearer ${app.token}` } : {};
  const resp = await fetch(`/api/games/${encodeURIComponent(gameId)}/mat${match ? "?match=1" : ""}`, { headers });
  if (!resp.ok) throw new Error(t("games.download_failed"));
  const url = URL.createObjectURL(await resp.blob());
  const a = h("a", { href: url, download: `${gameId}${match ? "-match" : ""}.mat` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// A player's finished games, GAMES_PAGE a page (#/player/<id>/<offset>), newest first.
async function gamesList(app, player, offset) {
  const data = await api(`/api/players/${encodeURIComponent(player)}/games?${qs({ offset, limit: GAMES_PAGE })}`,
    { token: app.token });
  const at = (o) => `#/player/${encodeURIComponent(player)}/${o}`;
  const rows = data.games.map((g) => {
    const side = g.players.indexOf(player);
    const other = side === 0 ? 1 : 0;
    const won = g.winner === null || g.winner === undefined ? null : g.winner === side;
    return h("tr", { "data-game": g.game_id },
      h("td", {}, fmtDate(g.finished_at)),
      h("td", {}, g.players[other] ? playerLink(g.players[other], g.names && g.names[other]) : "–"),
      h("td", {}, gameModeText(g.mode, g.players) + (g.match_length > 1 ? " · " + t("tables.match_to", { length: g.match_length }) : "")),
      h("td", { class: "outcome" }, won === null ? "–" : t(won ? "games.won" : "games.lost"),
        " ", resultText(g.result), " · ", t("games.points", { n: g.points })),
      h("td", { class: "num" }, g.rated && g.change !== null && g.change !== undefined ? signed(g.change, g.mode === "rated_match" ? 2 : 0) : "–"),
      h("td", {}, h("a", { href: `#/replay/${encodeURIComponent(g.game_id)}`, class: "replay-link" }, t("games.replay")), " ",
        h("button", { type: "button", class: "link mat", onclick: () => downloadMat(app, g.game_id).catch((e) => alertIn(e)) },
          t("games.download"))));
  });
  const box = h("section", { class: "games", "aria-labelledby": "games-h" },
    h("h2", { id: "games-h" }, app.me && app.me.player === player ? t("games.mine") : t("games.theirs")));
  if (!rows.length) {
    box.append(h("p", {}, t("games.none")));
    return box;
  }
  box.append(h("div", { class: "scroll-x" }, h("table", { class: "game-list" },
    h("thead", {}, h("tr", {}, ...["games.when", "games.opponent", "games.mode", "games.result", "games.change", "games.actions"]
      .map((key) => h("th", { scope: "col" }, t(key))))),
    h("tbody", {}, ...rows))),
  h("nav", { class: "pager", "aria-label": t("common.pages") },
    offset > 0 ? h("a", { href: at(Math.max(0, offset - GAMES_PAGE)), rel: "prev" }, t("common.previous")) : "",
    ` ${t("common.range", { from: offset + 1, to: offset + data.games.length, total: data.total })} `,
    offset + GAMES_PAGE < data.total ? h("a", { href: at(offset + GAMES_PAGE), rel: "next" }, t("common.next")) : ""));
  return box;
}

function alertIn(err) {
  const box = document.getElementById("toast");
  box.textContent = err.message;
  box.hidden = false;
}

function profile(app, player, from) {
  return page(t("profile.title", { name: personName(player) }), async (body) => {
    const offset = Math.max(0, Math.floor(Number(from)) || 0);
    const p = await api(`/api/players/${encodeURIComponent(player)}`);
    const ladder = "table42";
    const [hist, games, upcoming] = await Promise.all([
      api(`/api/players/${encodeURIComponent(player)}/history?${qs({ ladder, limit: 50 })}`),
      gamesList(app, player, offset).catch(() => h("p", { class: "note" }, t("games.unavailable"))),
      upcomingOf(player).catch(() => []),
    ]);
    const title = body.parentElement.querySelector("h1");
    if (title) title.textContent = t("profile.title", { name: personName(player, p.name) });
    const tl = p.ladders.table42;
    const f = p.ladders.fibs;
    const b = p.ladders.boosted;
    body.replaceChildren(
      h("p", {}, personName(player, p.name), p.guest ? ` (${t("seat.guest")})` : ""),
      h("div", { class: "scroll-x" }, h("table", { class: "profile" },
        h("thead", {}, h("tr", {}, ...["profile.ladder", "profile.rating", "profile.rank", "profile.games", "profile.won", "profile.lost"]
          .map((key) => h("th", { scope: "col" }, t(key))))),
        h("tbody", {},
          h("tr", { "data-ladder": "table42" }, h("th", { scope: "row" }, t("ladder.table42")), h("td", {}, shownRating(tl.shown, tl.rating)),
            h("td", {}, tl.rank ?? "–"), h("td", {}, num(tl.games)), h("td", {}, num(tl.wins)), h("td", {}, num(tl.losses))),
          h("tr", { "data-ladder": "fibs" }, h("th", { scope: "row" }, t("ladder.fibs")), h("td", {}, shownRating(f.shown, f.rating, 2)),
            h("td", {}, f.rank ?? "–"), h("td", {}, num(f.games)), h("td", {}, num(f.wins)), h("td", {}, num(f.losses))),
          h("tr", { "data-ladder": "boosted" }, h("th", { scope: "row" }, t("ladder.boosted")), h("td", {}, t("profile.points", { n: b.points })),
            h("td", {}, b.rank ?? "–"), h("td", {}, "–"), h("td", {}, "–"), h("td", {}, "–"))))),
      h("p", {}, t("profile.window", { n: p.window.recent_games, k: p.window.k })),
      upcoming.length ? upcomingBox(upcoming, "profile.upcoming", "upcoming-profile-h") : "",
      games,
      h("h2", {}, t("profile.graph_title")), graph(hist.entries),
      h("div", { class: "scroll-x" }, h("table", { class: "history" },
        h("thead", {}, h("tr", {}, ...["games.when", "games.opponent", "games.result", "profile.rating", "games.change"]
          .map((key) => h("th", { scope: "col" }, t(key))))),
        h("tbody", {}, ...hist.entries.map((e) => h("tr", {},
          h("td", {}, fmtDate(e.at)), h("td", {}, e.opponent ? playerLink(e.opponent) : historyReason(e.reason)),
          h("td", {}, e.won === null || e.won === undefined ? historyReason(e.reason) : t(e.won ? "games.won" : "games.lost")),
          h("td", {}, `${num(e.rating_before)} → ${num(e.rating_after)}`), h("td", {}, signed(e.change))))))));
  });
}

const HISTORY_REASONS = { podium: "history.podium", normal: "reason.normal", resign: "reason.resign",
  drop: "reason.drop", timeout: "reason.timeout", disconnect: "reason.disconnect", leave: "reason.leave" };
const historyReason = (r) => (HISTORY_REASONS[r] ? t(HISTORY_REASONS[r]) : r);

const T_STATUS = { open: "tstatus.open", running: "tstatus.running", finished: "tstatus.finished" };
const tStatus = (s) => (T_STATUS[s] ? t(T_STATUS[s]) : s);
const M_STATUS = { pending: "mstatus.pending", ready: "mstatus.ready", playing: "mstatus.playing", done: "mstatus.done",
  forfeit: "mstatus.forfeit", bye: "mstatus.bye" };
const mStatus = (s) => (M_STATUS[s] ? t(M_STATUS[s]) : s);

// The public tournaments `player` is entered in that have not ended.
export async function upcomingOf(player) {
  return (await api(`/api/tournaments?${qs({ player, limit: 100 })}`)).tournaments;
}

// A list of upcoming tournaments under a heading (the lobby, the profile, the tournaments page).
export function upcomingBox(list, titleKey, id) {
  return h("section", { class: "upcoming", "aria-labelledby": id }, h("h2", { id }, t(titleKey)),
    h("ul", { class: "upcoming-list" }, ...list.map((tn) => h("li", { "data-tournament": tn.id },
      h("a", { href: `#/tournament/${encodeURIComponent(tn.id)}` }, tn.name), ` · ${tStatus(tn.status)}`))));
}

// How a tournament takes players: open to them (a cap, a deadline) or by its runner.
function registrationText(tn) {
  const r = tn.registration || { mode: "closed" };
  if (r.mode !== "open") return t("tournament.reg_closed");
  return [t("tournament.reg_open"), t("tournament.cap", { n: r.cap }),
    r.deadline ? t("tournament.deadline", { when: fmtDate(r.deadline) }) : ""].filter(Boolean).join(" · ");
}

// Join or leave an open tournament (a signed-in account, before it starts and, to join, before
// its deadline); the page is read again after.
function entryControl(app, tn, entered, view) {
  const r = tn.registration || { mode: "closed" };
  if (tn.status !== "open" || r.mode !== "open") return entered ? h("span", { class: "entered" }, t("tournament.entered")) : "";
  if (!app.token || !app.me || app.me.guest) return h("span", { class: "note" }, t("tournament.sign_up_to_join"));
  const past = r.deadline && r.deadline <= Date.now() / 1000 + (app.skew || 0);
  if (!entered && past) return "";
  const count = Array.isArray(tn.players) ? tn.players.length : tn.players;
  if (!entered && count >= r.cap) return h("span", { class: "note full" }, t("tournament.full"));
  const act = async () => {
    try {
      await api(`/api/tournaments/${encodeURIComponent(tn.id)}/entry`, { method: entered ? "DELETE" : "PUT", token: app.token });
      toast(t(entered ? "tournament.left_toast" : "tournament.joined_toast", { name: tn.name }));
    } catch (err) {
      toast(errorText({ code: err.code, message: err.message }));
    }
    view.refresh();
  };
  return h("span", { class: "entry" }, entered ? h("span", { class: "entered" }, t("tournament.entered"), " ") : "",
    h("button", { type: "button", class: entered ? "leave-tournament" : "primary join-tournament", onclick: act },
      t(entered ? "tournament.leave_named" : "tournament.join_named", { name: tn.name })));
}

async function enteredIds(app) {
  if (!app.me || app.me.guest) return { list: [], ids: new Set() };
  const list = await upcomingOf(app.me.player).catch(() => []);
  return { list, ids: new Set(list.map((tn) => tn.id)) };
}

function tournaments(app) {
  return page(t("tournaments.title"), async (body, view) => {
    view.hooks.signedIn = true;
    // A tournament of yours moving on (its bracket started, a result) redraws the list.
    view.hooks.handle = (msg) => { if (LIVE_EVENTS.includes(msg.type)) view.refresh(); };
    const [data, mine] = await Promise.all([api("/api/tournaments?offset=0&limit=50"), enteredIds(app)]);
    body.replaceChildren(
      mine.list.length ? upcomingBox(mine.list, "tournaments.upcoming", "upcoming-h") : "",
      data.tournaments.length
        ? h("ul", { class: "tournament-list" }, ...data.tournaments.map((tn) => h("li", { "data-tournament": tn.id },
          h("a", { href: `#/tournament/${encodeURIComponent(tn.id)}` }, tn.name),
          ` · ${tStatus(tn.status)} · ${t("tournaments.players", { n: tn.players })}`,
          tn.status === "open" ? h("span", { class: "registration" }, " · ", registrationText(tn)) : "",
          " ", entryControl(app, tn, mine.ids.has(tn.id), view))))
        : h("p", {}, t("tournaments.none")));
  });
}

// One match of the bracket, its result in words (not in bold type alone).
function matchBox(m) {
  const row = (i) => {
    const p = m.players[i];
    const won = Boolean(m.winner) && m.winner === p;
    return h("li", { class: won ? "winner" : "" },
      h("span", { class: "seed" }, m.seeds[i] ?? ""), " ",
      p ? playerLink(p) : h("em", {}, m.status === "bye" ? t("mstatus.bye") : t("bracket.to_come")),
      won ? [" ", h("span", { class: "winner-mark" }, t("bracket.winner_mark"))] : null);
  };
  const winner = m.winner ? personName(m.winner) : "";
  const status = m.status === "done" && winner ? t("bracket.won_by", { name: winner })
    : m.status === "forfeit" && winner ? t("bracket.forfeit_by", { name: winner })
      : m.status === "bye" && winner ? t("bracket.bye_for", { name: winner }) : mStatus(m.status);
  return h("div", { class: `match ${m.status}`, "data-match": m.match },
    h("ol", {}, row(0), row(1)),
    h("p", { class: "status" }, status, m.table && m.status === "playing" ? [" · ", h("a", { href: `#/watch/${m.table}` },
      t("tables.watch"))] : null));
}

const LIVE_EVENTS = ["tournament_pairing", "tournament_table", "tournament_result", "tournament_over"];

// A tournament: its name and status, and the bracket when the server runs one, kept live (its
// events for you redraw it at once, and it is read again every few seconds while it runs); a
// tournament its runner drives itself has no bracket: its players and, once awarded, its podium.
function bracket(app, id) {
  return page(t("tournament.title"), async (body, view) => {
    const path = `/api/tournaments/${encodeURIComponent(id)}`;
    const tn = (await api(path)).tournament;
    const title = body.parentElement.querySelector("h1");
    if (title) title.textContent = tn.name;
    const format = tn.format.kind === "match" ? t("tournament.matches_to", { length: tn.format.length }) : t("tournament.single_games");
    const visibility = tn.visibility === "public" ? t("tournament.public") : t("tournament.private");
    const about = h("p", {}, `${visibility} · ${format} · ${tStatus(tn.status)} · ${t("tournaments.players", { n: tn.players.length })}`);
    const me = app.me && app.me.player;
    const entry = tn.status === "open" ? h("p", { class: "registration" }, registrationText(tn), " ",
      entryControl(app, tn, Boolean(me) && tn.players.includes(me), view)) : "";
    if (!view.hooks.destroy) {
      const timer = setInterval(() => { if (!document.hidden) view.refresh(); }, 5000);
      view.hooks = {
        destroy: () => clearInterval(timer),
        signedIn: true,
        handle: (msg) => {
          if ((LIVE_EVENTS.includes(msg.type) && msg.tournament === id)
            || (msg.type === "rating" && msg.reason === "podium" && msg.tournament === id)) view.refresh();
        },
      };
    }
    if (!tn.bracket) {
      const places = tn.podium && tn.podium.places ? h("ol", { class: "podium", "aria-label": t("tournament.podium") },
        ...tn.podium.places.map((p) => h("li", {}, playerLink(p.player), ` +${p.prize}`))) : "";
      body.replaceChildren(about, entry, places, h("h2", {}, t("tournament.players")),
        tn.players.length ? h("ul", { class: "tournament-players" }, ...tn.players.map((p) => h("li", {}, playerLink(p))))
          : h("p", {}, t("tournament.nobody")));
      return;
    }
    const b = await api(`${path}/bracket`);
    const count = b.rounds.length;
    const nameOf = (i) => (i === count ? "final" : i === count - 1 ? "semi_final" : "round");
    // Each round's section is named by its heading (the final is "Final" to everyone).
    const rounds = b.rounds.map((round, i) => h("section", { class: "round", "aria-labelledby": `round-${i + 1}-h` },
      h("h2", { id: `round-${i + 1}-h` }, roundText(nameOf(i + 1), i + 1)), ...round.map(matchBox)));
    const third = b.third_place ? h("section", { class: "round third-place", "aria-labelledby": "round-third-h" },
      h("h2", { id: "round-third-h" }, t("bracket.third")), matchBox(b.third_place)) : null;
    const podium = b.podium ? h("ol", { class: "podium", "aria-label": t("tournament.podium") },
      ...b.podium.map((p) => h("li", {}, p ? playerLink(p) : "–"))) : "";
    const award = [...app.ratings.values()].find((r) => r.reason === "podium" && r.tournament === id);
    const mine = award ? h("p", { class: "award" }, t("tournament.award", { place: award.place, name: tn.name }), " ",
      t("tournament.award_change", { old: award.old, new: award.new, change: signed(award.change) })) : "";
    body.replaceChildren(about, podium, mine, h("div", { class: "bracket", "data-version": Date.now() }, ...rounds, third || ""));
  });
}

const CALC = {
  table42: {
    title: "calc.table42",
    fields: [["rating", 1500], ["opponent", 1500], ["result", "win", ["win", "loss"]], ["cube", 1, [1, 2, 4, 8, 16, 32, 64]],
      ["recent_games", 0], ["opponent_recent_games", 0], ["version", "1.3.1", ["1.3.1", "1.2.0", "1.0.5", "pre-1.0.5"]]],
  },
  fibs: {
    title: "calc.fibs",
    fields: [["rating", 1500], ["opponent", 1500], ["result", "win", ["win", "loss"]], ["length", 1],
      ["experience", 400], ["opponent_experience", 400]],
  },
  elo: {
    title: "calc.elo",
    // A preset instead of K (docs/rating-engine.md, Classic Elo); FIDE's K also needs the games so far, and a junior's
    // age or a 2400 peak when there is one (empty: not sent).
    fields: [["rating", 1500], ["opponent", 1500], ["result", "win", ["win", "draw", "loss"]],
      ["preset", "", ["", "new", "standard", "master", "amateur", "fide"]], ["k", 32],
      ["games", "", null, "calc.fide_games"], ["age", "", null, "calc.fide_age"],
      ["peak", "", null, "calc.fide_peak"]],
    params: (p) => {
      if (p.preset) delete p.k;
      if (p.preset !== "fide") for (const name of ["games", "age", "peak"]) delete p[name];
    },
    // Only the fields that count are enabled: K without a preset, the FIDE ones with FIDE.
    link: (inputs) => {
      const sync = () => {
        inputs.k.disabled = Boolean(inputs.preset.value);
        for (const name of ["games", "age", "peak"]) inputs[name].disabled = inputs.preset.value !== "fide";
      };
      inputs.preset.addEventListener("change", sync);
      sync();
    },
  },
};

const OPTION_LABELS = { preset: { "": "calc.preset_none", new: "calc.preset_new", standard: "calc.preset_standard",
  master: "calc.preset_master", amateur: "calc.preset_amateur", fide: "calc.preset_fide" },
result: { win: "calc.win", loss: "calc.loss", draw: "calc.draw" } };
const FIELD_LABELS = { rating: "calc.rating", opponent: "calc.opponent", result: "calc.result", cube: "calc.cube",
  recent_games: "calc.recent_games", opponent_recent_games: "calc.opponent_recent_games", version: "calc.version",
  length: "calc.length", experience: "calc.experience", opponent_experience: "calc.opponent_experience",
  preset: "calc.preset", k: "calc.k" };
const SHOW_LABELS = { expected_score: "calc.expected_score", k: "calc.k", opponent_k: "calc.opponent_k",
  coefficient: "calc.coefficient", multiplier: "calc.multiplier", opponent_multiplier: "calc.opponent_multiplier",
  change: "calc.change", new_rating: "calc.new_rating", opponent_change: "calc.opponent_change",
  opponent_new_rating: "calc.opponent_new_rating" };

const SHOW = ["expected_score", "k", "opponent_k", "coefficient", "multiplier", "opponent_multiplier", "change", "new_rating", "opponent_change", "opponent_new_rating"];

function calculator() {
  return {
    mount(main) {
      const forms = Object.entries(CALC).map(([system, spec]) => {
        const inputs = {};
        const out = h("div", { class: "calc-out", role: "status", "aria-live": "polite" });
        const fields = spec.fields.map(([name, value, options, label]) => {
          const labels = OPTION_LABELS[name] || {};
          const input = options
            ? h("select", { name }, ...options.map((o) => h("option", { value: o, selected: o === value || undefined }, labels[o] !== undefined ? t(labels[o]) : String(o))))
            : h("input", { name, type: "number", value, step: "any", required: value !== "" || undefined });
          inputs[name] = input;
          return formField(t(label || FIELD_LABELS[name]), input);
        });
        if (spec.link) spec.link(inputs);
        const form = h("form", { class: "calc card", "data-system": system, onsubmit: async (ev) => {
          ev.preventDefault();
          const params = Object.fromEntries(Object.entries(inputs)
            .filter(([, i]) => i.value !== "").map(([k, i]) => [k, i.value]));
          if (spec.params) spec.params(params);
          try {
            const r = await api(`/api/calculator/${system}?${qs(params)}`);
            out.replaceChildren(h("dl", {}, ...SHOW.filter((k) => r[k] !== undefined && r[k] !== null).flatMap((k) => [
              h("dt", {}, t(SHOW_LABELS[k])),
              h("dd", { "data-field": k, "data-value": JSON.stringify(r[k]) },
                k.includes("change") ? signed(r[k], system === "table42" ? 0 : 2)
                  : k.includes("new_rating") ? num(r[k], system === "table42" ? 0 : 2)
                    : typeof r[k] === "number" ? num(r[k], Number.isInteger(r[k]) ? 0 : 4) : String(r[k])),
            ])));
          } catch (err) {
            out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
          }
        } }, h("h2", {}, t(spec.title)), ...fields, h("button", { type: "submit", class: "primary" }, t("calc.submit")), out);
        return form;
      });
      main.replaceChildren(h("section", { class: "page", "aria-label": t("calc.title") },
        h("h1", {}, t("calc.title")), h("div", { class: "calc-grid" }, ...forms)));
    },
  };
}

export const PAGES = {
  leaders: (app, arg, from) => leaders(app, arg || "table42", from),
  player: (app, arg, from) => profile(app, arg, from),
  tournaments: (app) => tournaments(app),
  tournament: (app, arg) => bracket(app, arg),
  calculator: () => calculator(),
};
