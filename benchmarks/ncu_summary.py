"""Kernel durations from an Nsight Compute CSV (``ncu --metrics gpu__time_duration.sum --csv``), in launch
order, for the last of repeated runs: the launches are printed as they came, with their µs, and a total.

    python benchmarks/ncu_summary.py geo_ncu.csv [--tail N]
"""
import argparse
import csv
import io


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--tail", type=int, default=0, help="only the last N launches (0: all)")
    args = ap.parse_args()
    text = open(args.csv, errors="replace").read()
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
    launches = [(r["Kernel Name"].split("(")[0][:60], float(r["Metric Value"].replace(",", "")),
                 r.get("Metric Unit", "")) for r in rows if r.get("Metric Name") == "gpu__time_duration.sum"]
    if args.tail:
        launches = launches[-args.tail:]
    total = 0.0
    for name, value, unit in launches:
        us = value / 1e3 if unit in ("nsecond", "ns") else value * 1e3 if unit in ("msecond", "ms") else value
        total += us
        print(f"{us:10.1f} us  {name}")
    print(f"{total:10.1f} us  total of {len(launches)} launches")


if __name__ == "__main__":
    main()
