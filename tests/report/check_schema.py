#!/usr/bin/env python3
"""Checks an ampshim report against docs/report-schema.md (version 2):
every documented key present with its documented type, and the reasons
of the calls that ran FP32 adding up to them (per site, per shape, in
total). Exit 0 when it conforms, 1 with one line per problem."""
import json
import sys

INT, NUM, STR, BOOL, OBJ, ARR = "int", "num", "str", "bool", "obj", "arr"
NULL = "null"


def kind(v):
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return NUM
    if isinstance(v, str):
        return STR
    if isinstance(v, dict):
        return OBJ
    return ARR


def fits(v, want):
    k = kind(v)
    return k in want or (k == INT and NUM in want)


PROGRAM = {"name": {STR}, "path": {STR}, "build_id": {STR, NULL},
           "pid": {INT}, "command_line": {ARR, NULL}, "host": {STR, NULL}}
JOB = {"launcher": {STR}, "rank": {INT}, "local_rank": {INT, NULL},
       "size": {INT, NULL}, "id": {STR, NULL}}
DEVICE = {"name": {STR}, "reported_name": {STR}, "emulated": {BOOL},
          "modelled_gpu": {STR, NULL}, "timing": {STR},
          "compute_capability": {STR, NULL}}
DEVICES = {k: {INT} for k in ("ordinal", "calls", "converted", "delivered",
                              "shadow",
                              "fp32", "fallback", "calls_fp32_measured",
                              "calls_fp32_estimated", "calls_fp32_unknown")}
DEVICES.update({k: {NUM} for k in ("fp32_ms", "actual_ms", "flops_fp32",
                                   "flops_converted")})
DEVICES.update({"name": {STR, NULL}, "speedup": {NUM, NULL}})
POLICY = {"source": {STR}, "path": {STR, NULL}, "why": {STR},
          "broken": {BOOL}, "mode": {STR, NULL}, "tolerance": {NUM, NULL},
          "tolerance_norm": {STR}, "tolerance_source": {STR}}
API = {k: {INT} for k in ("calls", "converted", "fp32", "fallback",
                          "passthrough", "plans_built",
                          "heuristic_queries")}
API["api"] = {STR}
TIME = {k: {NUM} for k in ("converted_ms", "converted_estimated_ms",
                           "fp32_sampled_ms", "shadow_fp32_ms",
                           "shadow_candidate_ms", "shadow_check_ms",
                           "timing_ms", "fp32_ms",
                           "fp32_measured_ms", "fp32_estimated_ms",
                           "actual_ms", "saved_ms")}
TIME.update({k: {NUM, NULL} for k in ("speedup", "converted_speedup",
                                      "candidate_speedup", "steady_speedup")})
TIME.update({k: {INT} for k in ("calls_timed", "calls_converted_estimated",
                                "fp32_sampled", "calls_fp32_measured",
                                "calls_fp32_estimated",
                                "calls_fp32_unknown")})
TIME["fp32_unknown_reason"] = {STR, NULL}
ERRORS = {"shadow_calls": {INT}, "compared": {INT}, "max_rel": {NUM, NULL},
          "mean_rel": {NUM, NULL}, "max_abs": {NUM, NULL},
          "max_fro": {NUM, NULL}, "mean_fro": {NUM, NULL},
          "nonfinite": {INT}, "tolerance": {NUM, NULL},
          "tolerance_norm": {STR}, "over_tolerance": {INT},
          "delivered_max_rel": {NUM, NULL}, "delivered_max_fro": {NUM, NULL}}
NORMS = {"max", "fro"}
COMMON = {"calls": {INT}, "converted": {INT}, "delivered": {INT},
          "shadow": {INT}, "fp32": {INT},
          "fallback": {INT}, "unmeasured": {INT}, "modes": {OBJ},
          "shadow_candidate": {STR, NULL}, "time": {OBJ}, "errors": {OBJ},
          "fallbacks": {OBJ}, "fp32_reasons": {OBJ}, "scratch_bytes": {OBJ},
          "flops": {OBJ}, "replays": {OBJ}}
REPLAYS = {"calls": {INT}, "converted": {INT}, "flops_converted": {NUM},
           "saved_ms": {NUM, NULL}, "unestimated": {INT},
           "provisional": {INT}}
SITE = dict(COMMON, api={STR}, family={STR}, function={STR, NULL},
            symbol={STR, NULL},
            module={STR, NULL}, offset={NUM, NULL}, demoted={BOOL},
            demoted_reason={STR, NULL}, shapes={ARR})
SHAPE = dict(COMMON, shape={STR}, dims={OBJ}, fp32_baseline_ms={NUM, NULL})
TOTALS = {k: {INT} for k in ("sites", "calls", "converted", "delivered",
                             "shadow", "fp32", "fallback", "unmeasured",
                             "dropped", "shapes", "shapes_measuring",
                             "graph_launches")}
TOTALS.update({k: {NUM} for k in ("fp32_ms", "actual_ms", "saved_ms",
                                  "flops_fp32", "flops_converted")})
TOTALS.update({"speedup": {NUM, NULL}, "converted_share": {NUM, NULL},
               "converted_speedup": {NUM, NULL}, "fp32_reasons": {OBJ},
               "steady_speedup": {NUM, NULL}, "verdict": {STR},
               "replays": {OBJ}, "wall_ms": {NUM, NULL}, "device_ms": {NUM},
               "timing_ms": {NUM},
               "calls_untimed": {INT}, "calls_converted_estimated": {INT},
               "calls_fp32_sampled": {INT}})
VERDICTS = ("faster: ", "slower: ", "still measuring: ",
            "nothing to gain here: ", "converted, speed unknown: ")
TOTALS.update({k: {INT} for k in ("calls_fp32_measured",
                                  "calls_fp32_estimated",
                                  "calls_fp32_unknown")})
REASONS = {"no-device", "scratch-cap", "busy", "device-error",
           "vendor-error", "no-algorithm", "cold-capture", "fp16-range"}
KEPT = {"mode", "rule", "no-rule", "min-size", "demoted", "broken-policy",
        "pedantic", "unsupported", "invalid", "empty", "capture", "auto",
        "library", "atomic-sync", "no-tensor-core-engine", "shape-limit",
        "measuring", "fused-graph", "no-emulation"}
MODES = {"fp32", "fp16", "bf16", "tf32", "fp16x3", "tf32x3", "bf16x9",
         "shadow", "allow-conversion"}

AUTO = {"state": {STR}, "choice": {STR, NULL}, "changes": {INT},
        "candidates": {ARR}}
AUTO_CANDIDATE = {"mode": {STR}, "shadow_calls": {INT},
                  "errors_measured": {INT}, "times_measured": {INT},
                  "compared": {INT},
                  "warmup_calls": {INT},
                  "untimed_calls": {INT},
                  "max_rel": {NUM, NULL}, "fro_rel": {NUM, NULL},
                  "nonfinite": {INT},
                  "candidate_ms": {NUM, NULL}, "fp32_ms": {NUM, NULL},
                  "speedup": {NUM, NULL}, "median_speedup": {NUM, NULL},
                  "eligible": {BOOL},
                  "rejected": {STR, NULL}}

problems = []


def check(obj, spec, where):
    if not isinstance(obj, dict):
        problems.append(f"{where}: not an object")
        return
    for key, want in spec.items():
        if key not in obj:
            problems.append(f"{where}.{key}: missing")
        elif not fits(obj[key], want):
            problems.append(f"{where}.{key}: {kind(obj[key])}, expected "
                            f"{'/'.join(sorted(want))}")


def check_reasons(e, where):
    """fp32_reasons: known reasons, integers, adding up to the calls that
    ran FP32 (kept or fallen back), the fallbacks among them as counted."""
    reasons = e["fp32_reasons"]
    for reason, n in reasons.items():
        if reason not in KEPT | REASONS or kind(n) != INT or n <= 0:
            problems.append(f"{where}.fp32_reasons.{reason}: unknown or "
                            f"not a positive int")
    if sum(reasons.values()) != e["fp32"] + e["fallback"]:
        problems.append(f"{where}.fp32_reasons: add up to "
                        f"{sum(reasons.values())}, fp32 + fallback = "
                        f"{e['fp32'] + e['fallback']}")
    for reason, n in e.get("fallbacks", {}).items():
        if reasons.get(reason) != n:
            problems.append(f"{where}.fp32_reasons.{reason}: "
                            f"{reasons.get(reason)}, fallbacks say {n}")


def check_auto(a, where):
    """An auto rule's (site, shape): its state and choice agree, and the
    choice is an eligible candidate."""
    check(a, AUTO, where)
    if problems:
        return
    for i, c in enumerate(a["candidates"]):
        check(c, AUTO_CANDIDATE, f"{where}.candidates[{i}]")
        if not problems and c["eligible"] != (c["rejected"] is None):
            problems.append(f"{where}.candidates[{i}]: eligible and "
                            f"rejected disagree")
    eligible = {c["mode"] for c in a["candidates"] if c["eligible"]}
    if a["state"] == "chosen" and a["choice"] not in eligible:
        problems.append(f"{where}.choice: {a['choice']} is not eligible")
    if a["state"] == "fp32" and (a["choice"] != "fp32" or eligible):
        problems.append(f"{where}: fp32 with an eligible candidate")
    if a["state"] == "measuring" and a["choice"] is not None:
        problems.append(f"{where}.choice: set while measuring")


def check_errors(err, policy, where):
    """Both norms' errors measured on the same shadow calls (null when
    none, or when they compared no element), the tolerance and its norm the
    policy's."""
    check(err, ERRORS, where)
    if problems:
        return
    if err["tolerance_norm"] not in NORMS:
        problems.append(f"{where}.tolerance_norm: {err['tolerance_norm']}")
    for key in ("tolerance", "tolerance_norm"):
        if err[key] != policy[key]:
            problems.append(f"{where}.{key}: {err[key]}, the policy's is "
                            f"{policy[key]}")
    if err["shadow_calls"] == 0 and err["compared"] != 0:
        problems.append(f"{where}.compared: {err['compared']} with no "
                        "shadow call")
    for key in ("max_rel", "mean_rel", "max_abs", "max_fro", "mean_fro"):
        if (err[key] is None) != (err["compared"] == 0):
            problems.append(f"{where}.{key}: {err[key]} with "
                            f"{err['shadow_calls']} shadow calls comparing "
                            f"{err['compared']} elements")
        elif err[key] is not None and err[key] < 0:
            problems.append(f"{where}.{key}: negative")


def check_entry(e, where, policy):
    check(e["time"], TIME, where + ".time")
    check_errors(e["errors"], policy, where + ".errors")
    check(e["scratch_bytes"], {"max": {INT}, "mean": {NUM, NULL}},
          where + ".scratch_bytes")
    check(e["flops"], {"total": {NUM}, "converted": {NUM}}, where + ".flops")
    check_replays(e["replays"], where + ".replays")
    for reason, n in e["fallbacks"].items():
        if reason not in REASONS or kind(n) != INT:
            problems.append(f"{where}.fallbacks.{reason}: unknown or not int")
    check_reasons(e, where)
    for mode, n in e["modes"].items():
        if mode not in MODES or kind(n) != INT:
            problems.append(f"{where}.modes.{mode}: unknown or not int")
    check_delivered(e, where)


def check_replays(r, where):
    """Replayed calls: the converted and the provisional among them, the
    unestimated among the converted; a saved time when some converted
    replay has an estimate."""
    check(r, REPLAYS, where)
    if problems:
        return
    if r["converted"] > r["calls"] or r["provisional"] > r["calls"]:
        problems.append(f"{where}: more converted or provisional than calls")
    if r["unestimated"] > r["converted"]:
        problems.append(f"{where}: more unestimated than converted")
    if (r["saved_ms"] is None) != (r["converted"] == r["unestimated"]):
        problems.append(f"{where}.saved_ms: {r['saved_ms']} with "
                        f"{r['converted'] - r['unestimated']} estimated")


def check_delivered(e, where):
    """Calls that delivered a converted result apart from shadow calls;
    no error where nothing converted reached the program."""
    shadow = e["modes"].get("shadow", 0)
    if e["shadow"] != shadow:
        problems.append(f"{where}.shadow: {e['shadow']}, modes.shadow "
                        f"{shadow}")
    if e["delivered"] != e["converted"] - shadow:
        problems.append(f"{where}.delivered: {e['delivered']}, not converted "
                        f"{e['converted']} less shadow {shadow}")
    err = e["errors"]
    for key in ("delivered_max_rel", "delivered_max_fro"):
        if e["delivered"] == 0 and err.get(key) != 0:
            problems.append(f"{where}.errors.{key}: {err.get(key)} with no "
                            "converted result delivered, not 0")


def check_devices(devices):
    """Each device once, in order of ordinal, its calls the sum of their
    outcomes."""
    last = -1
    for i, d in enumerate(devices):
        where = f"devices[{i}]"
        check(d, DEVICES, where)
        if problems:
            return
        if d["ordinal"] <= last:
            problems.append(f"{where}.ordinal: not above the one before")
        last = d["ordinal"]
        if d["calls"] != d["converted"] + d["fp32"] + d["fallback"]:
            problems.append(f"{where}: calls are not converted + fp32 + "
                            "fallback")
        if d["shadow"] > d["converted"]:
            problems.append(f"{where}: more shadow calls than converted")


def check_devices_totals(devices, totals):
    """The devices' calls add up to no more than the totals (a call of an
    unknown device is in the totals only)."""
    for key in ("calls", "converted", "shadow", "fp32", "fallback"):
        if sum(d[key] for d in devices) > totals[key]:
            problems.append(f"devices: more {key} than totals.{key}")


def main(path):
    with open(path, encoding="utf-8") as f:
        r = json.load(f)
    check(r, {"schema": {STR}, "version": {INT}, "ampshim_version": {STR},
              "generated": {STR}, "complete": {BOOL}, "program": {OBJ},
              "device": {OBJ, NULL}, "devices": {ARR}, "job": {OBJ, NULL},
              "policy": {OBJ}, "environment": {OBJ}, "apis": {ARR},
              "sites": {ARR}, "totals": {OBJ}}, "report")
    if problems:
        return
    if r["schema"] != "ampshim-report" or r["version"] != 2:
        problems.append("report: not schema ampshim-report version 2")
    check(r["program"], PROGRAM, "program")
    if r["device"] is not None:
        check(r["device"], DEVICE, "device")
    check_devices(r["devices"])
    if r["job"] is not None:
        check(r["job"], JOB, "job")
    check(r["policy"], POLICY, "policy")
    if problems:
        return
    if r["policy"]["tolerance_norm"] not in NORMS:
        problems.append(f"policy.tolerance_norm: "
                        f"{r['policy']['tolerance_norm']}")
    for name, value in r["environment"].items():
        if kind(value) != STR:
            problems.append(f"environment.{name}: not a string")
    for i, a in enumerate(r["apis"]):
        check(a, API, f"apis[{i}]")
    for i, s in enumerate(r["sites"]):
        where = f"sites[{i}]"
        check(s, SITE, where)
        # Optional within version 2: the frames above the caller.
        if "stack" in s and (kind(s["stack"]) != ARR or len(s["stack"]) > 1
                             or any(kind(f) != STR for f in s["stack"])):
            problems.append(f"{where}.stack: not up to 1 string")
        if problems:
            return
        if s["family"] not in ("gemm", "conv"):
            problems.append(f"{where}.family: {s['family']}")
        check_entry(s, where, r["policy"])
        for j, e in enumerate(s["shapes"]):
            check(e, SHAPE, f"{where}.shapes[{j}]")
            if not problems:
                check_entry(e, f"{where}.shapes[{j}]", r["policy"])
            if "auto" in e:
                check_auto(e["auto"], f"{where}.shapes[{j}].auto")
    check(r["totals"], TOTALS, "totals")
    if not problems:
        check_reasons(r["totals"], "totals")
        t = r["totals"]
        if t["delivered"] != t["converted"] - t["shadow"]:
            problems.append("totals.delivered: not converted less shadow")
        if not t["verdict"].startswith(VERDICTS):
            problems.append(f"totals.verdict: {t['verdict']!r}")
        if t["shapes"] != sum(len(s["shapes"]) for s in r["sites"]):
            problems.append("totals.shapes: not the sites' shapes")
        for key in ("calls", "fp32", "fallback", "delivered", "shadow"):
            if r["totals"][key] != sum(s[key] for s in r["sites"]):
                problems.append(f"totals.{key}: not the sites' sum")
        check_replays(t["replays"], "totals.replays")
        for key in ("calls", "converted", "provisional"):
            if t["replays"][key] != sum(s["replays"][key]
                                        for s in r["sites"]):
                problems.append(f"totals.replays.{key}: not the sites' sum")
        if (t["graph_launches"] == 0) != (t["replays"]["calls"] == 0):
            problems.append("totals.graph_launches: replays without "
                            "launches, or launches without replays")
        check_devices_totals(r["devices"], r["totals"])


if __name__ == "__main__":
    main(sys.argv[1])
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
