#!/usr/bin/env python3
"""Checks a load_bench report (stdin) for the CI smoke test.

Fails unless the JSON parses, every phase had well-behaved steps and not one
well-behaved error, and each attack that ran was answered as the limits say:
amplification refused with RESOURCE_EXHAUSTED, unauthenticated calls with
UNAUTHENTICATED, the idle attacker's address served again once it let go.
No timing thresholds: speed is measured in benchmarks, not in timed tests.
"""
import json
import sys

from attack_checks import attack_failures

report = json.load(sys.stdin)
failures = []
phases = report["phases"]
if not phases:
    failures.append("no phases")
for p in phases:
    name = p["phase"]
    if p["steps"] <= 0 or p["steps_per_s"] <= 0:
        failures.append(f"{name}: no well-behaved steps")
    if p["errors"] or p["failed_steps"]:
        failures.append(f"{name}: well-behaved errors {p['errors']} "
                        f"({p.get('first_error', '')})")
    attack = p.get("attack")
    if attack is None or "skipped" in attack:
        continue
    failures += attack_failures(name, attack)
    answers = attack.get("answers", {})
    if name in ("flood", "bigfeatures") and not answers.get("OK"):
        failures.append(f"{name}: no attack call went through: {answers}")
# After the attacks the server's memory is back near its quiet size (a flood
# once left it at its peak: glibc kept the freed answers).
rss = {p["phase"]: p.get("server_rss_mib") for p in phases}
if rss.get("quiet") and rss.get("after"):
    limit = rss["quiet"]["max"] + 64
    if rss["after"]["end"] > limit:
        failures.append(f"server RSS after the attacks {rss['after']['end']:.0f}"
                        f" MiB, over quiet + 64 MiB ({limit:.0f})")
if failures:
    print("load_bench report check failed:\n  " + "\n  ".join(failures),
          file=sys.stderr)
    sys.exit(1)
print(f"load_bench report ok: {len(phases)} phases", file=sys.stderr)
