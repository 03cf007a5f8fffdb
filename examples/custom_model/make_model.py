#!/usr/bin/python3
"""Writes a GNN as a TorchScript module for `shardgnn run --model-script`.

    /usr/bin/python3 examples/custom_model/make_model.py --model gin|sage-residual|sage \\
        --in-dim F --classes C --out model.pt \\
        [--hidden 256] [--layers 2] [--dropout 0.5] [--seed 0]

For example, for Cora (1433 features, 7 classes):

    /usr/bin/python3 examples/custom_model/make_model.py --model gin --in-dim 1433 --classes 7 --out model.pt
    shardgnn run --model-script model.pt

Needs Debian's python3-torch (hence /usr/bin/python3); plain torch only.

The interface the trainer calls
-------------------------------
The file holds torch.jit.script(model) with
  * `num_layers`: an int attribute, the number of layers;
  * forward(layer: int, x: Tensor, edge_index: Tensor, num_dst: int,
            edge_attr: Optional[Tensor]) -> Tensor,
    called once per layer, layer = 0 .. num_layers - 1, on that layer's block:
      x           float32 [num_src, F_layer], the states of the block's
                  sources; its first num_dst rows are the destinations.
      edge_index  int64 [2, E]: row 0 the source (a row of x), row 1 the
                  destination (< num_dst), grouped by destination ascending,
                  no self loops (PyG's source-to-target flow).
      num_dst     the number of destinations.
      edge_attr   float32 [E, D] edge features, or None. All three models here
                  ignore it.
    returns float32 [num_dst, W_layer]: `hidden` columns, the last layer
    `classes` logits (no softmax).
  * float32 CPU parameters and no buffers (so no BatchNorm; LayerNorm is fine).

The top-level module only picks layer number `layer` out of the ModuleList
`layers` (TorchScript cannot index a ModuleList with a runtime int, so it
enumerates it). Each layer module does all of its layer itself, in
forward(x, edge_index, num_dst, edge_attr): dropout on its input
(torch.nn.functional.dropout(x, p, self.training), so only in training mode),
the layer, and ReLU unless it is the last layer (`last`).

The models
----------
mean_N(v) below is the mean of v over a destination's in-edges (0 for a
destination without any), sum_N(v) their sum, h = dropout(x), h_dst = h[:num_dst].

  sage           An exact copy of shardgnn's built-in GraphSAGE (--model sage):
                 out = lin_self(h_dst) + lin_neigh(mean_N(h)), lin_self a
                 Linear(in, out) with bias, lin_neigh one without; ReLU after
                 every layer but the last. Widths in_dim -> hidden -> ... ->
                 classes. Parameters layers.<l>.lin_self.{weight,bias},
                 layers.<l>.lin_neigh.weight.
  sage-residual  The same layers with a skip connection around every layer but
                 the last, added after the ReLU:
                     out = ReLU(lin_self(h_dst) + lin_neigh(mean_N(h))) + skip(x_dst)
                 skip is the identity where the layer's input and output
                 widths are equal and a bias-free Linear `res` (in -> out)
                 where they differ (the first layer, unless in_dim == hidden).
                 The skip reads the layer's input before dropout. The last
                 layer has no skip: a linear term of x_dst added to logits is
                 one lin_self already has. With --layers 1 this is `sage`.
  gin            GIN-0 style (Xu et al. 2019, "How Powerful are Graph Neural
                 Networks?") with a learnable eps (GIN-eps):
                     out = mlp((1 + eps) * h_dst + sum_N(h))
                 mlp = Linear(in, hidden) - LayerNorm(hidden) - ReLU -
                 Linear(hidden, out) (layers.<l>.mlp.{0,1,3}.*), eps a
                 parameter of shape [1] (layers.<l>.eps) starting at 0; ReLU
                 after every layer but the last. The LayerNorm (not in the
                 paper, which uses BatchNorm) keeps the sums over sampled
                 neighborhoods of varying size in range; it has no buffers.

Initialisation (all three): torch.manual_seed(seed), then the parameters in
named_parameters() order from a torch.Generator seeded with `seed`: every
Linear weight Glorot (Xavier) uniform, bound sqrt(6 / (fan_in + fan_out)),
every Linear bias zero, as the built-in models' InitParameters does (for
`sage` the same draws in the same order from the same seed give the same
parameters as InitParameters(model, seed)). LayerNorm weights start at 1 and
biases at 0, GIN's eps at 0.

The module is saved in training mode (a fresh module's default); the trainer
switches train() / eval().
"""
import argparse
import os
import sys
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

MODELS = ("gin", "sage-residual", "sage")


def plain_neighbor_sum(x: Tensor, edge_index: Tensor, num_dst: int) -> Tensor:
    """sum over each destination's in-edges of x[src]: [num_dst, x.size(1)]."""
    return torch.zeros(num_dst, x.size(1), dtype=x.dtype,
                       device=x.device).index_add_(
                           0, edge_index[1], x.index_select(0, edge_index[0]))


def plain_neighbor_mean(x: Tensor, edge_index: Tensor, num_dst: int) -> Tensor:
    """mean over each destination's in-edges of x[src]; 0 without edges."""
    total = plain_neighbor_sum(x, edge_index, num_dst)
    count = torch.zeros(num_dst, dtype=x.dtype, device=x.device).index_add_(
        0, edge_index[1],
        torch.ones(edge_index.size(1), dtype=x.dtype, device=x.device))
    return total / count.clamp(min=1.0).unsqueeze(1)


def fused_neighbor_sum(x: Tensor, edge_index: Tensor, num_dst: int) -> Tensor:
    return torch.ops.shardgnn.neighbor_sum(x, edge_index, num_dst)


def fused_neighbor_mean(x: Tensor, edge_index: Tensor, num_dst: int) -> Tensor:
    return torch.ops.shardgnn.neighbor_mean(x, edge_index, num_dst)


def plain_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    return F.dropout(x, p, training)


def fused_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    return torch.ops.shardgnn.dropout(x, p, training)


# What the layers call; main() points them at the fused operators when their
# library loads (before scripting: TorchScript binds them then).
neighbor_sum = plain_neighbor_sum
neighbor_mean = plain_neighbor_mean
dropout = plain_dropout


def default_ops_library() -> str:
    """$SHARDGNN_OPS_LIBRARY, else build/python/libshardgnn_ops.so of this
    repository (the CMake build puts it there)."""
    env = os.environ.get("SHARDGNN_OPS_LIBRARY")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return os.path.join(repo, "build", "python", "libshardgnn_ops.so")


class SageLayer(torch.nn.Module):
    """The built-in GraphSAGE layer, optionally with a skip around it."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float, last: bool,
                 residual: bool):
        super().__init__()
        self.lin_self = torch.nn.Linear(in_dim, out_dim, bias=True)
        self.lin_neigh = torch.nn.Linear(in_dim, out_dim, bias=False)
        self.dropout = dropout
        self.last = last
        # The mean and the bias-free projection commute: project first when
        # that makes the rows to gather narrower (as the built-in does).
        self.project_first = in_dim > out_dim
        # Skip: 0 none, 1 identity, 2 the projection `res`.
        self.skip = 0
        if residual and not last:
            self.skip = 1 if in_dim == out_dim else 2
        if self.skip == 2:
            self.res = torch.nn.Linear(in_dim, out_dim, bias=False)
        else:
            self.res = torch.nn.Identity()

    def forward(self, x: Tensor, edge_index: Tensor, num_dst: int,
                edge_attr: Optional[Tensor]) -> Tensor:
        h = dropout(x, self.dropout, self.training)
        if self.project_first:
            agg = neighbor_mean(self.lin_neigh(h), edge_index, num_dst)
        else:
            agg = self.lin_neigh(neighbor_mean(h, edge_index, num_dst))
        out = self.lin_self(h[:num_dst]) + agg
        if not self.last:
            out = F.relu(out)
        if self.skip != 0:
            out = out + self.res(x[:num_dst])
        return out


class GinLayer(torch.nn.Module):
    """mlp((1 + eps) * h_dst + sum of the in-neighbors' h)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float,
                 last: bool):
        super().__init__()
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(in_dim, hidden),
            torch.nn.LayerNorm(hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, out_dim),
        )
        self.eps = torch.nn.Parameter(torch.zeros(1))
        self.dropout = dropout
        self.last = last

    def forward(self, x: Tensor, edge_index: Tensor, num_dst: int,
                edge_attr: Optional[Tensor]) -> Tensor:
        h = dropout(x, self.dropout, self.training)
        out = self.mlp((1.0 + self.eps) * h[:num_dst] +
                       neighbor_sum(h, edge_index, num_dst))
        if not self.last:
            out = F.relu(out)
        return out


class Model(torch.nn.Module):
    """A stack of layers; forward runs layer number `layer` of it."""

    def __init__(self, kind: str, in_dim: int, hidden: int, classes: int,
                 layers: int, dropout: float):
        super().__init__()
        self.num_layers = layers
        stack = []
        for l in range(layers):
            last = l + 1 == layers
            i = in_dim if l == 0 else hidden
            o = classes if last else hidden
            if kind == "gin":
                stack.append(GinLayer(i, hidden, o, dropout, last))
            else:
                stack.append(
                    SageLayer(i, o, dropout, last, kind == "sage-residual"))
        self.layers = torch.nn.ModuleList(stack)

    def forward(self, layer: int, x: Tensor, edge_index: Tensor, num_dst: int,
                edge_attr: Optional[Tensor]) -> Tensor:
        out: Optional[Tensor] = None
        for i, module in enumerate(self.layers):
            if i == layer:
                out = module(x, edge_index, num_dst, edge_attr)
        if out is None:
            raise RuntimeError("no layer " + str(layer) + " in a model of " +
                               str(self.num_layers))
        return out


def init_parameters(model: torch.nn.Module, seed: int) -> None:
    """Glorot uniform Linear weights, zero Linear biases (in named_parameters()
    order, from a generator seeded with `seed`); LayerNorm and eps keep their
    initial 1, 0 and 0."""
    generator = torch.Generator().manual_seed(seed)
    linear = set()
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            linear.add(id(module.weight))
            if module.bias is not None:
                linear.add(id(module.bias))
    with torch.no_grad():
        for _, p in model.named_parameters():
            if id(p) not in linear:
                continue
            if p.dim() < 2:
                p.zero_()
            else:
                bound = (6.0 / (p.size(-2) + p.size(-1)))**0.5
                p.uniform_(-bound, bound, generator=generator)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seed_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(
            f"must be in [0, 2^63), not {value}")
    return value


def dropout_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {value}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Writes a GNN as a TorchScript module for "
        "`shardgnn run --model-script`.")
    parser.add_argument("--model", required=True, choices=MODELS)
    parser.add_argument("--in-dim", required=True, type=positive_int,
                        help="input feature width")
    parser.add_argument("--classes", required=True, type=positive_int,
                        help="output width (logits)")
    parser.add_argument("--out", required=True, help="the file to write")
    parser.add_argument("--hidden", type=positive_int, default=256)
    parser.add_argument("--layers", type=positive_int, default=2)
    parser.add_argument("--dropout", type=dropout_rate, default=0.5)
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument(
        "--ops-library", default=None,
        help="shardgnn's operators (libshardgnn_ops.so): aggregate with "
        "torch.ops.shardgnn.neighbor_mean/sum and drop out with "
        "torch.ops.shardgnn.dropout, the built-in models' kernels; "
        "'none': plain torch (index_select + index_add_), about 2-3x slower "
        "on large batches. Default: $SHARDGNN_OPS_LIBRARY, else "
        "build/python/libshardgnn_ops.so when it exists")
    return parser.parse_args(argv)


def main(argv) -> int:
    args = parse_args(argv)
    global neighbor_sum, neighbor_mean, dropout
    library = args.ops_library
    if library is None:
        library = default_ops_library()
        if not os.path.exists(library):
            library = "none"
    aggregation = "plain torch"
    if library != "none":
        try:
            torch.ops.load_library(library)
        except (OSError, RuntimeError) as e:
            print(f"make_model.py: cannot load {library}: {e}",
                  file=sys.stderr)
            return 1
        neighbor_sum = fused_neighbor_sum
        neighbor_mean = fused_neighbor_mean
        dropout = fused_dropout
        aggregation = "torch.ops.shardgnn"
    torch.manual_seed(args.seed)
    model = Model(args.model, args.in_dim, args.hidden, args.classes,
                  args.layers, args.dropout)
    init_parameters(model, args.seed)
    count = sum(p.numel() for p in model.parameters())
    scripted = torch.jit.script(model)
    out = args.out
    tmp = out + ".tmp"
    try:
        directory = os.path.dirname(out)
        if directory:
            os.makedirs(directory, exist_ok=True)
        scripted.save(tmp)
        os.replace(tmp, out)
    except (OSError, RuntimeError) as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        print(f"make_model.py: cannot write {out}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.model}: {args.layers} layers, {count} parameters, "
          f"aggregation {aggregation}, to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
