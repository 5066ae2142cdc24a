"""trtrace push / pull against a real registry (docs/registry.md): Debian's docker-registry (the CNCF
distribution server) started per test on 127.0.0.1 with filesystem storage in the test's folder, with
htpasswd auth or a self-signed certificate where the test says so. What a plain registry cannot do
(a token server, a redirect, a dropped connection, a 500, a wrong digest) comes from a small proxy in
front of it (RegistryProxy). Every server is stopped by its fixture."""

import base64
import hashlib
import http.client
import http.server
import json
import os
import pathlib
import re
import socket
import subprocess
import threading
import urllib.parse
import urllib.request

import pytest

from conftest import PLAYER, TRTRACE, capture, trt_lib
from registry_server import REGISTRY, Registry, free_port

pytestmark = pytest.mark.skipif(REGISTRY is None, reason="docker-registry not installed (tools/setup.sh installs it)")


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture
def registry(tmp):
    r = Registry(tmp)
    yield r
    r.stop()


def trtrace(*args, env=None):
    e = dict(os.environ)
    e["HOME"] = "/nonexistent"  # never the user's own ~/.docker/config.json
    e.pop("DOCKER_CONFIG", None)
    e.update(env or {})
    return subprocess.run([str(TRTRACE), *map(str, args)], capture_output=True, text=True, env=e)


def ok(proc):
    assert proc.returncode == 0, proc.stderr
    return proc


def one_line_error(proc, code, *words):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trtrace: "), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Captures of layered_weights.py: base, one layer changed, and one with 4 MiB weights."""
    folder = tmp_path_factory.mktemp("captures")
    out = {}
    for name, args in {"base": [], "changed": ["--change", "2"], "big": ["--layers", "2", "--size", "1024"]}.items():
        capture("layered_weights.py", folder / f"{name}.trtrace", "--out", folder / f"{name}.engine", *args)
        out[name] = folder / f"{name}.trtrace"
    return out


def pushed(trace, ref, *args, env=None):
    p = ok(trtrace("push", "--plain-http", trace, ref, *args, env=env))
    assert re.fullmatch(r"sha256:[0-9a-f]{64}\n", p.stdout), p.stdout
    return p


def summary(proc):
    m = re.search(r"(\d+) blobs: (\d+) uploaded \([^)]*\), (\d+) mounted, (\d+) already there", proc.stderr)
    assert m, proc.stderr
    return dict(zip(("blobs", "uploaded", "mounted", "present"), map(int, m.groups())))


def test_push_then_pull_gives_the_same_file(registry, traces, tmp):
    ref = f"{registry.host}/team/model:v1"
    digest = pushed(traces["base"], ref).stdout.strip()
    manifest = json.loads(registry.get("/v2/team/model/manifests/v1", "application/vnd.oci.image.manifest.v1+json"))
    assert manifest["artifactType"] == "application/vnd.trtrace.trace.v1"
    assert manifest["config"]["mediaType"] == "application/vnd.trtrace.config.v1+json"
    kinds = [l["mediaType"] for l in manifest["layers"]]
    assert kinds == ["application/vnd.trtrace.log.v1"] + ["application/vnd.trtrace.weights.v1"] * 4  # 4 layers' weights
    for key in (
        "org.trtrace.library.version",
        "org.trtrace.networks",
        "org.trtrace.builds",
        "org.trtrace.bytes.logical",
        "org.trtrace.bytes.unique",
        "org.trtrace.bytes.stored",
    ):
        assert key in manifest["annotations"], key
    assert manifest["annotations"]["org.trtrace.builds"] == "1"
    for ref_ in (ref, f"{registry.host}/team/model@{digest}", f"oci://{registry.host}/team/model:v1"):
        out = tmp / "pulled.trtrace"
        assert ok(trtrace("pull", "--plain-http", ref_, "-o", out)).stdout.strip() == digest
        assert sha256(out) == sha256(traces["base"])
        out.unlink()


def test_a_second_push_uploads_nothing_and_another_repository_mounts(registry, traces):
    first = summary(pushed(traces["base"], f"{registry.host}/team/model:v1"))
    assert first["uploaded"] == first["blobs"] == 6  # config, log, 4 weights
    again = summary(pushed(traces["base"], f"{registry.host}/team/model:v2"))
    assert again["present"] == 6 and again["uploaded"] == 0
    other = summary(pushed(traces["base"], f"{registry.host}/other/model:v1", "--mount-from", "team/model"))
    assert other["mounted"] == 6 and other["uploaded"] == 0


def test_one_changed_layer_uploads_one_weight_blob(registry, traces):
    pushed(traces["base"], f"{registry.host}/team/model:base")
    before = registry.blobs()
    second = summary(pushed(traces["changed"], f"{registry.host}/team/model:changed"))
    new = registry.blobs() - before
    assert second["uploaded"] == 3 and second["present"] == 3  # config, log and the changed weight
    manifest = json.loads(
        registry.get("/v2/team/model/manifests/changed", "application/vnd.oci.image.manifest.v1+json")
    )
    weights = {l["digest"].split(":")[1] for l in manifest["layers"] if l["mediaType"].endswith("weights.v1")}
    assert len(new & weights) == 1 and len(new) == 4  # and the manifest (the registry stores it as a blob)


def test_chunked_push_and_pull_of_big_weights(registry, traces, tmp):
    ref = f"{registry.host}/team/big:v1"
    pushed(traces["big"], ref, "--chunk-mib", "1")  # 4 MiB weights: 4 PATCH chunks each
    ok(trtrace("pull", "--plain-http", ref, "-o", tmp / "big.trtrace"))
    assert sha256(tmp / "big.trtrace") == sha256(traces["big"])


def test_pull_of_a_missing_tag_is_one_line_and_writes_nothing(registry, traces, tmp):
    pushed(traces["base"], f"{registry.host}/team/model:v1")
    out = tmp / "out.trtrace"
    one_line_error(
        trtrace("pull", "--plain-http", f"{registry.host}/team/model:nope", "-o", out),
        1,
        f"{registry.host}/team/model:nope",
        "HTTP 404",
        "MANIFEST_UNKNOWN",
    )
    assert not out.exists() and not list(tmp.glob("out.trtrace*"))


def test_pull_of_something_that_is_not_a_trace_is_corrupt(registry, tmp):
    config = b"{}"
    cd = "sha256:" + hashlib.sha256(config).hexdigest()
    base = f"http://{registry.host}"
    loc = urllib.parse.urljoin(
        base,
        urllib.request.urlopen(urllib.request.Request(base + "/v2/x/y/blobs/uploads/", method="POST")).headers[
            "Location"
        ],
    )
    urllib.request.urlopen(
        urllib.request.Request(
            loc + ("&" if "?" in loc else "?") + "digest=" + cd,
            data=config,
            method="PUT",
            headers={"Content-Type": "application/octet-stream"},
        )
    )
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": 2},
            "layers": [],
        }
    ).encode()
    urllib.request.urlopen(
        urllib.request.Request(
            f"http://{registry.host}/v2/x/y/manifests/img",
            data=manifest,
            method="PUT",
            headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
        )
    )
    out = tmp / "out.trtrace"
    one_line_error(trtrace("pull", "--plain-http", f"{registry.host}/x/y:img", "-o", out), 2, "not a trtrace trace")
    assert not out.exists()


def upload(registry, repo, data):
    """Puts `data` as a blob of `repo` (monolithic upload); returns its digest."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    base = f"http://{registry.host}"
    loc = urllib.parse.urljoin(
        base,
        urllib.request.urlopen(urllib.request.Request(f"{base}/v2/{repo}/blobs/uploads/", method="POST")).headers[
            "Location"
        ],
    )
    urllib.request.urlopen(
        urllib.request.Request(
            loc + ("&" if "?" in loc else "?") + "digest=" + digest,
            data=data,
            method="PUT",
            headers={"Content-Type": "application/octet-stream"},
        )
    )
    return digest


def put_manifest(registry, repo, tag, manifest):
    urllib.request.urlopen(
        urllib.request.Request(
            f"http://{registry.host}/v2/{repo}/manifests/{tag}",
            data=json.dumps(manifest).encode(),
            method="PUT",
            headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
        )
    )


def overlap(c, m):
    c["pieces"][1]["offset"] = c["pieces"][0]["offset"] + 1


def past_end(c, m):
    c["pieces"][-1]["offset"] = c["size"] - 1


def piece_size(c, m):
    c["pieces"][0]["size"] += 1


def log_size(c, m):
    c["log"]["size"] += 1


def newer_layout(c, m):
    c["layout"] = 2


def no_pieces(c, m):
    del c["pieces"]


def unlisted_layer(c, m):
    m["layers"] = m["layers"][:2]


def not_hex(c, m):
    c["pieces"][0]["digest"] = "sha256:" + "Z" * 64


def bad_file_digest(c, m):
    c["digest"] = "sha256:" + "0" * 64


def huge_config(c, m):
    m["config_size"] = 1 << 40


HOSTILE = {
    overlap: "overlapping",
    past_end: "past the end",
    piece_size: "size differs from its layer",
    log_size: "log's size",
    newer_layout: "layout version is not 1",
    no_pieces: "lacks size, digest, log or pieces",
    unlisted_layer: "is not in the manifest",
    not_hex: "not sha256:<64 hex>",
    bad_file_digest: "does not match the pushed file's digest",
    huge_config: "config declares 1099511627776 bytes",
}


@pytest.mark.parametrize("damage", HOSTILE, ids=[f.__name__ for f in HOSTILE])
def test_a_hostile_config_or_manifest_is_one_line_and_writes_nothing(registry, traces, tmp, damage):
    """Configs and manifests that break the layout's rules (docs/format.md, "OCI artifact"): refused
    before anything is written, never trusted for an offset, a size or an allocation."""
    pushed(traces["base"], f"{registry.host}/team/model:v1")
    manifest = json.loads(registry.get("/v2/team/model/manifests/v1", "application/vnd.oci.image.manifest.v1+json"))
    config = json.loads(registry.get(f"/v2/team/model/blobs/{manifest['config']['digest']}"))
    damage(config, manifest)
    data = json.dumps(config).encode()
    manifest["config"]["digest"] = upload(registry, "team/model", data)
    manifest["config"]["size"] = manifest.pop("config_size", len(data))
    put_manifest(registry, "team/model", "bad", manifest)
    out = tmp / "x.trtrace"
    one_line_error(trtrace("pull", "--plain-http", f"{registry.host}/team/model:bad", "-o", out), 2, HOSTILE[damage])
    assert not out.exists() and not list(tmp.glob("x.trtrace*"))


@pytest.mark.parametrize(
    "ref",
    [
        "nohost",
        "127.0.0.1:5000/UPPER:tag",
        "127.0.0.1:5000/a/b:bad tag",
        "127.0.0.1:5000/a@sha256:abc",
        "127.0.0.1:5000/a/../b:t",
    ],
)
def test_a_bad_reference_is_one_line(ref, traces, tmp):
    one_line_error(trtrace("push", "--plain-http", traces["base"], ref), 1, "reference")
    one_line_error(trtrace("pull", "--plain-http", ref, "-o", tmp / "x.trtrace"), 1, "reference")


def test_an_unreachable_registry_is_one_line(traces, tmp):
    ref = f"127.0.0.1:{free_port()}/a/b:t"
    one_line_error(trtrace("push", "--plain-http", traces["base"], ref), 1, ref)
    one_line_error(trtrace("pull", "--plain-http", ref, "-o", tmp / "x.trtrace"), 1, ref)
    assert not (tmp / "x.trtrace").exists()


def test_push_refuses_a_trace_that_was_not_closed(registry, traces, tmp):
    cut = tmp / "cut.trtrace"
    data = traces["base"].read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    one_line_error(trtrace("push", "--plain-http", cut, f"{registry.host}/a/b:t"), 3, "cut.trtrace")
    assert registry.blobs() == set()


# --- auth and TLS ----------------------------------------------------------------------------------


def docker_config(folder, host, user, password):
    folder.mkdir(exist_ok=True)
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    return {"DOCKER_CONFIG": str(folder)}


def test_basic_auth_from_the_docker_config(tmp, traces):
    htpasswd = tmp / "htpasswd"
    subprocess.run(["htpasswd", "-Bbc", str(htpasswd), "alice", "s3cret"], check=True, capture_output=True)
    reg = Registry(tmp, htpasswd=htpasswd)
    try:
        ref = f"{reg.host}/team/model:v1"
        one_line_error(trtrace("push", "--plain-http", traces["base"], ref), 1, ref, "HTTP 401", "no credentials")
        wrong = docker_config(tmp / "wrong", reg.host, "alice", "nope")
        one_line_error(trtrace("push", "--plain-http", traces["base"], ref, env=wrong), 1, ref, "HTTP 401")
        good = docker_config(tmp / "good", reg.host, "alice", "s3cret")
        pushed(traces["base"], ref, env=good)
        out = tmp / "pulled.trtrace"
        ok(trtrace("pull", "--plain-http", ref, "-o", out, "--registry-config", tmp / "good" / "config.json"))
        assert sha256(out) == sha256(traces["base"])
    finally:
        reg.stop()


def self_signed(folder):
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_with_a_self_signed_certificate_needs_ca_file(tmp, traces):
    cert, key = self_signed(tmp)
    reg = Registry(tmp, tls=(cert, key))
    try:
        ref = f"{reg.host}/team/model:v1"
        one_line_error(trtrace("push", traces["base"], ref), 1, ref, "certificate")
        ok(trtrace("push", traces["base"], ref, "--ca-file", cert))
        out = tmp / "pulled.trtrace"
        ok(trtrace("pull", ref, "-o", out, "--ca-file", cert))
        assert sha256(out) == sha256(traces["base"])
    finally:
        reg.stop()


# --- a proxy for what a plain registry does not do -------------------------------------------------

# WWW-Authenticate forms of the token flow (RFC 7235): the distribution server's; a Basic challenge
# before it, a quoted-pair and an unquoted token; the scheme in lowercase, spaces around '='.
CHALLENGES = [
    'Bearer realm="{realm}",service="fake-registry",scope="repository:team/model:pull"',
    'Basic realm="x, y", Bearer realm="{realm}",service="fake \\"quoted\\" registry",scope=none',
    'bearer  realm = "{realm}" , service = fake',
]


class RegistryProxy(http.server.ThreadingHTTPServer):
    """Forwards to `upstream`; `mode` adds one behaviour:
    token: the distribution token flow (401 Bearer challenge; /token gives a token for user:pass);
    redirect: a blob GET is answered 307 to /storage/..., which this proxy serves from upstream;
    drop: a blob GET of a weight sends half its bytes then closes the connection (`drops` times);
    status500: a blob GET answers 500; corrupt: a blob GET's bytes have one byte flipped; oversize: 4 KiB more."""

    daemon_threads = True

    def __init__(self, upstream, mode, drops=1):
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream, self.mode, self.drops = upstream, mode, drops
        self.host = f"127.0.0.1:{self.server_address[1]}"
        self.seen = []  # (method, path, range header)
        self.token = "tok-" + hashlib.sha256(os.urandom(8)).hexdigest()[:16]
        self.challenge = CHALLENGES[0]  # token mode: the WWW-Authenticate value ({realm} filled in)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.shutdown()
        self.server_close()


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.handle_any()

    do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = do_GET

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        srv = self.server
        srv.seen.append((self.command, self.path, self.headers.get("Range")))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if srv.mode == "token" and not self.token_ok():
            return
        blob_get = self.command == "GET" and "/blobs/sha256:" in self.path
        if srv.mode == "redirect" and blob_get and not self.path.startswith("/storage/"):
            return self.reply(307, headers=[("Location", f"http://{srv.host}/storage{self.path}")])
        path = self.path[len("/storage") :] if self.path.startswith("/storage/") else self.path
        if srv.mode == "status500" and blob_get:
            return self.reply(500, json.dumps({"errors": [{"code": "UNKNOWN", "message": "disk on fire"}]}).encode())
        status, headers, data = self.forward(path, body)
        if blob_get and status in (200, 206):
            return self.blob_reply(status, headers, data)
        self.reply(status, data, headers)

    def token_ok(self):
        srv = self.server
        if self.path.startswith("/token"):
            auth = self.headers.get("Authorization", "")
            if (
                auth != "Basic " + base64.b64encode(b"bob:hunter2").decode()
                or "scope=repository%3Ateam%2Fmodel%3A" not in self.path
            ):
                self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}')
            else:
                self.reply(200, json.dumps({"token": srv.token}).encode())
            return False
        if self.headers.get("Authorization") != f"Bearer {srv.token}":
            challenge = srv.challenge.format(realm=f"http://{srv.host}/token")
            self.reply(
                401, b'{"errors":[{"code":"UNAUTHORIZED","message":"token needed"}]}', [("WWW-Authenticate", challenge)]
            )
            return False
        return True

    def forward(self, path, body):
        conn = http.client.HTTPConnection(self.server.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("authorization", "connection")}
        conn.request(self.command, path, body=body if self.command not in ("GET", "HEAD") else None, headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return (
            r.status,
            [
                (k, v)
                for k, v in r.getheaders()
                if k.lower() not in ("content-length", "connection", "transfer-encoding")
            ],
            data,
        )

    def blob_reply(self, status, headers, data):
        srv = self.server
        if srv.mode == "corrupt" and len(data) > 1000:
            data = data[:500] + bytes([data[500] ^ 1]) + data[501:]
        if srv.mode == "oversize":
            data += b"\0" * 4096
        if srv.mode == "drop" and srv.drops > 0 and len(data) > 1000:
            srv.drops -= 1
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.reply(status, data, headers)


@pytest.fixture
def proxied(registry, traces):
    """A proxy maker over a registry that holds traces['base'] as team/model:v1."""
    pushed(traces["base"], f"{registry.host}/team/model:v1")
    made = []

    def make(mode, **kw):
        made.append(RegistryProxy(registry.host, mode, **kw))
        return made[-1]

    yield make
    for p in made:
        p.stop()


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_the_token_flow(proxied, traces, tmp, challenge):
    proxy = proxied("token")
    proxy.challenge = challenge
    ref = f"{proxy.host}/team/model:v1"
    one_line_error(trtrace("pull", "--plain-http", ref, "-o", tmp / "x.trtrace"), 1, ref, "HTTP 401", "token")
    env = docker_config(tmp / "cfg", proxy.host, "bob", "hunter2")
    ok(trtrace("pull", "--plain-http", ref, "-o", tmp / "x.trtrace", env=env))
    assert sha256(tmp / "x.trtrace") == sha256(traces["base"])
    pushed(traces["changed"], f"{proxy.host}/team/model:v2", env=env)  # push scope too


def test_redirects_to_blob_storage_are_followed(proxied, traces, tmp):
    proxy = proxied("redirect")
    ok(trtrace("pull", "--plain-http", f"{proxy.host}/team/model:v1", "-o", tmp / "x.trtrace"))
    assert sha256(tmp / "x.trtrace") == sha256(traces["base"])
    assert any(p.startswith("/storage/") for _, p, _ in proxy.seen)


def test_a_dropped_connection_resumes_with_a_range_request(proxied, traces, tmp):
    proxy = proxied("drop", drops=1)
    ok(trtrace("pull", "--plain-http", "-j", "1", f"{proxy.host}/team/model:v1", "-o", tmp / "x.trtrace"))
    assert sha256(tmp / "x.trtrace") == sha256(traces["base"])
    assert any(r and r.startswith("bytes=") and r != "bytes=0-" for _, _, r in proxy.seen), proxy.seen


def test_a_connection_dropped_every_time_is_one_line_and_a_retry_completes(proxied, traces, tmp):
    proxy = proxied("drop", drops=1000)
    ref = f"{proxy.host}/team/model:v1"
    out = tmp / "x.trtrace"
    one_line_error(trtrace("pull", "--plain-http", ref, "-o", out), 1, ref, "GET blob sha256:")
    assert not out.exists() and not list(tmp.glob("x.trtrace*"))
    proxy.drops = 0
    ok(trtrace("pull", "--plain-http", ref, "-o", out))
    assert sha256(out) == sha256(traces["base"])


def test_a_registry_error_is_one_line_and_writes_nothing(proxied, tmp):
    proxy = proxied("status500")
    ref = f"{proxy.host}/team/model:v1"
    out = tmp / "x.trtrace"
    one_line_error(trtrace("pull", "--plain-http", ref, "-o", out), 1, ref, "HTTP 500", "UNKNOWN: disk on fire")
    assert not out.exists() and not list(tmp.glob("x.trtrace*"))


@pytest.mark.parametrize("mode,words", [("corrupt", "do not match"), ("oversize", "more bytes than the size expected")])
def test_a_blob_that_does_not_match_its_digest_is_corrupt(proxied, tmp, mode, words):
    proxy = proxied(mode)
    ref = f"{proxy.host}/team/model:v1"
    out = tmp / "x.trtrace"
    one_line_error(trtrace("pull", "--plain-http", ref, "-o", out), 2, ref, words)
    assert not out.exists() and not list(tmp.glob("x.trtrace*"))


# --- interoperability ------------------------------------------------------------------------------


def test_oras_pulls_what_trtrace_pushed_and_garbage_collection_keeps_it(registry, traces, tmp):
    oras = pytest.importorskip("oras.client")
    ref = f"{registry.host}/team/model:v1"
    pushed(traces["base"], ref)
    client = oras.OrasClient(hostname=registry.host, insecure=True)
    assert "v1" in client.get_tags(f"{registry.host}/team/model")
    files = client.pull(target=ref, outdir=str(tmp / "oras"))
    names = sorted(pathlib.Path(f).name for f in files)
    assert names[0] == "base.trtrace" and len(names) == 5  # the log (titled as the trace) and 4 weights
    registry.stop()
    gc = subprocess.run([REGISTRY, "garbage-collect", str(registry.config)], capture_output=True, text=True)
    assert gc.returncode == 0, gc.stderr
    registry.start()
    out = tmp / "after-gc.trtrace"
    ok(trtrace("pull", "--plain-http", ref, "-o", out))
    assert sha256(out) == sha256(traces["base"])


# --- replay and read from a reference --------------------------------------------------------------


def by_reference(tmp, *cmd):
    env = dict(
        os.environ, TRTRACE_REGISTRY_PLAIN_HTTP="1", TRTRACE_OCI_CACHE=str(tmp / "oci-cache"), HOME="/nonexistent"
    )
    env.pop("DOCKER_CONFIG", None)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)


def test_replay_from_a_reference_gives_the_local_traces_engine(registry, traces, tmp):
    ref = f"oci://{registry.host}/team/model:v1"
    pushed(traces["base"], ref)
    local = subprocess.run(
        [str(PLAYER), "-j", traces["base"], "-o", tmp / "local.engine", "--lib", trt_lib()],
        capture_output=True,
        text=True,
    )
    assert local.returncode == 0, local.stderr
    remote = by_reference(tmp, PLAYER, "-j", ref, "-o", tmp / "remote.engine", "--lib", trt_lib())
    assert remote.returncode == 0, remote.stderr
    assert (tmp / "remote.engine").read_bytes() == (tmp / "local.engine").read_bytes()
    cached = sorted((tmp / "oci-cache").glob("*.trtrace"))
    assert [p.name for p in cached] == [sha256(traces["base"]) + ".trtrace"] and sha256(cached[0]) == sha256(
        traces["base"]
    )
    info = by_reference(tmp, TRTRACE, "info", "--json", ref)
    assert info.returncode == 0 and json.loads(info.stdout)["calls"] > 0, info.stderr


def test_the_reference_cache_is_private_and_a_changed_file_is_pulled_again(registry, traces, tmp):
    ref = f"oci://{registry.host}/team/model:v1"
    pushed(traces["base"], ref)
    assert by_reference(tmp, TRTRACE, "verify", ref).returncode == 0
    cached = next((tmp / "oci-cache").glob("*.trtrace"))
    data = bytearray(cached.read_bytes())
    data[100] ^= 1
    cached.write_bytes(bytes(data))
    assert by_reference(tmp, TRTRACE, "verify", ref).returncode == 0  # the damaged copy is not used
    assert sha256(cached) == sha256(traces["base"])
    (tmp / "oci-cache").chmod(0o777)
    for cmd in ([TRTRACE, "verify", ref], [PLAYER, "-j", ref, "-o", tmp / "x.engine", "--lib", trt_lib()]):
        p = by_reference(tmp, *cmd)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "must be private" in p.stderr, p.stderr
    (tmp / "oci-cache").chmod(0o700)
    missing = by_reference(tmp, TRTRACE, "diff", ref, f"oci://{registry.host}/team/model:nope")
    assert missing.returncode == 2 and "HTTP 404" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


# --- the layer store: resume across runs, layers fetched once, only what a tool needs --------------


def stored_layers(tmp):
    return {p.name for p in (tmp / "oci-cache" / "blobs" / "sha256").iterdir()}


def blob_gets(proxy):
    return [path.rsplit(":", 1)[1] for method, path, _ in proxy.seen if method == "GET" and "/blobs/" in path]


def test_a_failed_pull_resumes_where_it_stopped_in_the_next_run(proxied, traces, tmp):
    """The bytes a failed pull received stay in the private layer store (never beside -o): the next
    pull asks only for the rest of that blob (Range) and nothing already stored."""
    proxy = proxied("drop", drops=1000)  # every weight transfer breaks: the first one fails this run
    ref = f"{proxy.host}/team/model:v1"
    out = tmp / "x.trtrace"
    one_line_error(trtrace("pull", "--plain-http", "-j", "1", ref, "-o", out), 1, ref, "GET blob sha256:")
    assert not out.exists() and not list(tmp.glob("x.trtrace*"))
    partial = [n for n in stored_layers(tmp) if n.endswith(".partial")]
    assert len(partial) == 1 and (tmp / "oci-cache/blobs/sha256" / partial[0]).stat().st_size > 0
    done_before = {n for n in stored_layers(tmp) if not n.endswith(".partial")}
    proxy.seen.clear()
    proxy.drops = 0
    ok(trtrace("pull", "--plain-http", "-j", "1", ref, "-o", out))
    assert sha256(out) == sha256(traces["base"])
    fetched = blob_gets(proxy)
    assert not set(fetched) & done_before, (fetched, done_before)
    ranges = [r for _, path, r in proxy.seen if partial[0].split(".")[0] in path]
    assert ranges and ranges[0].startswith("bytes=") and ranges[0] != "bytes=0-", proxy.seen
    assert not [n for n in stored_layers(tmp) if n.endswith(".partial")]


def test_a_damaged_partial_layer_is_fetched_again_whole(proxied, traces, tmp):
    proxy = proxied("drop", drops=1000)
    ref = f"{proxy.host}/team/model:v1"
    out = tmp / "x.trtrace"
    one_line_error(trtrace("pull", "--plain-http", "-j", "1", ref, "-o", out), 1, ref)
    partial = next((tmp / "oci-cache/blobs/sha256").glob("*.partial"))
    data = bytearray(partial.read_bytes())
    data[0] ^= 0xFF
    partial.write_bytes(bytes(data))
    proxy.drops, proxy.seen = 0, []
    ok(trtrace("pull", "--plain-http", "-j", "1", ref, "-o", out))
    assert sha256(out) == sha256(traces["base"])
    ranges = [r for _, path, r in proxy.seen if partial.name.split(".")[0] in path]
    assert len(ranges) == 2 and ranges[0] != "bytes=0-" and ranges[1] is None, ranges


def test_a_layer_another_trace_brought_is_not_fetched_again(registry, proxied, traces, tmp):
    pushed(traces["base"], f"{registry.host}/team/model:v1")
    pushed(traces["changed"], f"{registry.host}/team/model:v2")
    proxy = proxied("none")
    ok(trtrace("pull", "--plain-http", f"{proxy.host}/team/model:v1", "-o", tmp / "v1.trtrace"))
    first = set(blob_gets(proxy))
    proxy.seen.clear()
    ok(trtrace("pull", "--plain-http", f"{proxy.host}/team/model:v2", "-o", tmp / "v2.trtrace"))
    assert sha256(tmp / "v2.trtrace") == sha256(traces["changed"])
    second = set(blob_gets(proxy))
    # The config, the log and the one changed weight blob: the 3 other weights were stored by v1.
    assert len(second) == 3 and len(second - first) == 3, (first, second)
    proxy.seen.clear()
    ok(trtrace("pull", "--plain-http", "--no-cache", f"{proxy.host}/team/model:v2", "-o", tmp / "again.trtrace"))
    assert sha256(tmp / "again.trtrace") == sha256(traces["changed"]) and len(set(blob_gets(proxy))) == 6


def test_info_and_one_network_replay_fetch_only_what_they_read(registry, tmp):
    two = tmp / "two.trtrace"
    capture("build_cnn.py", two, "--out", tmp / "app.engine", "--networks", "2")
    ref = f"oci://{registry.host}/team/two:v1"
    pushed(two, ref)
    local_info = json.loads(ok(trtrace("info", "--json", two)).stdout)
    info = by_reference(tmp, TRTRACE, "info", "--json", ref)
    assert info.returncode == 0, info.stderr
    remote_info = json.loads(info.stdout)
    assert remote_info.pop("path") != local_info.pop("path") and remote_info == local_info
    assert len(stored_layers(tmp)) == 1  # the call log only: not one weight was fetched
    local = subprocess.run(
        [str(PLAYER), "-j", two, "--network", "1", "-o", tmp / "local.engine", "--lib", trt_lib()],
        capture_output=True,
        text=True,
    )
    assert local.returncode == 0, local.stderr
    remote = by_reference(tmp, PLAYER, "-j", ref, "--network", "1", "-o", tmp / "remote.engine", "--lib", trt_lib())
    assert remote.returncode == 0, remote.stderr
    assert (tmp / "remote.engine").read_bytes() == (tmp / "local.engine").read_bytes()
    one = stored_layers(tmp)
    everything = by_reference(tmp, PLAYER, "-j", ref, "-o", tmp / "all.engine", "--lib", trt_lib())
    assert everything.returncode == 0, everything.stderr
    assert 1 < len(one) < len(stored_layers(tmp)), (one, stored_layers(tmp))
    assert not list((tmp / "oci-cache").glob("*.trtrace.*"))  # the partial traces went with their runs


def test_a_config_whose_pieces_lie_is_caught_before_the_library_sees_them(registry, tmp):
    """A config that keeps every rule of the layout but names another layer of the same size for a
    piece (two digests swapped): a replay of one network fetches only its own pieces, so the pushed
    file's digest is never checked; the player's content check of every weight is what stands. Each
    network either replays to the engine of the trace as pushed, or fails with one line and no
    engine; one of them fails."""
    two = tmp / "two.trtrace"
    capture("build_cnn.py", two, "--out", tmp / "app.engine", "--networks", "2")
    pushed(two, f"{registry.host}/team/two:v1")
    manifest = json.loads(registry.get("/v2/team/two/manifests/v1", "application/vnd.oci.image.manifest.v1+json"))
    config = json.loads(registry.get(f"/v2/team/two/blobs/{manifest['config']['digest']}"))
    pieces = config["pieces"]
    a, b = next((p, q) for p in pieces for q in pieces if p["size"] == q["size"] and p["digest"] != q["digest"])
    a["digest"], b["digest"] = b["digest"], a["digest"]
    data = json.dumps(config).encode()
    manifest["config"]["digest"] = upload(registry, "team/two", data)
    manifest["config"]["size"] = len(data)
    put_manifest(registry, "team/two", "bad", manifest)
    failed = 0
    for network in ("0", "1"):
        local, remote = tmp / f"local{network}.engine", tmp / f"remote{network}.engine"
        args = ["--network", network, "--lib", trt_lib(), "-q"]
        ok_local = subprocess.run([str(PLAYER), "-j", two, "-o", local, *args], capture_output=True, text=True)
        assert ok_local.returncode == 0, ok_local.stderr
        p = by_reference(tmp, PLAYER, "-j", f"oci://{registry.host}/team/two:bad", "-o", remote, *args)
        if p.returncode == 0:
            assert remote.read_bytes() == local.read_bytes()
            continue
        failed += 1
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "hash" in p.stderr and not remote.exists(), p.stderr
    assert failed >= 1
