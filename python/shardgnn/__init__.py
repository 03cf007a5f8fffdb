"""shardgnn from Python: shardgnn's storage servers, sampler and loaders as
torch tensors (docs/python.md).

    import shardgnn
    graph = shardgnn.connect("127.0.0.1:7000,127.0.0.1:7001",
                             auth_token_file="cluster.token")
    # or, in this process: graph = shardgnn.load_dataset("out/cora")
    train = graph.split("train")                      # int64 node IDs
    loader = shardgnn.NeighborLoader(graph, train, fanouts=[15, 10],
                                     batch_size=1024, shuffle=True, seed=0)
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:
            batch.x           # float32 [num_inputs, F], the input nodes' features
            batch.y           # int64 [batch_size], the seeds' labels (-1: none)
            batch.n_id        # int64 [num_inputs]; the seeds come first
            for edge_index, (num_src, num_dst) in zip(batch.edge_indices,
                                                      batch.sizes):
                ...           # layer l's block: PyG's source-to-target order

Sampling and feature fetching run in C++ threads (`workers`), `prefetch`
batches ahead, with the GIL released while Python waits for a batch. A batch's
tensors share the loader's buffers (no copy): they stay valid as long as any
of them is referenced.
"""
import os

# The native module hands over torch tensors: torch's Python bindings must be
# loaded first.
import torch

from ._shardgnn import (Batch, Embeddings, Graph, NeighborLoader, connect,
                        load_dataset)

__all__ = ["Batch", "Embeddings", "Graph", "NeighborLoader", "connect",
           "load_dataset", "load_ops"]


def load_ops(path=None):
    """Registers shardgnn's operators, torch.ops.shardgnn.neighbor_mean,
    neighbor_sum (x, edge_index, num_dst) and dropout (x, p, training): the
    built-in models' kernels (docs/formats.md, "Model scripts"). `path`:
    libshardgnn_ops.so, by default $SHARDGNN_OPS_LIBRARY or the one the build
    puts beside this package. Raises OSError when it is not there."""
    if path is None:
        path = os.environ.get("SHARDGNN_OPS_LIBRARY") or os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            "libshardgnn_ops.so")
    torch.ops.load_library(path)
