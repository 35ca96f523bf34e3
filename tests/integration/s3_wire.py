"""Wire-level helpers of test_s3_api.py (not a test itself).

  crt_sign         SigV4 headers for a raw S3 request, made by awscrt (the
                   signer of Debian's aws CLI v2), any x-amz-content-sha256
                   value (UNSIGNED-PAYLOAD, the streaming ones).
  signed_chunks    an aws-chunked body for STREAMING-AWS4-HMAC-SHA256-PAYLOAD:
                   awscrt 0.16 signs the seed but has no chunk signing, so the
                   chunk signatures are worked out here, as the S3 docs'
                   "Transferring Payload in Multiple Chunks" page says;
                   vector_check() proves both against the page's example.
  trailer_chunks   an aws-chunked body for STREAMING-UNSIGNED-PAYLOAD-TRAILER
                   with an x-amz-checksum-crc32 trailer (what botocore sends
                   over HTTPS).
  raw              one request with http.client; (status, headers, body).
  Forwarder        a TCP relay to trainctld on other loopback addresses and
                   ports (the awscrt S3 client of aws CLI v2.9 connects to
                   port 80 for any http:// endpoint); it records the
                   x-amz-content-sha256 values and User-Agents that pass.

Debian's /usr/bin/python3 with python3-awscrt; standard library otherwise.
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import random
import re
import socket
import threading
import zlib

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

# The example of the S3 API reference, "Signature Calculations for the
# Authorization Header: Transferring Payload in Multiple Chunks": a PUT of
# 66560 bytes of "a" in chunks of 64 KiB, 1 KiB and the empty last one.
VECTOR = {
    "key": "AKIAIOSFODNN7EXAMPLE",
    "secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "date": datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc),
    "headers": [("Host", "s3.amazonaws.com"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", "66560"),
                ("Content-Length", "66824")],
    "path": "/examplebucket/chunkObject.txt",
    "seed": "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
    "chunks": ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
               "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
               "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"],
}


def crt_available():
    """None when awscrt can sign here, else why not."""
    try:
        import awscrt.auth  # noqa: F401
        import awscrt.http  # noqa: F401
    except ImportError as e:
        return "awscrt is not importable (%s)" % e
    return None


def crt_sign(method, path, headers, key, secret, body_value, when=None, region="us-east-1"):
    """headers: [(name, value)] including Host. Returns the signed
    [(name, value)] (X-Amz-Date, x-amz-content-sha256 = body_value and
    Authorization added by awscrt)."""
    from awscrt.auth import (AwsCredentialsProvider, AwsSignatureType, AwsSignedBodyHeaderType,
                             AwsSigningAlgorithm, AwsSigningConfig, aws_sign_request)
    from awscrt.http import HttpHeaders, HttpRequest
    cfg = AwsSigningConfig(AwsSigningAlgorithm.V4, AwsSignatureType.HTTP_REQUEST_HEADERS,
                           AwsCredentialsProvider.new_static(key, secret), region, "s3",
                           date=when or datetime.datetime.now(datetime.timezone.utc),
                           use_double_uri_encode=False, should_normalize_uri_path=False,
                           signed_body_value=body_value,
                           signed_body_header_type=AwsSignedBodyHeaderType.X_AMZ_CONTENT_SHA_256)
    req = HttpRequest(method, path, HttpHeaders(list(headers)))
    signed = aws_sign_request(req, cfg).result(10)
    return list(signed.headers)


def header(headers, name):
    for k, v in headers:
        if k.lower() == name.lower():
            return v
    return None


def auth_parts(headers):
    """(amz_date, scope, seed signature) of awscrt's signed headers."""
    auth = header(headers, "Authorization")
    m = re.search(r"Credential=[^/]+/([^,]+), *SignedHeaders=[^,]+, *Signature=([0-9a-f]{64})", auth)
    return header(headers, "X-Amz-Date"), m.group(1), m.group(2)


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signing_key(secret, scope):
    day, region, service, _ = scope.split("/")
    return _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode(), day), region), service), "aws4_request")


def chunk_sizes(n, size):
    out = [size] * (n // size)
    if n % size:
        out.append(n % size)
    return out + [0]


def framed_length(n, size):
    """Content-Length of n bytes sent as signed chunks of size."""
    return sum(len("%x;chunk-signature=" % c) + 64 + 2 + c + 2 for c in chunk_sizes(n, size))


def signed_chunks(data, size, seed, amz_date, scope, secret, tamper_sig=None, tamper_data=None):
    """The aws-chunked body of data in chunks of size, each signed after
    the previous signature (the seed first). tamper_sig=i flips one hex
    digit of chunk i's signature as sent (the chain goes on from the
    right one); tamper_data=i flips one byte of chunk i after signing.
    Returns (body, [signatures as computed])."""
    key = signing_key(secret, scope)
    prev, out, sigs, off = seed, [], [], 0
    for i, n in enumerate(chunk_sizes(len(data), size)):
        chunk = data[off:off + n]
        off += n
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, EMPTY_SHA256,
                         hashlib.sha256(chunk).hexdigest()])
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        sigs.append(sig)
        sent = sig
        if tamper_sig == i:
            sent = sig[:10] + ("0" if sig[10] != "0" else "1") + sig[11:]
        if tamper_data == i and chunk:
            chunk = chunk[:5] + bytes([chunk[5] ^ 0x01]) + chunk[6:]
        out.append(b"%x;chunk-signature=%s\r\n" % (n, sent.encode()) + chunk + b"\r\n")
        prev = sig
    return b"".join(out), sigs


def crc32_b64(data):
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def trailer_chunks(data, size, crc=None):
    """aws-chunked without signatures, ending with an x-amz-checksum-crc32
    trailer (crc: the base64 value to send, default the right one)."""
    out, off = [], 0
    for n in chunk_sizes(len(data), size)[:-1]:
        out.append(b"%x\r\n" % n + data[off:off + n] + b"\r\n")
        off += n
    out.append(b"0\r\n")
    out.append(("x-amz-checksum-crc32:%s\r\n\r\n" % (crc or crc32_b64(data))).encode())
    return b"".join(out)


def vector_check():
    """None when awscrt's seed and our chunk signatures are the documented
    ones, else what differs."""
    v = VECTOR
    signed = crt_sign("PUT", v["path"], v["headers"], v["key"], v["secret"], STREAMING, when=v["date"])
    amz_date, scope, seed = auth_parts(signed)
    if seed != v["seed"]:
        return "awscrt seed signature %s, documented %s" % (seed, v["seed"])
    body, sigs = signed_chunks(b"a" * 66560, 65536, seed, amz_date, scope, v["secret"])
    if sigs != v["chunks"]:
        return "chunk signatures %s, documented %s" % (sigs, v["chunks"])
    if len(body) != 66824 or framed_length(66560, 65536) != 66824:
        return "framed length %d, documented 66824" % len(body)
    return None


def raw(port, method, path, headers, body=b"", timeout=30):
    """Sends exactly these headers (Host included); (status, {lower: v}, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def first_reply(port, method, path, headers, timeout=10):
    """Sends the request line and headers only and returns what the server
    answers first (b"" after timeout s of silence): "100 Continue" or a
    final status."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(("%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in headers)
                   + "\r\n").encode("latin-1"))
        out = b""
        try:
            while b"\r\n\r\n" not in out or (out.startswith(b"HTTP/1.1 4") and b"</Error>" not in out):
                data = s.recv(65536)
                if not data:
                    break
                out += data
        except socket.timeout:
            pass
        return out
    finally:
        s.close()


def error_code(body):
    m = re.search(rb"<Code>([^<]*)</Code>", body or b"")
    return m.group(1).decode() if m else None


class Forwarder:
    """Relays every connection to 127.0.0.1:target. listen() binds one more
    (address, port). Threads only; stop() closes everything."""

    SEEN_RE = re.compile(rb"(?im)^(x-amz-content-sha256|user-agent):[ \t]*([^\r\n]*)\r?$")

    def __init__(self, target):
        self.target = target
        self.socks = []
        self.conns = []
        self.seen = {"x-amz-content-sha256": set(), "user-agent": set()}
        self.lock = threading.Lock()
        self.stopping = False

    @staticmethod
    def free_loopback(ports):
        """A random 127.x.y.z on which every one of ports can be bound, or
        None. The address is what keeps parallel runs apart."""
        rng = random.Random()
        for _ in range(20):
            addr = "127.%d.%d.%d" % (rng.randint(64, 250), rng.randint(1, 250), rng.randint(2, 250))
            ok = True
            for p in ports:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind((addr, p))
                except OSError:
                    ok = False
                finally:
                    s.close()
                if not ok:
                    break
            if ok:
                return addr
        return None

    def listen(self, addr, port):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(64)
        self.socks.append(s)
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while not self.stopping:
            try:
                c, _ = s.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target), timeout=10)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            threading.Thread(target=self._pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, src, dst, upstream):
        tail = b""
        try:
            while True:
                data = src.recv(262144)
                if not data:
                    break
                if upstream:
                    scan = tail + data
                    for name, value in self.SEEN_RE.findall(scan):
                        with self.lock:
                            self.seen[name.decode().lower()].add(value.decode("latin-1").strip())
                    tail = scan[-300:]
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def stop(self):
        self.stopping = True
        with self.lock:
            for s in self.socks + self.conns:
                try:
                    s.close()
                except OSError:
                    pass
            self.socks, self.conns = [], []
