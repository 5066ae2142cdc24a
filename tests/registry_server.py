"""A real OCI registry for the tests and benches: Debian's docker-registry (the CNCF distribution
server, tools/setup.sh installs it) on 127.0.0.1, filesystem storage in a folder of the caller's,
with htpasswd auth or a certificate where asked (tests/test_registry.py, bench/registry_bench.py)."""

import shutil
import socket
import subprocess
import time
import urllib.request

REGISTRY = shutil.which("docker-registry")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """docker-registry serving folder/storage on a free port; `auth`: an htpasswd file; `tls`: (cert, key)."""

    def __init__(self, folder, htpasswd=None, tls=None):
        self.folder, self.storage = folder, folder / "storage"
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.tls = tls
        cfg = [
            "version: 0.1",
            "log:",
            "  level: error",
            "storage:",
            "  filesystem:",
            f"    rootdirectory: {self.storage}",
            "  delete:",
            "    enabled: true",
            "http:",
            f"  addr: {self.host}",
        ]
        if tls:
            cfg += ["  tls:", f"    certificate: {tls[0]}", f"    key: {tls[1]}"]
        if htpasswd:
            cfg += ["auth:", "  htpasswd:", "    realm: trtrace-test", f"    path: {htpasswd}"]
        self.config = folder / "registry.yml"
        self.config.write_text("\n".join(cfg) + "\n")
        self.proc = None
        self.start()

    def start(self):
        self.log = open(self.folder / "registry.log", "ab")
        self.proc = subprocess.Popen([REGISTRY, "serve", str(self.config)], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60  # readiness, not a timing assertion
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("docker-registry did not start: " + (self.folder / "registry.log").read_text())
                time.sleep(0.05)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def blobs(self):
        """Digests of the blobs the registry stores (its filesystem layout)."""
        root = self.storage / "docker" / "registry" / "v2" / "blobs" / "sha256"
        return {p.parent.name for p in root.glob("*/*/data")} if root.exists() else set()

    def bytes(self):
        """What the registry's storage holds on disk."""
        return sum(p.stat().st_size for p in self.storage.rglob("*") if p.is_file()) if self.storage.exists() else 0

    def get(self, path, accept=None):
        req = urllib.request.Request(f"http://{self.host}{path}", headers={"Accept": accept} if accept else {})
        with urllib.request.urlopen(req) as r:
            return r.read()
