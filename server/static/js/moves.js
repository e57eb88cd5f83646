// Pure move logic: the position seen by one side, the steps of the offered legal plays in
// every order they can be clicked, and which play produced a new board (for animation).
// Points are in the mover's numbering: 24..1, 25 = the bar, 0 = borne off.

// The position from `side`'s point of view: mine[p] / theirs[p] for p in 0..25
// (theirs[p] counts the opponent's checkers standing on MY point p; theirs[25] = their bar).
export function sideView(game, side) {
  const mine = new Array(26).fill(0);
  const theirs = new Array(26).fill(0);
  game.board.forEach((n, i) => {
    const p = side === 0 ? i + 1 : 24 - i;
    if ((side === 0 && n > 0) || (side === 1 && n < 0)) mine[p] = Math.abs(n);
    else if (n !== 0) theirs[p] = Math.abs(n);
  });
  mine[25] = game.bar[side];
  mine[0] = game.off[side];
  theirs[25] = game.bar[1 - side];
  theirs[0] = game.off[1 - side];
  return { mine, theirs };
}

// Back to the wire's shape (board seen from side 0, bar, off) for drawing.
export function toGame(view, side, base) {
  const board = new Array(24).fill(0);
  for (let p = 1; p <= 24; p += 1) {
    const i = side === 0 ? p - 1 : 24 - p;
    const sign = side === 0 ? 1 : -1;
    board[i] = sign * view.mine[p] - sign * view.theirs[p];
  }
  const bar = [0, 0];
  const off = [0, 0];
  bar[side] = view.mine[25];
  bar[1 - side] = view.theirs[25];
  off[side] = view.mine[0];
  off[1 - side] = view.theirs[0];
  const pips = [0, 0];
  for (let p = 1; p <= 25; p += 1) {
    pips[side] += p * view.mine[p];
    pips[1 - side] += (p === 25 ? 25 : 25 - p) * view.theirs[p];
  }
  return { ...base, board, bar, off, pips };
}

function copy(view) {
  return { mine: view.mine.slice(), theirs: view.theirs.slice() };
}

// Whether the step can be played now in this position (the rules a reordering could break).
function playable(view, [from, to]) {
  if (view.mine[from] <= 0) return false;
  if (view.mine[25] > 0 && from !== 25) return false;
  if (to === 0) {
    for (let p = 7; p <= 25; p += 1) if (view.mine[p] > 0) return false;
  }
  return true;
}

export function applyStep(view, [from, to]) {
  const next = copy(view);
  next.mine[from] -= 1;
  next.mine[to] += 1;
  if (to >= 1 && to <= 24 && next.theirs[to] === 1) {
    next.theirs[to] = 0;
    next.theirs[25] += 1;
  }
  return next;
}

function permutations(steps) {
  if (steps.length <= 1) return [steps];
  const out = [];
  steps.forEach((step, i) => {
    const rest = steps.slice(0, i).concat(steps.slice(i + 1));
    for (const tail of permutations(rest)) out.push([step, ...tail]);
  });
  return out;
}

const key = (steps) => steps.map(([a, b]) => `${a}/${b}`).join(" ");

// Every click order of every legal play: [{steps, play}] where `play` is the offered play to
// send back unchanged.
export function orderings(legalPlays, view) {
  const seen = new Set();
  const out = [];
  for (const play of legalPlays) {
    for (const steps of permutations(play)) {
      const k = key(steps);
      if (seen.has(k)) continue;
      let v = view;
      let ok = true;
      for (const step of steps) {
        if (!playable(v, step)) {
          ok = false;
          break;
        }
        v = applyStep(v, step);
      }
      if (ok) {
        seen.add(k);
        out.push({ steps, play });
      }
    }
  }
  return out;
}

// The checker picker: the steps clicked so far, what may come next, undo, the finished play.
export class Picker {
  constructor(legalPlays, view) {
    this.start = view;
    this.view = view;
    this.all = orderings(legalPlays, view);
    this.steps = [];
    this.length = legalPlays.length ? legalPlays[0].length : 0;
  }

  candidates() {
    const n = this.steps.length;
    return this.all.filter((o) => this.steps.every((s, i) => o.steps[i][0] === s[0]
      && o.steps[i][1] === s[1]) && o.steps.length > n);
  }

  // Points a checker may be picked from now.
  sources() {
    const n = this.steps.length;
    return [...new Set(this.candidates().map((o) => o.steps[n][0]))];
  }

  // Where the checker on `from` may go: {to, steps} (several steps for one checker chained).
  destinations(from) {
    const n = this.steps.length;
    const found = new Map();
    for (const o of this.candidates()) {
      if (o.steps[n][0] !== from) continue;
      let at = from;
      const chain = [];
      for (let i = n; i < o.steps.length && o.steps[i][0] === at; i += 1) {
        chain.push(o.steps[i]);
        at = o.steps[i][1];
        if (!found.has(at) || found.get(at).length > chain.length) found.set(at, chain.slice());
        if (at === 0) break;
      }
    }
    return [...found.entries()].map(([to, steps]) => ({ to, steps }));
  }

  add(steps) {
    for (const step of steps) {
      this.steps.push(step);
      this.view = applyStep(this.view, step);
    }
  }

  undo() {
    this.steps.pop();
    this.view = this.steps.reduce(applyStep, this.start);
  }

  // The offered play matching the clicked steps once they are complete, else null.
  complete() {
    if (this.steps.length < this.length) return null;
    const done = this.all.find((o) => o.steps.length === this.steps.length
      && o.steps.every((s, i) => s[0] === this.steps[i][0] && s[1] === this.steps[i][1]));
    return done ? done.play : null;
  }
}

// Which of `before`'s legal plays turns `before`'s board into `after`'s (null if none): the
// steps to animate for a `moved` event.
export function findPlay(before, after, side) {
  if (!before || !before.legal_plays) return null;
  const target = JSON.stringify(sideView(after, side));
  const start = sideView(before, side);
  for (const play of before.legal_plays) {
    const end = play.reduce(applyStep, start);
    if (JSON.stringify(end) === target) return play;
  }
  return null;
}

export function playText(steps) {
  return steps.map(([a, b]) => `${a === 25 ? "bar" : a}/${b === 0 ? "off" : b}`).join(" ");
}
