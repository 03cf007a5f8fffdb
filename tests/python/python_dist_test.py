#!/usr/bin/python3
"""examples/python/train_sage.py as 2 torch.distributed processes (torchrun)
against 2 `shardgnn serve` servers of bundled Cora with an auth token: it
must exit 0 with a test accuracy of at least 0.70; with --servers naming an
address nothing listens on it must fail with a clear message, and with a bad
argument at once.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/python_dist_test.py \\
        --shardgnn build/cli/shardgnn [--epochs 30] [-v]

Needs Debian's python3-torch (hence /usr/bin/python3). Other arguments go to
unittest.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import shardgnn_children

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAIN_SAGE = os.path.join(SOURCE, "examples", "python", "train_sage.py")
SHARDGNN = None
EPOCHS = 30
MIN_ACCURACY = 0.70
SERVER_TIMEOUT = 60  # Seconds for a server's ready line.
TRAIN_TIMEOUT = 110  # Seconds for the whole torchrun run.
BAD_SERVERS_SECONDS = 45  # train_sage.py waits 30 s for the servers.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_shardgnn(*args):
    shardgnn_children.run_shardgnn(SHARDGNN, *args)


def torchrun(work, name, *script_args):
    """The argv of 2 local ranks of train_sage.py."""
    return [
        "/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1",
        "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
        "--master_port",
        str(free_port()), "--redirects", "1", "--tee", "1", "--log_dir",
        os.path.join(work, "logs-" + name), TRAIN_SAGE, *script_args
    ]


class TrainSageDistributedTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.TemporaryDirectory(prefix="shardgnn_dist_test_")
        cls.addClassCleanup(cls.work.cleanup)
        w = cls.work.name
        cora = os.path.join(w, "cora")
        cls.partition = os.path.join(w, "cora-2parts")
        run_shardgnn("dataset", "import", "--format", "ogb", "--undirected",
                     "--input",
                     os.path.join(SOURCE, "datasets", "cora", "ogb-planetoid"),
                     "--out", cora)
        run_shardgnn("partition", "--dataset", cora, "--parts", "2", "--out",
                     cls.partition)
        cls.token = os.path.join(w, "cluster.token")
        with open(os.open(cls.token, os.O_WRONLY | os.O_CREAT, 0o600),
                  "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        cls.servers = ",".join(
            shardgnn_children.start_servers(SHARDGNN, cls.partition, 2,
                                            cls.token, cls.addClassCleanup,
                                            SERVER_TIMEOUT))

    def test_trains_cora_with_two_ranks(self):
        # The run with unreachable servers waits in parallel (it idles).
        dead = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
        bad_start = time.monotonic()
        bad = subprocess.Popen(torchrun(self.work.name, "bad", "--servers",
                                        dead),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        try:
            start = time.monotonic()
            run = subprocess.run(torchrun(self.work.name, "good", "--servers",
                                          self.servers, "--auth-token-file",
                                          self.token, "--epochs",
                                          str(EPOCHS)),
                                 capture_output=True, text=True,
                                 timeout=TRAIN_TIMEOUT)
            seconds = time.monotonic() - start
            bad_output, _ = bad.communicate(timeout=BAD_SERVERS_SECONDS + 10)
            bad_seconds = time.monotonic() - bad_start
        finally:
            if bad.poll() is None:
                bad.kill()
                bad.wait()
        output = run.stdout + run.stderr
        self.assertEqual(run.returncode, 0, output)
        marker = '{"test_accuracy"'
        lines = [l for l in output.splitlines() if marker in l]
        self.assertEqual(len(lines), 1, f"rank 0 alone prints it:\n{output}")
        summary = json.loads(lines[0][lines[0].index(marker):])
        epoch_lines = [l for l in output.splitlines() if "val acc" in l]
        print(f"\ntrain_sage.py, 2 ranks, Cora: {summary} in {seconds:.1f} s"
              f"\n{epoch_lines[-1] if epoch_lines else ''}",
              file=sys.stderr)
        self.assertEqual(summary["world_size"], 2)
        self.assertGreaterEqual(summary["test_accuracy"], MIN_ACCURACY, output)
        self.assertGreaterEqual(summary["best_epoch"], 1)
        self.assertGreater(summary["epoch_seconds_mean"], 0)
        self.assertIn("2 parts", output)

        print(f"unreachable --servers: exit {bad.returncode} after "
              f"{bad_seconds:.1f} s", file=sys.stderr)
        self.assertNotEqual(bad.returncode, 0, bad_output)
        self.assertLess(bad_seconds, BAD_SERVERS_SECONDS, bad_output)
        self.assertIn("train_sage.py: rank 0: cannot read the graph from",
                      bad_output)
        self.assertIn("no storage server answered", bad_output)
        self.assertNotIn("val acc", bad_output)

    def test_bad_arguments_fail_at_once(self):
        for args in (["--servers", self.servers, "--fanouts", "10,x"],
                     ["--servers", self.servers, "--batch-size", "0"],
                     ["--epochs", "3"]):  # Neither --servers nor --dataset.
            done = subprocess.run(["/usr/bin/python3", TRAIN_SAGE, *args],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn("train_sage.py: error:", done.stderr)

    def test_a_wrong_token_fails(self):
        other = os.path.join(self.work.name, "other.token")
        with open(os.open(other, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("fedcba9876543210fedcba9876543210\n")
        done = subprocess.run(["/usr/bin/python3", TRAIN_SAGE, "--servers",
                               self.servers, "--auth-token-file", other],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("cannot read the graph", done.stderr)
        self.assertIn("token", done.stderr)


def main():
    global SHARDGNN, EPOCHS
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--shardgnn", required=True)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args, rest = parser.parse_known_args()
    SHARDGNN = os.path.abspath(args.shardgnn)
    EPOCHS = args.epochs
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
