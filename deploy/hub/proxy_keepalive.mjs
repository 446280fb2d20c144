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
import ConfigurableProxy from "configurable-http-proxy/lib/configproxy.js";

const proxyOptsForTarget = ConfigurableProxy.prototype.proxyOptsForTarget;

ConfigurableProxy.prototype.proxyOptsForTarget = function (target) {
  const options = proxyOptsForTarget.call(this, target);
  if (options.target.socketPath) options.agent = this.httpAgent;
  return options;
};
