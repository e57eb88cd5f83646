// The board in SVG, drawn from one side's point of view (watchers see side 0's): its points
// 1-12 along the bottom (1 at the right), 13-24 along the top, the bar in the middle, the
// borne-off trays at the right, the cube at the left. Checkers of side 0 are light, side 1 dark.

import { t } from "./i18n.js";

const NS = "http://www.w3.org/2000/svg";
const W = 46;
const BAR = 40;
const LEFT = 56;
const TOP = 26;
const HEIGHT = 440;
const R = 20;
const POINT_H = 180;
const RIGHT = LEFT + 12 * W + BAR;
const TRAY_X = RIGHT + 10;
export const VIEWBOX = `0 0 ${TRAY_X + 56} ${TOP * 2 + HEIGHT}`;
const MID = TOP + HEIGHT / 2;

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

// Screen column (0..11, left to right) and top/bottom of the viewer's point q (1..24).
function place(q) {
  return q <= 12 ? { col: 12 - q, top: false } : { col: q - 13, top: true };
}

function colX(col) {
  return LEFT + col * W + (col >= 6 ? BAR : 0) + W / 2;
}

const BAR_X = LEFT + 6 * W + BAR / 2;

// Centre of the n-th checker (0-based) on the viewer's point q; 25 = own bar, -25 their bar,
// 0 own tray, -1 their tray.
export function checkerXY(q, n) {
  const k = Math.min(n, 4);
  if (q === 25 || q === -25) {
    const dy = (R * 2 + 2) * k + R + 30;
    return { x: BAR_X, y: q === 25 ? TOP + HEIGHT - dy : TOP + dy };
  }
  if (q === 0 || q === -1) {
    const y = q === 0 ? TOP + HEIGHT - 8 - Math.min(n, 14) * 12 : TOP + 8 + Math.min(n, 14) * 12;
    return { x: TRAY_X + 23, y };
  }
  const { col, top } = place(q);
  const off = R + 2 + k * (R * 2 + 1);
  return { x: colX(col), y: top ? TOP + off : TOP + HEIGHT - off };
}

// Viewer's point q -> index into game.board (seen from side 0).
export const boardIndex = (q, viewer) => (viewer === 0 ? q - 1 : 24 - q);

function pointLabel(q, mine, theirs) {
  const what = mine ? t("board.yours", { n: mine }) : theirs ? t("board.theirs", { n: theirs }) : t("board.empty");
  return t("board.point", { q, what });
}

// Draw `game` (the wire's state.game, possibly with a picked position) into `svg`.
// opts: {viewer, me (side or null), sources, selected, dests: [{to}], onPoint(q), onDest(d),
// interactive (false: the points are drawn highlighted but are no controls; the page's move
// buttons are, on a narrow screen where a point is smaller than a finger)}.
// The board is one tab stop: the arrow keys move between its checkers and destinations.
export function drawBoard(svg, game, opts) {
  const { viewer } = opts;
  const makeButton = opts.interactive === false ? () => {} : addButton;
  svg.replaceChildren();
  svg.setAttribute("viewBox", VIEWBOX);
  el("rect", { x: LEFT - 4, y: TOP - 4, width: RIGHT - LEFT + 8, height: HEIGHT + 8,
    rx: 6, class: "frame" }, svg);
  el("rect", { x: BAR_X - BAR / 2, y: TOP, width: BAR, height: HEIGHT, class: "bar" }, svg);
  el("rect", { x: TRAY_X, y: TOP, width: 46, height: HEIGHT / 2 - 6, rx: 4, class: "tray" }, svg);
  el("rect", { x: TRAY_X, y: TOP + HEIGHT / 2 + 6, width: 46, height: HEIGHT / 2 - 6, rx: 4,
    class: "tray" }, svg);
  const sources = new Set(opts.sources || []);
  const dests = new Map((opts.dests || []).map((d) => [d.to, d]));
  const colour = (side) => (side === 0 ? "light" : "dark");
  const other = 1 - viewer;

  for (let q = 1; q <= 24; q += 1) {
    const { col, top } = place(q);
    const x = colX(col);
    const y0 = top ? TOP : TOP + HEIGHT;
    const y1 = top ? TOP + POINT_H : TOP + HEIGHT - POINT_H;
    const n = game.board[boardIndex(q, viewer)];
    const mine = viewer === 0 ? Math.max(n, 0) : Math.max(-n, 0);
    const theirs = viewer === 0 ? Math.max(-n, 0) : Math.max(n, 0);
    const g = el("g", { class: "point", "data-point": q }, svg);
    el("polygon", {
      points: `${x - W / 2 + 1},${y0} ${x + W / 2 - 1},${y0} ${x},${y1}`,
      class: (q % 2 ? "tri-a" : "tri-b") + (opts.selected === q ? " selected" : "")
        + (sources.has(q) ? " source" : ""),
    }, g);
    el("text", { x, y: top ? TOP - 9 : TOP + HEIGHT + 19, class: "num" }, g)
      .textContent = String(q);
    const count = mine || theirs;
    const side = mine ? viewer : other;
    for (let i = 0; i < Math.min(count, 5); i += 1) {
      const c = checkerXY(q, i);
      el("circle", { cx: c.x, cy: c.y, r: R, class: `checker ${colour(side)}` }, g);
    }
    if (count > 5) {
      const c = checkerXY(q, 4);
      el("text", { x: c.x, y: c.y + 5, class: `count ${colour(side)}` }, g).textContent = count;
    }
    if (sources.has(q)) makeButton(g, t("board.pick", { what: pointLabel(q, mine, theirs) }), () => opts.onPoint(q));
  }
  // The bars: own checkers in the lower half, the opponent's in the upper half.
  for (const [side, q] of [[viewer, 25], [other, -25]]) {
    const count = game.bar[side];
    const g = el("g", { class: "barstack", "data-point": q === 25 ? "bar" : "their-bar" }, svg);
    for (let i = 0; i < Math.min(count, 4); i += 1) {
      const c = checkerXY(q, i);
      el("circle", { cx: c.x, cy: c.y, r: R, class: `checker ${colour(side)}` }, g);
    }
    if (count > 1) {
      const c = checkerXY(q, 0);
      el("text", { x: c.x, y: c.y + 5, class: `count ${colour(side)}` }, g).textContent = count;
    }
    if (q === 25 && sources.has(25)) {
      el("rect", { x: BAR_X - BAR / 2, y: TOP + HEIGHT / 2, width: BAR, height: HEIGHT / 2,
        class: "hit" + (opts.selected === 25 ? " selected" : " source") }, g);
      makeButton(g, t("board.pick_bar", { n: count }), () => opts.onPoint(25));
    }
  }
  // Trays: own borne-off checkers at the bottom, the opponent's at the top.
  for (const [side, q] of [[viewer, 0], [other, -1]]) {
    const g = el("g", { class: "tray-stack", "data-point": q === 0 ? "off" : "their-off" }, svg);
    for (let i = 0; i < game.off[side]; i += 1) {
      const c = checkerXY(q, i);
      el("rect", { x: c.x - 18, y: c.y - 5, width: 36, height: 10, rx: 2,
        class: `slab ${colour(side)}` }, g);
    }
    el("text", { x: TRAY_X + 23, y: q === 0 ? MID + 22 : MID - 10, class: "pips" }, g)
      .textContent = t("board.off", { n: game.off[side] });
  }
  // Destinations of the picked checker.
  for (const [to, d] of dests) {
    const c = to === 0 ? { x: TRAY_X + 23, y: TOP + HEIGHT - 40 }
      : checkerXY(to, countOn(game, to, viewer));
    const g = el("g", { class: "dest", "data-dest": to }, svg);
    el("circle", { cx: c.x, cy: c.y, r: R - 2, class: "dest-mark" }, g);
    makeButton(g, to === 0 ? t("board.bear_off") : t("board.move_to", { q: to }), () => opts.onDest(d));
  }
  drawCube(svg, game, viewer);
  drawDice(svg, game, viewer);
  const stops = [...svg.querySelectorAll(".clickable")];
  const first = svg.querySelector(".dest.clickable") || stops[0];
  if (first) first.setAttribute("tabindex", "0");
}

// The arrow keys between the board's controls (in drawing order), Home and End to the ends.
export function boardArrows(svg, ev) {
  const keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: "first", End: "last" };
  if (!(ev.key in keys)) return false;
  const stops = [...svg.querySelectorAll(".clickable")];
  if (!stops.length) return false;
  const at = stops.indexOf(document.activeElement);
  const step = keys[ev.key];
  const next = step === "first" ? 0 : step === "last" ? stops.length - 1
    : (Math.max(at, 0) + (at < 0 ? 0 : step) + stops.length) % stops.length;
  ev.preventDefault();
  for (const s of stops) s.setAttribute("tabindex", "-1");
  stops[next].setAttribute("tabindex", "0");
  stops[next].focus();
  return true;
}

function countOn(game, q, viewer) {
  const n = game.board[boardIndex(q, viewer)];
  const mine = viewer === 0 ? n : -n;
  return Math.max(mine, 0);
}

function addButton(g, label, action) {
  g.setAttribute("tabindex", "-1");
  g.setAttribute("role", "button");
  g.setAttribute("aria-label", label);
  g.classList.add("clickable");
  g.addEventListener("click", action);
  g.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      action();
    }
  });
}

function drawCube(svg, game, viewer) {
  if (!game.cube_enabled && game.cube === 1) return;
  const owner = game.cube_owner;
  const y = owner === null ? TOP + HEIGHT / 2 : owner === viewer ? TOP + HEIGHT - 40 : TOP + 40;
  const g = el("g", { class: "cube", "data-cube": game.cube,
    "data-owner": owner === null ? "centre" : owner === viewer ? "me" : "them" }, svg);
  el("rect", { x: LEFT / 2 - 19, y: y - 19, width: 38, height: 38, rx: 5 }, g);
  el("text", { x: LEFT / 2, y: y + 7 }, g).textContent = String(game.cube === 1 ? 64 : game.cube);
}

const PIPS = {
  1: [[0, 0]], 2: [[-1, -1], [1, 1]], 3: [[-1, -1], [0, 0], [1, 1]],
  4: [[-1, -1], [1, -1], [-1, 1], [1, 1]], 5: [[-1, -1], [1, -1], [0, 0], [-1, 1], [1, 1]],
  6: [[-1, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [1, 1]],
};

function drawDice(svg, game, viewer) {
  if (!game.dice || game.phase === "over") return;
  const mover = game.turn;
  const half = mover === viewer ? 1 : 0; // own dice in the right half
  const cx = half ? LEFT + 9 * W + BAR : LEFT + 3 * W;
  const g = el("g", { class: `dice ${mover === 0 ? "light" : "dark"}`,
    "data-dice": game.dice.join("-") }, svg);
  game.dice.forEach((d, i) => {
    const x = cx + (i ? 24 : -24);
    const y = TOP + HEIGHT / 2;
    el("rect", { x: x - 19, y: y - 19, width: 38, height: 38, rx: 6, class: "die" }, g);
    for (const [dx, dy] of PIPS[d]) el("circle", { cx: x + dx * 10, cy: y + dy * 10, r: 3.6 }, g);
  });
}

// A checker flying from `from` to `to` (viewer numbering), above the board; resolves at the end.
export function flyChecker(svg, from, to, side, viewer, game) {
  const start = checkerXY(from, 0);
  const end = to === 0 ? checkerXY(0, game.off[viewer] || 0) : checkerXY(to, 0);
  const c = el("circle", { cx: 0, cy: 0, r: R, class: `checker flying ${side === 0 ? "light" : "dark"}` }, svg);
  if (!c.animate || matchMedia("(prefers-reduced-motion: reduce)").matches) {
    c.remove();
    return Promise.resolve();
  }
  const anim = c.animate([
    { transform: `translate(${start.x}px, ${start.y}px)` },
    { transform: `translate(${end.x}px, ${end.y}px)` },
  ], { duration: 180, easing: "ease-out" });
  return anim.finished.then(() => c.remove(), () => c.remove());
}
