/* Building the DOM: h() and its children, with text set as textContent. */
/* ------------------------------------------------------------ helpers */

export function h(tag, attrs) {
  var el = document.createElement(tag);
  var k, i;

  attrs = attrs || {};
  for (k in attrs) {
    if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null)
      continue;
    if (k === 'text') el.textContent = String(attrs[k]);
    else if (k === 'cls') el.className = attrs[k];
    else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), attrs[k]);
    else el.setAttribute(k, attrs[k]);
  }
  for (i = 2; i < arguments.length; i++) append(el, arguments[i]);
  return el;
}

/* Children: nodes, text, or (nested) arrays of them; null is skipped. */
export function append(el, c) {
  if (c == null || c === false) return;
  if (Array.isArray(c)) c.forEach(function (x) { append(el, x); });
  else el.appendChild(toNode(c));
}

export function toNode(x) {
  return x instanceof Node ? x : document.createTextNode(String(x));
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}
