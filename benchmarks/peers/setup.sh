#!/usr/bin/env bash
# Creates the peers' own virtualenv (benchmarks/.venv-peers) and installs
# benchmarks/requirements.txt into it. Idempotent: a stamp file holding the hash
# of requirements.txt skips the install when nothing changed.
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

want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
    echo "peers venv up to date: $venv" >&2
else
    if [[ ! -x $venv/bin/python ]]; then
        echo "creating $venv" >&2
        "$python" -m venv "$venv"
    fi
    echo "installing $req into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
