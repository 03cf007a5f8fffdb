#!/usr/bin/env python3
"""Checks a run_attack_training.sh report (stdin) for CI.

Fails unless the JSON parses and every training run, the quiet one and one
under each attack, ended with exit status 0, a test accuracy of at least
--min-acc, and the quiet run's parameters (the same checksum: an attack may
slow a run down, never change what it trains), and unless each attack was
answered as the limits say (amplification refused with RESOURCE_EXHAUSTED,
unauthenticated calls with UNAUTHENTICATED, the idle attacker served again,
flood and bigfeatures calls made). No timing thresholds: the step time ratios
are for benchmarks (docs/benchmarks.md).
"""
import argparse
import json
import sys

from attack_checks import attack_failures

parser = argparse.ArgumentParser()
parser.add_argument("--min-acc", type=float, default=0.0)
args = parser.parse_args()
report = json.load(sys.stdin)
failures = []
quiet = report["quiet"]
runs = {"quiet": quiet}
runs.update({"under " + a: r for a, r in report["attacked"].items()})
if not report["attacked"]:
    failures.append("no run under attack")
for label, r in runs.items():
    if r["exit_status"] != 0:
        failures.append(f"{label}: exit status {r['exit_status']}")
        continue
    if (r.get("test_acc") or 0) < args.min_acc:
        failures.append(f"{label}: test accuracy {r.get('test_acc')} below "
                        f"{args.min_acc}")
    if r.get("parameters_checksum") != quiet.get("parameters_checksum"):
        failures.append(f"{label}: parameters {r.get('parameters_checksum')} "
                        f"differ from the quiet run's "
                        f"{quiet.get('parameters_checksum')}")
for name, r in report["attacked"].items():
    failures += attack_failures(name, r.get("attack") or {})
if failures:
    print("attack-while-training check failed:\n  " + "\n  ".join(failures),
          file=sys.stderr)
    sys.exit(1)
print(f"attack-while-training report ok: {len(runs)} runs", file=sys.stderr)
