// HTTP calls (PROTOCOL.md §8 and the read API of docs/browser-client.md). JSON in, JSON out.

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export async function api(path, { method = "GET", body, token } = {}) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  let resp;
  try {
    resp = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, "network", "the server does not answer");
  }
  if (resp.status === 204) return null;
  let data = null;
  try {
    data = await resp.json();
  } catch (err) {
    data = null;
  }
  if (!resp.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(resp.status, e.code || "http_" + resp.status,
      e.message || resp.statusText, e.field);
  }
  return data;
}

export const qs = (params) => new URLSearchParams(
  Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined),
).toString();
