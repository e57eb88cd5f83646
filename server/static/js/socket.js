// The one WebSocket (PROTOCOL.md §1-2): JSON text frames, `hello` with the token first,
// requests matched to answers by `id`/`ref`, reconnection with back-off when the socket drops.
// A node can go silent with the socket still open (paused, stuck): the page asks for the
// node's keep-alives (`alive` every 2 s at most while nothing else comes); after PING_AFTER
// ms of quiet it sends `ping`; after SILENT_AFTER ms without any frame (an opening socket
// included) it drops the socket and reconnects (through the balancer: another node).

const BACKOFF = [250, 500, 1000, 2000, 4000, 8000];
const PING_AFTER = 3000;
const SILENT_AFTER = 10000;

export class Socket {
  constructor(token, onMessage, onStatus) {
    this.token = token;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.closedByUs = false;
    this.attempt = 0;
    this.ready = false;
    this.timer = null;
    this.watch = null;
    this.heardAt = 0;
    this.pingedAt = 0;
    this.silences = 0; // sockets given up because their node went silent
  }

  open() {
    this.closedByUs = false;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/ws?format=json`);
    this.ws = ws;
    this.heardAt = Date.now();
    clearInterval(this.watch);
    this.watch = setInterval(() => this.checkSilence(ws), 1000);
    this.onStatus("connecting");
    ws.addEventListener("open", () => {
      // protocol 2: table events carry only what changed (PROTOCOL.md §5.1); GameView applies them.
      ws.send(JSON.stringify({ type: "hello", token: this.token, protocol: 2, keepalive: true }));
    });
    ws.addEventListener("message", (ev) => {
      this.heardAt = Date.now();
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (err) {
        return;
      }
      // The silence watch's answer, and the node's keep-alive: frames heard, nothing more.
      if ((msg.type === "pong" && msg.ref === undefined) || msg.type === "alive") return;
      if (msg.type === "welcome") {
        this.ready = true;
        this.attempt = 0;
        this.onStatus("online");
      }
      if (msg.ref !== undefined && this.pending.has(msg.ref)) {
        const { resolve } = this.pending.get(msg.ref);
        this.pending.delete(msg.ref);
        resolve(msg);
      }
      this.onMessage(msg);
    });
    ws.addEventListener("close", (ev) => this.lost(ws, ev.code));
  }

  // Nothing heard for a while: ping; nothing at all for SILENT_AFTER: the node is silent.
  checkSilence(ws) {
    if (this.ws !== ws) return;
    const now = Date.now();
    if (now - this.heardAt >= SILENT_AFTER) {
      this.silences += 1;
      this.lost(ws, 4000);
      try {
        ws.close(4000, "silent");
      } catch (err) {
        // closing a socket that never opened: nothing more to do
      }
    } else if (now - this.heardAt >= PING_AFTER && this.pingedAt < this.heardAt && this.ready) {
      this.pingedAt = now;
      ws.send(JSON.stringify({ type: "ping" }));
    }
  }

  // The socket `ws` is gone (closed, or its node silent): reconnect unless told not to.
  lost(ws, code) {
    if (this.ws !== ws) return;
    this.ws = null;
    clearInterval(this.watch);
    this.ready = false;
    for (const { resolve } of this.pending.values()) {
      resolve({ type: "error", code: "disconnected", message: "the connection dropped" });
    }
    this.pending.clear();
    if (this.closedByUs) {
      this.onStatus("closed");
      return;
    }
    if (code === 1008 && this.attempt > 2) {
      this.onStatus("refused");
      return;
    }
    const delay = BACKOFF[Math.min(this.attempt, BACKOFF.length - 1)];
    this.attempt += 1;
    this.onStatus("reconnecting");
    this.timer = setTimeout(() => this.open(), delay);
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || !this.ready) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  // Send with an id; resolves with the answer carrying it as `ref` (or an error).
  request(msg) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      if (!this.send({ ...msg, id })) {
        resolve({ type: "error", code: "disconnected", message: "not connected" });
        return;
      }
      this.pending.set(id, { resolve });
    });
  }

  close() {
    this.closedByUs = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "bye");
  }

  // Drop the socket as a network failure would (reconnects); used by the reconnect test.
  drop() {
    if (this.ws) this.ws.close(4000, "dropped");
  }
}
