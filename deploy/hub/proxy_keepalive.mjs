// Loaded into configurable-http-proxy before it starts (`node --import`, deploy/hub/proxy.py).
//
// Learners' servers listen on UNIX sockets (learner_net.py). For such a target
// configurable-http-proxy passes no agent, so http-proxy-3 opens a new socket per request
// and asks for "Connection: close". The server answers and closes; Node's HTTP client can
// still write the request's final empty chunk after that, and on a UNIX socket that write
// fails with EPIPE (nodejs/node#40553, #41062). The proxy then answers 503 for a request
// the server had answered: JupyterLab showed "Error Starting Kernel ... 503" for a session
// PATCH the server had logged as 200. With the proxy's own keep-alive agent (the one it
// uses for TCP targets; Node pools its sockets per socket path) the server keeps the
// connection open after answering, and no write meets a closed socket. (With an agent the
// client's own Connection header is passed on: browsers ask for keep-alive; a client that
// asks for close still gets the old path.) A pooled connection stays with the listener it
// was made to; the socket paths it is pooled by are in a folder only root can change
// (learner_net.adopt), so no learner can make a new one reach anything but her server.
import { createHash } from "node:crypto";
import http from "node:http";

import ConfigurableProxy from "configurable-http-proxy/lib/configproxy.js";

const proxyOptsForTarget = ConfigurableProxy.prototype.proxyOptsForTarget;

// The proxy's keep-alive agent keeps an idle connection for ever; the grading service
// closes one idle for GRADER_HEADER_TIMEOUT. A request the proxy sends on a pooled
// connection just as the service closes it fails ("socket hang up") and the proxy answers
// its own 503. So the proxy closes its idle pooled connections first: after
// COURSE_PROXY_IDLE_MS (jupyterhub_config.py sets it below the service's timeout). Node's
// agent applies `options.timeout` to a socket each time it returns to the pool, and
// destroys a pooled socket whose timeout fires; a request in flight is not cut by it.
const IDLE_MS = Number(process.env.COURSE_PROXY_IDLE_MS) || 0;

ConfigurableProxy.prototype.proxyOptsForTarget = function (target) {
  const options = proxyOptsForTarget.call(this, target);
  if (IDLE_MS && !this.httpAgent.options.timeout) this.httpAgent.options.timeout = IDLE_MS;
  if (options.target.socketPath) options.agent = this.httpAgent;
  return options;
};

// Every request and websocket the proxy holds costs it a descriptor or two, and a client
// can hold them as long as it likes (a body that never comes, a slow poll, a websocket to
// her own server). So the proxy counts what it holds per SENDER, the person whose hub
// token the request carries, as the hub itself says (never per target: anyone may send
// to eve's origin; never per address: a class may share one):
// - a token in the Authorization header ("token X", "Bearer X"), else in the URL
//   (?token=), else in the cookie of the learner's server the path names (JupyterHub's
//   HubOAuth keeps the token there, signed, not encrypted), is looked up once at the hub
//   (GET /hub/api/user, any token may identify itself) and remembered a few minutes, by
//   its digest; a forged or another's token is nobody's, or hers to spend;
// - one learner holds at most HUB_MAX_HELD_PER_LEARNER at once; more get 429 at once
//   and their connection is closed (an unread body would hold it);
// - what carries no token the hub knows (sign-in, pages signed in by cookie, or a token
//   still being looked up) shares one pool of HUB_MAX_HELD_ANONYMOUS; when it is full, a
//   newcomer ends the oldest of them held for more than a moment, so a slow flood there
//   cannot keep out fast requests such as a sign-in; else it gets 503.

// the caps, from autograder/defaults.py through jupyterhub_config.py; a proxy started
// without them (not by the hub) caps nothing
const PER_LEARNER = Number(process.env.HUB_MAX_HELD_PER_LEARNER) || Infinity;
const ANONYMOUS = Number(process.env.HUB_MAX_HELD_ANONYMOUS) || Infinity;
const HUB_API = process.env.COURSE_PROXY_WHOAMI; // the hub's /hub/api/user (jupyterhub_config.py)
const COOKIE_PREFIX = process.env.COURSE_PROXY_COOKIE_PREFIX || ""; // "__Host-" on a real domain
const KNOWN_MS = 300000; // a token's owner is remembered this long (nobody's: a tenth of it)
const KNOWN_MAX = 20000; // tokens remembered at most (the oldest forgotten first)
const LOOKUPS_MAX = 16; // lookups at the hub at once; beyond, a new token is nobody's for now
const GRACE_MS = 2000; // an anonymous request younger than this is never ended for another
const LOG_EVERY_MS = 60000; // one line per learner at her cap, at most this often
const TOKEN = /^[A-Za-z0-9_.~+/=-]{8,512}$/;

const known = new Map(); // sha256(token) -> { name (string or null), until (ms) }
const looking = new Map(); // sha256(token) -> Promise of the owner's name or null
const held = new Map(); // learner's name -> requests and websockets held now
const anonymous = new Map(); // client (response or socket) -> when admitted (ms), oldest first
const warned = new Map(); // name -> when her cap was last logged (ms)

function cookieToken(req, path) {
  const owner = /^\/user\/([^/?]+)\//.exec(path);
  if (!owner || !req.headers.cookie) return null;
  const name = `${COOKIE_PREFIX}jupyterhub-user-${owner[1]}`;
  for (const part of req.headers.cookie.split(";")) {
    const at = part.indexOf("=");
    if (at < 0 || part.slice(0, at).trim() !== name) continue;
    // tornado's signed value: 2|1:0|<n>:<time>|<n>:<name>|<n>:<base64 value>|<signature>
    const field = part.slice(at + 1).trim().split("|")[4] || "";
    const value = Buffer.from(field.slice(field.indexOf(":") + 1), "base64").toString();
    return value || null;
  }
  return null;
}

function tokenOf(req) {
  const auth = /^\s*(?:token|bearer)\s+(\S+)\s*$/i.exec(req.headers.authorization || "");
  if (req.headers.authorization) return auth ? auth[1] : null; // the header is read first
  let url;
  try {
    url = new URL(req.url, "http://proxy.invalid");
  } catch {
    return null;
  }
  return url.searchParams.get("token") || cookieToken(req, url.pathname);
}

function ask(token) {
  return new Promise((resolve) => {
    const options = { headers: { Authorization: `token ${token}` }, timeout: 10000 };
    const asked = http.get(HUB_API, options, (reply) => {
      let body = "";
      reply.setEncoding("utf8");
      reply.on("data", (chunk) => { if (body.length < 65536) body += chunk; }); // a user model
      reply.on("end", () => {
        if (reply.statusCode === 200) {
          try {
            const model = JSON.parse(body);
            return resolve({ name: `${model.kind || "user"}:${model.name}`, ms: KNOWN_MS });
          } catch { /* not the hub's answer: nobody's, not remembered */ }
        }
        // the hub says it is no token (403): remembered briefly; any other fault: not at all
        resolve({ name: null, ms: reply.statusCode === 403 ? KNOWN_MS / 10 : 0 });
      });
    });
    asked.on("timeout", () => asked.destroy());
    asked.on("error", () => resolve({ name: null, ms: 0 }));
  });
}

// the sender's name now (string), null for nobody, or a Promise of either
function sender(req) {
  const token = tokenOf(req);
  if (!token || !TOKEN.test(token) || !HUB_API) return null;
  const key = createHash("sha256").update(token).digest("hex");
  const seen = known.get(key);
  if (seen && seen.until > Date.now()) return seen.name;
  if (looking.has(key)) return looking.get(key);
  if (looking.size >= LOOKUPS_MAX) return null;
  const answer = ask(token).then(({ name, ms }) => {
    looking.delete(key);
    known.delete(key);
    if (ms) known.set(key, { name, until: Date.now() + ms });
    if (known.size > KNOWN_MAX) known.delete(known.keys().next().value);
    return name;
  });
  looking.set(key, answer);
  return answer;
}

function refuse(kind, client, status, text) {
  const head = { "Content-Type": "text/plain; charset=utf-8", "Retry-After": "5",
    "Content-Length": Buffer.byteLength(text), Connection: "close" };
  if (kind === "web") {
    if (!client.headersSent) client.writeHead(status, head);
    client.end(text);
    return;
  }
  const reason = status === 429 ? "Too Many Requests" : "Service Unavailable";
  const lines = Object.entries(head).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  // end() alone would keep the descriptor until the client closes its side
  client.end(`HTTP/1.1 ${status} ${reason}\r\n${lines}\r\n${text}`, () => client.destroy());
}

function admitAnonymous(client) {
  if (anonymous.size >= ANONYMOUS) {
    const [oldest, since] = anonymous.entries().next().value;
    if (Date.now() - since < GRACE_MS) return false;
    anonymous.delete(oldest);
    oldest.destroy(); // its 'close' finds it gone from the pool
  }
  anonymous.set(client, Date.now());
  return true;
}

function admitLearner(name, client, log) {
  const count = held.get(name) || 0;
  if (count >= PER_LEARNER) {
    if (Date.now() - (warned.get(name) || 0) > LOG_EVERY_MS) {
      warned.set(name, Date.now());
      log.warn("429: %s holds %d requests and websockets at once (HUB_MAX_HELD_PER_LEARNER)",
        name, count);
    }
    return false;
  }
  held.set(name, count + 1);
  return true;
}

function release(name) {
  const left = held.get(name) - 1;
  if (left > 0) held.set(name, left);
  else held.delete(name);
}

const BUSY = "The course hub holds too many requests from people not signed in; retry in a "
  + "few seconds.\n";
const MINE = `Too many requests at once: you hold ${PER_LEARNER} through the course hub, the `
  + "most one person may. Close some (tabs, notebooks, scripts) and retry.\n";

const handleProxy = ConfigurableProxy.prototype.handleProxy;

// kind "web": (req, res); "ws": (req, socket, head)
ConfigurableProxy.prototype.handleProxy = function (kind, req, client, ...rest) {
  const proxy = this;
  if (client.destroyed) return undefined;
  const account = { name: undefined }; // undefined: anonymous pool; a string: that learner
  // a response and a socket both emit 'close' once, however they end
  client.once("close", () => {
    if (account.name === undefined) anonymous.delete(client);
    else if (account.name !== null) release(account.name);
    account.name = null; // counted nowhere any more
  });
  const go = (name) => {
    if (account.name === null) return; // gone meanwhile
    if (name) {
      anonymous.delete(client);
      if (!admitLearner(name, client, proxy.log)) {
        account.name = null;
        return refuse(kind, client, 429, MINE);
      }
      account.name = name;
    }
    return handleProxy.call(proxy, kind, req, client, ...rest);
  };
  const name = sender(req);
  if (typeof name === "string") return go(name);
  if (!admitAnonymous(client)) {
    account.name = null;
    return refuse(kind, client, 503, BUSY);
  }
  if (name === null) return go(null);
  return name.then(go, () => go(null));
};
