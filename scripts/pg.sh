# Source me. A private PostgreSQL cluster for the store tests (LABEL_STUDIO.md §4 recipe):
# initdb in a temp folder, bound to 127.0.0.1 on a free port, run as the 'postgres' OS user when root.
pg_bin() { local d; d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1); echo "${d:-$(dirname "$(command -v initdb)")}"; }

pg_start() {
  local dir=$1 bin port runas=()
  bin=$(pg_bin)
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$dir"; runas=(runuser -u postgres --); fi
  "${runas[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >/dev/null
  "${runas[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" -w start >/dev/null
  "${runas[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres truthline_test
  TRUTHLINE_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$port/truthline_test"
  echo "PostgreSQL up on 127.0.0.1:$port"
}

pg_stop() {
  local dir=$1 runas=()
  [ -d "$dir/data" ] || return 0
  if [ "$(id -u)" = 0 ]; then runas=(runuser -u postgres --); fi
  "${runas[@]}" "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
}
