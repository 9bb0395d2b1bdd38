"""What the command-output types cost: importing them, and `ix schema` generating from them.

    PYTHONPATH=src .venv/bin/python benchmarks/output_types.py [--repeat 15]

Best of N fresh processes, CPU time (a shared machine only adds to it; wall time of such
short steps is mostly waiting for a core there): `import ix.api.schemas` (every output type:
the files' in `ix.eval.schemas`, the reports' in `ix.report.schemas`, the commands' in
`ix.api.schemas`) after pydantic and `ix.eval.models` are loaded, then generating all 24
JSON Schemas (`ix schema`). Also counts the functions of the measured `ix` still annotated
`-> dict[str, Any]`.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

# PYTHONPATH is kept so that a worktree's source (PYTHONPATH=src) is what is measured.
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("IX_", "PYTHON")) or k == "PYTHONPATH"}
PROBE = """
import time, pydantic, ix, ix.eval.models
t0 = time.process_time()
import ix.api.schemas as s
t1 = time.process_time()
s.all_schemas()
t2 = time.process_time()
print(t1 - t0, t2 - t1, ix.__file__)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="fresh processes (best of)")
    args = parser.parse_args()
    imports, generations = [], []
    for _ in range(args.repeat + 1):  # the first fills the bytecode cache
        out = subprocess.run([sys.executable, "-c", PROBE], env=ENV, capture_output=True,
                             text=True, check=True).stdout.split()
        imports.append(float(out[0]))
        generations.append(float(out[1]))
        package = Path(out[2]).parent
    print(f"import ix.api.schemas:           {1000 * min(imports[1:]):6.1f} ms CPU")
    print(f"generate all 24 schemas:         {1000 * min(generations[1:]):6.1f} ms CPU")
    pattern = re.compile(r"-> dict\[str, Any\]")
    count = sum(len(pattern.findall(p.read_text(encoding="utf-8")))
                for p in package.rglob("*.py"))
    print(f"functions -> dict[str, Any]:     {count:6d}   ({package})")


if __name__ == "__main__":
    main()
