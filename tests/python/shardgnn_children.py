"""The shardgnn binary as child processes, for the Python tests: one-shot
commands and `shardgnn serve` children whose ready line gives their
address."""
import subprocess
import threading


def run_shardgnn(binary, *args):
    """Runs `shardgnn -q ARGS`; RuntimeError with its output if it fails."""
    done = subprocess.run([binary, "-q", *args], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"shardgnn {' '.join(args)} exited "
                           f"{done.returncode}: {done.stdout}{done.stderr}")


class Server:
    """A `shardgnn serve` child whose output a thread reads."""

    def __init__(self, binary, args, name):
        self.name = name
        self.lines = []
        self.ready = threading.Event()
        self.address = None
        self.process = subprocess.Popen([binary, "serve", *args],
                                        stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)
            if self.address is None and "ready on " in line:
                self.address = line.split("ready on ", 1)[1].split()[0]
                self.ready.set()
        self.ready.set()  # Exited: no ready line comes.

    def wait_ready(self, timeout):
        if not self.ready.wait(timeout) or self.address is None:
            raise RuntimeError(f"{self.name} is not ready after {timeout} s: "
                               f"{''.join(self.lines[-10:])}")
        return self.address

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(5)
        self.process.stdout.close()


def start_servers(binary, partition, parts, token_file, cleanup, timeout):
    """One `shardgnn serve --memory` of each part of `partition` on a free
    loopback port, with `token_file`; `cleanup(server.stop)` is called for
    each as soon as it starts (unittest's addClassCleanup, so that a failed
    setUpClass stops them too). Returns their addresses once all are ready."""
    servers = []
    for part in range(parts):
        server = Server(binary, [
            "--partition", partition, "--part",
            str(part), "--listen", "127.0.0.1:0", "--memory",
            "--auth-token-file", token_file
        ], f"server {part}")
        cleanup(server.stop)
        servers.append(server)
    return [s.wait_ready(timeout) for s in servers]
