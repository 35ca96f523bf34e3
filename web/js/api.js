/* The REST calls: fetch with JSON in and out, errors as ApiError. */
import { ms } from './format.js';

export function enc(s) {
  return encodeURIComponent(s);
}

export function ApiError(status, type, message) {
  this.status = status;
  this.type = type;
  this.message = message;
}

export function api(path, opts) {
  opts = opts || {};
  var headers = { 'Accept': 'application/json' };
  if (opts.body != null) headers['Content-Type'] = 'application/json';
  return fetch(path, {
    method: opts.method || 'GET',
    credentials: 'same-origin',
    cache: 'no-store',
    signal: opts.signal,
    headers: headers,
    body: opts.body
  }).then(function (r) {
    return r.text().then(function (t) {
      var js = null;
      try { js = t ? JSON.parse(t) : null; } catch (e) { js = null; }
      if (!r.ok)
        throw new ApiError(r.status, js && js.__type || 'HTTP ' + r.status,
                           js && js.message || t);
      return js;
    });
  });
}

export function sleep(ms) {
  return new Promise(function (res) { setTimeout(res, ms); });
}
