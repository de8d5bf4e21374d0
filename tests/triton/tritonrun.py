"""tritonrun.py: starts and stops a real tritonserver for braid's Triton tests
and benchmarks (tests/triton/test_triton.py, scripts/bench-triton): a model
repository written from models/gen and models/real, free loopback ports, a
server that cannot outlive the process that started it (PR_SET_PDEATHSIG),
readiness and log waits that are bounded in time.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SERVER = os.path.join(ROOT, ".venv-triton", "pytriton", "pytriton", "tritonserver", "bin", "tritonserver")


def find_server(path=None):
    """The tritonserver binary, or None with the reason."""
    path = path or os.environ.get("BRAID_TRITONSERVER") or DEFAULT_SERVER
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return None, f"no tritonserver at {path} (scripts/setup installs it from PyPI's nvidia-pytriton)"
    return path, ""


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (the kernel's choice)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def write_model(repo, name, onnx_path, config):
    """repo/name/config.pbtxt and repo/name/1/model.onnx."""
    d = os.path.join(repo, name)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    shutil.copyfile(onnx_path, os.path.join(d, "1", "model.onnx"))
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(config)


def _die_with_parent():
    # The server gets SIGKILL when the process that started it dies, even by
    # SIGKILL (a ctest timeout): no server outlives its test.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Server:
    """A tritonserver on 127.0.0.1 with explicit model control."""

    def __init__(self, binary, repo, backends, log_path, load=(), extra=(), grpc=True):
        self.binary, self.repo, self.backends, self.log_path = binary, repo, backends, log_path
        self.load, self.extra, self.use_grpc = list(load), list(extra), grpc
        self.proc = None
        self.http_port = self.grpc_port = None

    def start(self, timeout=90):
        """Starts the server and waits until it is ready; retries on a port race."""
        last = ""
        for _attempt in range(3):
            self.http_port, self.grpc_port = free_ports(2)
            args = [self.binary, f"--model-repository={self.repo}", f"--backend-directory={self.backends}",
                    "--model-control-mode=explicit", "--allow-metrics=false", "--exit-timeout-secs=10",
                    "--http-address=127.0.0.1", f"--http-port={self.http_port}",
                    "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
                    f"--allow-grpc={'true' if self.use_grpc else 'false'}"]
            args += [f"--load-model={m}" for m in self.load] + self.extra
            self.log = open(self.log_path, "a")
            self.log.write(f"\n### {' '.join(args)}\n")
            self.log.flush()
            self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=_die_with_parent)
            if self._wait_ready(timeout):
                return
            last = self.tail(30)
            self.stop()
            if "address already in use" not in last.lower():
                break
        raise RuntimeError(f"tritonserver did not become ready; the end of its log:\n{last}")

    def _wait_ready(self, timeout):
        import urllib.request
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.http_port}/v2/health/ready"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.2)
        return False

    def stop(self, timeout=30):
        """SIGTERM, then SIGKILL if it has not exited in time; returns the exit code."""
        if self.proc is None:
            return None
        rc = self.proc.poll()
        if rc is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait(timeout=10)
        self.proc = None
        self.log.close()
        return rc

    def tail(self, n=40):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_log(self, predicate, timeout=15):
        """Polls the log until predicate(text) is true; returns the last text."""
        deadline = time.monotonic() + timeout
        text = self.log_text()
        while not predicate(text) and time.monotonic() < deadline:
            time.sleep(0.1)
            text = self.log_text()
        return text

    def http(self, **kw):
        import tritonclient.http as th
        return th.InferenceServerClient(f"127.0.0.1:{self.http_port}", network_timeout=120.0,
                                        connection_timeout=30.0, **kw)

    def grpc(self):
        import tritonclient.grpc as tg
        return tg.InferenceServerClient(f"127.0.0.1:{self.grpc_port}")
