#!/usr/bin/env python3
"""`pagoda plan --svg`: the picture is well-formed XML with one bar per (stage, micro-batch) and
per (stage, prompt slice) of the plan `--json` prints, and the bars keep the pipeline's rules:
a stage runs one job at a time, and a job starts on stage k+1 no earlier than it ends on
stage k.

check_plan_svg.py PAGODA MODEL OUT_DIR
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
EPS = 1e-12  # seconds: the bars' times are printed with 9 significant digits


def fail(message):
    sys.exit(f"check_plan_svg: {message}")


def main():
    pagoda, model, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    svg_path = os.path.join(out_dir, "plan.svg")
    if os.path.exists(svg_path):
        os.remove(svg_path)
    cmd = [pagoda, "plan", "--model", model, "--mesh", "1x4", "--stages", "4", "--objective", "throughput",
           "--micro-batches", "3", "--prompt-len", "512", "--json", "--svg", svg_path]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {run.returncode}: {run.stderr}")
    plan = json.loads(run.stdout)
    stages = plan["stages"]
    slices = plan["slicing"]["optimal"]["slices"]
    batches = plan["micro_batches"]
    if len(stages) < 2 or len(slices) < 2:
        fail(f"want a plan with several stages and slices, got {len(stages)} stages, {len(slices)} slices")

    root = ET.parse(svg_path).getroot()  # raises on malformed XML
    if root.tag != SVG + "svg":
        fail(f"the root element is {root.tag}, not svg")
    bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
    charts = {"steps": (batches, None), "slices": (len(slices), slices)}
    for chart, (n_jobs, tokens) in charts.items():
        mine = [b for b in bars if b.get("data-chart") == chart]
        want = len(stages) * n_jobs
        if len(mine) != want:
            fail(f"{chart}: {len(mine)} bars, want {len(stages)} stages x {n_jobs} = {want}")
        times = {}
        for b in mine:
            key = (int(b.get("data-stage")), int(b.get("data-job")))
            if key in times:
                fail(f"{chart}: two bars for stage {key[0]}, job {key[1]}")
            start, end = float(b.get("data-start")), float(b.get("data-end"))
            if not (0 <= start < end):
                fail(f"{chart}: stage {key[0]}, job {key[1]} runs from {start} to {end}")
            if float(b.get("width")) <= 0:
                fail(f"{chart}: stage {key[0]}, job {key[1]} is drawn {b.get('width')} wide")
            times[key] = (start, end)
        for k in range(len(stages)):
            row = sorted(times[(k, j)] for j in range(n_jobs))
            for (s0, e0), (s1, e1) in zip(row, row[1:]):
                if s1 < e0 - EPS:
                    fail(f"{chart}: stage {k} runs two jobs at once ({s0}-{e0} and {s1}-{e1})")
            if k + 1 < len(stages):
                for j in range(n_jobs):
                    if times[(k + 1, j)][0] < times[(k, j)][1] - EPS:
                        fail(f"{chart}: job {j} starts on stage {k + 1} at {times[(k + 1, j)][0]}, "
                             f"before it ends on stage {k} at {times[(k, j)][1]}")
        if tokens is not None:
            # Each slice bar is labelled with its tokens (in its tooltip at least).
            for b in mine:
                title = b.find(SVG + "title")
                j = int(b.get("data-job"))
                if title is None or f"({tokens[j]} tokens)" not in title.text:
                    fail(f"{chart}: the bar of slice {j} does not say its {tokens[j]} tokens")
        # The micro-batches take the plan's stage times, so they end at the throughput objective,
        # sum t_k + (B - 1) max t_k; the modelled slices never outlast TeraPipe's Eq. 5.
        end = max(e for _, e in times.values())
        if chart == "steps":
            seconds = [s["seconds"] for s in stages]
            want_end = sum(seconds) + (batches - 1) * max(seconds)
            if abs(end - want_end) > 1e-6 * want_end:
                fail(f"steps end at {end} s, want sum + (B-1) max = {want_end} s")
        elif end > plan["slicing"]["optimal"]["latency_seconds"] * (1 + 1e-6):
            fail(f"slices end at {end} s, after Eq. 5's {plan['slicing']['optimal']['latency_seconds']} s")
    print(f"check_plan_svg: {len(bars)} bars over {len(stages)} stages, "
          f"{batches} micro-batches and {len(slices)} slices: ok")


if __name__ == "__main__":
    main()
