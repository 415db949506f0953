"""The program ``TrainerClient.get_runtime_packages()`` runs where a runtime's trainer runs: it
prints the Python version, the installed distributions as ``pip list`` prints them (read with
``importlib.metadata`` from the interpreter that runs it, so no pip is needed and no other
interpreter's pip answers), and ``nvidia-smi``'s table where that command exists.

``print_packages`` is self-contained (imports inside): its source is what travels, as a
function trainer's does."""


def print_packages():
    import importlib.metadata
    import re
    import shutil
    import subprocess
    import sys

    print(f"Python: {sys.version}")
    rows, seen = [], set()
    for dist in importlib.metadata.distributions():  # sys.path order: the first one counts
        name = dist.metadata["Name"]
        if not name:
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key not in seen:
            seen.add(key)
            rows.append((key, name, dist.version or ""))
    table = [("Package", "Version")] + [(n, v) for _, n, v in sorted(rows)]
    widths = [max(len(row[i]) for row in table) for i in range(2)]
    table.insert(1, tuple("-" * w for w in widths))
    for row in table:
        print(" ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    if shutil.which("nvidia-smi"):
        print("Available GPUs on the single training node")
        nvidia_smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        print(nvidia_smi.stdout)
