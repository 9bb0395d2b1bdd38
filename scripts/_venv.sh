# Sourced by scripts/example and scripts/test: make .venv with Python >= 3.11 and install ix
# into it (with the extras in $IX_EXTRAS, comma-separated), only when pyproject.toml changed
# since last time or an extra is asked for that is not installed yet.
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
# The extras installed are the union of every set asked for (scripts/example asks for
# `anthropic`, scripts/test for `dev`): switching between the two installs nothing again.
sum="$(cksum < "$repo/pyproject.toml" | cut -d' ' -f1)"
had_sum="" had="" asked="${IX_EXTRAS:-}"
[ -f "$venv/.ix-installed" ] && read -r had_sum had < "$venv/.ix-installed" || true
extras="$(printf '%s\n' ${had//,/ } ${asked//,/ } | sed '/^$/d' | sort -u | paste -sd, -)"
if [ "$had_sum" != "$sum" ] || [ "$had" != "$extras" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  target="$repo"
  [ -n "$extras" ] && target="$repo[$extras]"
  # --no-compile: no bytecode for every installed module up front (half of the install's CPU,
  # ~80 s on two cores for the dev extras); a module is compiled when first imported
  "$venv/bin/python" -m pip install --quiet --no-compile -e "$target"
  rm -f "$venv"/.ix-installed-*
  echo "$sum $extras" > "$venv/.ix-installed"
fi
export PATH="$venv/bin:$PATH"
# Modules are compiled when first imported (above): let that bytecode be kept, or every run
# would compile them again (some sandboxes set this).
unset PYTHONDONTWRITEBYTECODE
