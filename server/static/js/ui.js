// A few DOM helpers: h() builds elements; numbers in the language's way; the wording of the
// server's codes (unrated reasons, end reasons, modes) as catalogue keys; readable names; the
// sound switch and its short tones (Web Audio, no files).

import { fmtDate, fmtNum, fmtSigned, has, t } from "./i18n.js";

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

export const signed = fmtSigned;
export const num = fmtNum;

export function toast(text) {
  const box = document.getElementById("toast");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 6000);
}

// An error answer in words: its code's text when the catalogue has one, else the server's.
export function errorText(reply) {
  const key = `error.${reply.code}`;
  if (!has(key)) return reply.message || reply.code;
  return t(key, { message: reply.message || reply.code, field: reply.field || "",
    retry_after: Math.ceil(Number(reply.retry_after) || 1), n: Math.ceil(Number(reply.retry_after) || 1), until: reply.until ? fmtDate(reply.until) : "" });
}

const UNRATED = {
  private_room: "unrated.private_room", tournament_game: "unrated.tournament_game",
  guest_player: "unrated.guest_player", same_address: "unrated.same_address",
  boosted_mode: "unrated.boosted_mode", bot: "unrated.bot",
};
export const unratedText = (reason) => (UNRATED[reason] ? t(UNRATED[reason]) : t("unrated.other"));

const REASONS = {
  normal: "reason.normal", resign: "reason.resign", drop: "reason.drop", timeout: "reason.timeout",
  disconnect: "reason.disconnect", leave: "reason.leave",
};
export const reasonText = (reason) => (REASONS[reason] ? t(REASONS[reason]) : reason);

const MODES = {
  competitive: "mode.competitive", boosted: "mode.boosted", private: "mode.private",
  tournament: "mode.tournament", rated_match: "mode.rated_match", computer: "mode.computer",
};
export const modeText = (mode) => (MODES[mode] ? t(MODES[mode]) : mode || t("mode.table"));

// A round of a bracket in words: the final, a semi-final, the third-place match, Round n.
const ROUND_NAMES = { final: "bracket.final", semi_final: "bracket.semi_final", third_place: "bracket.third" };
export const roundText = (roundName, round) => (ROUND_NAMES[roundName] ? t(ROUND_NAMES[roundName])
  : t("bracket.round", { round }));

// Whether a player id is the computer's.
export const isBot = (player) => /^bot-/.test(String(player || ""));

// A finished game's mode in words: a game against the computer is practice, whatever its
// table's mode.
export const gameModeText = (mode, players) => ((players || []).some(isBot) ? t("mode.practice") : modeText(mode));

const KINDS = { single: "kind.single", gammon: "kind.gammon", backgammon: "kind.backgammon" };
export const kindText = (kind) => (KINDS[kind] ? t(KINDS[kind]) : kind);

const RESULTS = { single: "result.single", gammon: "result.gammon", backgammon: "result.backgammon",
  resign: "result.resign", timeout: "result.timeout", forfeit: "result.forfeit" };
export const resultText = (result) => (RESULTS[result] ? t(RESULTS[result]) : result);

// The computer's levels (/api/levels), and the names of earlier versions (ids and names issued
// then still read): "basic" is "beginner", "strong" "casual", "expert" "advanced".
const LEVELS = { random: "level.random", beginner: "level.beginner", casual: "level.casual",
  intermediate: "level.intermediate", advanced: "level.advanced",
  basic: "level.beginner", strong: "level.casual", expert: "level.advanced" };
export const levelName = (level) => (LEVELS[level] ? t(LEVELS[level]) : level);

// GNU Backgammon's rating words for an error rate (the `words` of /api/levels).
const WORDS = { supernatural: "words.supernatural", "world class": "words.world_class",
  expert: "words.expert", advanced: "words.advanced", intermediate: "words.intermediate",
  casual: "words.casual", beginner: "words.beginner", awful: "words.awful" };
export const ratingWords = (words) => (WORDS[words] ? t(WORDS[words]) : words);

// A person's name to show: an account's name as it is; the server's English names for a guest
// ("Guest fe3a") and the computer ("Computer (casual)") in the page's language; a raw id
// ("guest-fe3a13059e", "bot-casual-…") made readable the same way.
export function personName(player, name) {
  const raw = name || player;
  if (!raw) return t("seat.empty");
  let m = /^Guest ([0-9a-f]{4})$/.exec(raw) || /^guest-([0-9a-f]{4})/.exec(raw);
  if (m) return t("name.guest", { tag: m[1] });
  m = /^Computer \((\w+)\)$/.exec(raw) || /^bot-(\w+)-/.exec(raw);
  if (m && LEVELS[m[1]]) return t("name.bot_level", { level: t(LEVELS[m[1]]) });
  if (m || /^bot-/.test(raw)) return t("name.bot");
  return raw;
}

// A rating as the server shows it (`rating_shown`): a number, or "new" / "guest" in words.
const SHOWN = { new: "rating.new", guest: "rating.guest" };
export function shownRating(shown, rating, digits = 0) {
  if (shown === undefined || shown === null) return fmtNum(rating, digits);
  if (SHOWN[shown]) return t(SHOWN[shown]);
  const m = /^-?\d+(?:\.(\d+))?$/.exec(String(shown));
  return m ? fmtNum(Number(shown), m[1] ? m[1].length : 0) : String(shown);
}

export function formField(label, input) {
  return h("label", { class: "field" }, h("span", {}, label), input);
}

// -- sound ------------------------------------------------------------------------------------

const SOUND_KEY = "t42.sound";
let audio = null;

export const soundOn = () => localStorage.getItem(SOUND_KEY) !== "off";
export function setSound(on) {
  localStorage.setItem(SOUND_KEY, on ? "on" : "off");
}

const TONES = { turn: [660, 880], dice: [300], double: [520, 390, 520], call: [880, 660, 880, 660] };

// A short tone sequence for `kind` (your turn, dice, a double, a tournament call) when sound is on.
export function beep(kind) {
  if (!soundOn()) return;
  window.__t42sounds = (window.__t42sounds || []).concat(kind);
  try {
    audio = audio || new AudioContext();
    let at = audio.currentTime;
    for (const freq of TONES[kind] || TONES.turn) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.08, at);
      gain.gain.exponentialRampToValueAtTime(0.001, at + 0.14);
      osc.connect(gain).connect(audio.destination);
      osc.start(at);
      osc.stop(at + 0.15);
      at += 0.16;
    }
  } catch (err) {
    // No audio in this browser: the page works without it.
  }
}
