"""How each attack of bench/load must be answered (shared by the checks of
load_bench reports and of run_attack_training.sh reports).

Amplification refused with RESOURCE_EXHAUSTED only, unauthenticated calls
with UNAUTHENTICATED only, the idle attacker's address served again once it
let go, and the flood and big-feature attacks made calls at all.
"""


def attack_failures(name, attack):
    """What is wrong with how the servers answered attack `name` (a list of
    messages, empty if nothing)."""
    failures = []
    answers = attack.get("answers", {})
    if name == "amplify" and (not answers.get("RESOURCE_EXHAUSTED") or
                              set(answers) != {"RESOURCE_EXHAUSTED"}):
        failures.append(f"amplify answered {answers}")
    if name == "unauth" and (not answers.get("UNAUTHENTICATED") or
                             set(answers) != {"UNAUTHENTICATED"}):
        failures.append(f"unauth answered {answers}")
    if name == "idle" and not attack.get("attacker_served_again"):
        failures.append(f"idle: attacker not served again: {attack}")
    if name in ("flood", "bigfeatures") and not attack.get("calls"):
        failures.append(f"{name}: the attacker made no call: {attack}")
    return failures
