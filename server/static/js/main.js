// The app shell: the account (token in localStorage), the one socket, the router (#/...), the
// language and sound switches, the number of players online, and the messages that are not
// about one table (welcome, queue, match_found, computer_game, tournament calls, ratings).

import { api } from "./api.js";
import { GameView } from "./game.js";
import { LANGS, currentLang, fmtNum, loadLang, setLang, t } from "./i18n.js";
import { LobbyView } from "./lobby.js";
import { PAGES } from "./pages.js";
import { ReplayView } from "./replay.js";
import { ReviewView } from "./review.js";
import { Socket } from "./socket.js";
import { beep, errorText, h, personName, roundText, setSound, signed, soundOn, toast } from "./ui.js";

const TOKEN_KEY = "t42.token";
// A tournament call stays on screen at least this long before the page opens its table.
const CALL_MIN_MS = 3000;
const BRAND = "Table42";

const app = {
  token: localStorage.getItem(TOKEN_KEY),
  me: null,
  socket: null,
  status: "offline",
  skew: 0,
  limits: null,
  muted: new Set(),
  view: null,
  route: null,
  queue: null,
  lastPool: null,
  online: null,
  call: null, // the tournament match that is calling you: {tournament, match, deadline, table?}
  matches: new Map(), // table -> its match_found (the stakes preview)
  computer: new Map(), // table -> its computer_game (level, the bot)
  ratings: new Map(), // game_id -> rating / boosted event (dedupe by game_id)
  tableModes: new Map(), // table -> {mode, match_length} of tables we created
  tournamentTables: new Map(), // table -> its tournament_table event
  tournamentsOver: new Map(), // tournament -> its tournament_over event
  calls: new Map(), // "<tournament>|<match>" -> {shown, opened}: when its call was drawn, its table opened (ms)
};
window.__t42 = app; // for the browser tests and the curious

const TITLES = { leaders: "title.leaders", player: "title.player", tournaments: "title.tournaments",
  tournament: "title.tournament", calculator: "title.calculator", replay: "title.replay", game: "title.game",
  watch: "title.game", review: "title.review" };
const STATUS = { online: "conn.online", connecting: "conn.connecting", reconnecting: "conn.reconnecting",
  closed: "conn.offline", refused: "conn.refused", offline: "conn.offline" };

function setStatus(status) {
  app.status = status;
  const box = document.getElementById("conn");
  // Signed out, the page still reads (and refreshes) public pages: not "offline".
  const key = status === "offline" && !app.token ? "conn.signed_out" : STATUS[status];
  box.textContent = key ? t(key) : status;
  box.dataset.status = status;
  if (app.view && app.view.onStatus) app.view.onStatus(status);
}

function onMessage(msg) {
  switch (msg.type) {
    case "welcome":
      app.me = { player: msg.player, name: msg.name, guest: msg.guest };
      app.skew = msg.server_time - Date.now() / 1000;
      app.limits = msg.limits;
      app.muted = new Set(msg.muted || []);
      drawNav();
      loadOnline();
      setTimeout(loadOnline, 2000); // the count has this connection a moment later
      if (app.view && app.view.onReconnect) app.view.onReconnect();
      break;
    case "error":
      if (msg.code === "auth_failed") {
        forget();
        toast(t("account.expired"));
        return;
      }
      break;
    case "resume":
      if (!(app.view instanceof GameView && app.view.table === msg.table)) {
        go(`#/game/${msg.table}`);
      }
      break;
    case "queued":
    case "queue_status":
      app.queue = { ...msg, at: performance.now() };
      app.lastPool = msg.pool;
      break;
    case "queue_cancelled":
    case "queue_expired":
      app.queue = null;
      break;
    case "match_found":
      app.queue = null;
      app.matches.set(msg.table, msg);
      go(`#/game/${msg.table}`);
      break;
    case "computer_game":
      app.computer.set(msg.table, msg);
      break;
    case "tournament_pairing":
      app.call = { ...msg, shownAt: null };
      beep("call");
      drawCall();
      break;
    case "tournament_table": {
      app.tournamentTables.set(msg.table, msg);
      const same = app.call && app.call.tournament === msg.tournament && app.call.match === msg.match;
      app.call = { ...msg, deadline: null, opens_at: null, shownAt: same ? app.call.shownAt : null };
      beep("call");
      drawCall();
      takeToTable(msg.table);
      break;
    }
    case "tournament_result":
    case "tournament_over":
      if (app.call && app.call.tournament === msg.tournament && !app.call.table) app.call = null;
      drawCall();
      if (msg.type === "tournament_over") {
        app.tournamentsOver.set(msg.tournament, msg);
        showOver(msg);
      }
      break;
    case "rating":
    case "boosted":
      if (!app.ratings.has(msg.game_id)) app.ratings.set(msg.game_id, msg);
      if (msg.reason === "podium") showAward(msg);
      break;
    default:
      break;
  }
  if (app.view && app.view.handle) app.view.handle(msg);
}

// The notice area (in the page's flow, above the content: it never covers a control) holds
// one notice of each kind: the tournament call, a podium prize, a tournament's end.
function setNotice(kind, node) {
  const box = document.getElementById("notice");
  const old = box.querySelector(`:scope > .${kind}`);
  if (old && node) old.replaceWith(node);
  else if (old) old.remove();
  else if (node) box.append(node);
  box.hidden = box.children.length === 0;
}

const closeButton = (kind) => h("button", { type: "button", class: "link close",
  onclick: () => setNotice(kind, null) }, t("common.close"));

// The podium prize, in the notice area until dismissed.
function showAward(msg) {
  setNotice("award", h("div", { class: "award", role: "status", "data-tournament": msg.tournament },
    h("strong", {}, t("tournament.award", { place: msg.place, name: msg.tournament_name || msg.tournament })),
    " ", t("tournament.award_change", { old: msg.old, new: msg.new, change: signed(msg.change) }), " ",
    h("a", { href: `#/tournament/${encodeURIComponent(msg.tournament)}` }, t("tournament.see_bracket")), " ",
    closeButton("award")));
}

// The end of a tournament: who won, until dismissed (above the page, never over its buttons).
function showOver(msg) {
  setNotice("over", h("div", { class: "over", role: "status", "data-tournament": msg.tournament },
    h("strong", {}, t("tournament.over_toast", { first: msg.podium[0] ? personName(msg.podium[0]) : "–" })), " ",
    h("a", { href: `#/tournament/${encodeURIComponent(msg.tournament)}` }, t("tournament.see_bracket")), " ",
    closeButton("over")));
}

const nowServer = () => Date.now() / 1000 + app.skew;
const secondsTo = (at) => Math.max(0, Math.ceil(at - nowServer()));

// The table of a tournament match opens once its call has been on screen CALL_MIN_MS (the
// server keeps the call up a few seconds first; this covers a call that arrived late).
function takeToTable(table) {
  const c = app.call;
  const shown = c && c.shownAt !== null ? performance.now() - c.shownAt : 0;
  const wait = Math.max(0, CALL_MIN_MS - shown);
  c.goAt = performance.now() + wait;
  setTimeout(() => {
    const logged = app.calls.get(`${c.tournament}|${c.match}`);
    if (logged && logged.opened === null) logged.opened = performance.now();
    if (app.call === c && !(app.view instanceof GameView && app.view.table === table)) go(`#/game/${table}`);
  }, wait);
  updateCall();
}

// A tournament match calling you: which tournament and round, against whom, when the table
// opens, and what happens if you are not ready by the deadline. Drawn once per call (the
// headline is an alert, read once); the seconds are updated in place.
function drawCall() {
  const c = app.call;
  if (!c || (c.table && app.view instanceof GameView && app.view.table === c.table)) {
    setNotice("call", null);
    return;
  }
  const key = `${c.tournament}|${c.match}|${c.table || ""}`;
  const box = document.getElementById("notice");
  const old = box.querySelector(":scope > .call");
  if (old && old.dataset.key === key && old.dataset.lang === document.documentElement.lang) {
    updateCall();
    return;
  }
  if (c.shownAt === null) c.shownAt = performance.now();
  const logKey = `${c.tournament}|${c.match}`;
  if (!app.calls.has(logKey)) app.calls.set(logKey, { shown: c.shownAt, opened: null });
  const round = roundText(c.round_name, c.round);
  const name = c.name || c.tournament;
  const where = c.table
    ? h("a", { href: `#/game/${c.table}`, class: "button primary go-table" }, t("tournament.go_table"))
    : h("a", { href: `#/tournament/${encodeURIComponent(c.tournament)}`, class: "button" }, t("tournament.see_bracket"));
  setNotice("call", h("div", { class: "call", "data-key": key, "data-lang": document.documentElement.lang,
    "data-tournament": c.tournament, "data-match": c.match },
  h("strong", { role: "alert" }, t(c.table ? "tournament.table_now" : "tournament.call_paired",
    { name, round, opponent: personName(c.opponent) })),
  h("span", { class: "opens" }), h("span", { class: "countdown" }), where));
  updateCall();
}

function updateCall() {
  const c = app.call;
  const box = document.querySelector("#notice > .call");
  if (!c || !box) return;
  const opens = box.querySelector(".opens");
  const countdown = box.querySelector(".countdown");
  if (c.table) {
    const left = Math.max(0, Math.ceil(((c.goAt || 0) - performance.now()) / 1000));
    opens.textContent = t("tournament.going_in", { n: left });
    countdown.textContent = "";
  } else {
    opens.textContent = c.opens_at && c.opens_at > nowServer() ? t("tournament.opens_in", { n: secondsTo(c.opens_at) }) : "";
    countdown.textContent = c.deadline ? t("tournament.be_ready", { n: secondsTo(c.deadline) }) : "";
  }
}
setInterval(() => { if (app.call) updateCall(); }, 1000);

function connect() {
  if (app.socket) app.socket.close();
  app.socket = new Socket(app.token, onMessage, setStatus);
  app.socket.open();
}

export async function signIn(kind, name, password) {
  const issued = kind === "guest" ? await api("/api/guest", { method: "POST" })
    : await api(`/api/${kind}`, { method: "POST", body: { name, password } });
  app.token = issued.token;
  app.me = { player: issued.player, name: issued.name, guest: issued.guest };
  localStorage.setItem(TOKEN_KEY, issued.token);
  connect();
  drawNav();
  render();
}

function forget() {
  if (app.socket) app.socket.close();
  app.socket = null;
  app.token = null;
  app.me = null;
  app.queue = null;
  app.call = null;
  localStorage.removeItem(TOKEN_KEY);
  setStatus("offline");
  drawNav();
  go("#/");
}

async function logOut() {
  const token = app.token;
  forget();
  try {
    await api("/api/logout", { method: "POST", token });
  } catch (err) {
    // The token is gone from this browser either way.
  }
}

// Play again: the computer at the same level, the same pool when the game came from
// matchmaking, else a new table like it.
app.rematch = async (table) => {
  const found = app.matches.get(table);
  const bot = app.computer.get(table);
  if (bot) {
    await app.playComputer(bot.level, bot.match_length || 0);
    return;
  }
  go("#/");
  if (found) {
    await app.socket.request({ type: "queue", pool: found.pool });
  } else {
    const like = app.tableModes.get(table) || { mode: "competitive", match_length: 0 };
    const reply = await app.socket.request({ type: "create_table", ...like });
    if (reply.type === "table_created") {
      app.tableModes.set(reply.table, like);
      go(`#/game/${reply.table}`);
    } else {
      toast(errorText(reply));
    }
  }
};

// A game against the computer: never rated. Opens its table at once.
app.playComputer = async (level, matchLength = 0) => {
  const req = { type: "play_computer", level };
  if (matchLength) req.match_length = matchLength;
  const reply = await app.socket.request(req);
  if (reply.type !== "computer_game") {
    toast(errorText(reply));
    return reply;
  }
  app.computer.set(reply.table, { ...reply, match_length: matchLength });
  go(`#/game/${reply.table}`);
  return reply;
};

async function loadOnline() {
  try {
    app.online = (await api("/api/online")).players;
  } catch (err) {
    app.online = null; // an older server has no count: nothing is shown
  }
  drawOnline();
}

// The count lags the servers' own by a few seconds: someone signed in is at least one.
function drawOnline() {
  const box = document.getElementById("online");
  const n = app.online === null ? null : Math.max(app.online, app.me && app.status === "online" ? 1 : 0);
  if (box) box.textContent = n === null ? "" : t("nav.online", { n });
}
setInterval(() => { if (!document.hidden) loadOnline(); }, 10000);

function drawNav() {
  const nav = document.getElementById("nav");
  nav.setAttribute("aria-label", t("nav.main"));
  document.querySelector(".skip").textContent = t("shell.skip");
  const links = [["#/", "nav.lobby"], ["#/leaders", "nav.leaders"], ["#/tournaments", "nav.tournaments"],
    ["#/calculator", "nav.calculator"]];
  if (app.me && !app.me.guest) links.push([`#/player/${encodeURIComponent(app.me.player)}`, "nav.profile"]);
  const items = links.map(([href, key]) => h("li", {}, h("a", { href }, t(key))));
  if (app.token) {
    items.push(h("li", { class: "who" }, app.me ? personName(app.me.player, app.me.name) : ""));
    items.push(h("li", {}, h("button", { type: "button", class: "link logout", onclick: logOut }, t("nav.logout"))));
  }
  const langSelect = h("select", { class: "lang", "aria-label": t("nav.language"), onchange: async (ev) => {
    await setLang(ev.target.value);
    setStatus(app.status);
    drawNav();
    drawCall();
    render();
  } }, ...LANGS.map(([code, name]) => h("option", { value: code, selected: code === currentLang() || undefined }, name)));
  const sound = h("button", { type: "button", class: "link sound", "aria-pressed": String(soundOn()),
    onclick: () => { setSound(!soundOn()); drawNav(); } }, t(soundOn() ? "nav.sound_on" : "nav.sound_off"));
  items.push(h("li", { class: "settings" }, langSelect, sound));
  items.push(h("li", { id: "online", class: "online" }));
  nav.replaceChildren(h("ul", {}, ...items));
  drawOnline();
}

function go(hash) {
  if (location.hash !== hash) history.pushState(null, "", hash);
  render();
}
app.go = go;

function render() {
  const hash = location.hash || "#/";
  performance.mark(`route:${hash}`);
  const parts = hash.slice(2).split("/").map(decodeURIComponent);
  const main = document.getElementById("main");
  if (app.view && app.view.destroy) app.view.destroy();
  app.view = null;
  app.route = hash;
  const [page, arg, more] = parts;
  if ((page === "game" || page === "watch") && arg) {
    if (!app.token) {
      go("#/");
      return;
    }
    app.view = new GameView(app, arg, page === "game" ? "play" : "watch");
    app.view.mount(main);
  } else if (page === "replay" && arg) {
    app.view = new ReplayView(app, arg);
    app.view.mount(main);
  } else if (page === "join" && arg) {
    // A private table's share link: join it once signed in.
    app.pendingJoin = arg;
    app.view = new LobbyView(app, { signIn });
    app.view.mount(main);
  } else if (page === "review" && arg) {
    app.view = new ReviewView(app, arg);
    app.view.mount(main);
  } else if (PAGES[page]) {
    app.view = PAGES[page](app, arg, more);
    app.view.mount(main);
  } else {
    app.view = new LobbyView(app, { signIn });
    app.view.mount(main);
  }
  drawCall();
  const title = TITLES[page] || "title.lobby";
  document.title = [BRAND, t(title)].join(" · ");
}

const follow = () => {
  if (app.route !== (location.hash || "#/")) render();
};
window.addEventListener("popstate", follow);
window.addEventListener("hashchange", follow);

await loadLang();
drawNav();
if (app.token) connect();
else setStatus("offline");
render();
loadOnline();
