#!/usr/bin/python3
"""Tests examples/custom_model/make_model.py: the modules it writes follow the
interface of `shardgnn run --model-script` (see make_model.py's docstring).

    /usr/bin/python3 tests/python/make_model_test.py [--make-model examples/custom_model/make_model.py]

Needs Debian's python3-torch (hence /usr/bin/python3). Other arguments go to
unittest (e.g. -v, or a test name).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import unittest

import torch

MAKE_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "..", "examples", "custom_model", "make_model.py")

KINDS = ("gin", "sage-residual", "sage")
IN_DIM, HIDDEN, CLASSES, LAYERS, DROPOUT, SEED = 12, 16, 5, 3, 0.5, 7
# Nodes per level: block l has SIZES[l] sources and SIZES[l + 1] destinations.
SIZES = (40, 20, 9, 4)
# make_model.py runs at a time (each imports torch: about 2 s of CPU).
PARALLEL = 4
# libshardgnn_ops.so (the modules call torch.ops.shardgnn.*), or "none" (plain
# torch aggregation and dropout).
OPS_LIBRARY = "none"


def make_args(kind, out, layers=LAYERS, hidden=HIDDEN, seed=SEED):
    return ("--model", kind, "--in-dim", str(IN_DIM), "--classes",
            str(CLASSES), "--hidden", str(hidden), "--layers", str(layers),
            "--dropout", str(DROPOUT), "--seed", str(seed), "--out", out,
            "--ops-library", OPS_LIBRARY)


def make_block(num_src, num_dst, generator):
    """Random edges (no self loops, no duplicates) into destinations <
    num_dst, grouped by destination ascending; destination 1 has none."""
    src, dst = [], []
    for d in range(num_dst):
        if d == 1:
            continue
        k = int(torch.randint(0, 6, (1,), generator=generator))
        candidates = [
            int(s) for s in torch.randperm(num_src, generator=generator)
            if int(s) != d
        ]
        for s in candidates[:k]:
            src.append(s)
            dst.append(d)
    return torch.tensor([src, dst], dtype=torch.int64).reshape(2, -1)


def make_blocks(seed=1):
    g = torch.Generator().manual_seed(seed)
    blocks = [
        make_block(SIZES[l], SIZES[l + 1], g) for l in range(len(SIZES) - 1)
    ]
    x = torch.randn(SIZES[0], IN_DIM, generator=g)
    return x, blocks


def run_layers(model, x, blocks, edge_attrs=None, first=0):
    """Every layer in turn (from layer `first`); the outputs of each."""
    outs = []
    h = x
    for l in range(first, model.num_layers):
        b = blocks[l]
        attr = None if edge_attrs is None else edge_attrs[l]
        h = model(l, h, b, SIZES[l + 1], attr)
        outs.append(h)
    return outs


def dense_sage_reference(params, x, blocks, layers):
    """The built-in GraphSAGE by hand: dense mean aggregation via an
    adjacency matrix, in float64."""
    h = x.double()
    for l in range(layers):
        nd, ns = SIZES[l + 1], SIZES[l]
        a = torch.zeros(nd, ns, dtype=torch.float64)
        for s, d in blocks[l].t().tolist():
            a[d, s] += 1.0
        mean = (a @ h) / a.sum(1, keepdim=True).clamp(min=1.0)
        w_self = params[f"layers.{l}.lin_self.weight"].double()
        b_self = params[f"layers.{l}.lin_self.bias"].double()
        w_neigh = params[f"layers.{l}.lin_neigh.weight"].double()
        h = h[:nd] @ w_self.t() + b_self + mean @ w_neigh.t()
        if l + 1 < layers:
            h = torch.relu(h)
    return h


class MakeModelTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # Outputs into a directory that does not exist yet.
        cls.out_dir = os.path.join(cls.tmp.name, "new", "dir")
        cls.paths = {k: os.path.join(cls.out_dir, k + ".pt") for k in KINDS}
        # All the runs at once (each one imports torch).
        jobs = {}
        for kind in KINDS:
            jobs[kind] = make_args(kind, cls.paths[kind])
        cls.one_layer = {
            k: os.path.join(cls.tmp.name, "one", k + ".pt") for k in KINDS
        }
        for kind in KINDS:
            jobs["1:" + kind] = make_args(kind, cls.one_layer[kind], layers=1)
        cls.sage_seed8 = os.path.join(cls.tmp.name, "seed8", "sage.pt")
        jobs["seed8"] = make_args("sage", cls.sage_seed8, seed=8)
        cls.res_wide = os.path.join(cls.tmp.name, "wide", "res.pt")
        jobs["wide"] = make_args("sage-residual", cls.res_wide, hidden=IN_DIM)
        cls.bad_out = os.path.join(cls.tmp.name, "bad", "model.pt")
        bad = {
            "layers0": ["--layers", "0"],
            "model": ["--model", "nope"],
            "dropout": ["--dropout", "1.0"],
            "hidden": ["--hidden", "x"],
        }
        for name, change in bad.items():
            args = list(make_args("sage", cls.bad_out))
            i = args.index(change[0])
            args[i + 1] = change[1]
            jobs["bad:" + name] = args
        cls.results = {}
        pending = list(jobs.items())
        running = []
        while pending or running:
            while pending and len(running) < PARALLEL:
                name, args = pending.pop(0)
                running.append((name,
                                subprocess.Popen(
                                    [sys.executable, MAKE_MODEL, *args],
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE,
                                    text=True)))
            name, p = running.pop(0)
            out, err = p.communicate(timeout=120)
            cls.results[name] = (p.returncode, out, err)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def load(self, path):
        return torch.jit.load(path)

    def check_ran(self, name):
        rc, out, err = self.results[name]
        self.assertEqual(rc, 0, f"{name}: {err}")
        self.assertEqual(len(out.strip().splitlines()), 1, out)

    def test_writes_files_atomically(self):
        for kind in KINDS:
            self.check_ran(kind)
            _, out, _ = self.results[kind]
            self.assertIn(kind, out)
            self.assertIn(self.paths[kind], out)
        self.assertEqual(sorted(os.listdir(self.out_dir)),
                         sorted(k + ".pt" for k in KINDS))

    def test_interface(self):
        x, blocks = make_blocks()
        for kind in KINDS:
            with self.subTest(kind=kind):
                self.check_ran(kind)
                m = self.load(self.paths[kind])
                self.assertEqual(m.num_layers, LAYERS)
                self.assertEqual(list(m.buffers()), [])
                for name, p in m.named_parameters():
                    self.assertEqual(p.dtype, torch.float32, name)
                    self.assertEqual(p.device.type, "cpu", name)
                m.eval()
                outs = run_layers(m, x, blocks)
                self.assertEqual(len(outs), LAYERS)
                for l, o in enumerate(outs):
                    width = CLASSES if l + 1 == LAYERS else HIDDEN
                    self.assertEqual(tuple(o.shape), (SIZES[l + 1], width))
                    self.assertEqual(o.dtype, torch.float32)
                    self.assertTrue(torch.isfinite(o).all())
                # Hidden layers end in ReLU, the last does not.
                if kind != "sage-residual":
                    self.assertTrue((outs[0] >= 0).all())
                self.assertTrue((outs[-1] < 0).any())
                # Deterministic in eval mode.
                again = run_layers(m, x, blocks)
                for a, b in zip(outs, again):
                    self.assertTrue(torch.equal(a, b))
                # Edge features are accepted (and ignored).
                attrs = [torch.randn(b.size(1), 3) for b in blocks]
                with_attr = run_layers(m, x, blocks, attrs)
                self.assertTrue(torch.equal(with_attr[-1], outs[-1]))
                # Each layer runs alone on given states.
                alone = m(1, outs[0], blocks[1], SIZES[2], None)
                self.assertTrue(torch.equal(alone, outs[1]))
                # A layer out of range is refused.
                with self.assertRaises(Exception):
                    m(LAYERS, x, blocks[0], SIZES[1], None)
                # Dropout only in training mode.
                m.train()
                torch.manual_seed(0)
                train_outs = run_layers(m, x, blocks)
                self.assertFalse(torch.allclose(train_outs[-1], outs[-1]))
                # Every parameter gets a gradient.
                target = torch.randint(0, CLASSES, (SIZES[-1],))
                loss = torch.nn.functional.cross_entropy(
                    train_outs[-1], target)
                loss.backward()
                for name, p in m.named_parameters():
                    self.assertIsNotNone(p.grad, name)
                    self.assertTrue(torch.isfinite(p.grad).all(), name)
                    self.assertGreater(p.grad.abs().sum().item(), 0.0, name)
                # eval() switches dropout off again.
                m.eval()
                self.assertTrue(
                    torch.equal(run_layers(m, x, blocks)[-1], outs[-1]))

    def test_one_layer(self):
        x, blocks = make_blocks()
        for kind in KINDS:
            with self.subTest(kind=kind):
                self.check_ran("1:" + kind)
                m = self.load(self.one_layer[kind])
                m.eval()
                self.assertEqual(m.num_layers, 1)
                out = m(0, x, blocks[0], SIZES[1], None)
                self.assertEqual(tuple(out.shape), (SIZES[1], CLASSES))

    def test_sage_matches_dense_reference(self):
        self.check_ran("sage")
        m = self.load(self.paths["sage"])
        m.eval()
        params = {n: p.detach() for n, p in m.named_parameters()}
        names = []
        for l in range(LAYERS):
            names += [
                f"layers.{l}.lin_self.weight", f"layers.{l}.lin_self.bias",
                f"layers.{l}.lin_neigh.weight"
            ]
        self.assertEqual(list(params), names)
        x, blocks = make_blocks()
        got = run_layers(m, x, blocks)[-1]
        want = dense_sage_reference(params, x, blocks, LAYERS)
        self.assertLess((got.double() - want).abs().max().item(), 1e-5)
        # Destination 1 has no edges: its neighbor mean is 0.
        b = blocks[-1]
        self.assertFalse((b[1] == 1).any())
        self.assertTrue(torch.equal(b[1], b[1].sort().values))

    def test_sage_initialisation(self):
        self.check_ran("sage")
        self.check_ran("seed8")
        m = self.load(self.paths["sage"])
        # The built-in InitParameters: in named_parameters() order from a
        # generator seeded with the seed, Glorot uniform weights (bound
        # sqrt(6 / (fan_in + fan_out))), zero biases.
        g = torch.Generator().manual_seed(SEED)
        for name, p in m.named_parameters():
            if p.dim() < 2:
                self.assertTrue(torch.equal(p, torch.zeros_like(p)), name)
                continue
            bound = (6.0 / (p.size(0) + p.size(1)))**0.5
            want = torch.empty(p.shape).uniform_(-bound, bound, generator=g)
            self.assertTrue(torch.equal(p.detach(), want), name)
        other = self.load(self.sage_seed8)
        self.assertFalse(
            torch.equal(
                m.state_dict()["layers.0.lin_self.weight"],
                other.state_dict()["layers.0.lin_self.weight"]))

    def test_gin(self):
        self.check_ran("gin")
        m = self.load(self.paths["gin"])
        names = [n for n, _ in m.named_parameters()]
        self.assertIn("layers.0.eps", names)
        self.assertIn("layers.0.mlp.0.weight", names)
        self.assertIn("layers.0.mlp.1.weight", names)  # LayerNorm
        self.assertIn(f"layers.{LAYERS - 1}.mlp.3.weight", names)
        for l in range(LAYERS):
            self.assertTrue(
                torch.equal(m.state_dict()[f"layers.{l}.eps"],
                            torch.zeros(1)))
        # Sum aggregation: h_dst's layer-0 MLP input by hand, through the
        # first Linear and LayerNorm only (eps = 0).
        m.eval()
        x, blocks = make_blocks()
        b = blocks[0]
        agg = x[:SIZES[1]].clone()
        for s, d in b.t().tolist():
            agg[d] += x[s]
        mlp = getattr(m.layers, "0").mlp
        want = mlp(agg)
        got = m(0, x, b, SIZES[1], None)
        self.assertLess((torch.relu(want) - got).abs().max().item(), 1e-5)

    def test_sage_residual(self):
        self.check_ran("sage-residual")
        self.check_ran("wide")
        names = [
            n for n, _ in self.load(self.paths["sage-residual"])
            .named_parameters()
        ]
        # The first layer (widths differ) projects its skip; the others do
        # not need to.
        self.assertIn("layers.0.res.weight", names)
        self.assertNotIn("layers.1.res.weight", names)
        self.assertNotIn(f"layers.{LAYERS - 1}.res.weight", names)
        # in_dim == hidden: identity skips only.
        wide = self.load(self.res_wide)
        self.assertFalse(
            any(".res." in n for n, _ in wide.named_parameters()))
        # A hidden layer is ReLU(sage(x)) + x_dst.
        sage = self.load(self.paths["sage"])
        res = self.load(self.paths["sage-residual"])
        sage.eval()
        res.eval()
        torch.manual_seed(3)
        x, blocks = make_blocks()
        h = torch.randn(SIZES[1], HIDDEN)
        res_params = res.state_dict()
        sage.load_state_dict(
            {name: res_params[name] for name in sage.state_dict()})
        with torch.no_grad():
            got = res(1, h, blocks[1], SIZES[2], None)
            want = sage(1, h, blocks[1], SIZES[2], None) + h[:SIZES[2]]
        self.assertLess((got - want).abs().max().item(), 1e-5)

    def test_bad_arguments(self):
        for name in ("layers0", "model", "dropout", "hidden"):
            with self.subTest(name=name):
                rc, out, err = self.results["bad:" + name]
                self.assertNotEqual(rc, 0)
                self.assertEqual(rc, 2)
                self.assertIn("error", err)
                self.assertEqual(out, "")
        self.assertFalse(os.path.exists(os.path.dirname(self.bad_out)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--make-model", default=MAKE_MODEL)
    parser.add_argument("--ops-library", default="none")
    known, rest = parser.parse_known_args()
    MAKE_MODEL = os.path.abspath(known.make_model)
    OPS_LIBRARY = known.ops_library
    if OPS_LIBRARY != "none":
        # The modules made with it call its operators: so does loading them.
        torch.ops.load_library(OPS_LIBRARY)
    unittest.main(argv=[sys.argv[0]] + rest)
