#!/usr/bin/env bash
# Creates the peers' own virtualenv (benchmarks/.venv-peers) and installs
# benchmarks/requirements.txt into it. Idempotent: a stamp file holding the hash
# of requirements.txt (and the peers' worker commands being there) skips the install.
# Prints the venv's python on stdout (messages go to stderr), so a caller can do
#     PEERS_PY=$(benchmarks/peers/setup.sh)
#     $PEERS_PY benchmarks/peers/run.py --redis-url redis://127.0.0.1:6391/0 --workload burst
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(dirname "$here")
venv=${PEERS_VENV:-$bench/.venv-peers}
req=$bench/requirements.txt
stamp=$venv/.installed
python=${PYTHON:-python3}
commands=(python rq huey_consumer dramatiq celery arq)

complete() {
    local c
    for c in "${commands[@]}"; do [[ -x $venv/bin/$c ]] || return 1; done
}

want=$(sha256sum "$req" | cut -d' ' -f1)
if complete && [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    echo "peers venv up to date: $venv" >&2
else
    if [[ -f $stamp ]] && complete; then
        echo "updating $venv from $req" >&2
    else
        # new, or damaged (a package present without its commands would not be reinstalled)
        echo "creating $venv" >&2
        "$python" -m venv --clear "$venv"
    fi
    rm -f "$stamp"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    complete || { echo "setup.sh: worker commands missing in $venv/bin after install" >&2; exit 1; }
    echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
