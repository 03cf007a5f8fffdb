#!/usr/bin/env python3
"""Loads a shardgnn model (model.json + model.pt) with stock PyTorch and
predicts nodes of a dataset directory, full-graph, without shardgnn.

    python3 examples/predict_with_torch.py RUN_DIR DATASET_DIR [--check INFER_OUT] [--nodes 0,1,2]

model.pt is a dict of named tensors (torch.load); model.json says how they fit
together (docs/formats.md, "Trained models"). With --check, the predictions
and logits of `shardgnn infer --out INFER_OUT` are compared for the given
nodes (default: 20 spread over the graph); exits 1 on a mismatch.
Needs python3-torch and python3-numpy (Debian packages).
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
import torch


def load_graph(dataset_dir):
    indptr = torch.from_numpy(np.load(os.path.join(dataset_dir, "indptr.npy")))
    indices = torch.from_numpy(np.load(os.path.join(dataset_dir, "indices.npy")))
    x = torch.from_numpy(np.load(os.path.join(dataset_dir, "features.npy")))
    n = indptr.numel() - 1
    dst = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
    return x, indices, dst, (indptr[1:] - indptr[:-1]).float()


def scale_features(x, config):
    norm = config["feature_norm"]
    if norm == "row":
        return x / x.abs().sum(1, keepdim=True).clamp_min(1e-12)
    if norm == "row-l2":
        return x / x.square().sum(1, keepdim=True).sqrt().clamp_min(1e-12)
    if norm == "standardize":
        shift = torch.tensor(config["feature_shift"])
        scale = torch.tensor(config["feature_scale"])
        return (x - shift) * scale
    if norm != "none":
        raise SystemExit(f"model.json: unknown feature_norm '{norm}'")
    return x


def scatter_sum(values, dst, n):
    out = torch.zeros((n,) + values.shape[1:], dtype=values.dtype)
    return out.index_add_(0, dst, values)


def forward(config, p, x, src, dst, degree):
    """Every node's outputs, layer after layer, over full neighborhoods: row v
    of the graph lists the nodes v aggregates from (src -> dst = v)."""
    n = x.shape[0]
    kind, layers = config["kind"], config["layers"]
    loops = torch.arange(n)
    h = scale_features(x, config)
    for l in range(layers):
        w = lambda name: p[f"layers.{l}.{name}"]
        last = l + 1 == layers
        if kind == "sage":  # W_self h_v + W_neigh mean_{u in N(v)} h_u
            mean = scatter_sum(h[src], dst, n) / degree.clamp_min(1).unsqueeze(1)
            h = h @ w("lin_self.weight").T + w("lin_self.bias") + mean @ w("lin_neigh.weight").T
        elif kind == "gcn":  # sum over N(v) + v of h_u W / sqrt((d_u + 1)(d_v + 1))
            s, d = torch.cat([src, loops]), torch.cat([dst, loops])
            norm = ((degree[s] + 1) * (degree[d] + 1)).rsqrt().unsqueeze(1)
            h = scatter_sum((h @ w("lin.weight").T)[s] * norm, d, n) + w("bias")
        elif kind == "gat":  # softmax attention over N(v) + v, per head
            heads = w("attn_l").shape[1]
            z = (h @ w("lin.weight").T).view(n, heads, -1)
            s, d = torch.cat([loops, src]), torch.cat([loops, dst])
            el, er = (z * w("attn_l")).sum(-1), (z * w("attn_r")).sum(-1)
            e = torch.nn.functional.leaky_relu(el[s] + er[d], 0.2)
            e = (e - scatter_max(e, d, n)[d]).exp()
            alpha = e / scatter_sum(e, d, n)[d]
            out = scatter_sum(z[s] * alpha.unsqueeze(-1), d, n)
            h = (out.mean(1) if last else out.reshape(n, -1)) + w("bias")
        elif kind == "mlp":
            h = h @ w("lin.weight").T + w("lin.bias")
        if not last:
            h = torch.nn.functional.elu(h) if kind == "gat" else torch.relu(h)
    return h


def scatter_max(values, dst, n):
    warnings.filterwarnings("ignore", message="scatter_reduce")
    out = torch.full((n,) + values.shape[1:], -float("inf"), dtype=values.dtype)
    return out.scatter_reduce_(0, dst.view(-1, 1).expand_as(values), values, "amax")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("dataset_dir")
    parser.add_argument("--check", help="`shardgnn infer --out` directory")
    parser.add_argument("--nodes", help="comma-separated node IDs")
    args = parser.parse_args()
    with open(os.path.join(args.run_dir, "model.json")) as f:
        config = json.load(f)
    params = torch.load(os.path.join(args.run_dir, config["parameters"]))
    x, src, dst, degree = load_graph(args.dataset_dir)
    with torch.no_grad():
        logits = forward(config, params, x, src, dst, degree)
    n = logits.shape[0]
    nodes = ([int(v) for v in args.nodes.split(",")] if args.nodes
             else list(range(0, n, max(1, n // 20))))
    predictions = logits.argmax(1)
    for v in nodes[:5]:
        print(f"node {v}: class {int(predictions[v])}")
    if not args.check:
        return 0
    theirs = torch.from_numpy(np.load(os.path.join(args.check, "logits.npy")))
    their_pred = torch.from_numpy(np.load(os.path.join(args.check, "predictions.npy")))
    idx = torch.tensor(nodes)
    gap = (theirs[idx] - logits[idx]).abs().max().item()
    same = bool((their_pred[idx] == predictions[idx]).all())
    print(f"checked {len(nodes)} nodes against {args.check}: largest logit "
          f"difference {gap:.2e}, predictions {'equal' if same else 'DIFFER'}")
    return 0 if same and gap < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
