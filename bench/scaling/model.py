#!/usr/bin/env python3
"""A performance model of data-parallel training, calibrated on the emulated
cluster's runs (bench/scaling/run_scaling.sh) and checked against a run it
was not fitted on.

    bench/scaling/model.py RUNS_DIR [--mode strong] [--fit 1,2] [--check 4]
        [--project 8,16,32,64] [--train-seeds 1207179]

RUNS_DIR holds run_scaling.sh's run directories (<mode>-<link>-<N>/ with a
summary.json). Per link, from the runs with N in --fit trainer hosts:

  step(N)      = c + r(N)      seconds per optimizer step of one trainer
  c            the step without its allreduce (sampling and fetch overlap it
               when prefetching): the mean over the fitted runs of
               (step_seconds - allreduce_seconds) / steps_per_epoch
  r(N)         the allreduce of a ring: 2 (N - 1) / N * (bytes / bandwidth);
               the bandwidth term fitted on the largest fitted N (r(1) = 0)
  epoch(N)     = max(ceil(S / (N * b)) * step(N), server(N))
  server(N)    the servers' CPU per epoch (summary.json: server_cpu_seconds,
               which holds for any N: the same seeds are sampled and
               fetched) over the CPU they have, servers * CPU quota

S train seeds per epoch and b the batch come from the runs. Prints one JSON
object: per link the fitted terms, each --check run's predicted and measured
epoch time and error, and --project's predicted epoch time and efficiency
E(N) = epoch(1) / (N * epoch(N)) with the servers scaled with the trainers
(one server host per 2 trainer hosts), at the measured graph size and at
--train-seeds (ogbn-papers100M's 1,207,179 train nodes by default).
"""
import argparse
import glob
import json
import math
import os
import sys


def load(runs_dir, mode):
    runs = {}
    for path in glob.glob(os.path.join(runs_dir, f"{mode}-*-*/summary.json")):
        name = os.path.basename(os.path.dirname(path))
        _, link, n = name.rsplit("-", 2)
        s = json.load(open(path))
        t = s["epoch_time"]
        cfg = s.get("config", {})
        runs[(link, int(n))] = {
            "steps": s["steps_per_epoch"],
            "step_seconds": t["step_seconds"],
            "allreduce_seconds": t["allreduce_seconds"],
            "server_cpu_seconds": t.get("server_cpu_seconds", 0.0),
            "seeds": t["train_seeds_per_epoch"],
            "batch": s["model"]["batch_size"],
            "world_size": s["world_size"],
        }
    return runs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs_dir")
    p.add_argument("--mode", default="strong")
    p.add_argument("--fit", default="1,2")
    p.add_argument("--check", default="4")
    p.add_argument("--project", default="8,16,32,64")
    p.add_argument("--servers", type=int, default=2)
    p.add_argument("--cpus", type=float, default=0.25)
    p.add_argument("--train-seeds", type=int, default=1207179)
    a = p.parse_args()
    runs = load(a.runs_dir, a.mode)
    if not runs:
        sys.exit(f"model.py: no {a.mode}-*-*/summary.json under {a.runs_dir}")
    fit = [int(x) for x in a.fit.split(",")]
    out = {"mode": a.mode, "fit": fit, "links": {}}
    for link in sorted({k[0] for k in runs}):
        fitted = [runs[(link, n)] for n in fit if (link, n) in runs]
        if len(fitted) < len(fit):
            continue
        c = sum((r["step_seconds"] - r["allreduce_seconds"]) / r["steps"]
                for r in fitted) / len(fitted)
        top = max(fit)
        ring = 2 * (top - 1) / top
        r_unit = (runs[(link, top)]["allreduce_seconds"] /
                  runs[(link, top)]["steps"] / ring) if top > 1 else 0.0
        server_cpu = sum(r["server_cpu_seconds"] for r in fitted) / len(fitted)
        seeds = fitted[0]["seeds"]
        batch = fitted[0]["batch"]

        def epoch(n, servers, train_seeds=seeds):
            step = c + r_unit * 2 * (n - 1) / n
            compute = math.ceil(train_seeds / (n * batch)) * step
            server = server_cpu * train_seeds / seeds / (servers * a.cpus)
            return max(compute, server), compute, server

        entry = {"step_without_allreduce_seconds": c,
                 "allreduce_ring_unit_seconds": r_unit,
                 "server_cpu_seconds_per_epoch": server_cpu,
                 "seeds_per_epoch": seeds, "batch": batch, "checks": [],
                 "projection": []}
        for n in [int(x) for x in a.check.split(",") if x]:
            if (link, n) not in runs:
                continue
            predicted = epoch(n, a.servers)[0]
            measured = runs[(link, n)]["step_seconds"]
            entry["checks"].append({
                "trainers": n, "predicted_epoch_seconds": round(predicted, 3),
                "measured_epoch_seconds": round(measured, 3),
                "error": round(predicted / measured - 1, 3)})
        t1 = epoch(1, 1)[0]
        t1_big = epoch(1, 1, a.train_seeds)[0]
        for n in [int(x) for x in a.project.split(",") if x]:
            servers = max(1, n // 2)
            t, _, _ = epoch(n, servers)
            tb, _, _ = epoch(n, servers, a.train_seeds)
            entry["projection"].append({
                "trainers": n, "servers": servers,
                "epoch_seconds": round(t, 3), "efficiency": round(t1 / (n * t), 3),
                "epoch_seconds_at_train_seeds": round(tb, 1),
                "efficiency_at_train_seeds": round(t1_big / (n * tb), 3)})
        out["links"][link] = entry
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
