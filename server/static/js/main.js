// The app shell: the account (token in localStorage), the one socket, the router (#/...), and
// the messages that are not about one table (welcome, queue, match_found, rating events).

import { api } from "./api.js";
import { GameView } from "./game.js";
import { LobbyView } from "./lobby.js";
import { PAGES } from "./pages.js";
import { ReviewView } from "./review.js";
import { Socket } from "./socket.js";
import { h, toast } from "./ui.js";

const TOKEN_KEY = "t42.token";

const app = {
  token: localStorage.getItem(TOKEN_KEY),
  me: null,
  socket: null,
  status: "offline",
  skew: 0,
  limits: null,
  view: null,
  route: null,
  queue: null,
  lastPool: null,
  matches: new Map(), // table -> its match_found (the stakes preview)
  ratings: new Map(), // game_id -> rating / boosted event (dedupe by game_id)
  tableModes: new Map(), // table -> {mode, match_length} of tables we created
};
window.__t42 = app; // for the browser tests and the curious

function setStatus(status) {
  app.status = status;
  const box = document.getElementById("conn");
  box.textContent = { online: "online", connecting: "connecting…", reconnecting: "reconnecting…",
    closed: "offline", refused: "refused", offline: "offline" }[status] || status;
  box.dataset.status = status;
  if (app.view && app.view.onStatus) app.view.onStatus(status);
}

function onMessage(msg) {
  switch (msg.type) {
    case "welcome":
      app.me = { player: msg.player, name: msg.name, guest: msg.guest };
      app.skew = msg.server_time - Date.now() / 1000;
      app.limits = msg.limits;
      drawNav();
      if (app.view && app.view.onReconnect) app.view.onReconnect();
      break;
    case "error":
      if (msg.code === "auth_failed") {
        forget();
        toast("Your session has expired; please log in again.");
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
    case "rating":
    case "boosted":
      if (!app.ratings.has(msg.game_id)) app.ratings.set(msg.game_id, msg);
      break;
    default:
      break;
  }
  if (app.view && app.view.handle) app.view.handle(msg);
}

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

// Play again: the same pool when the game came from matchmaking, else a new table like it.
app.rematch = async (table) => {
  const found = app.matches.get(table);
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
      toast(reply.message || reply.code);
    }
  }
};

function drawNav() {
  const nav = document.getElementById("nav");
  const links = [["#/", "Lobby"], ["#/leaders", "Leaderboards"], ["#/tournaments", "Tournaments"],
    ["#/calculator", "Calculator"]];
  if (app.me && !app.me.guest) links.push([`#/player/${encodeURIComponent(app.me.player)}`, "My profile"]);
  const items = links.map(([href, text]) => h("li", {}, h("a", { href }, text)));
  if (app.token) {
    items.push(h("li", { class: "who" }, app.me ? `${app.me.name}${app.me.guest ? " (guest)" : ""}` : ""));
    items.push(h("li", {}, h("button", { type: "button", class: "link logout", onclick: logOut }, "Log out")));
  }
  nav.replaceChildren(h("ul", {}, ...items));
}

function go(hash) {
  if (location.hash !== hash) history.pushState(null, "", hash);
  render();
}

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
  document.title = `Table42 · ${page || "lobby"}`;
}

const follow = () => {
  if (app.route !== (location.hash || "#/")) render();
};
window.addEventListener("popstate", follow);
window.addEventListener("hashchange", follow);

drawNav();
if (app.token) connect();
else setStatus("offline");
render();
