// A few DOM helpers: h() builds elements, fmt helpers format numbers the way the server sends them.

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === "class") node.className = v;
    else if (v === true) node.setAttribute(k, "");
    else node.setAttribute(k, String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const signed = (n, digits = 0) => {
  if (n === null || n === undefined) return "–";
  const text = Math.abs(n).toFixed(digits);
  return (n > 0 ? "+" : n < 0 ? "−" : "±") + text;
};

export const num = (n, digits = 0) => (n === null || n === undefined ? "–"
  : Number(n).toFixed(digits));

export function toast(text) {
  const box = document.getElementById("toast");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
}

export const UNRATED = {
  private_room: "a private room is never rated",
  tournament_game: "tournament games are not rated",
  guest_player: "a guest plays, and guests are never rated",
  same_address: "both players connect from one network address",
  boosted_mode: "a Boosted game earns Boosted points, not Elo",
  pair_limit: "you two reached the limit of rated games against each other for now",
};

export const REASONS = {
  normal: "played out", resign: "resignation", drop: "double dropped", timeout: "time-out",
  disconnect: "disconnected", leave: "left the table",
};

export function formField(label, input) {
  return h("label", { class: "field" }, h("span", {}, label), input);
}
