// The page's languages: message catalogues (server/static/i18n/<lang>.json, flat "area.name"
// keys), t(key, params) with {name} placeholders and plural forms chosen by Intl.PluralRules
// from params.n, and numbers and dates formatted for the language (Intl). The language comes
// from localStorage ("t42.lang"), else the browser's languages, else English; setLang switches
// and remembers it. The pseudo-language "keys" shows every key as [key] (the tests use it to
// find visible text that does not come from a catalogue).

export const LANGS = [["en", "English"], ["ro", "Română"], ["ru", "Русский"]];
const LANG_KEY = "t42.lang";

let lang = "en";
let catalogue = {};
let english = {};
let plurals = new Intl.PluralRules("en");
const numberFormats = new Map();

export function currentLang() {
  return lang;
}

function pick() {
  const stored = localStorage.getItem(LANG_KEY);
  if (stored === "keys" || LANGS.some(([code]) => code === stored)) return stored;
  for (const wanted of navigator.languages || [navigator.language || "en"]) {
    const code = String(wanted).toLowerCase().split("-")[0];
    if (LANGS.some(([c]) => c === code)) return code;
  }
  return "en";
}

async function fetchCatalogue(code) {
  const resp = await fetch(`/static/i18n/${code}.json`);
  if (!resp.ok) throw new Error(`no catalogue ${code}`);
  return resp.json();
}

// Load the chosen language's catalogue (and English, the fallback). Call before drawing.
export async function loadLang(code = pick()) {
  english = await fetchCatalogue("en");
  lang = code;
  catalogue = code === "en" || code === "keys" ? english : await fetchCatalogue(code).catch(() => english);
  const tag = code === "keys" ? "en" : code;
  plurals = new Intl.PluralRules(tag);
  numberFormats.clear();
  document.documentElement.lang = tag;
}

// Whether the catalogues have `key` (for texts chosen by a server code).
export const has = (key) => key in english;

// Switch the language and remember it; the caller redraws.
export async function setLang(code) {
  localStorage.setItem(LANG_KEY, code);
  await loadLang(code);
}

// The text of `key` in the current language, {placeholders} filled from `params`. A plural
// entry is an object keyed by Intl.PluralRules categories ("one", "few", "many", "other"),
// chosen by params.n. A number param is formatted for the language.
export function t(key, params = {}) {
  if (lang === "keys") return `[${key}]`;
  let text = catalogue[key] ?? english[key];
  if (text === undefined) {
    console.warn(`i18n: no text for ${key}`);
    return key;
  }
  if (typeof text === "object") text = text[plurals.select(Number(params.n))] ?? text.other;
  return text.replace(/\{(\w+)\}/g, (all, name) => {
    const v = params[name];
    if (v === undefined || v === null) return all;
    return typeof v === "number" ? fmtNum(v, Number.isInteger(v) ? 0 : 2) : String(v);
  });
}

function numberFormat(digits) {
  const key = digits;
  if (!numberFormats.has(key)) {
    numberFormats.set(key, new Intl.NumberFormat(lang === "keys" ? "en" : lang, {
      minimumFractionDigits: digits, maximumFractionDigits: digits, useGrouping: false,
    }));
  }
  return numberFormats.get(key);
}

// A number with `digits` decimals in the language's way ("1500.25", "1500,25"); no grouping,
// ratings read better without it. null/undefined give "–".
export function fmtNum(n, digits = 0) {
  if (n === null || n === undefined || Number.isNaN(Number(n))) return "–";
  return numberFormat(digits).format(Number(n));
}

// A signed change: "+16", "−16", "±0" (a real minus sign).
export function fmtSigned(n, digits = 0) {
  if (n === null || n === undefined) return "–";
  const sign = n > 0 ? "+" : n < 0 ? "−" : "±";
  return sign + fmtNum(Math.abs(n), digits);
}

// A moment (Unix seconds) as a date and time in the language's way.
export function fmtDate(seconds) {
  if (lang === "keys") return new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");
  return new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" })
    .format(new Date(seconds * 1000));
}
