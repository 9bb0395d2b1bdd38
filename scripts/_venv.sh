# Sourced by scripts/example and scripts/test: make .venv with Python >= 3.11 and install ix
# into it (with the extras in $IX_EXTRAS), only when pyproject.toml changed since last time.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${IX_VENV:-$repo/.venv}"

find_python() {
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3 python; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "ix needs Python 3.11 or newer; none found (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

if [ ! -x "$venv/bin/python" ]; then
  py="$(find_python)"
  echo "setting up $venv with $("$py" --version)" >&2
  "$py" -m venv "$venv"
fi
extras="${IX_EXTRAS:-}"
stamp="$venv/.ix-installed-$( (cat "$repo/pyproject.toml"; echo "$extras") | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  target="$repo"
  [ -n "$extras" ] && target="$repo[$extras]"
  # --no-compile: no bytecode for every installed module up front (half of the install's CPU,
  # ~80 s on two cores for the dev extras); a module is compiled when first imported
  "$venv/bin/python" -m pip install --quiet --no-compile -e "$target"
  rm -f "$venv"/.ix-installed-*
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
# Modules are compiled when first imported (above): let that bytecode be kept, or every run
# would compile them again (some sandboxes set this).
unset PYTHONDONTWRITEBYTECODE
