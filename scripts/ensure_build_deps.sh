#!/usr/bin/env bash
# Make sure what `make install` compiles against is there: mysqlclient (the dev extra: the Django sample app's
# tests run Django's default MySQL driver) builds against the MariaDB client headers, found with pkg-config.
# On a machine without them, installs them from Debian's packages when run as root with apt-get, else says how.
set -u
have_headers() { command -v pkg-config >/dev/null && { pkg-config --exists mysqlclient || pkg-config --exists mariadb; }; }
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

if ! have_headers; then
  if can_install; then
    echo "ensure_build_deps: installing pkg-config and libmariadb-dev (mysqlclient compiles against them)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkg-config libmariadb-dev >/dev/null
  fi
  have_headers || { echo "ensure_build_deps: the MariaDB client headers are missing (mysqlclient cannot compile): apt-get install pkg-config libmariadb-dev" >&2; exit 1; }
fi
