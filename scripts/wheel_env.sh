#!/usr/bin/env bash
# Build delayq's wheel and install it into a fresh virtualenv outside the repository, the way an
# application installs it; print that venv's python on stdout (the acceptance tests run the
# `delayq` command and the checkout's bin/ scripts with it).
#   WHEEL_ENV_DIR  where the venv goes (default: a new directory under $TMPDIR)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
dist=$(mktemp -d "${TMPDIR:-/tmp}/delayq-dist-XXXXXX")
"$PY" -m build --wheel --outdir "$dist" . >"$dist/build.log" 2>&1 || { cat "$dist/build.log" >&2; exit 1; }
env_dir=${WHEEL_ENV_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/delayq-wheel-XXXXXX")}
python3 -m venv "$env_dir"
"$env_dir/bin/python" -m pip install -q --disable-pip-version-check "$dist"/delayq-*.whl 2>&1 | grep -v "^WARNING: Location" >&2 || true
"$env_dir/bin/python" -c "import delayq, sys; assert '/lib/delayq' not in delayq.__file__, delayq.__file__" >&2
rm -rf "$dist"
echo "wheel_env: delayq installed from its wheel into $env_dir" >&2
echo "$env_dir/bin/python"
