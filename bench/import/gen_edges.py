#!/usr/bin/env python3
"""Writes an R-MAT edge list for the out-of-core import benchmark.

  gen_edges.py OUT_DIR NODES EDGES [--seed S] [--text]

OUT_DIR gets edges.npy (int64 [E, 2], "src dst" rows; with --text also
edges.txt, one "src dst" line per edge), features.npy (float32 [NODES, 8])
and labels.npy (int64 [NODES], 4 classes). R-MAT (a, b, c = 0.57, 0.19,
0.19) over the next power of two at or above NODES, IDs folded into
[0, NODES): skewed degrees, duplicates and self-loops, as real edge lists
have. Written in chunks of 4M edges, so the generator itself stays small.
"""
import argparse
import os

import numpy as np

CHUNK = 1 << 22


def rmat_chunk(rng, count, scale, nodes):
    src = np.zeros(count, dtype=np.int64)
    dst = np.zeros(count, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(count)
        # Quadrants: a (0,0) < 0.57, b (0,1) < 0.76, c (1,0) < 0.95, d (1,1).
        down = r >= 0.76
        right = ((r >= 0.57) & (r < 0.76)) | (r >= 0.95)
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    return src % nodes, dst % nodes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("nodes", type=int)
    parser.add_argument("edges", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--text", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    scale = max(1, (args.nodes - 1).bit_length())
    edges = np.lib.format.open_memmap(
        os.path.join(args.out_dir, "edges.npy"), mode="w+", dtype=np.int64,
        shape=(args.edges, 2))
    text = (open(os.path.join(args.out_dir, "edges.txt"), "w")
            if args.text else None)
    for begin in range(0, args.edges, CHUNK):
        count = min(CHUNK, args.edges - begin)
        src, dst = rmat_chunk(rng, count, scale, args.nodes)
        edges[begin:begin + count, 0] = src
        edges[begin:begin + count, 1] = dst
        if text is not None:
            pairs = np.char.add(np.char.add(src.astype(str), " "),
                                dst.astype(str))
            text.write("\n".join(pairs.tolist()))
            text.write("\n")
    edges.flush()
    del edges
    if text is not None:
        text.close()
    features = np.lib.format.open_memmap(
        os.path.join(args.out_dir, "features.npy"), mode="w+",
        dtype=np.float32, shape=(args.nodes, 8))
    for begin in range(0, args.nodes, CHUNK):
        count = min(CHUNK, args.nodes - begin)
        features[begin:begin + count] = rng.standard_normal(
            (count, 8), dtype=np.float32)
    features.flush()
    del features
    np.save(os.path.join(args.out_dir, "labels.npy"),
            rng.integers(0, 4, args.nodes, dtype=np.int64))


if __name__ == "__main__":
    main()
