#!/usr/bin/python3
"""Trains a plain-PyTorch GraphSAGE on shardgnn's storage servers, data-parallel
with torch.distributed (gloo) and DistributedDataParallel.

Start the servers (README.md: partition, then one `shardgnn serve` per part),
then one trainer process per rank with torchrun, here 2 on this host:

    PYTHONPATH=build/python /usr/bin/python3 -m torch.distributed.run \\
        --nproc_per_node 2 --redirects 1 --tee 1 \\
        examples/python/train_sage.py --servers HOST0:7000,HOST1:7001 \\
        [--auth-token-file cluster.token] [--epochs 200] [--fanouts 15,10] \\
        [--batch-size 1024] [--seed 0]

(Debian's python3-torch 1.13 with Python 3.11 needs `--redirects 1 --tee 1`;
its torchrun cannot run a Python script with --no_python.) Without torchrun
the script runs as one process; `--dataset DIR` reads a dataset directory into
memory in place of the servers.

The model: 2 layers (one per fanout), each lin_self(h_dst) + lin_neigh(mean of
h over the destination's in-edges), ReLU and dropout between layers; Adam. Its
aggregation and dropout are shardgnn's kernels (torch.ops.shardgnn, from
shardgnn.load_ops()) when they load, else index_add_ and torch's dropout.

As shardgnn's own trainer: each rank trains its contiguous chunk of the train
split (rank r of W: [n*r/W, n*(r+1)/W)), every rank the same number of steps
(max(ceil(largest chunk / batch size), 10)); features scaled to unit L2 rows
when none is negative (else left as they are); validation accuracy after each
epoch (fanouts doubled, no shuffling; each rank its chunk of the valid split,
summed over ranks), early stopping after --patience epochs without a better
one, and the test accuracy of the best epoch's parameters.

Rank 0 prints a line per epoch and, last, one JSON line:
{"test_accuracy": ..., "best_epoch": ..., "epoch_seconds_mean": ...,
 "world_size": ..., ...}. Exits 1 with a message on stderr when the servers
cannot be reached or a collective times out, 2 on bad arguments.
"""
import argparse
import copy
import datetime
import json
import math
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

try:
    import shardgnn
except ImportError as e:
    sys.exit(f"train_sage.py: cannot import shardgnn ({e}); run with "
             "PYTHONPATH=build/python (the build's Python package) and "
             "Debian's /usr/bin/python3")

MIN_STEPS_PER_EPOCH = 10  # As shardgnn's trainer (trainer/trainer_options.cc).
FEATURE_SAMPLE = 10000  # Nodes sampled to choose the feature scaling.


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="train_sage.py",
        description="GraphSAGE on shardgnn's servers, with torch.distributed")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--servers",
                        help="the storage servers, HOST:PORT,HOST:PORT,...")
    source.add_argument("--dataset",
                        help="a dataset directory, read into memory instead")
    p.add_argument("--auth-token-file", default="",
                   help="the servers' auth token (serve --auth-token-file)")
    p.add_argument("--epochs", type=int, default=200, help="at most (200)")
    p.add_argument("--patience", type=int, default=20,
                   help="epochs without a better validation accuracy before "
                   "stopping (20)")
    p.add_argument("--fanouts", default="15,10",
                   help="neighbors sampled per hop, the seeds' first (15,10)")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1,
                   help="sampling threads per rank (1)")
    p.add_argument("--prefetch", type=int, default=4,
                   help="batches sampled ahead (4)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads per rank (0: CPUs / local ranks)")
    p.add_argument("--connect-timeout", type=float, default=30.0,
                   help="seconds to wait for the servers (30)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds any collective may wait for the other "
                   "ranks (300)")
    p.add_argument("--no-ops", action="store_true",
                   help="use index_add_ and torch's dropout, not shardgnn's "
                   "kernels")
    args = p.parse_args(argv)
    try:
        args.fanouts = [int(f) for f in args.fanouts.split(",")]
    except ValueError:
        p.error(f"--fanouts {args.fanouts}: a comma-separated list of "
                "integers expected")
    if not args.fanouts or any(f < -1 or f == 0 for f in args.fanouts):
        p.error("--fanouts: each fanout must be positive (or -1: all)")
    for name in ("epochs", "batch_size", "hidden", "workers"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.patience < 1 or args.prefetch < 0 or args.threads < 0:
        p.error("--patience must be >= 1, --prefetch and --threads >= 0")
    if not 0 <= args.dropout < 1:
        p.error("--dropout must be within [0, 1)")
    if args.connect_timeout <= 0 or args.timeout <= 0:
        p.error("--connect-timeout and --timeout must be positive")
    if args.auth_token_file and not os.path.isfile(args.auth_token_file):
        p.error(f"--auth-token-file {args.auth_token_file}: no such file")
    return args


class Ops:
    """Aggregation and dropout: shardgnn's kernels, or plain torch."""

    def __init__(self, use_shardgnn):
        self.name = "torch (index_add_)"
        self.fast = False
        if use_shardgnn:
            try:
                shardgnn.load_ops()
                self.fast = True
                self.name = "shardgnn (torch.ops.shardgnn)"
            except (OSError, RuntimeError) as e:
                self.name = f"torch (index_add_; shardgnn's ops: {e})"

    def mean(self, x, edge_index, num_dst):
        if self.fast:
            return torch.ops.shardgnn.neighbor_mean(x, edge_index, num_dst)
        src, dst = edge_index[0], edge_index[1]
        out = x.new_zeros(num_dst, x.size(1))
        out.index_add_(0, dst, x.index_select(0, src))
        degree = torch.bincount(dst, minlength=num_dst).clamp_(min=1)
        return out / degree.unsqueeze(1).to(x.dtype)

    def dropout(self, x, p, training):
        if self.fast:
            return torch.ops.shardgnn.dropout(x, p, training)
        return F.dropout(x, p, training)


class SAGELayer(torch.nn.Module):
    def __init__(self, in_dim, out_dim, ops):
        super().__init__()
        self.lin_self = torch.nn.Linear(in_dim, out_dim)
        self.lin_neigh = torch.nn.Linear(in_dim, out_dim, bias=False)
        self.ops = ops

    def forward(self, h, edge_index, num_dst):
        return self.lin_self(h[:num_dst]) + self.lin_neigh(
            self.ops.mean(h, edge_index, num_dst))


class SAGE(torch.nn.Module):
    def __init__(self, in_dim, hidden, classes, layers, dropout, ops):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [classes]
        self.layers = torch.nn.ModuleList(
            SAGELayer(dims[i], dims[i + 1], ops) for i in range(layers))
        self.dropout = dropout
        self.ops = ops

    def forward(self, x, edge_indices, sizes):
        h = x
        for i, (layer, edge_index, (_, num_dst)) in enumerate(
                zip(self.layers, edge_indices, sizes)):
            h = layer(h, edge_index, num_dst)
            if i + 1 < len(self.layers):
                h = self.ops.dropout(F.relu(h), self.dropout, self.training)
        return h


def chunk(ids, rank, world):
    """Rank's contiguous share, as the C++ trainer's Chunk (ShareOf)."""
    n = ids.numel()
    return ids[n * rank // world:n * (rank + 1) // world]


def choose_scaling(graph):
    """'row-l2' when the sampled nodes' features are all non-negative (the C++
    trainer's automatic choice for such features), else 'none'. The same
    evenly spaced nodes on every rank, so every rank chooses alike."""
    n = graph.num_nodes
    k = max(1, min(n, FEATURE_SAMPLE))
    ids = torch.arange(0, k, dtype=torch.int64) * (n // k)
    lo = math.inf
    for begin in range(0, k, 4096):
        lo = min(lo, float(graph.features(ids[begin:begin + 4096]).min()))
    return "row-l2" if lo >= 0 else "none"


def scale(x, scaling):
    if scaling == "row-l2":
        # In place: the batch's own buffer, nobody else's.
        x.div_(x.square().sum(1, keepdim=True).sqrt_().clamp_min_(1e-12))
    return x


def all_sum(values):
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


def evaluate(model, loader, scaling):
    """(correct, labelled) over this rank's loader, summed over ranks."""
    correct = total = 0
    if loader is not None:
        model.eval()
        loader.set_epoch(0)  # The same sample every time.
        with torch.no_grad():
            for batch in loader:
                out = model(scale(batch.x, scaling), batch.edge_indices,
                            batch.sizes)
                y = batch.y
                labelled = y >= 0
                correct += int((out.argmax(1)[labelled] == y[labelled]).sum())
                total += int(labelled.sum())
    correct, total = all_sum([correct, total])
    return correct / total if total else 0.0


def init_distributed(timeout):
    """torchrun's group, or a group of one when started without it."""
    timeout = datetime.timedelta(seconds=timeout)
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo", timeout=timeout)
        return None
    store_file = tempfile.NamedTemporaryFile(prefix="train_sage_store_")
    store = dist.FileStore(store_file.name, 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1,
                            timeout=timeout)
    return store_file  # Kept open (and so present) while the group lives.


def error(message):
    """One write, so that the ranks' messages do not interleave."""
    sys.stderr.write(f"train_sage.py: {message}\n")
    sys.stderr.flush()


def main(argv):
    args = parse_args(argv)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    torch.set_num_threads(args.threads or
                          max(1, (os.cpu_count() or 1) // local_world))
    store_file = init_distributed(args.timeout)
    rank, world = dist.get_rank(), dist.get_world_size()

    def log(*a):
        if rank == 0:
            print(*a, flush=True)

    try:
        if args.servers:
            graph = shardgnn.connect(args.servers,
                                     auth_token_file=args.auth_token_file,
                                     timeout=args.connect_timeout)
        else:
            graph = shardgnn.load_dataset(args.dataset)
        train, valid, test = (graph.split(s)
                              for s in ("train", "valid", "test"))
    except (RuntimeError, ValueError, KeyError, OSError) as e:
        where = args.servers or args.dataset
        error(f"rank {rank}: cannot read the graph from {where}: {e}")
        return 1
    if graph.num_classes < 1 or graph.feature_dim < 1:
        error("the graph has no labels or no node features")
        return 1

    ops = Ops(not args.no_ops)
    scaling = choose_scaling(graph)
    log(f"train_sage.py: {world} ranks, {graph.num_nodes} nodes, "
        f"{graph.num_parts} parts, {graph.feature_dim} features, "
        f"{graph.num_classes} classes; train/valid/test {train.numel()}/"
        f"{valid.numel()}/{test.numel()}; features {scaling}; "
        f"aggregation {ops.name}")

    torch.manual_seed(args.seed)  # The same initial parameters everywhere.
    model = SAGE(graph.feature_dim, args.hidden, graph.num_classes,
                 len(args.fanouts), args.dropout, ops)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=args.lr,
                                 weight_decay=args.weight_decay)
    torch.manual_seed(args.seed * 1000003 + rank)  # Each rank's dropout.

    largest = -(-train.numel() // world)
    steps = max(-(-largest // args.batch_size), MIN_STEPS_PER_EPOCH)
    train_loader = shardgnn.NeighborLoader(
        graph, chunk(train, rank, world), args.fanouts,
        batch_size=args.batch_size, shuffle=True, seed=args.seed,
        prefetch=args.prefetch, workers=args.workers, steps_per_epoch=steps)
    eval_fanouts = [f * 2 if f > 0 else f for f in args.fanouts]

    def eval_loader(ids):
        mine = chunk(ids, rank, world)
        if mine.numel() == 0:
            return None
        return shardgnn.NeighborLoader(
            graph, mine, eval_fanouts, batch_size=args.batch_size,
            shuffle=False, seed=args.seed, prefetch=args.prefetch,
            workers=args.workers)

    valid_loader = eval_loader(valid)
    best_acc, best_epoch, best_state = -1.0, 0, None
    epoch_seconds = []
    for epoch in range(1, args.epochs + 1):
        ddp.train()
        train_loader.set_epoch(epoch - 1)
        start = time.perf_counter()
        wait = loss_sum = 0.0
        batches = iter(train_loader)
        while True:
            t = time.perf_counter()
            try:
                batch = next(batches)
            except StopIteration:
                break
            wait += time.perf_counter() - t
            out = ddp(scale(batch.x, scaling), batch.edge_indices, batch.sizes)
            loss = F.cross_entropy(out, batch.y, ignore_index=-1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += float(loss)
        seconds = time.perf_counter() - start
        epoch_seconds.append(seconds)
        loss_mean = all_sum([loss_sum / steps])[0] / world
        acc = evaluate(model, valid_loader, scaling)
        if acc > best_acc:
            best_acc, best_epoch = acc, epoch
            best_state = copy.deepcopy(model.state_dict())
        log(f"epoch {epoch:3d}  loss {loss_mean:.4f}  val acc {acc:.4f}  "
            f"{seconds:.2f} s  sampling wait {wait:.2f} s")
        if epoch - best_epoch >= args.patience:
            log(f"no better validation accuracy for {args.patience} epochs: "
                "stopping")
            break

    model.load_state_dict(best_state)
    test_loader = eval_loader(test)
    test_acc = evaluate(model, test_loader, scaling)
    log(json.dumps({
        "test_accuracy": round(test_acc, 6),
        "best_epoch": best_epoch,
        "best_val_accuracy": round(best_acc, 6),
        "epochs": len(epoch_seconds),
        "epoch_seconds_mean": round(sum(epoch_seconds) / len(epoch_seconds),
                                    6),
        "world_size": world,
        "aggregation": "shardgnn" if ops.fast else "torch",
        "features": scaling,
    }))
    # The loaders' threads end before the graph they read goes.
    del train_loader, valid_loader, test_loader
    dist.destroy_process_group()
    if store_file is not None:
        store_file.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        # A collective that timed out or lost a peer, a batch that failed.
        error(f"error: {e}")
        sys.exit(1)
