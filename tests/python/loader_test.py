#!/usr/bin/python3
"""Tests the Python package's loaders (python/shardgnn): NeighborLoader's
batches over a dataset in memory against the dataset's arrays and against
C++'s PrefetchLoader (tests/python/dump_batches.cc), and over real
`shardgnn serve` servers with an auth token.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/loader_test.py \\
        --shardgnn build/cli/shardgnn [--dump-batches build/tests/python/dump_batches] [-v]

Needs Debian's python3-torch (hence /usr/bin/python3) and numpy. Other
arguments go to unittest (e.g. -v, or a test name). Without --dump-batches
the C++ equality test is skipped.
"""
import argparse
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import shardgnn_children

import numpy as np
import torch

import shardgnn

SHARDGNN = None  # build/cli/shardgnn, from --shardgnn.
DUMP_BATCHES = None  # build/tests/python/dump_batches, from --dump-batches.
WORK = None  # A temp dir for the whole run (tempfile.TemporaryDirectory).
GRAPH = None  # The small graph's directory.

FANOUTS = [5, 3]  # The seeds' hop first.
BATCH = 64
SERVER_TIMEOUT = 60  # Seconds for a server's ready line.


def run_shardgnn(*args):
    shardgnn_children.run_shardgnn(SHARDGNN, *args)


def generate(name, nodes, features, split="0.3,0.1,0.6", degree=8,
             extra=()):
    out = os.path.join(WORK.name, name)
    run_shardgnn("dataset", "generate", "--kind", "sbm", "--nodes",
                 str(nodes), "--avg-degree", str(degree), "--features",
                 str(features), "--classes", "4", "--split", split, "--seed",
                 "5", *extra, "--out", out)
    return out


def setUpModule():
    global WORK, GRAPH
    WORK = tempfile.TemporaryDirectory(prefix="shardgnn_loader_test_")
    GRAPH = generate("graph", 3000, 16)


def tearDownModule():
    WORK.cleanup()


class Arrays:
    """A dataset directory's arrays."""

    def __init__(self, path):
        load = lambda name: np.load(os.path.join(path, name))
        self.indptr, self.indices = load("indptr.npy"), load("indices.npy")
        self.features, self.labels = load("features.npy"), load("labels.npy")
        self.splits = {
            s: load(f"split_{s}.npy") for s in ("train", "valid", "test")
        }
        n = self.indptr.size - 1
        self.num_nodes = n
        # Entry u of row v is the edge u -> v: keyed u * n + v.
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.indptr))
        self.edge_keys = np.sort(self.indices * n + rows)

    def has_edges(self, src, dst):
        keys = src * self.num_nodes + dst
        at = np.searchsorted(self.edge_keys, keys)
        at = np.minimum(at, self.edge_keys.size - 1)
        return self.edge_keys[at] == keys


def snapshot(batch):
    """A deep copy of a batch's tensors."""
    return {
        "x": batch.x.clone(),
        "y": batch.y.clone(),
        "n_id": batch.n_id.clone(),
        "edge_indices": [e.clone() for e in batch.edge_indices],
        "sizes": list(batch.sizes),
        "batch_size": batch.batch_size,
    }


def same(a, b):
    return (torch.equal(a["x"], b["x"]) and torch.equal(a["y"], b["y"]) and
            torch.equal(a["n_id"], b["n_id"]) and a["sizes"] == b["sizes"] and
            a["batch_size"] == b["batch_size"] and
            len(a["edge_indices"]) == len(b["edge_indices"]) and all(
                torch.equal(x, y)
                for x, y in zip(a["edge_indices"], b["edge_indices"])))


def epoch_of(loader, epoch):
    loader.set_epoch(epoch)
    return [snapshot(b) for b in loader]


class BatchChecks:
    """Checks of a batch against a graph's arrays, with `to_orig` mapping
    the batch's node IDs to the arrays' (identity for a dataset)."""

    def check_batch(self, arrays, batch, fanouts, to_orig=lambda ids: ids):
        n_id = batch.n_id.numpy()
        bs = batch.batch_size
        self.assertEqual(batch.n_id.dtype, torch.int64)
        self.assertEqual(batch.x.dtype, torch.float32)
        self.assertEqual(batch.y.dtype, torch.int64)
        self.assertEqual(len(np.unique(n_id)), n_id.size, "n_id repeats")
        orig = to_orig(n_id)
        np.testing.assert_array_equal(batch.x.numpy(), arrays.features[orig])
        self.assertEqual(batch.y.numel(), bs)
        np.testing.assert_array_equal(batch.y.numpy(),
                                      arrays.labels[orig[:bs]])
        layers = len(fanouts)
        self.assertEqual(len(batch.edge_indices), layers)
        self.assertEqual(len(batch.sizes), layers)
        self.assertEqual(batch.edge_attrs, [None] * layers)
        # Layer 0 reads x; each layer's destinations are the next's sources;
        # the last one's are the seeds.
        self.assertEqual(batch.sizes[0][0], n_id.size)
        for l in range(layers - 1):
            self.assertEqual(batch.sizes[l][1], batch.sizes[l + 1][0])
        self.assertEqual(batch.sizes[-1][1], bs)
        for l, (edge_index, (num_src, num_dst)) in enumerate(
                zip(batch.edge_indices, batch.sizes)):
            self.assertLessEqual(num_dst, num_src)
            self.assertEqual(edge_index.dtype, torch.int64)
            self.assertEqual(edge_index.dim(), 2)
            self.assertEqual(edge_index.size(0), 2)
            src, dst = edge_index[0].numpy(), edge_index[1].numpy()
            if src.size == 0:
                continue
            self.assertTrue((src >= 0).all() and (src < num_src).all())
            self.assertTrue((dst >= 0).all() and (dst < num_dst).all())
            self.assertTrue((np.diff(dst) >= 0).all(),
                            "edges not grouped by destination")
            # Hop `layers - 1 - l` from the seeds: its fanout bounds every
            # destination's in-edges, none repeated.
            fanout = fanouts[layers - 1 - l]
            self.assertLessEqual(np.bincount(dst).max(), fanout)
            keys = src * num_src + dst
            self.assertEqual(np.unique(keys).size, keys.size, "edge repeated")
            # n_id[src] -> n_id[dst] is an edge of the graph: n_id[src] is
            # in n_id[dst]'s CSR row.
            ok = arrays.has_edges(orig[src], orig[dst])
            self.assertTrue(ok.all(), f"layer {l}: {np.count_nonzero(~ok)} "
                            "edges are not in the graph")


class InMemoryTest(BatchChecks, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.arrays = Arrays(GRAPH)
        cls.graph = shardgnn.load_dataset(GRAPH)
        cls.train = cls.graph.split("train")

    def test_graph(self):
        g, a = self.graph, self.arrays
        self.assertEqual(g.num_nodes, a.num_nodes)
        self.assertEqual(g.feature_dim, 16)
        self.assertEqual(g.num_classes, 4)
        self.assertEqual(g.edge_feature_dim, 0)
        self.assertEqual(g.num_parts, 1)
        for s in ("train", "valid", "test"):
            np.testing.assert_array_equal(g.split(s).numpy(), a.splits[s])
        ids = torch.tensor([0, 17, a.num_nodes - 1, 17])
        np.testing.assert_array_equal(g.features(ids).numpy(),
                                      a.features[ids.numpy()])
        np.testing.assert_array_equal(g.labels(ids).numpy(),
                                      a.labels[ids.numpy()])
        np.testing.assert_array_equal(g.part_of(ids).numpy(), [0, 0, 0, 0])

    def test_an_epoch_covers_the_train_split_once(self):
        loader = shardgnn.NeighborLoader(self.graph, self.train, FANOUTS,
                                         batch_size=BATCH, seed=3)
        n = self.train.numel()
        self.assertEqual(len(loader), -(-n // BATCH))
        seeds = []
        count = 0
        for batch in loader:
            count += 1
            self.check_batch(self.arrays, batch, FANOUTS)
            self.assertLessEqual(batch.batch_size, BATCH)
            seeds.append(batch.n_id[:batch.batch_size].numpy().copy())
        self.assertEqual(count, len(loader))
        seeds = np.concatenate(seeds)
        self.assertEqual(seeds.size, n, "a seed twice or missing")
        np.testing.assert_array_equal(np.sort(seeds),
                                      np.sort(self.arrays.splits["train"]))
        # Shuffled: not in the split's order.
        self.assertFalse(np.array_equal(seeds, self.arrays.splits["train"]))

    def test_two_threads_share_one_epoch(self):
        # Two threads pulling from one loader: every batch goes to one of
        # them, and together they see each train node exactly once.
        loader = shardgnn.NeighborLoader(self.graph, self.train, FANOUTS,
                                         batch_size=BATCH, seed=5)
        iterator = iter(loader)
        seen = [[], []]
        errors = []

        # next(), not `for`: a for loop would call iter(), which starts the
        # next epoch.
        def pull(k):
            try:
                while True:
                    try:
                        batch = next(iterator)
                    except StopIteration:
                        return
                    self.check_batch(self.arrays, batch, FANOUTS)
                    seen[k].append(batch.n_id[:batch.batch_size].numpy().copy())
            except Exception as e:  # Reported by the main thread.
                errors.append(e)

        threads = [threading.Thread(target=pull, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
            self.assertFalse(t.is_alive(), "a thread is stuck in the loader")
        self.assertEqual(errors, [])
        self.assertEqual(len(seen[0]) + len(seen[1]), len(loader))
        seeds = np.concatenate(seen[0] + seen[1])
        np.testing.assert_array_equal(np.sort(seeds),
                                      np.sort(self.arrays.splits["train"]))

    def test_no_shuffle_keeps_the_order_and_steps_pad(self):
        valid = self.graph.split("valid")
        loader = shardgnn.NeighborLoader(self.graph, valid, [-1, 4],
                                         batch_size=BATCH, shuffle=False)
        seeds = np.concatenate(
            [b.n_id[:b.batch_size].numpy().copy() for b in loader])
        np.testing.assert_array_equal(seeds, valid.numpy())
        # A fixed step count wraps around the seeds (data-parallel ranks).
        steps = -(-valid.numel() // BATCH) + 3
        loader = shardgnn.NeighborLoader(self.graph, valid, FANOUTS,
                                         batch_size=BATCH,
                                         steps_per_epoch=steps)
        self.assertEqual(len(loader), steps)
        batches = 0
        for batch in loader:
            batches += 1
            self.check_batch(self.arrays, batch, FANOUTS)
        self.assertEqual(batches, steps)

    def test_seeds_decide_the_batches(self):
        make = lambda seed: shardgnn.NeighborLoader(
            self.graph, self.train, FANOUTS, batch_size=BATCH, seed=seed,
            workers=2)
        first, again, other = make(11), make(11), make(12)
        a0, b0, c0 = (epoch_of(l, 0) for l in (first, again, other))
        self.assertTrue(all(same(x, y) for x, y in zip(a0, b0)))
        self.assertFalse(same(a0[0], c0[0]))
        # The next epoch differs; set_epoch goes back to an earlier one.
        a1 = epoch_of(first, 1)
        self.assertFalse(same(a0[0], a1[0]))
        self.assertTrue(all(same(x, y) for x, y in zip(a0, epoch_of(first,
                                                                      0))))
        # A pass without set_epoch is the next epoch.
        first.set_epoch(0)
        list(first)
        self.assertTrue(
            all(same(x, y) for x, y in zip(a1, [snapshot(b) for b in first])))

    def test_tensors_outlive_the_loader(self):
        graph = shardgnn.load_dataset(GRAPH)
        loader = shardgnn.NeighborLoader(graph, graph.split("train"), FANOUTS,
                                         batch_size=BATCH, seed=1, prefetch=2)
        del graph  # The loader keeps it.
        gc.collect()
        it = iter(loader)
        held = next(it)
        x, n_id, edge_index = held.x, held.n_id, held.edge_indices[0]
        copy = snapshot(held)
        for _ in it:  # The rest of the epoch, and two more.
            pass
        for epoch in (1, 2):
            epoch_of(loader, epoch)
        self.assertTrue(same(snapshot(held), copy))
        del held, loader, it
        gc.collect()
        self.assertTrue(torch.equal(x, copy["x"]))
        self.assertTrue(torch.equal(n_id, copy["n_id"]))
        self.assertTrue(torch.equal(edge_index, copy["edge_indices"][0]))

    def test_edge_features(self):
        """edge_attrs[l][k] is the feature row of the CSR entry of edge k."""
        path = generate("edge-features", 1000, 8, split="0.2,0.1,0.7",
                        extra=("--edge-features", "3"))
        arrays = Arrays(path)
        rows = np.load(os.path.join(path, "edge_features.npy"))
        graph = shardgnn.load_dataset(path)
        self.assertEqual(graph.edge_feature_dim, 3)
        loader = shardgnn.NeighborLoader(graph, graph.split("train"), FANOUTS,
                                         batch_size=BATCH)
        for batch in loader:
            self.assertEqual(len(batch.edge_attrs), len(FANOUTS))
            for edge_index, attrs in zip(batch.edge_indices,
                                         batch.edge_attrs):
                self.assertEqual(attrs.dtype, torch.float32)
                self.assertEqual(tuple(attrs.shape),
                                 (edge_index.size(1), 3))
                src = batch.n_id[edge_index[0]].numpy()
                dst = batch.n_id[edge_index[1]].numpy()
                # Rows are sorted: the entry of src in row dst.
                at = np.array([
                    arrays.indptr[d] + np.searchsorted(
                        arrays.indices[arrays.indptr[d]:arrays.indptr[d + 1]],
                        s) for s, d in zip(src, dst)
                ], dtype=np.int64)
                np.testing.assert_array_equal(arrays.indices[at], src)
                np.testing.assert_array_equal(attrs.numpy(), rows[at])

    def test_getters_do_not_copy(self):
        loader = shardgnn.NeighborLoader(self.graph, self.train, FANOUTS,
                                         batch_size=BATCH, seed=1)
        batch = next(iter(loader))
        for name in ("x", "y", "n_id"):
            self.assertEqual(
                getattr(batch, name).data_ptr(),
                getattr(batch, name).data_ptr(), name)
        self.assertEqual(batch.edge_indices[1].data_ptr(),
                         batch.edge_indices[1].data_ptr())
        # A write through one access shows in the next: the same memory.
        batch.x[1, 2] = 42.0
        self.assertEqual(float(batch.x[1, 2]), 42.0)

    def test_learned_embeddings_in_process(self):
        graph = shardgnn.load_dataset(GRAPH)
        rows = shardgnn.Embeddings(graph, 4, optimizer="sgd", lr=0.25, seed=1)
        ids = torch.tensor([3, 0, 3])  # A node twice: its gradients add up.
        before = rows.pull(ids, 0)
        torch.testing.assert_close(before[0], before[2])
        rows.push(0, ids, torch.ones(3, 4))
        rows.flush()
        after = rows.pull(ids, 1)
        torch.testing.assert_close(after[1], before[1] - 0.25)
        torch.testing.assert_close(after[0], before[0] - 0.5)
        # The same seed draws the same initial rows; another seed others.
        again = shardgnn.Embeddings(graph, 4, optimizer="sgd", seed=1)
        torch.testing.assert_close(again.pull(ids, 0), before)
        other = shardgnn.Embeddings(graph, 4, optimizer="sgd", seed=2)
        self.assertFalse(torch.equal(other.pull(ids, 0), before))
        with self.assertRaises(ValueError):
            shardgnn.Embeddings(graph, 4, world_size=2)
        with self.assertRaises(ValueError):
            shardgnn.Embeddings(graph, 4, optimizer="nope")
        with self.assertRaises(ValueError):
            graph.enable_cache(8)  # Every feature is in memory already.

    def test_bad_arguments(self):
        with self.assertRaises(KeyError):
            self.graph.split("nope")
        for seeds in (self.train.int(), self.train.float(),
                      self.train.view(-1, 1)):
            with self.assertRaises(ValueError):
                shardgnn.NeighborLoader(self.graph, seeds, FANOUTS)
        with self.assertRaises(ValueError):
            self.graph.features(torch.tensor([0, 1], dtype=torch.int32))
        with self.assertRaises(ValueError):
            self.graph.part_of(torch.tensor([self.arrays.num_nodes]))
        with self.assertRaises(ValueError):  # No seeds.
            shardgnn.NeighborLoader(self.graph,
                                    torch.empty(0, dtype=torch.int64),
                                    FANOUTS)
        with self.assertRaises(ValueError):
            shardgnn.NeighborLoader(self.graph, self.train, FANOUTS,
                                    batch_size=0)
        with self.assertRaises(ValueError):
            shardgnn.NeighborLoader(self.graph, self.train, [])
        # A seed outside the graph fails when its batch is made.
        loader = shardgnn.NeighborLoader(
            self.graph, torch.tensor([0, self.arrays.num_nodes + 5]),
            FANOUTS)
        with self.assertRaises((ValueError, RuntimeError)):
            list(loader)

    def test_usable_without_importing_torch_first(self):
        """The package's docstring example: `import shardgnn` alone, then a
        call that returns a tensor (the native module's tensor conversion
        needs torch's Python bindings loaded)."""
        code = ("import shardgnn\n"
                f"g = shardgnn.load_dataset({GRAPH!r})\n"
                "print(g.split('train').numel())\n")
        done = subprocess.run([sys.executable, "-c", code],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(
            done.returncode, 0,
            f"`import shardgnn` without `import torch` first: exit "
            f"{done.returncode} (-11: segmentation fault) {done.stderr}")
        self.assertEqual(done.stdout.strip(),
                         str(self.arrays.splits["train"].size))

    def test_connect_to_nothing_fails_quickly(self):
        with socket.socket() as s:  # A port nothing listens on.
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        start = time.monotonic()
        with self.assertRaises(RuntimeError) as raised:
            shardgnn.connect(f"127.0.0.1:{port}", timeout=2)
        seconds = time.monotonic() - start
        self.assertLess(seconds, 6)
        self.assertIn(f"127.0.0.1:{port}", str(raised.exception))

    def test_handover_costs_no_copy_of_x(self):
        """Times Next() (a batch ready in the buffer, made a Batch) against
        a copy of its x: the handover must not copy the features."""
        path = generate("wide", 20000, 256, split="0.5,0.1,0.4", degree=10)
        graph = shardgnn.load_dataset(path)
        loader = shardgnn.NeighborLoader(graph, graph.split("train"),
                                         [10, 10], batch_size=1024,
                                         prefetch=2, workers=2)
        handover, copies, nbytes, edges = [], [], [], []
        it = iter(loader)
        batch = next(it)
        while True:
            # A consumer busy for a while, so the next batch is ready when
            # Next() is called.
            start = time.perf_counter()
            copy = batch.x.clone()
            copies.append(time.perf_counter() - start)
            self.assertTrue(torch.equal(copy[:1], batch.x[:1]))
            nbytes.append(batch.x.numel() * batch.x.element_size())
            edges.append(sum(e.size(1) for e in batch.edge_indices))
            time.sleep(0.15)
            del copy, batch
            start = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            handover.append(time.perf_counter() - start)
        handover.sort()
        copies.sort()
        median = handover[len(handover) // 2]
        print(f"\nhandover of a ready batch: median {median * 1e6:.0f} us, "
              f"min {handover[0] * 1e6:.0f} us over {len(handover)} batches "
              f"whose x is {np.mean(nbytes) / 2**20:.1f} MiB on average "
              f"(edge_index, built at the handover: {np.mean(edges):.0f} "
              "edges); "
              f"a copy of x takes median {copies[len(copies) // 2] * 1e6:.0f}"
              f" us (min {copies[0] * 1e6:.0f} us)",
              file=sys.stderr)
        self.assertLess(handover[0], copies[0])


class SameAsCppLoaderTest(unittest.TestCase):
    """NeighborLoader's batches are PrefetchLoader's (dump_batches writes
    those) for the same seed, seeds, fanouts and batch size."""

    @classmethod
    def setUpClass(cls):
        if DUMP_BATCHES is None:
            raise unittest.SkipTest("no --dump-batches")

    def compare(self, seed, epochs, split="train", shuffle=True, steps=0):
        out = tempfile.mkdtemp(dir=WORK.name)
        args = [
            DUMP_BATCHES, "--dataset", GRAPH, "--split", split, "--fanouts",
            ",".join(map(str, FANOUTS)), "--batch-size",
            str(BATCH), "--seed",
            str(seed), "--epochs", ",".join(map(str, epochs)), "--steps",
            str(steps), "--out", out
        ]
        if not shuffle:
            args.append("--no-shuffle")
        done = subprocess.run(args, capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        graph = shardgnn.load_dataset(GRAPH)
        loader = shardgnn.NeighborLoader(graph, graph.split(split), FANOUTS,
                                         batch_size=BATCH, shuffle=shuffle,
                                         seed=seed, steps_per_epoch=steps)
        load = lambda name: np.load(os.path.join(out, name))
        for epoch in epochs:
            loader.set_epoch(epoch)
            count = 0
            for i, batch in enumerate(loader):
                count += 1
                p = f"e{epoch}_b{i}"
                where = f"seed {seed} epoch {epoch} batch {i}"
                np.testing.assert_array_equal(batch.n_id.numpy(),
                                              load(p + "_n_id.npy"), where)
                np.testing.assert_array_equal(batch.y.numpy(),
                                              load(p + "_y.npy"), where)
                np.testing.assert_array_equal(batch.x.numpy(),
                                              load(p + "_x.npy"), where)
                for l, edge_index in enumerate(batch.edge_indices):
                    indptr = load(f"{p}_l{l}_indptr.npy")
                    indices = load(f"{p}_l{l}_indices.npy")
                    sizes = tuple(load(f"{p}_l{l}_sizes.npy").tolist())
                    self.assertEqual(batch.sizes[l], sizes, where)
                    dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
                    np.testing.assert_array_equal(edge_index.numpy(),
                                                  np.stack([indices, dst]),
                                                  f"{where} layer {l}")
            self.assertEqual(count, int(load(f"e{epoch}_batches.npy")[0]))
        return count

    def test_two_seeds_two_epochs(self):
        for seed in (0, 7):
            self.assertGreater(self.compare(seed, [0, 1]), 1)

    def test_fixed_steps_and_no_shuffle(self):
        self.compare(3, [2], split="valid", shuffle=False, steps=9)


class ServerTest(BatchChecks, unittest.TestCase):
    """Two `shardgnn serve` of a 2-part partition, with an auth token."""

    @classmethod
    def setUpClass(cls):
        cls.arrays = Arrays(GRAPH)
        cls.partition = os.path.join(WORK.name, "graph-2parts")
        run_shardgnn("partition", "--dataset", GRAPH, "--parts", "2", "--out",
                     cls.partition)
        cls.orig_ids = np.load(os.path.join(cls.partition, "orig_ids.npy"))
        cls.token = os.path.join(WORK.name, "cluster.token")
        cls.wrong_token = os.path.join(WORK.name, "other.token")
        for path, text in ((cls.token, "0123456789abcdef" * 2),
                           (cls.wrong_token, "fedcba9876543210" * 2)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600),
                          "w") as f:
                f.write(text + "\n")
        cls.servers = shardgnn_children.start_servers(
            SHARDGNN, cls.partition, 2, cls.token, cls.addClassCleanup,
            SERVER_TIMEOUT)
        cls.graph = shardgnn.connect(cls.servers, auth_token_file=cls.token)

    def to_orig(self, ids):
        return self.orig_ids[ids]

    def test_graph(self):
        g, a = self.graph, self.arrays
        self.assertEqual(g.num_parts, 2)
        self.assertEqual(g.num_nodes, a.num_nodes)
        self.assertEqual(g.feature_dim, 16)
        self.assertEqual(g.num_classes, 4)
        # part_of: the partition's node ranges.
        with open(os.path.join(self.partition, "partition.json")) as f:
            ranges = json.load(f)["node_ranges"]
        ids = torch.arange(a.num_nodes)
        expected = np.searchsorted(ranges, ids.numpy(), side="right") - 1
        np.testing.assert_array_equal(g.part_of(ids).numpy(), expected)
        self.assertEqual(set(expected.tolist()), {0, 1})
        # Features and labels in the new IDs are the dataset's rows of
        # orig_ids.
        np.testing.assert_array_equal(g.features(ids).numpy(),
                                      a.features[self.orig_ids])
        np.testing.assert_array_equal(g.labels(ids).numpy(),
                                      a.labels[self.orig_ids])
        for s in ("train", "valid", "test"):
            np.testing.assert_array_equal(
                np.sort(self.orig_ids[g.split(s).numpy()]),
                np.sort(a.splits[s]), s)
        with self.assertRaises(KeyError):
            g.split("nope")

    def test_an_epoch_over_the_servers(self):
        train = self.graph.split("train")
        loader = shardgnn.NeighborLoader(self.graph, train, FANOUTS,
                                         batch_size=BATCH, seed=2, workers=2)
        seeds = []
        for batch in loader:
            self.check_batch(self.arrays, batch, FANOUTS, self.to_orig)
            seeds.append(batch.n_id[:batch.batch_size].numpy().copy())
        seeds = np.concatenate(seeds)
        self.assertEqual(seeds.size, train.numel())
        np.testing.assert_array_equal(np.sort(seeds), np.sort(train.numpy()))

    def test_server_batches_are_deterministic(self):
        train = self.graph.split("train")
        make = lambda: shardgnn.NeighborLoader(self.graph, train, FANOUTS,
                                               batch_size=BATCH, seed=4)
        a, b = epoch_of(make(), 0), epoch_of(make(), 0)
        self.assertTrue(all(same(x, y) for x, y in zip(a, b)))

    def test_wrong_or_no_token_fails(self):
        for token in (self.wrong_token, ""):
            start = time.monotonic()
            with self.assertRaises(RuntimeError) as raised:
                shardgnn.connect(self.servers, auth_token_file=token,
                                 timeout=10)
            self.assertLess(time.monotonic() - start, 20)
            self.assertIn("token", str(raised.exception).lower())

    def test_feature_cache(self):
        # A clock cache fills as batches fetch; a static one is filled by
        # pre-sampling. Either way the rows are the servers'.
        train = self.graph.split("train")
        for policy in ("clock", "static"):
            graph = shardgnn.connect(self.servers, auth_token_file=self.token)
            self.assertEqual(graph.cache_stats(), {})
            graph.enable_cache(1, policy, seeds=train, fanouts=FANOUTS,
                               batch_size=BATCH)
            if policy == "static":
                self.assertGreater(graph.cache_stats()["entries"], 0)
            with self.assertRaises(ValueError):
                graph.enable_cache(1, policy)
            loader = shardgnn.NeighborLoader(graph, train, FANOUTS,
                                             batch_size=BATCH, seed=3)
            for epoch in range(2):
                for batch in loader:
                    np.testing.assert_array_equal(
                        batch.x.numpy(),
                        self.arrays.features[self.orig_ids[batch.n_id.numpy()]])
            stats = graph.cache_stats()
            self.assertGreater(stats["hits"], 0, policy)
            self.assertGreater(stats["bytes_saved"], 0, policy)
            self.assertGreater(stats["misses"], 0, policy)
        with self.assertRaises(ValueError):
            shardgnn.connect(self.servers,
                             auth_token_file=self.token).enable_cache(
                                 1, "static")  # Without seeds to pre-sample.

    def test_learned_embeddings_on_the_servers(self):
        # SGD: a pushed gradient g moves the rows by -lr * g, on whichever
        # server owns each node.
        ids = torch.tensor([0, 1, self.graph.num_nodes - 1, 5])
        rows = shardgnn.Embeddings(self.graph, 8, run_id="loader-test",
                                   run_secret="s" * 32, optimizer="sgd",
                                   lr=0.5, seed=4)
        self.assertEqual(rows.dim, 8)
        before = rows.pull(ids, 0)
        self.assertEqual(tuple(before.shape), (4, 8))
        self.assertGreater(float(before.abs().sum()), 0)
        grads = torch.arange(32, dtype=torch.float32).view(4, 8) / 10
        rows.push(0, ids, grads)
        rows.flush()
        after = rows.pull(ids, 1)
        torch.testing.assert_close(after, before - 0.5 * grads)
        with self.assertRaises(ValueError):
            rows.push(1, ids, torch.zeros(3, 8))  # One row short.
        with self.assertRaises(ValueError):
            rows.pull(torch.tensor([self.graph.num_nodes]), 1)

    def test_missing_token_file(self):
        with self.assertRaises(ValueError):
            shardgnn.connect(self.servers,
                             auth_token_file=os.path.join(WORK.name, "none"))

    def test_token_file_checked_as_train_checks_it(self):
        # Readable by others, or too short: refused before any call.
        loose = os.path.join(WORK.name, "loose.token")
        with open(loose, "w") as f:
            f.write("0123456789abcdef0123\n")
        os.chmod(loose, 0o644)
        with self.assertRaises(ValueError) as raised:
            shardgnn.connect(self.servers, auth_token_file=loose)
        self.assertIn(loose, str(raised.exception))
        short = os.path.join(WORK.name, "short.token")
        with open(short, "w") as f:
            f.write("abc\n")
        os.chmod(short, 0o600)
        with self.assertRaises(ValueError) as raised:
            shardgnn.connect(self.servers, auth_token_file=short)
        self.assertIn("short", str(raised.exception))


def main():
    global SHARDGNN, DUMP_BATCHES
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--shardgnn", required=True)
    parser.add_argument("--dump-batches")
    args, rest = parser.parse_known_args()
    SHARDGNN = os.path.abspath(args.shardgnn)
    DUMP_BATCHES = args.dump_batches and os.path.abspath(args.dump_batches)
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
