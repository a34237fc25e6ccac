#!/usr/bin/env bash
# Make sure MariaDB (127.0.0.1:3306) and Redis (127.0.0.1:6379) answer, for `make test`, that faketime is
# installed, that galera-4 and rsync are there for the Galera check, and that headless Chromium and its driver
# are there for the dashboard's browser tests.
# Starts a stopped server; on a machine without them, installs them from Debian's
# packages when run as root with apt-get, else says how. Never stops or flushes anything.
set -u
DB_HOST=${DELAYQ_TEST_MYSQL_HOST:-127.0.0.1}
REDIS_PORT=${DELAYQ_TEST_REDIS_PORT:-6379}

redis_up() { python3 - "$REDIS_PORT" <<'PY'
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1); s.sendall(b"PING\r\n")
    sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
except OSError:
    sys.exit(1)
PY
}
mysql_up() { python3 - "$DB_HOST" <<'PY'
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], 3306), 1); s.settimeout(2)
    sys.exit(0 if s.recv(64) else 1)   # the server greets first
except OSError:
    sys.exit(1)
PY
}
wait_for() { for _ in $(seq 1 30); do "$1" && return 0; sleep 1; done; return 1; }
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

if ! redis_up; then
  if ! command -v redis-server >/dev/null && can_install; then
    echo "ensure_services: installing redis-server" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  if command -v redis-server >/dev/null; then
    echo "ensure_services: starting Redis on 127.0.0.1:$REDIS_PORT" >&2
    mkdir -p /tmp/delayq-redis
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
      --dir /tmp/delayq-redis --logfile /tmp/delayq-redis/redis.log
  fi
  wait_for redis_up || { echo "ensure_services: Redis does not answer on 127.0.0.1:$REDIS_PORT. Install it (apt-get install redis-server) and start it: redis-server --daemonize yes --bind 127.0.0.1 --port $REDIS_PORT --save '' --appendonly no" >&2; exit 1; }
fi

# libfaketime runs the clock-skew chaos scenario's processes 30 s ahead and behind (tests/chaos/scaleout.py).
if ! command -v faketime >/dev/null; then
  if can_install; then
    echo "ensure_services: installing faketime" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null
  fi
  command -v faketime >/dev/null || { echo "ensure_services: faketime is missing: apt-get install faketime" >&2; exit 1; }
fi

if ! mysql_up; then
  if ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ] && can_install; then
    echo "ensure_services: installing mariadb-server" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
  fi
  if [ -x /usr/sbin/mariadbd ]; then
    echo "ensure_services: starting MariaDB" >&2
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  fi
  wait_for mysql_up || { echo "ensure_services: MariaDB does not answer on $DB_HOST:3306. Install it (apt-get install mariadb-server) and start it: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd" >&2; exit 1; }
  # A fresh install: root over TCP with no password, and the test database.
  if command -v mariadb >/dev/null; then
    mariadb -uroot -e "CREATE DATABASE IF NOT EXISTS test" 2>/dev/null || true
  fi
fi
# The Galera check (tests/chaos/galera.py, galera_check.py) runs three private mariadbd nodes on galera-4's provider;
# a node that rejoins with a full state transfer gets it through rsync.
GALERA=/usr/lib/galera/libgalera_smm.so
if [ ! -e "$GALERA" ] || ! command -v rsync >/dev/null; then
  if can_install; then
    echo "ensure_services: installing galera-4 and rsync" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq galera-4 rsync >/dev/null
  fi
  [ -e "$GALERA" ] && command -v rsync >/dev/null || { echo "ensure_services: galera-4 or rsync is missing: apt-get install galera-4 rsync" >&2; exit 1; }
fi
# The browser tests (tests/acceptance/test_web_browser.py) drive Debian's Chromium through its chromedriver.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  if can_install; then
    echo "ensure_services: installing chromium and chromium-driver" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
  [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || { echo "ensure_services: headless Chromium is missing: apt-get install chromium chromium-driver" >&2; exit 1; }
fi
echo "ensure_services: MariaDB and Redis answer; galera-4, rsync and Chromium are installed" >&2
