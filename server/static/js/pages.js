// Pages over the public read API (docs/browser-client.md): leaderboards, a player's profile
// with a rating graph, tournaments and their bracket, the rating calculator of all three systems.

import { api, qs } from "./api.js";
import { formField, h, num, signed } from "./ui.js";

const LADDERS = [["table42", "Table42"], ["fibs", "FIBS"], ["boosted", "Boosted"]];

function page(title, build) {
  return {
    mount(main) {
      const body = h("div", { class: "page-body" }, h("p", {}, "Loading…"));
      main.replaceChildren(h("section", { class: "page", "aria-label": title }, h("h1", {}, title), body));
      build(body).catch((err) => {
        body.replaceChildren(h("p", { class: "error", role: "alert" }, err.code === "not_found"
          ? "Not found." : `This page is not available: ${err.message}`));
      });
    },
  };
}

const playerLink = (p) => h("a", { href: `#/player/${encodeURIComponent(p)}` }, p);

const BOARD_PAGE = 50;

// A leaderboard, BOARD_PAGE players a page: #/leaders/<ladder>/<offset>.
function leaders(app, ladder = "table42", from = "0") {
  return page("Leaderboards", async (body) => {
    const offset = Math.max(0, Math.floor(Number(from)) || 0);
    const me = app.me && !app.me.guest ? app.me.player : "";
    const data = await api(`/api/leaderboard/${encodeURIComponent(ladder)}?${qs({ offset, limit: BOARD_PAGE, player: me })}`);
    const at = (o) => `#/leaders/${encodeURIComponent(ladder)}/${o}`;
    const pager = h("nav", { class: "pager", "aria-label": "pages" },
      offset > 0 ? h("a", { href: at(Math.max(0, offset - BOARD_PAGE)), rel: "prev" }, "Previous") : "",
      data.total ? ` ${Math.min(offset + 1, data.total)}–${Math.min(offset + data.entries.length, data.total)} of ${data.total} ` : "",
      offset + BOARD_PAGE < data.total ? h("a", { href: at(offset + BOARD_PAGE), rel: "next" }, "Next") : "");
    const tabs = h("nav", { class: "tabs", "aria-label": "ladders" }, ...LADDERS.map(([id, name]) =>
      h("a", { href: `#/leaders/${id}`, "aria-current": id === ladder ? "page" : undefined }, name)));
    const rows = data.entries.map((e) => h("tr", { class: e.player === me ? "me" : "" },
      h("td", {}, String(e.rank)), h("td", {}, playerLink(e.player)), h("td", { class: "num" }, e.shown ?? num(e.rating))));
    const mine = data.player ? h("p", { class: "my-rank" },
      data.player.rank ? `You are #${data.player.rank} (${data.player.shown ?? data.player.rating}).` : "You are not on this board yet.") : null;
    body.replaceChildren(...[tabs, mine].filter(Boolean),
      h("table", { class: "leaderboard", "data-ladder": data.ladder },
        h("caption", {}, `${data.total} players`),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, "Player"),
          h("th", { scope: "col" }, ladder === "boosted" ? "Points" : "Rating"))),
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
    svg.setAttribute("aria-label", "no rated games yet");
    return svg;
  }
  const values = [pts[0].rating_before, ...pts.map((e) => e.rating_after)];
  const lo = Math.min(...values) - 10;
  const hi = Math.max(...values) + 10;
  const x = (i) => 30 + (i * (W - 40)) / Math.max(1, values.length - 1);
  const y = (v) => H - 20 - ((v - lo) * (H - 40)) / (hi - lo);
  const path = values.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  svg.setAttribute("aria-label", `rating from ${values[0]} to ${values[values.length - 1]} over ${pts.length} games`);
  const ns = "http://www.w3.org/2000/svg";
  const line = document.createElementNS(ns, "path");
  line.setAttribute("d", path);
  line.setAttribute("class", "line");
  svg.append(line);
  for (const [v, yy] of [[hi - 10, y(hi - 10)], [lo + 10, y(lo + 10)]]) {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", "2");
    t.setAttribute("y", String(yy + 4));
    t.textContent = String(Math.round(v));
    svg.append(t);
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

function profile(app, player) {
  return page(`Player ${player || ""}`, async (body) => {
    const p = await api(`/api/players/${encodeURIComponent(player)}`);
    const ladder = "table42";
    const hist = await api(`/api/players/${encodeURIComponent(player)}/history?${qs({ ladder, limit: 50 })}`);
    const t = p.ladders.table42;
    const f = p.ladders.fibs;
    const b = p.ladders.boosted;
    body.replaceChildren(
      h("p", {}, `${p.name}${p.guest ? " (guest)" : ""}`),
      h("table", { class: "profile" },
        h("thead", {}, h("tr", {}, ...["Ladder", "Rating", "Rank", "Games", "Won", "Lost"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {},
          h("tr", { "data-ladder": "table42" }, h("th", { scope: "row" }, "Table42"), h("td", {}, t.shown ?? num(t.rating)),
            h("td", {}, t.rank ?? "–"), h("td", {}, t.games), h("td", {}, t.wins), h("td", {}, t.losses)),
          h("tr", { "data-ladder": "fibs" }, h("th", { scope: "row" }, "FIBS"), h("td", {}, f.shown ?? num(f.rating, 2)),
            h("td", {}, f.rank ?? "–"), h("td", {}, f.games), h("td", {}, f.wins), h("td", {}, f.losses)),
          h("tr", { "data-ladder": "boosted" }, h("th", { scope: "row" }, "Boosted"), h("td", {}, `${b.points} points`),
            h("td", {}, b.rank ?? "–"), h("td", {}, "–"), h("td", {}, "–"), h("td", {}, "–")))),
      h("p", {}, `Competitive games in the last 7 days: ${p.window.recent_games} (K ${p.window.k} now).`),
      h("h2", {}, "Table42 rating"), graph(hist.entries),
      h("table", { class: "history" },
        h("thead", {}, h("tr", {}, ...["When", "Opponent", "Result", "Rating", "Change"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...hist.entries.map((e) => h("tr", {},
          h("td", {}, new Date(e.at * 1000).toLocaleString()), h("td", {}, e.opponent ? playerLink(e.opponent) : e.reason),
          h("td", {}, e.won === null || e.won === undefined ? e.reason : e.won ? "won" : "lost"),
          h("td", {}, `${num(e.rating_before)} → ${num(e.rating_after)}`), h("td", {}, signed(e.change)))))));
  });
}

function tournaments() {
  return page("Tournaments", async (body) => {
    const data = await api("/api/tournaments?offset=0&limit=50");
    body.replaceChildren(data.tournaments.length
      ? h("ul", { class: "tournament-list" }, ...data.tournaments.map((t) => h("li", {},
        h("a", { href: `#/tournament/${encodeURIComponent(t.id)}` }, t.name),
        ` · ${t.status} · ${t.players} players`)))
      : h("p", {}, "No public tournaments."));
  });
}

function matchBox(m) {
  const row = (i) => h("li", { class: m.winner && m.winner === m.players[i] ? "winner" : "" },
    h("span", { class: "seed" }, m.seeds[i] ?? ""), " ", m.players[i] ? playerLink(m.players[i]) : h("em", {}, m.status === "bye" ? "bye" : "to come"));
  return h("div", { class: `match ${m.status}`, "data-match": m.match },
    h("ol", {}, row(0), row(1)),
    h("p", { class: "status" }, m.status, m.table && m.status === "playing" ? [" · ", h("a", { href: `#/watch/${m.table}` }, "watch")] : null));
}

// A tournament: its name and status, and the bracket when the server runs one; a tournament
// its runner drives itself has no bracket: its players and, once awarded, its podium.
function bracket(app, id) {
  return page("Tournament", async (body) => {
    const path = `/api/tournaments/${encodeURIComponent(id)}`;
    const t = (await api(path)).tournament;
    const title = body.parentElement.querySelector("h1");
    if (title) title.textContent = t.name;
    const format = t.format.kind === "match" ? `matches to ${t.format.length}` : "single games";
    const about = h("p", {}, `${t.visibility} · ${format} · ${t.status} · ${t.players.length} players`);
    if (!t.bracket) {
      const places = t.podium && t.podium.places ? h("ol", { class: "podium", "aria-label": "podium" },
        ...t.podium.places.map((p) => h("li", {}, playerLink(p.player), ` +${p.prize}`))) : "";
      body.replaceChildren(about, places, h("h2", {}, "Players"),
        t.players.length ? h("ul", { class: "tournament-players" }, ...t.players.map((p) => h("li", {}, playerLink(p))))
          : h("p", {}, "Nobody has registered yet."));
      return;
    }
    const b = await api(`${path}/bracket`);
    const rounds = b.rounds.map((round, i) => h("section", { class: "round", "aria-label": `round ${i + 1}` },
      h("h2", {}, i === b.rounds.length - 1 ? "Final" : `Round ${i + 1}`), ...round.map(matchBox)));
    const third = b.third_place ? h("section", { class: "round third-place" }, h("h2", {}, "Third place"), matchBox(b.third_place)) : null;
    const podium = b.podium ? h("ol", { class: "podium", "aria-label": "podium" },
      ...b.podium.map((p) => h("li", {}, p ? playerLink(p) : "–"))) : "";
    body.replaceChildren(about, podium, h("div", { class: "bracket" }, ...rounds, third || ""));
  });
}

const CALC = {
  table42: {
    title: "Table42 (single games)",
    fields: [["rating", 1500], ["opponent", 1500], ["result", "win", ["win", "loss"]], ["cube", 1, [1, 2, 4, 8, 16, 32, 64]],
      ["recent_games", 0], ["opponent_recent_games", 0], ["version", "1.3.1", ["1.3.1", "1.2.0", "1.0.5", "pre-1.0.5"]]],
  },
  fibs: {
    title: "FIBS (matches to n)",
    fields: [["rating", 1500], ["opponent", 1500], ["result", "win", ["win", "loss"]], ["length", 1],
      ["experience", 400], ["opponent_experience", 400]],
  },
  elo: {
    title: "Classic Elo (chess)",
    // A preset instead of K (docs/rating-engine.md, Classic Elo); FIDE's K also needs the games so far, and a junior's
    // age or a 2400 peak when there is one (empty: not sent).
    fields: [["rating", 1500], ["opponent", 1500], ["result", "win", ["win", "draw", "loss"]],
      ["preset", "", ["", "new", "standard", "master", "amateur", "fide"]], ["k", 32],
      ["games", "", null, "FIDE: rated games so far"], ["age", "", null, "FIDE: age (optional)"],
      ["peak", "", null, "FIDE: highest rating (optional)"]],
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

const OPTION_LABELS = { preset: { "": "none: the K below", new: "new (40)", standard: "standard (20)",
  master: "master (10)", amateur: "amateur (32)", fide: "FIDE rules" } };

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
            ? h("select", { name }, ...options.map((o) => h("option", { value: o, selected: o === value || undefined }, labels[o] ?? String(o))))
            : h("input", { name, type: "number", value, step: "any", required: value !== "" || undefined });
          inputs[name] = input;
          return formField(label || name.replace(/_/g, " "), input);
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
              h("dt", {}, k.replace(/_/g, " ")),
              h("dd", { "data-field": k, "data-value": JSON.stringify(r[k]) },
                k.includes("change") ? signed(r[k], system === "table42" ? 0 : 2)
                  : k.includes("new_rating") ? num(r[k], system === "table42" ? 0 : 2)
                    : typeof r[k] === "number" && !Number.isInteger(r[k]) ? r[k].toFixed(4) : String(r[k])),
            ])));
          } catch (err) {
            out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
          }
        } }, h("h2", {}, spec.title), ...fields, h("button", { type: "submit", class: "primary" }, "Calculate"), out);
        return form;
      });
      main.replaceChildren(h("section", { class: "page", "aria-label": "rating calculator" },
        h("h1", {}, "Rating calculator"), h("div", { class: "calc-grid" }, ...forms)));
    },
  };
}

export const PAGES = {
  leaders: (app, arg, from) => leaders(app, arg || "table42", from),
  player: (app, arg) => profile(app, arg),
  tournaments: (app) => tournaments(app),
  tournament: (app, arg) => bracket(app, arg),
  calculator: () => calculator(),
};
