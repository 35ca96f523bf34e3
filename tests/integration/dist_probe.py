#!/usr/bin/python3
"""The probe of tests/integration/test_distributed.py: one process of a
distributed job records what it sees, and tries what the mode promises.

Writes <SM_MODEL_DIR>/dp-<SM_CURRENT_HOST>-<pid>.json with: its whole
environment, argv, pid, ppid, pgid, the parent's command line
(/proc/<ppid>/cmdline: mpirun's or orted's under MPI), hostname, the
network interfaces of its namespace, its own address (the source address
towards MASTER_ADDR), and the results of:

  rdzv     the rendezvous store (TRAINCTL_RDZV_URL / _TOKEN): the leader
           (RANK 0, OMPI rank 0, the TF master, or algo-1 in mode none)
           PUTs key "hello" (and a 64 KiB value, and one byte more, which
           must be refused); every other process GETs them with wait_ms;
           each also tries a wrong token, its token on attempt+1, and
           (hyperparameter foreign_url/foreign_token, from an earlier job)
           another job's token on its own URL and its token on the other's.
  mesh     (every mode but mpi and torch with allreduce) every process
           listens where the mode says it does (algo-1, or RANK 0, on
           MASTER_ADDR:MASTER_PORT in modes none and torch_distributed;
           its own TF_CONFIG task address otherwise) and connects to where the others listen,
           then they agree through the store that all connected.
  allreduce (torch_distributed with hyperparameter allreduce true)
           torch.distributed init_process_group("gloo", "env://") and an
           all_reduce of RANK+1, and all_gather of the ranks' hostnames.

Hyperparameters (--key value, as script mode passes them): marker S
(ignored: lets the test find the job's processes), allreduce B,
foreign_url S, foreign_token S, put_delay N (the leader waits N seconds
before its PUTs, so that the GETs really wait), sleep N (after writing
the record), fail_rank R and fail_code C (the process named rR, i.e. RANK
or OMPI_COMM_WORLD_RANK R, exits with C right after writing its record). Standard library only (torch is
imported only for allreduce). Exits 0 whatever it found: the test judges.
"""
import json
import os
import socket
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request

T0 = time.time()
ENV = dict(os.environ)


def args():
    out = {}
    a = sys.argv[1:]
    i = 0
    while i < len(a):
        if a[i].startswith("--") and i + 1 < len(a):
            v = a[i + 1]
            try:
                v = json.loads(v)
            except ValueError:
                pass
            out[a[i][2:]] = v
            i += 2
        else:
            i += 1
    return out


HP = args()
MODE = ENV.get("TRAINCTL_DISTRIBUTION", "")
HOST = ENV.get("SM_CURRENT_HOST", "?")
HOSTS = json.loads(ENV.get("SM_HOSTS", "[]") or "[]")


def proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [x.decode("utf-8", "replace") for x in f.read().split(b"\0") if x]
    except OSError as e:
        return ["<%s>" % e]


def own_address():
    addr = ENV.get("MASTER_ADDR")
    if not addr:
        return None
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((addr, 9))
        return s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()


# ---------------------------------------------------------------- rendezvous

def http(method, url, token, body=None, timeout=30):
    req = urllib.request.Request(url, data=body, method=method)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")[:300]
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, e)


def http_bytes(method, url, token, timeout=30):
    req = urllib.request.Request(url, method=method)
    req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception:
        return None, None


def is_leader():
    if MODE == "torch_distributed":
        return ENV.get("RANK") == "0"
    if MODE == "mpi":
        return ENV.get("OMPI_COMM_WORLD_RANK") == "0"
    if MODE == "parameter_server":
        return json.loads(ENV.get("TF_CONFIG", "{}")).get("task", {}).get("type") == "master"
    if MODE == "multi_worker_mirrored_strategy":
        return json.loads(ENV.get("TF_CONFIG", "{}")).get("task", {}).get("index") == 0
    return bool(HOSTS) and HOST == HOSTS[0]


def me():
    """A name for this process, unique in the job."""
    for k in ("RANK", "OMPI_COMM_WORLD_RANK"):
        if ENV.get(k):
            return "r%s" % ENV[k]
    tf = ENV.get("TF_CONFIG")
    if tf:
        t = json.loads(tf).get("task", {})
        return "%s%s" % (t.get("type"), t.get("index"))
    return HOST


def rdzv():
    url, tok = ENV.get("TRAINCTL_RDZV_URL"), ENV.get("TRAINCTL_RDZV_TOKEN")
    out = {"url": url}
    if not url or not tok:
        out["error"] = "no TRAINCTL_RDZV_URL / TRAINCTL_RDZV_TOKEN"
        return out
    value = json.dumps({"from": me(), "host": HOST, "job": ENV.get("TRAINCTL_JOB")})
    big = bytes((i * 7 + 3) % 251 for i in range(65536))
    if is_leader():
        out["role"] = "put"
        time.sleep(float(HP.get("put_delay") or 0))
        out["put_big"] = http("PUT", url + "/big", tok, big)
        out["put_too_big"] = http("PUT", url + "/toobig", tok, big + b"!")
        out["put"] = http("PUT", url + "/hello", tok, value.encode())
    else:
        out["role"] = "get"
        t = time.time()
        out["get"] = http("GET", url + "/hello?wait_ms=30000", tok, timeout=40)
        out["get_s"] = round(time.time() - t, 3)
        st, body = http_bytes("GET", url + "/big?wait_ms=5000", tok)
        out["get_big"] = [st, len(body or b""), body == big]
        out["get_too_big"] = http("GET", url + "/toobig", tok)
    # A key nobody writes: 404 after the wait.
    t = time.time()
    out["missing"] = http("GET", url + "/never-written-%s?wait_ms=300" % me(), tok)
    out["missing_s"] = round(time.time() - t, 3)
    bad = ("0" if tok[0] != "0" else "1") + tok[1:]
    out["wrong_token"] = http("GET", url + "/hello", bad)
    out["no_token"] = http("GET", url + "/hello", None)
    out["wrong_token_put"] = http("PUT", url + "/intruder", bad, b"x")
    base, _, attempt = url.rpartition("/")
    out["next_attempt"] = http("GET", "%s/%d/hello" % (base, int(attempt) + 1), tok)
    out["next_attempt_put"] = http("PUT", "%s/%d/hello" % (base, int(attempt) + 1), tok, b"x")
    furl, ftok = HP.get("foreign_url"), HP.get("foreign_token")
    if furl and ftok:
        out["foreign_token_here"] = http("GET", url + "/hello", ftok)
        out["my_token_there"] = http("GET", furl + "/hello", tok)
        out["my_token_there_put"] = http("PUT", furl + "/hello", tok, b"x")
    return out


def barrier(name, peers, timeout=60):
    """Everyone PUTs <name>-<me>, then waits for every peer's key."""
    url, tok = ENV["TRAINCTL_RDZV_URL"], ENV["TRAINCTL_RDZV_TOKEN"]
    st = http("PUT", "%s/%s-%s" % (url, name, me()), tok, b"1")
    if st[0] != 200:
        return "PUT %s-%s: %s" % (name, me(), st)
    deadline = time.time() + timeout
    for p in peers:
        while True:
            left = int(max(0, deadline - time.time()) * 1000)
            st = http("GET", "%s/%s-%s?wait_ms=%d" % (url, name, p, min(left, 30000)), tok, timeout=40)
            if st[0] == 200:
                break
            if time.time() >= deadline:
                return "no %s-%s after %d s: %s" % (name, p, timeout, st)
    return None


# ---------------------------------------------------------------- mesh

def mesh():
    """Listen where this process should, connect to the others."""
    out = {}
    listen, peers, names = None, [], []
    if MODE == "parameter_server" or MODE == "multi_worker_mirrored_strategy":
        tf = json.loads(ENV["TF_CONFIG"])
        task = tf["task"]
        for kind in ("master", "ps", "worker"):
            for i, hp in enumerate(tf["cluster"].get(kind, [])):
                a, _, p = hp.rpartition(":")
                if kind == task["type"] and i == task["index"]:
                    listen = (a, int(p))
                else:
                    peers.append((a, int(p)))
                    names.append("%s%d" % (kind, i))
    else:
        # algo-1 (torch: RANK 0) listens on MASTER_ADDR:MASTER_PORT.
        master = (ENV.get("MASTER_ADDR"), int(ENV.get("MASTER_PORT") or 0))
        if MODE == "torch_distributed":
            others = ["r%d" % i for i in range(1, int(ENV.get("WORLD_SIZE") or 1))]
            first = "r0"
        else:
            others = [h for h in HOSTS if h != HOSTS[0]]
            first = HOSTS[0] if HOSTS else "algo-1"
        if is_leader():
            listen = master
            names = others
        else:
            peers = [master]
            names = [first]
    out["listen"] = listen
    out["peers"] = ["%s:%d" % p for p in peers]
    accepted = []
    srv = None
    if listen:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind(listen)
            srv.listen(64)
        except OSError as e:
            out["bind_error"] = "%s: %s" % (listen, e)
            srv.close()
            srv = None

    def serve():
        while srv is not None:
            try:
                c, a = srv.accept()
            except OSError:
                return
            try:
                c.settimeout(5)
                msg = c.recv(256).decode()
                accepted.append({"from": a[0], "who": msg})
                c.sendall(("%s %s" % (me(), socket.gethostname())).encode())
            except OSError:
                pass
            finally:
                c.close()
    th = None
    if srv is not None:
        th = threading.Thread(target=serve, daemon=True)
        th.start()
    connected = {}
    for (a, p) in peers:
        deadline = time.time() + 40
        while True:
            try:
                c = socket.create_connection((a, p), timeout=5)
                c.sendall(me().encode())
                connected["%s:%d" % (a, p)] = {"local": c.getsockname()[0], "answer": c.recv(256).decode()}
                c.close()
                break
            except OSError as e:
                if time.time() > deadline:
                    connected["%s:%d" % (a, p)] = {"error": str(e)}
                    break
                time.sleep(0.05)
    out["connected"] = connected
    # Everyone has connected to everyone before anyone closes.
    out["barrier"] = barrier("mesh", names)
    if srv is not None:
        s, srv = srv, None
        s.close()
    out["accepted"] = accepted
    return out


def allreduce():
    import datetime
    import torch
    import torch.distributed as dist
    out = {}
    t = time.time()
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    out["init_s"] = round(time.time() - t, 3)
    out["rank"], out["world"] = dist.get_rank(), dist.get_world_size()
    x = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(x)
    out["sum"] = float(x.item())
    names = [None] * dist.get_world_size()
    dist.all_gather_object(names, [dist.get_rank(), socket.gethostname(), HOST])
    out["gathered"] = names
    dist.barrier()
    dist.destroy_process_group()
    return out


def main():
    rec = {"env": ENV, "argv": sys.argv, "pid": os.getpid(), "ppid": os.getppid(),
           "pgid": os.getpgid(0), "sid": os.getsid(0), "parent_cmdline": proc_cmdline(os.getppid()),
           "hostname": socket.gethostname(), "interfaces": [n for _, n in socket.if_nameindex()],
           "own_address": own_address(), "cwd": os.getcwd(), "executable": sys.executable,
           "started": T0, "me": me(), "leader": is_leader(),
           "checkpoint_dir_exists": os.path.isdir(ENV.get("TRAINCTL_CHECKPOINT_DIR") or "/nonexistent")}
    for name, fn in (("rdzv", rdzv), ("mesh", mesh), ("allreduce", allreduce)):
        torch_ar = MODE == "torch_distributed" and str(HP.get("allreduce")).lower() == "true"
        if name == "mesh" and (MODE == "mpi" or torch_ar):
            continue
        if name == "allreduce" and not torch_ar:
            continue
        try:
            rec[name] = fn()
        except Exception as e:
            rec[name] = {"error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()[-1500:]}
    failing = HP.get("fail_rank") is not None and me() == "r%s" % HP["fail_rank"]
    rec["seconds"] = round(time.time() - T0, 3)
    d = ENV.get("SM_MODEL_DIR", "/opt/ml/model")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "dp-%s-%d.json" % (HOST, os.getpid()))
    with open(path + ".tmp", "w") as f:
        json.dump(rec, f, sort_keys=True)
    os.rename(path + ".tmp", path)
    print("dist_probe %s %s on %s: %s" % (MODE, me(), socket.gethostname(),
                                          json.dumps({k: rec.get(k) for k in ("rdzv",) if k in rec})[:300]),
          flush=True)
    if failing:
        print("dist_probe %s: exiting with status %s" % (me(), HP.get("fail_code", 1)), flush=True)
        sys.exit(int(HP.get("fail_code", 1)))
    if HP.get("sleep"):
        time.sleep(float(HP["sleep"]))


if __name__ == "__main__":
    main()
