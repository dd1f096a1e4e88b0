#!/usr/bin/env python3
"""One-line digests of an ampshim JSON report, for the GPU check's tables.

usage: report_digest.py coverage|sites|choices REPORT.json

  coverage  one line of key=value pairs: the coverage meter (calls, GFLOP,
            the FP32 share, the share that ran converted, the share kept
            FP32) and the totals (converted, shadow, fallback, unmeasured
            calls, speedup, converted_speedup); "-" for a null
  sites     one line per call site: module, function, api, calls, converted,
            fp32 and fallback calls
  choices   one line per (site, shape) that an auto rule decided: its state
            and choice, sorted, so that two runs' choices compare with diff

Exit status: 0, or 1 when the report cannot be read (the message names the
file and why).
"""
import json
import os
import sys


def fmt(value, digits=3):
    """A number as the tables print it; "-" for null."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def site_name(site):
    module = os.path.basename(site.get("module") or "?")
    function = site.get("function") or fmt(site.get("offset"))
    return f"{module}:{function}"


def coverage(report):
    cov = report.get("coverage") or {}
    tot = report.get("totals") or {}
    pairs = [
        ("calls", cov.get("calls")),
        ("gflop", (cov.get("flops") or 0) / 1e9),
        ("fp32_share", cov.get("fp32_share")),
        ("converted_share", cov.get("converted_share")),
        ("fp32_kept_share", cov.get("fp32_kept_share")),
        ("converted", tot.get("converted")),
        ("shadow", tot.get("shadow")),
        ("fallback", tot.get("fallback")),
        ("unmeasured", tot.get("unmeasured")),
        ("speedup", tot.get("speedup")),
        ("converted_speedup", tot.get("converted_speedup")),
    ]
    print(" ".join(f"{k}={fmt(v)}" for k, v in pairs))


def sites(report):
    for site in report.get("sites") or []:
        print(f"{site_name(site)} {site.get('api')} calls={site.get('calls')}"
              f" converted={site.get('converted')} fp32={site.get('fp32')}"
              f" fallback={site.get('fallback')}")


def choices(report):
    lines = []
    for site in report.get("sites") or []:
        for shape in site.get("shapes") or []:
            auto = shape.get("auto")
            if not auto:
                continue
            lines.append(f"{site_name(site)} {site.get('api')}"
                         f" {shape.get('shape', '?').replace(' ', '_')}"
                         f" state={auto.get('state', '-')}"
                         f" choice={auto.get('choice') or '-'}")
    for line in sorted(lines):
        print(line)


def main(argv):
    commands = {"coverage": coverage, "sites": sites, "choices": choices}
    if len(argv) != 3 or argv[1] not in commands:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[2], encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"report_digest: {argv[2]}: {e}", file=sys.stderr)
        return 1
    commands[argv[1]](report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
